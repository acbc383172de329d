/* SPDX-License-Identifier: MIT */
/* A job's waits for other jobs (after, after_any) as the daemon sees them: which jobs a submit
 * may name, which have ended and how, and what a job does once they all have (deps.c keeps who
 * waits for whom). */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/daemon.h"
#include "jobs/lifecycle.h"
#include "jobs/waits.h"
#include "store/run-record.h"
#include "util/log.h"

/* A waiting job's jobs have ended: it runs, or ends without running. */
static void resolved(void *data, struct job *job, bool failed)
{
        struct daemon *d = data;
        const char *extra;

        if (failed) {
                lifecycle_ended_before_start(d, job, "dependency-failed");
                lifecycle_check_idle(d, job);
                return;
        }
        if (daemon_enqueue(d, job, 0, &extra) < 0)
                log_warning("Job %lld: cannot queue it after the jobs it waited for",
                            (long long)job->id);
        daemon_save_state(d, job, NULL);
        daemon_notify(d, job, "pending", NULL);
}

static void changed(void *data, struct job *job)
{
        daemon_save_state(data, job, NULL);
}

void waits_init(struct daemon *d)
{
        deps_init(&d->deps, resolved, changed, d);
}

/* How a job the submit names has ended (NULL: not yet), and whose it is: 0 or -ENOENT. */
static int dep_outcome(struct daemon *d, int64_t id, const char **ret_outcome, uid_t *ret_owner)
{
        struct job *job = registry_find(&d->registry, id);
        const struct run_record *rec;

        if (job) {
                *ret_owner = job->owner;
                *ret_outcome = job_idle(job) && job->last ? job->last->outcome : NULL;
                return 0;
        }
        rec = daemon_last_run(d, id);
        if (rec) {
                *ret_owner = rec->owner;
                *ret_outcome = rec->outcome;
                return 0;
        }
        for (size_t i = 0; i < d->nlive_elsewhere; i++)
                if (d->live_elsewhere[i].id == id) {
                        *ret_owner = d->live_elsewhere[i].owner;
                        *ret_outcome = NULL;
                        return 0;
                }
        return -ENOENT;
}

static struct job *find_job(void *data, int64_t id)
{
        struct daemon *d = data;

        return registry_find(&d->registry, id);
}

int waits_check(struct daemon *d, uid_t uid, const struct job *job, const char *param,
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
                if (dep_outcome(d, *id, &outcome, &owner) < 0) {
                        snprintf(err, errlen, "\"%s\": no job %lld", param, (long long)*id);
                        return -ENOENT;
                }
                if (owner != uid) {
                        snprintf(err, errlen, "\"%s\": job %lld is not yours", param,
                                 (long long)*id);
                        return -EPERM;
                }
        }
        if (job && deps_cycle(&d->deps, job, ids, find_job, d)) {
                snprintf(err, errlen, "\"%s\": job %lld would wait for itself (a circle)", param,
                         (long long)job->id);
                return -ELOOP;
        }
        return 0;
}

/* The ids of list that have not ended, added to *to: -ENOMEM, else whether an `after` one
 * (must_succeed) ended otherwise than succeeded. */
static int add_unended(struct daemon *d, int64_t **to, const int64_t *list, bool must_succeed)
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

                if (dep_outcome(d, *list, &outcome, &owner) < 0 || !outcome)
                        ids[n++] = *list;
                else if (must_succeed && strcmp(outcome, "succeeded") != 0)
                        failed = true;
        }
        ids[n] = 0;
        return failed;
}

int waits_add(struct daemon *d, struct job *job, const int64_t *after, const int64_t *after_any)
{
        int failed = add_unended(d, &job->after, after, true), r;

        if (failed < 0 || (r = add_unended(d, &job->after_any, after_any, false)) < 0)
                return -ENOMEM;
        if (failed) {
                deps_drop(&d->deps, job);
                free(job->after);
                free(job->after_any);
                job->after = job->after_any = NULL;
                lifecycle_ended_before_start(d, job, "dependency-failed");
                return 2;
        }
        if (!ids_count(job->after) && !ids_count(job->after_any))
                return 0;
        r = deps_wait(&d->deps, job);
        return r < 0 ? r : 1;
}
