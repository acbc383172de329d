/* SPDX-License-Identifier: MIT */
/* The daemon-level methods: ping, version, settings.get, settings.set and reload (admins
 * only), stats. */
#include <stdint.h>
#include <stdlib.h>

#include "config.h"
#include "jobs/pause.h"
#include "jobs/registry.h"
#include "jobs/settings.h"
#include "methods/method.h"
#include "server/conn.h"
#include "store/store.h"

static void handle_ping(struct registry *reg, struct conn *c, union params *p, struct reply *r)
{
        r->result = json_object_new_object();
        json_object_object_add(r->result, "pong", json_object_new_boolean(1));
        json_object_object_add(r->result, "instance",
                               json_object_new_string(reg->shared.run.system ? "system" : "user"));
}

static void handle_version(struct registry *reg, struct conn *c, union params *p,
                           struct reply *r)
{
        r->result = json_object_new_object();
        json_object_object_add(r->result, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(r->result, "protocol", json_object_new_int(SW_PROTO_VERSION));
}

static void handle_settings_get(struct registry *reg, struct conn *c, union params *p,
                                struct reply *r)
{
        r->result = sw_settings_to_json(&reg->settings);
}

static void prefill_settings(struct registry *reg, union params *p)
{
        p->settings = reg->settings;
}

static void handle_settings_set(struct registry *reg, struct conn *c, union params *p,
                                struct reply *r)
{
        struct sw_settings old;
        int e;

        if (!conn_is_admin(c)) {
                reply_error(r, SW_E_PERMISSION, "permission denied: only admins change settings");
                return;
        }
        old = reg->settings;
        e = registry_apply_settings(reg, &p->settings);
        if (e < 0) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "min-threads must not exceed max-threads; nothing was changed");
                return;
        }
        if (!p->settings.runtime)
                registry_keep_settings(reg, &old);
        r->result = sw_settings_to_json(&reg->settings);
}

static void handle_reload(struct registry *reg, struct conn *c, union params *p, struct reply *r)
{
        if (!conn_is_admin(c)) {
                reply_error(r, SW_E_PERMISSION,
                            "permission denied: only admins reload the configuration");
                return;
        }
        if (reg->reload(reg->reload_data, c, r->id) < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        r->deferred = true;
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

static void handle_stats(struct registry *reg, struct conn *c, union params *p, struct reply *r)
{
        struct slow_work_rq_entry *rq;
        struct slow_work_stats st;
        json_object *o, *list;
        char why[256];
        size_t n, i;

        if (slow_work_pool_rq(reg->pool, &rq, &n) < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        slow_work_pool_stats(reg->pool, &st);
        o = json_object_new_object();
        json_object_object_add(o, "threads", json_object_new_int64(st.threads));
        json_object_object_add(o, "busy", json_object_new_int64(st.busy));
        json_object_object_add(o, "busy_very_slow", json_object_new_int64(st.busy_very_slow));
        json_object_object_add(o, "idle", json_object_new_int64(st.idle));
        json_object_object_add(o, "very_slow_cap", json_object_new_int64(st.very_slow_cap));
        json_object_object_add(o, "queued_slow", json_object_new_int64(st.queued_slow));
        json_object_object_add(o, "queued_very_slow", json_object_new_int64(st.queued_very_slow));
        json_object_object_add(o, "delayed", json_object_new_int64(st.delayed));
        json_object_object_add(
            o, "waiting_for_space",
            json_object_new_int64(pause_is_on(&reg->pause) ? 0 : (int64_t)reg->gate.n));
        json_object_object_add(o, "waiting_for_turn",
                               json_object_new_int64((int64_t)reg->users.nheld));
        json_object_object_add(o, "paused", json_object_new_boolean(pause_is_on(&reg->pause)));
        json_object_object_add(o, "items_run", json_object_new_int64((int64_t)st.items_run));
        json_object_object_add(
            o, "database_error",
            store_failing(reg->store, why, sizeof(why)) ? json_object_new_string(why) : NULL);
        list = json_object_new_array();
        for (i = 0; i < n; i++)
                if (registry_may_see_rq_entry(reg, c, &rq[i]))
                        json_object_array_add(list, rq_entry_to_json(&rq[i]));
        json_object_object_add(o, "rq", list);
        free(rq);
        r->result = o;
}

const struct method daemon_methods[] = {
    {"ping", sw_no_params, NULL, handle_ping},
    {"version", sw_no_params, NULL, handle_version},
    {"settings.get", sw_no_params, NULL, handle_settings_get},
    {"settings.set", sw_settings_params, prefill_settings, handle_settings_set},
    {"stats", sw_no_params, NULL, handle_stats},
    {"reload", sw_no_params, NULL, handle_reload},
    {NULL, NULL, NULL, NULL},
};
