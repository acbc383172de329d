/* SPDX-License-Identifier: MIT */
/* The daemon-level methods: ping, version, settings.get, settings.set and reload (admins
 * only), stats. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "jobs/daemon.h"
#include "jobs/pause.h"
#include "jobs/queues.h"
#include "jobs/settings.h"
#include "jobs/shared-settings.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/store.h"

static void handle_ping(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        r->result = json_object_new_object();
        json_object_object_add(r->result, "pong", json_object_new_boolean(1));
        json_object_object_add(r->result, "instance",
                               json_object_new_string(d->shared.run.system ? "system" : "user"));
}

static void handle_version(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        r->result = json_object_new_object();
        json_object_object_add(r->result, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(r->result, "protocol", json_object_new_int(SW_PROTO_VERSION));
}

/* {"min-threads": N, ..., "queue": NAME}. */
static json_object *queue_settings_result(const struct queue *q)
{
        json_object *o = sw_queue_settings_to_json(&q->settings);

        json_object_object_add(o, "queue", json_object_new_string(q->name));
        return o;
}

/* A queue's settings, or the daemon's. */
static void handle_settings_get(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        struct queue *q;

        if (!p->queue_opt.queue)
                r->result = sw_settings_to_json(&d->settings);
        else if ((q = method_lookup_queue(d, "queue", p->queue_opt.queue, r)))
                r->result = queue_settings_result(q);
}

static void prefill_settings(struct daemon *d, union params *p)
{
        p->settings = d->settings;
}

static bool is_queue_setting(const char *name)
{
        for (const struct sw_param *row = sw_queue_settings_params; row->name; row++)
                if (strcmp(row->name, name) == 0)
                        return true;
        return false;
}

/* The settings the request gives a queue (its params but "queue" and "runtime"), or NULL and an
 * error reply naming one that is not a queue's. */
static json_object *queue_settings_given(struct reply *r)
{
        json_object *given = json_object_new_object();

        json_object_object_foreach(r->params, name, value)
        {
                if (strcmp(name, "queue") == 0 || strcmp(name, "runtime") == 0)
                        continue;
                if (!is_queue_setting(name)) {
                        reply_error(r, SW_E_INVALID_PARAMS,
                                    "parameter \"%.64s\" is not a setting of a queue", name);
                        json_object_put(given);
                        return NULL;
                }
                json_object_object_add(given, name, json_object_get(value));
        }
        return given;
}

/* The settings that make the system daemon write a file as root, or run a command as every
 * job's owner: admin-group is not root, so they come from the configuration file or root. */
static const struct {
        const char *name, *why;
} root_settings[] = {
    {"metrics-file", "the daemon writes that file as root"},
    {"on-end", "it runs as the owner of every job"},
};

/* Whether the request sets none of root_settings, or comes from root (or the daemon's own
 * user); false with the permission error in r if not. */
static bool root_may_set(struct daemon *d, struct conn *c, struct reply *r)
{
        if (!d->shared.run.system || c->uid == 0 || c->uid == d->shared.run.uid)
                return true;
        for (size_t i = 0; i < sizeof(root_settings) / sizeof(root_settings[0]); i++)
                if (json_object_object_get_ex(r->params, root_settings[i].name, NULL)) {
                        reply_error(r, SW_E_PERMISSION,
                                    "permission denied: in the system instance only root sets "
                                    "%s (%s)",
                                    root_settings[i].name, root_settings[i].why);
                        return false;
                }
        return true;
}

/* A named queue's settings change alone; the default queue's are the daemon's own, which change
 * as they would without "queue". */
static void handle_settings_set(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        struct queue *q = NULL;
        struct sw_settings old;
        json_object *given;
        char err[256];
        int e;

        if (!conn_is_admin(c)) {
                reply_error(r, SW_E_PERMISSION, "permission denied: only admins change settings");
                return;
        }
        if (!root_may_set(d, c, r))
                return;
        if (p->settings.queue) {
                if (!(q = method_lookup_queue(d, "queue", p->settings.queue, r)) ||
                    !(given = queue_settings_given(r)))
                        return;
                e = q == d->queues
                        ? 0
                        : queues_set(d, q, given, !p->settings.runtime, err, sizeof(err));
                json_object_put(given);
                if (e < 0)
                        reply_error(r, SW_E_INVALID_PARAMS, "%s; nothing was changed", err);
                else if (q != d->queues)
                        r->result = queue_settings_result(q);
                if (e == 0 && q != d->queues && !p->settings.runtime)
                        shared_settings_changed(d);
                if (q != d->queues)
                        return;
        }
        old = d->settings;
        e = settings_apply(d, &p->settings);
        if (e < 0) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "min-threads must not exceed max-threads; nothing was changed");
                return;
        }
        if (!p->settings.runtime)
                settings_keep(d, &old);
        r->result = q ? queue_settings_result(q) : sw_settings_to_json(&d->settings);
}

