/* SPDX-License-Identifier: MIT */
/* queue.add and queue.remove (admins only), queue.list. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/queues.h"
#include "jobs/shared-settings.h"
#include "methods/method.h"
#include "server/await.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/store.h"

static bool admin_only(struct conn *c, const char *what, struct reply *r)
{
        if (conn_is_admin(c))
                return true;
        reply_error(r, SW_E_PERMISSION, "permission denied: only admins %s queues", what);
        return false;
}

/* The settings given: the request's params but "name" and "settings", and the members of
 * "settings" (an object); NULL and an error reply when it is not one. */
static json_object *given_settings(json_object *params, json_object *nested, struct reply *r)
{
        json_object *given;

        if (nested && !json_object_is_type(nested, json_type_object)) {
                reply_error(r, SW_E_INVALID_PARAMS, "parameter \"settings\" must be an object");
                return NULL;
        }
        given = json_object_new_object();
        json_object_object_foreach(params, name, value)
        {
                if (strcmp(name, "name") != 0 && strcmp(name, "settings") != 0)
                        json_object_object_add(given, name, json_object_get(value));
        }
        if (nested) {
                json_object_object_foreach(nested, key, v)
                        json_object_object_add(given, key, json_object_get(v));
        }
        return given;
}

static void handle_queue_add(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        json_object *given;
        char err[256];
        int e;

        if (!admin_only(c, "add", r))
                return;
        if (sw_queue_name_check("name", p->queue.name, r->message, sizeof(r->message))) {
                r->code = SW_E_INVALID_PARAMS;
                return;
        }
        given = given_settings(r->params, p->queue.nested, r);
        if (!given)
                return;
        e = queues_add(d, p->queue.name, given, err, sizeof(err));
        json_object_put(given);
        if (e == -EEXIST)
                reply_error(r, SW_E_CONFLICT, "%s", err);
        else if (e == -EINVAL)
                reply_error(r, SW_E_INVALID_PARAMS, "%s", err);
        else if (e < 0)
                reply_error(r, SW_E_INTERNAL, "cannot add queue %s: %s", p->queue.name, err);
        else {
                shared_settings_changed(d);
                r->result = queues_json(d, queues_find(d, p->queue.name));
        }
}

/* Whether the queue holds jobs of this node (then an error reply in code and message). */
static bool holds_jobs(const struct queue *q, int *code, char *message, size_t len)
{
        if (q->njobs == 0)
                return false;
        *code = SW_E_BUSY;
        snprintf(message, len, "queue %s holds %zu job%s: it cannot be removed", q->name, q->njobs,
                 q->njobs == 1 ? "" : "s");
        return true;
}

/* The queue goes (on every node of a shared database): queue.remove's result. */
static json_object *remove_queue(struct daemon *d, struct queue *q)
{
        json_object *result = json_object_new_object();

        json_object_object_add(result, "name", json_object_new_string(q->name));
        json_object_object_add(result, "removed", json_object_new_boolean(1));
        queues_remove(d, q);
        shared_settings_changed(d);
        return result;
}

/* A queue.remove on a shared database, waiting for how many jobs the other nodes hold in it. */
struct removal {
        struct daemon *d;
        struct conn *c;
        json_object *id;
        uint64_t token; /* its wait for the database (await_begin) */
        char name[SW_QUEUE_NAME_MAX + 1];
};

static void counted(void *data, const struct db_result *res)
{
        struct removal *rm = data;
        struct queue *q = queues_find(rm->d, rm->name);
        char message[256];
        int code = 0;

        /* The daemon stops, or the request was answered that the database could not be read:
         * the queue stays. */
        if (!res || daemon_stopping(rm->d) || !await_current(rm->c, rm->token)) {
                json_object_put(rm->id);
                goto out;
        }
        if (!res->got) {
                code = SW_E_INTERNAL;
                snprintf(message, sizeof(message), "cannot read the job database");
        } else if (res->i[0] > 0) {
                code = SW_E_BUSY;
                snprintf(message, sizeof(message),
                         "queue %s holds %lld job%s of other nodes: it cannot be removed", rm->name,
                         (long long)res->i[0], res->i[0] == 1 ? "" : "s");
        } else if (!q) {
                /* Removed meanwhile, here or on another node. */
                code = SW_E_INVALID_PARAMS;
                snprintf(message, sizeof(message), "parameter \"name\": no queue \"%s\"",
                         rm->name);
        }
        /* conn_reply() takes the id. */
        if (code || holds_jobs(q, &code, message, sizeof(message)))
                conn_reply(rm->c, rm->id, NULL, code, message);
        else
                conn_reply(rm->c, rm->id, remove_queue(rm->d, q), 0, NULL);
out:
        conn_unref(rm->c);
        free(rm);
}

static void handle_queue_remove(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        struct removal *rm;
        struct queue *q;

        if (!admin_only(c, "remove", r))
                return;
        q = method_lookup_queue(d, "name", p->queue.name, r);
        if (!q)
                return;
        if (q == d->queues) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "parameter \"name\": the default queue cannot be removed");
                return;
        }
        if (holds_jobs(q, &r->code, r->message, sizeof(r->message)))
                return;
        if (!store_shared(d->store)) {
                r->result = remove_queue(d, q);
                return;
        }
        rm = malloc(sizeof(*rm));
        if (!rm) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        *rm = (struct removal){d, conn_ref(c), json_object_get(r->id), await_begin(c, r->id), ""};
        snprintf(rm->name, sizeof(rm->name), "%s", q->name);
        r->deferred = true;
        store_count_queue_jobs(d->store, q->name, counted, rm);
}

static void handle_queue_list(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        json_object *list = json_object_new_array();

        for (struct queue *q = d->queues; q; q = q->next)
                json_object_array_add(list, queues_json(d, q));
        r->result = json_object_new_object();
        json_object_object_add(r->result, "queues", list);
}

const struct method queue_methods[] = {
    {"queue.add", sw_queue_add_params, NULL, handle_queue_add, false},
    {"queue.remove", sw_queue_name_params, NULL, handle_queue_remove, false},
    {"queue.list", sw_no_params, NULL, handle_queue_list, false},
    {NULL, NULL, NULL, NULL, false},
};
