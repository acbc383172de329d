/* SPDX-License-Identifier: MIT */
/*
 * A job's on-end command (its "on_end", else the daemon's on-end setting), run after each of its
 * runs as the job's owner, in its cwd, with its environment and the run's SLOWWORK_* variables,
 * contained and limited like its runs. Each is an item of a small pool of its own, so that a
 * notification waits neither for the job (whose run is over) nor for the queues' backlog. Its
 * failure is logged, never retried, and changes nothing of the job.
 */
#ifndef SLOWWORKD_ON_END_H
#define SLOWWORKD_ON_END_H

#include <pthread.h>

#include "slowwork.h"

struct job;
struct on_end_call;
struct run_context;
struct run_record;

struct on_end {
        struct slow_work_pool *pool; /* NULL: none yet, or freed */
        const struct run_context *ctx;
        pthread_mutex_t lock;        /* over running */
        struct on_end_call *running; /* the commands in progress, kicked at a stop or a fence */
};

/* Starts its pool: 0, or -errno. */
int on_end_init(struct on_end *oe, const struct run_context *ctx);
/* Loop: the job's run (rec) ended; command is the job's on-end command or the daemon's (not
 * empty). Queued, unless the daemon is stopping (then said in the log). */
void on_end_after(struct on_end *oe, const struct job *job, const struct run_record *rec,
                  const char *command);
/* Whether a command runs, or waits for a thread. */
bool on_end_busy(struct on_end *oe);
/* The commands in progress look at why they should stop (a stop's interrupt, a fence). */
void on_end_kick(struct on_end *oe);
/* Frees the pool, waiting for the commands in progress: any thread but the loop's. */
void on_end_free_pool(struct on_end *oe);
/* Then the rest (the pool too, if still there). */
void on_end_close(struct on_end *oe);

#endif