static void handle_reload(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        if (!conn_is_admin(c)) {
                reply_error(r, SW_E_PERMISSION,
                            "permission denied: only admins reload the configuration");
                return;
        }
        if (d->reload(d->reload_data, c, r->id) < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        r->deferred = true;
}

static void handle_reexec(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        char err[512];
        int e;

        if (!conn_is_admin(c)) {
                reply_error(r, SW_E_PERMISSION,
                            "permission denied: only admins re-execute the daemon");
                return;
        }
        e = d->reexec(d->reload_data, c, r->id, err, sizeof(err));
        if (e == -EBUSY || e == -EOPNOTSUPP)
                reply_error(r, SW_E_BUSY, "%s", err);
        else if (e < 0)
                reply_error(r, SW_E_INTERNAL, "%s", err);
        else
                r->deferred = true;
}

static json_object *rq_entry_to_json(const struct slow_work_rq_entry *e, const char *queue)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "queue", json_object_new_string(queue));
        json_object_object_add(o, "thread", json_object_new_int(e->thread));
        json_object_object_add(o, "pid", json_object_new_int(e->pid));
        json_object_object_add(o, "item", json_object_new_int64((int64_t)(uintptr_t)e->item));
        json_object_object_add(o, "flags", json_object_new_int64((int64_t)e->flags));
        json_object_object_add(o, "age", json_object_new_double((double)e->age_ns / 1e9));
        json_object_object_add(o, "desc", json_object_new_string(e->desc));
        return o;
}

/* The rows of a queue's run queue stats shows at most besides the running ones. */
#define RQ_QUEUED_MAX 1000

/* The rows of the queue's run queue the client may see, onto list: 0, or -ENOMEM. */
static int add_rq(struct daemon *d, struct conn *c, struct queue *q, json_object *list)
{
        struct slow_work_rq_entry *rq;
        size_t n, i;

        if (slow_work_pool_rq_max(q->pool, RQ_QUEUED_MAX, &rq, &n) < 0)
                return -ENOMEM;
        for (i = 0; i < n; i++)
                if (requests_may_see_rq_entry(d, c, &rq[i]))
                        json_object_array_add(list, rq_entry_to_json(&rq[i], q->name));
        free(rq);
        return 0;
}

/* The queue's, or the sums over every queue (and the daemon's pause) without "queue". */
static void handle_stats(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        struct queue *q = NULL;
        struct pause *pause = &d->pause;
        struct slow_work_stats st;
        json_object *o, *list;
        char why[256];
        int e = 0;

        if (p->queue_opt.queue) {
                q = method_lookup_queue(d, "queue", p->queue_opt.queue, r);
                if (!q)
                        return;
                pause = &q->pause;
        }
        list = json_object_new_array();
        for (struct queue *each = q ? q : d->queues; e == 0 && each; each = q ? NULL : each->next)
                e = add_rq(d, c, each, list);
        if (e < 0) {
                json_object_put(list);
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        queues_stats(d, q, &st);
        o = json_object_new_object();
        if (q)
                json_object_object_add(o, "queue", json_object_new_string(q->name));
        json_object_object_add(o, "threads", json_object_new_int64(st.threads));
        json_object_object_add(o, "busy", json_object_new_int64(st.busy));
        json_object_object_add(o, "busy_very_slow", json_object_new_int64(st.busy_very_slow));
        json_object_object_add(o, "idle", json_object_new_int64(st.idle));
        json_object_object_add(o, "very_slow_cap", json_object_new_int64(st.very_slow_cap));
        json_object_object_add(o, "queued_slow", json_object_new_int64(st.queued_slow));
        json_object_object_add(o, "queued_very_slow", json_object_new_int64(st.queued_very_slow));
        json_object_object_add(o, "delayed", json_object_new_int64(st.delayed));
        json_object_object_add(o, "waiting_for_space",
                               json_object_new_int64(queues_waiting_for_space(d, q)));
        json_object_object_add(o, "waiting_for_turn",
                               json_object_new_int64(queues_waiting_for_turn(d, q)));
        json_object_object_add(o, "paused", json_object_new_boolean(pause_is_on(pause)));
        json_object_object_add(o, "items_run", json_object_new_int64((int64_t)st.items_run));
        json_object_object_add(
            o, "database_error",
            store_failing(d->store, why, sizeof(why)) ? json_object_new_string(why) : NULL);
        json_object_object_add(o, "rq", list);
        r->result = o;
}

const struct method daemon_methods[] = {
    {"ping", sw_no_params, NULL, handle_ping, false},
    {"version", sw_no_params, NULL, handle_version, false},
    {"settings.get", sw_queue_opt_params, NULL, handle_settings_get, false},
    {"settings.set", sw_settings_params, prefill_settings, handle_settings_set, false},
    {"stats", sw_queue_opt_params, NULL, handle_stats, false},
    {"reload", sw_no_params, NULL, handle_reload, false},
    {"reexec", sw_no_params, NULL, handle_reexec, false},
    {NULL, NULL, NULL, NULL, false},
};
