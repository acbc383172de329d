/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs/record.h"
#include "jobs/registry.h"
#include "jobs/restore.h"
#include "store/run-record.h"
#include "store/store.h"
#include "util/log.h"

static void restore_run(void *data, struct run_record *rec)
{
        struct registry *reg = data;

        history_add(&reg->history, rec, (size_t)reg->settings.history_limit);
}

/* The job a row describes, made the way its submit made it. */
static int job_from_row(struct registry *reg, const struct store_job_row *row, struct job **ret)
{
        struct sw_submit_params p = {0};
        json_object *o = json_tokener_parse(row->payload);
        char err[256] = "not JSON";
        int r = o ? sw_params_parse(o, sw_submit_params, &p, err, sizeof(err)) : -EBADMSG;

        if (r == 0) {
                /* Borrowed for job_new(), given back before the params are cleared. */
                p.class_name = row->very_slow ? (char *)"very-slow" : NULL;
                p.env = row->env;
                p.key = (char *)row->key;
                p.name = (char *)row->name;
                p.persist = row->persist;
                r = job_new(&reg->shared, row->owner, &p, ret, err, sizeof(err));
                p.class_name = p.key = p.name = NULL;
                p.env = NULL;
        }
        sw_params_clear(sw_submit_params, &p);
        json_object_put(o);
        if (r)
                log_error("Job %lld in the state database cannot be restored (%s); it stays "
                          "there",
                          (long long)row->id, err);
        return r ? -EINVAL : 0;
}

/* A run the daemon's end cut: recorded interrupted, and queued once more (not a plugin's:
 * one that crashed the daemon must not do it again on its own; it waits, held, for an enqueue). */
static void restore_interrupted(struct registry *reg, struct job *job)
{
        const char *extra;

        job->runs_ended--;
        /* What the cut run wrote stays readable, and goes with its record. */
        registry_run_ended(reg, job,
                           record_new_ended(job, job->runs_started, "interrupted", true));
        if (!job->plugin_entry) {
                registry_enqueue(reg, job, 0, &extra);
                return;
        }
        if (!job->persist) {
                job->persist = true;
                job->handles++;
        }
        registry_save_state(reg, job, NULL);
}

/* Whether the last daemon died while the job's plugin ran (its row may still say pending). */
static bool crashed_in(struct registry *reg, int64_t id)
{
        for (size_t i = 0; i < reg->ncrashed; i++)
                if (reg->crashed[i] == id)
                        return true;
        return false;
}

static void restore_job(void *data, const struct store_job_row *row)
{
        struct registry *reg = data;
        const char *extra;
        struct job *job;
        double now = (double)time(NULL);

        if (job_from_row(reg, row, &job) < 0)
                return;
        job->id = row->id;
        if (job->env && !job->env->store_id)
                job->env->store_id = row->env_id;
        job->qorder = row->qorder;
        if (row->qorder > reg->next_qorder)
                reg->next_qorder = row->qorder;
        job->runs_started = job->runs_ended = row->runs;
        if (history_last(&reg->history, job->id))
                job->last = run_record_dup(history_last(&reg->history, job->id));
        registry_add(reg, job);
        if (strcmp(row->state, "running") != 0 && crashed_in(reg, job->id)) {
                /* Its start never reached the database: count that run too. */
                job->runs_started++;
                job->runs_ended++;
                restore_interrupted(reg, job);
        } else if (strcmp(row->state, "running") == 0)
                restore_interrupted(reg, job);
        else if (strcmp(row->state, "pending") == 0)
                registry_enqueue(reg, job, row->due > now ? row->due - now : 0, &extra);
        registry_check_idle(reg, job);
}

int restore(struct registry *reg)
{
        int r;

        reg->next_id = store_load_next_id(reg->store);
        r = store_load_runs(reg->store, reg->settings.history_limit, restore_run, reg);
        if (r == 0)
                r = store_load_jobs(reg->store, restore_job, reg);
        free(reg->crashed); /* the start's alone */
        reg->crashed = NULL;
        reg->ncrashed = 0;
        if (r == 0 && reg->njobs > 0)
                log_info("Restored %zu jobs from the state database", reg->njobs);
        return r;
}
