/* SPDX-License-Identifier: MIT */
/*
 * Per-user limits: max-queued-per-user and max-running-per-user over one set of jobs (the
 * daemon's; a queue could have a table of its own). For each owner: the live jobs, whose queued
 * ones a submit near the limit counts, and the bytes they keep (job_bytes(), each job's as it
 * was counted in, so that what goes out is what came in: max-jobs-per-user and
 * max-job-bytes-per-user over the daemon's table); the runs in progress, a slot taken on the pool
 * thread below the limit and given back on the loop when the run ends; and the runs held back over
 * it (pending), queued again, highest priority first, then oldest, as that user's runs end or the
 * limit is raised.
 * With fair share (a queue's table), no run starts that the table did not let go: a run to be
 * queued is held instead (and one that reached a pool thread without a grant, a delayed one), and
 * as threads free, the held run let go next is that
 * of the user with the fewest runs let go and not ended, the oldest job among equals (a user's
 * own in order of priority, then age); never more at once than the queue's threads (its very
 * slow ones within their cap), and never over max-running-per-user.
 * Loop thread only, but for users_take_run.
 */
#ifndef SLOWWORKD_USERS_H
#define SLOWWORKD_USERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define USERS_BUCKETS 256

struct job;
struct user;

struct users {
        struct user *buckets[USERS_BUCKETS];
        int64_t max_queued, max_running; /* atomic; 0: no limit */
        size_t link;                     /* where a job keeps its struct job_user_link */
        size_t listed;                   /* and its bool: its run held back on a user's list */
        size_t nheld;                    /* every user's runs held back */
        bool fair;                       /* atomic: fair share */
        size_t threads, vslow_cap;       /* fair share: the queue's threads, very slow ones */
        size_t granted, granted_vslow;   /* fair share: runs let go and not ended */
        const bool *stopping;            /* atomic: shutting down, nothing is released */
        /* A held run may start now: queue it. */
        void (*release)(void *data, struct job *job);
        void *data;
};

/* link: offsetof(struct job, the job_user_link this table uses); listed: of its flag. */
void users_init(struct users *u, size_t link, size_t listed, const bool *stopping,
                void (*release)(void *data, struct job *job), void *data);
/* Raised limits let held runs go, as many as there is room for now. */
void users_set_limits(struct users *u, int64_t max_queued, int64_t max_running);
int64_t users_max_queued(const struct users *u);
/* Fair share on or off, and the threads it fills; held runs that may go now go. */
void users_set_fair(struct users *u, bool fair, size_t threads, size_t vslow_cap);

/* A live job is counted under its owner, until users_remove. */
void users_add(struct users *u, struct job *job);
void users_remove(struct users *u, struct job *job);
/* The job's bytes changed (an edit): its owner's count follows. */
void users_resized(struct users *u, struct job *job);
/* The owner's live jobs, and the bytes they keep. */
size_t users_count(const struct users *u, uid_t owner);
int64_t users_bytes(const struct users *u, uid_t owner);
/* Whether the owner may have one more job queued, below max-queued-per-user; if not, how many
 * are: the owner's live jobs that are pending (queued, delayed, held back, due to retry) or
 * waiting for other jobs, not running, not idle. They are counted only when the owner has as
 * many live jobs as the limit. */
bool users_may_queue(const struct users *u, uid_t owner, int64_t *ret_queued);

/* A run about to be queued now: whether it may go to the pool. With fair share it is held,
 * unless it is let go at once; held already, it waits as it was (one run to come). */
bool users_admit(struct users *u, struct job *job);
/* Pool thread: a slot among its owner's runs, if that keeps them within max-running-per-user
 * and, with fair share, the run was let go, or whatever the limit (always: a run being
 * cancelled or stopped, which goes to its runner). Every slot taken is given back by
 * users_run_ended. */
bool users_take_run(struct users *u, struct job *job, bool always);
/* The job's run has ended: its slot goes back, and the owner's first held run (by priority,
 * then age) may go. */
void users_run_ended(struct users *u, struct job *job);
/* Its run did not get a slot (held is set): it waits, unless that was undone meanwhile
 * (users_drop) or there is room again. */
void users_hold(struct users *u, struct job *job);
/* A run let go by fair share that did not start (the gate held it back): its turn goes to
 * others, and it is held again when it is queued again. */
void users_return_grant(struct users *u, struct job *job);
/* The job's run no longer waits (a cancel): whether it did, or was about to (a grant it had
 * not used goes back). */
bool users_drop(struct users *u, struct job *job);
/* Drops every held run (they stay pending on disk). */
void users_close(struct users *u);

#endif
