/* SPDX-License-Identifier: MIT */
/* A job's waits for other jobs (after, after_any) as the daemon sees them. Loop thread only. */
#ifndef SLOWWORKD_WAITS_H
#define SLOWWORKD_WAITS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct daemon;
struct job;

/* The daemon's deps are told what to do when a waiting job's jobs have all ended (it is queued,
 * or ends dependency-failed when an `after` one did otherwise than succeed) and when what a job
 * waits for changed (its row is written). After daemon_init, before jobs are restored. */
void waits_init(struct daemon *d);
/* Whether a job of uid may wait for the jobs ids name (after, after_any), job (NULL for a new
 * one) among them: 0, or -ENOENT (no such job), -EPERM (another user's) or -ELOOP (a circle),
 * with err naming the param and the job. */
int waits_check(struct daemon *d, uid_t uid, const struct job *job, const char *param,
                const int64_t *ids, char *err, size_t errlen);
/* The job waits for those of the ids that have not ended (added to what it waits for already):
 * 0 when none is left (it may be queued), 1 when it waits, 2 when an `after` job has ended
 * otherwise than succeeded (it ended dependency-failed), -ENOMEM. */
int waits_add(struct daemon *d, struct job *job, const int64_t *after, const int64_t *after_any);

#endif
