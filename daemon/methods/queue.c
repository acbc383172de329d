/* SPDX-License-Identifier: MIT */
/* queue.add and queue.remove (admins only), queue.list. */
#include <errno.h>
#include <string.h>

#include "jobs/queues.h"
#include "methods/method.h"
#include "server/conn.h"

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

static void handle_queue_add(struct registry *reg, struct conn *c, union params *p,
                             struct reply *r)
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
        e = registry_add_queue(reg, p->queue.name, given, err, sizeof(err));
        json_object_put(given);
        if (e == -EEXIST)
                reply_error(r, SW_E_CONFLICT, "%s", err);
        else if (e == -EINVAL)
                reply_error(r, SW_E_INVALID_PARAMS, "%s", err);
        else if (e < 0)
                reply_error(r, SW_E_INTERNAL, "cannot add queue %s: %s", p->queue.name, err);
        else
                r->result = registry_queue_json(reg, registry_find_queue(reg, p->queue.name));
}

static void handle_queue_remove(struct registry *reg, struct conn *c, union params *p,
                                struct reply *r)
{
        struct queue *q;

        if (!admin_only(c, "remove", r))
                return;
        q = method_lookup_queue(reg, "name", p->queue.name, r);
        if (!q)
                return;
        if (q == reg->queues) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "parameter \"name\": the default queue cannot be removed");
                return;
        }
        if (q->njobs > 0) {
                reply_error(r, SW_E_BUSY, "queue %s holds %zu job%s: it cannot be removed",
                            q->name, q->njobs, q->njobs == 1 ? "" : "s");
                return;
        }
        r->result = json_object_new_object();
        json_object_object_add(r->result, "name", json_object_new_string(q->name));
        json_object_object_add(r->result, "removed", json_object_new_boolean(1));
        registry_remove_queue(reg, q);
}

static void handle_queue_list(struct registry *reg, struct conn *c, union params *p,
                              struct reply *r)
{
        json_object *list = json_object_new_array();

        for (struct queue *q = reg->queues; q; q = q->next)
                json_object_array_add(list, registry_queue_json(reg, q));
        r->result = json_object_new_object();
        json_object_object_add(r->result, "queues", list);
}

const struct method queue_methods[] = {
    {"queue.add", sw_queue_add_params, NULL, handle_queue_add, false},
    {"queue.remove", sw_queue_name_params, NULL, handle_queue_remove, false},
    {"queue.list", sw_no_params, NULL, handle_queue_list, false},
    {NULL, NULL, NULL, NULL, false},
};
