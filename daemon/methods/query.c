/* SPDX-License-Identifier: MIT */
/* status (of a job, or of the daemon), list and subscribe. */
#include <stdlib.h>
#include <unistd.h>

#include "config.h"
#include "jobs/registry.h"
#include "methods/method.h"
#include "server/conn.h"
#include "store/run-record.h"

/* A job that is gone: idle for good, its last run from the history. */
static json_object *status_from_history(const struct run_record *rec, int64_t id)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_int64(id));
        json_object_object_add(o, "class",
                               json_object_new_string(rec->very_slow ? "very-slow" : "slow"));
        json_object_object_add(o, "state", json_object_new_string("idle"));
        json_object_object_add(o, "live", json_object_new_boolean(0));
        json_object_object_add(o, "owner", json_object_new_int64(rec->owner));
        json_object_object_add(o, "refs", json_object_new_int(0));
        json_object_object_add(o, "runs", json_object_new_int64(rec->run));
        json_object_object_add(o, "command", json_object_new_string(rec->summary));
        json_object_object_add(o, "last", run_record_to_json(rec));
        return o;
}

static void handle_status(struct registry *reg, struct conn *c, union params *params,
                          struct reply *r)
{
        const struct run_record *rec;
        struct slow_work_stats st;
        struct job *job;
        json_object *q;

        if (params->id.id) {
                job = registry_find(reg, params->id.id);
                if (job && !registry_may_touch(c, job->owner)) {
                        reply_error(r, SW_E_PERMISSION, "job %lld is not yours",
                                    (long long)job->id);
                        return;
                }
                if (job) {
                        r->result = job_to_json(job);
                        return;
                }
                rec = history_last(&reg->history, params->id.id);
                if (!rec)
                        reply_error(r, SW_E_NOT_FOUND, "no job %lld", (long long)params->id.id);
                else if (!registry_may_touch(c, rec->owner))
                        reply_error(r, SW_E_PERMISSION, "job %lld is not yours",
                                    (long long)params->id.id);
                else
                        r->result = status_from_history(rec, params->id.id);
                return;
        }
        slow_work_pool_stats(reg->pool, &st);
        r->result = json_object_new_object();
        json_object_object_add(r->result, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(r->result, "pid", json_object_new_int((int)getpid()));
        json_object_object_add(r->result, "threads", json_object_new_int64(st.threads));
        json_object_object_add(r->result, "busy", json_object_new_int64(st.busy));
        q = json_object_new_object();
        json_object_object_add(q, "slow", json_object_new_int64(st.queued_slow));
        json_object_object_add(q, "very-slow", json_object_new_int64(st.queued_very_slow));
        json_object_object_add(r->result, "queued", q);
        json_object_object_add(r->result, "items", json_object_new_int64((int64_t)reg->njobs));
        json_object_object_add(r->result, "connections", json_object_new_int64(c->clients->n));
}

static int by_id(const void *a, const void *b)
{
        int64_t x = (*(struct job *const *)a)->id, y = (*(struct job *const *)b)->id;

        return x < y ? -1 : x > y;
}

static void handle_list(struct registry *reg, struct conn *c, union params *params,
                        struct reply *r)
{
        struct job **all = malloc((reg->njobs + 1) * sizeof(*all)), *job;
        json_object *items;
        size_t n = 0, i;

        if (!all) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        for (i = 0; i < REGISTRY_BUCKETS; i++)
                for (job = reg->by_id[i]; job; job = job->hnext)
                        if (registry_may_touch(c, job->owner))
                                all[n++] = job;
        qsort(all, n, sizeof(*all), by_id);
        items = json_object_new_array_ext((int)n);
        for (i = 0; i < n; i++)
                json_object_array_add(items, job_to_json(all[i]));
        free(all);
        r->result = json_object_new_object();
        json_object_object_add(r->result, "items", items);
}

static void handle_subscribe(struct registry *reg, struct conn *c, union params *params,
                             struct reply *r)
{
        if (registry_subscribe(reg, c) < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        r->result = json_object_new_object();
        json_object_object_add(r->result, "subscribed", json_object_new_boolean(1));
}

const struct method query_methods[] = {
    {"status", sw_status_params, NULL, handle_status},
    {"list", sw_no_params, NULL, handle_list},
    {"subscribe", sw_no_params, NULL, handle_subscribe},
    {NULL, NULL, NULL, NULL},
};
