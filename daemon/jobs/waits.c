/* SPDX-License-Identifier: MIT */
/* A job's waits for other jobs (after, after_any) as the registry sees them: which jobs a submit
 * may name, which have ended and how, and what a job does once they all have (deps.c keeps who
 * waits for whom). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/lifecycle.h"
#include "jobs/registry.h"
#include "jobs/waits.h"
#include "store/run-record.h"
#include "util/log.h"

/* A waiting job's jobs have ended: it runs, or ends without running. */
static void resolved(void *data, struct job *job, bool failed)
{
        struct registry *reg = data;
        const char *extra;

        if (failed) {
                lifecycle_ended_before_start(reg, job, "dependency-failed");
                lifecycle_check_idle(reg, job);
                return;
        }
        if (registry_enqueue(reg, job, 0, &extra) < 0)
                log_warning("Job %lld: cannot queue it after the jobs it waited for",
                            (long long)job->id);
        registry_save_state(reg, job, NULL);
        registry_notify(reg, job, "pending", NULL);
}

static void changed(void *data, struct job *job)
{
        registry_save_state(data, job, NULL);
}

void waits_init(struct registry *reg)
{
        deps_init(&reg->deps, resolved, changed, reg);
}

/* How a job the submit names has ended (NULL: not yet), and whose it is: 0 or -ENOENT. */
static int dep_outcome(struct registry *reg, int64_t id, const char **ret_outcome, uid_t *ret_owner)
{
        struct job *job = registry_find(reg, id);
        const struct run_record *rec;

        if (job) {
                *ret_owner = job->owner;
                *ret_outcome = job_idle(job) && job->last ? job->last->outcome : NULL;
                return 0;
        }
        rec = registry_last_run(reg, id);
        if (rec) {
                *ret_owner = rec->owner;
                *ret_outcome = rec->outcome;
                return 0;
        }
        for (size_t i = 0; i < reg->nlive_elsewhere; i++)
                if (reg->live_elsewhere[i].id == id) {
                        *ret_owner = reg->live_elsewhere[i].owner;
                        *ret_outcome = NULL;
                        return 0;
                }
        return -ENOENT;
}

static struct job *find_job(void *data, int64_t id)
{
        return registry_find(data, id);
}

int waits_check(struct registry *reg, uid_t uid, const struct job *job, const char *param,
                const int64_t *ids, char *err, size_t errlen)
{
        for (const int64_t *id = ids; id && *id; id++) {
                const char *outcome;
                uid_t owner;

                if (job && *id == job->id) {
                        snprintf(err, errlen, "\"%s\": job %lld cannot wait for itself", param,
                                 (long long)*id);
                        return -ELOOP;
                }
                if (dep_outcome(reg, *id, &outcome, &owner) < 0) {
                        snprintf(err, errlen, "\"%s\": no job %lld", param, (long long)*id);
                        return -ENOENT;
                }
                if (owner != uid) {
                        snprintf(err, errlen, "\"%s\": job %lld is not yours", param,
                                 (long long)*id);
                        return -EPERM;
                }
        }
        if (job && deps_cycle(&reg->deps, job, ids, find_job, reg)) {
                snprintf(err, errlen, "\"%s\": job %lld would wait for itself (a circle)", param,
                         (long long)job->id);
                return -ELOOP;
        }
        return 0;
}

/* The ids of list that have not ended, added to *to: -ENOMEM, else whether an `after` one
 * (must_succeed) ended otherwise than succeeded. */
static int add_unended(struct registry *reg, int64_t **to, const int64_t *list, bool must_succeed)
{
        size_t n = ids_count(*to);
        int64_t *ids = realloc(*to, (n + ids_count(list) + 1) * sizeof(*ids));
        bool failed = false;

        if (!ids)
                return -ENOMEM;
        *to = ids;
        for (; list && *list; list++) {
                const char *outcome;
                uid_t owner;

                if (dep_outcome(reg, *list, &outcome, &owner) < 0 || !outcome)
                        ids[n++] = *list;
                else if (must_succeed && strcmp(outcome, "succeeded") != 0)
                        failed = true;
        }
        ids[n] = 0;
        return failed;
}

int waits_add(struct registry *reg, struct job *job, const int64_t *after, const int64_t *after_any)
{
        int failed = add_unended(reg, &job->after, after, true), r;

        if (failed < 0 || (r = add_unended(reg, &job->after_any, after_any, false)) < 0)
                return -ENOMEM;
        if (failed) {
                deps_drop(&reg->deps, job);
                free(job->after);
                free(job->after_any);
                job->after = job->after_any = NULL;
                lifecycle_ended_before_start(reg, job, "dependency-failed");
                return 2;
        }
        if (!ids_count(job->after) && !ids_count(job->after_any))
                return 0;
        r = deps_wait(&reg->deps, job);
        return r < 0 ? r : 1;
}
