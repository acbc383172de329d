/* SPDX-License-Identifier: MIT */
/* The live jobs of a manager, and the job methods. All on the loop thread. */
#ifndef SLOWWORKD_JOBS_H
#define SLOWWORKD_JOBS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "job.h"

struct manager;
struct conn;

#define JOBS_BUCKETS 4096

struct job *jobs_find(struct manager *m, int64_t id);
/* Whether the client may see and act on what this user owns: the owner, and admins. */
bool jobs_may_touch(struct conn *c, uid_t owner);
/* Whether the client may see a row of the pool's run queue: one of its own jobs, or any for an
 * admin. */
bool jobs_may_see_rq_entry(struct conn *c, const struct slow_work_rq_entry *e);
void jobs_run_ended(struct manager *m, struct job *job, struct run_record *rec);
/* A job neither pending nor running answers its waiters, and leaves the tables unless a handle
 * keeps it. */
void jobs_check_idle(struct manager *m, struct job *job);
/* A connection goes: its handles go with it. */
void jobs_drop_handles(struct manager *m, struct conn *c);
/* Tells subscribed clients about a job: its state, and the outcome of a run that ended. */
void jobs_notify(struct manager *m, struct job *job, const char *state,
                 const struct run_record *ended);
/* Start: the jobs and the history in the state database, queued again as they were. */
int jobs_restore(struct manager *m);
/* Shutdown: ask every running job to stop. */
void jobs_interrupt_all(struct manager *m);
void jobs_free_all(struct manager *m);

#endif
