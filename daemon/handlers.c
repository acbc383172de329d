/* SPDX-License-Identifier: MIT */
/* The daemon-level methods: ping, version, settings.get, settings.set (admins only), stats. */
#include <stdint.h>
#include <stdlib.h>

#include "config.h"
#include "conn.h"
#include "handlers.h"
#include "jobs.h"
#include "manager.h"
#include "store.h"

void handle_ping(struct conn *c, union params *p, struct reply *r)
{
        r->result = json_object_new_object();
        json_object_object_add(r->result, "pong", json_object_new_boolean(1));
}

void handle_version(struct conn *c, union params *p, struct reply *r)
{
        r->result = json_object_new_object();
        json_object_object_add(r->result, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(r->result, "protocol", json_object_new_int(SW_PROTO_VERSION));
}

void handle_settings_get(struct conn *c, union params *p, struct reply *r)
{
        r->result = sw_settings_to_json(&c->m->settings);
}

void prefill_settings(struct conn *c, union params *p)
{
        p->settings = c->m->settings;
}

void handle_settings_set(struct conn *c, union params *p, struct reply *r)
{
        struct sw_settings old;
        int e;

        if (!conn_is_admin(c)) {
                reply_error(r, SW_E_PERMISSION, "permission denied: only admins change settings");
                return;
        }
        old = c->m->settings;
        e = manager_apply_settings(c->m, &p->settings);
        if (e < 0) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "min-threads must not exceed max-threads; nothing was changed");
                return;
        }
        if (!p->settings.runtime)
                manager_persist_settings(c->m, &old);
        r->result = sw_settings_to_json(&c->m->settings);
}

static json_object *rq_entry_to_json(const struct slow_work_rq_entry *e)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "thread", json_object_new_int(e->thread));
        json_object_object_add(o, "pid", json_object_new_int(e->pid));
        json_object_object_add(o, "item", json_object_new_int64((int64_t)(uintptr_t)e->item));
        json_object_object_add(o, "flags", json_object_new_int64((int64_t)e->flags));
        json_object_object_add(o, "age", json_object_new_double((double)e->age_ns / 1e9));
        json_object_object_add(o, "desc", json_object_new_string(e->desc));
        return o;
}

void handle_stats(struct conn *c, union params *p, struct reply *r)
{
        struct slow_work_rq_entry *rq;
        struct slow_work_stats st;
        json_object *o, *list;
        char why[256];
        size_t n, i;

        if (slow_work_pool_rq(c->m->pool, &rq, &n) < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        slow_work_pool_stats(c->m->pool, &st);
        o = json_object_new_object();
        json_object_object_add(o, "threads", json_object_new_int64(st.threads));
        json_object_object_add(o, "busy", json_object_new_int64(st.busy));
        json_object_object_add(o, "busy_very_slow", json_object_new_int64(st.busy_very_slow));
        json_object_object_add(o, "idle", json_object_new_int64(st.idle));
        json_object_object_add(o, "very_slow_cap", json_object_new_int64(st.very_slow_cap));
        json_object_object_add(o, "queued_slow", json_object_new_int64(st.queued_slow));
        json_object_object_add(o, "queued_very_slow", json_object_new_int64(st.queued_very_slow));
        json_object_object_add(o, "delayed", json_object_new_int64(st.delayed));
        json_object_object_add(o, "items_run", json_object_new_int64((int64_t)st.items_run));
        json_object_object_add(
            o, "database_error",
            store_failing(c->m->store, why, sizeof(why)) ? json_object_new_string(why) : NULL);
        list = json_object_new_array();
        for (i = 0; i < n; i++)
                if (jobs_may_see_rq_entry(c, &rq[i]))
                        json_object_array_add(list, rq_entry_to_json(&rq[i]));
        json_object_object_add(o, "rq", list);
        free(rq);
        r->result = o;
}
