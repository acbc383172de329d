/* SPDX-License-Identifier: MIT */
/*
 * A named queue: a slow-work pool of its own, with its own threads, very slow share and idle
 * timeout, and a pause of its own. The daemon keeps the list (jobs/queues.c); a job belongs to
 * one queue from its submit on. Loop thread, but for the pause's counters.
 */
#ifndef SLOWWORKD_QUEUE_H
#define SLOWWORKD_QUEUE_H

#include <json-c/json.h>
#include <stddef.h>

#include "jobs/pause.h"
#include "jobs/users.h"
#include "methods.h"
#include "slowwork.h"

struct job;
struct store;

struct queue {
        struct queue *next;
        char *name;
        struct slow_work_pool *pool;
        struct sw_queue_settings settings; /* in force */
        json_object *kept; /* what queue.add and settings.set gave it, as the state database keeps it */
        struct pause pause;
        struct users users; /* its per-user limits, over its own jobs */
        size_t njobs;       /* its live jobs */
        bool away;          /* atomic: node-queues leaves it out: its runs go to other nodes */
        /* atomic: runs its pool gave back for the gate, not yet on it; on it, for a pause or
         * behind such a run (not for space alone): while any is, its pool starts none (gate.h) */
        unsigned gate_coming, gate_waiting;
};

/* Starts its pool: 0, or -errno. Its pause is under over (the daemon's); stopping and release
 * are its per-user limits' (users_init). */
int queue_new(const char *name, const struct sw_queue_settings *s, struct store *store,
              struct pause *over, const bool *stopping,
              void (*release)(void *data, struct job *job), void *data, struct queue **ret);
/* All or nothing: 0, or -EINVAL with nothing changed. */
int queue_configure(struct queue *q, const struct sw_queue_settings *s);
/* Fair share among the users of its jobs, over its threads as they are set now. */
void queue_set_fair(struct queue *q, bool fair);
/* Frees its pool, waiting for the runs in progress to end: any thread but the loop's. */
void queue_free_pool(struct queue *q);
/* Then the rest (the pool too, if still there). Accepts NULL. */
void queue_free(struct queue *q);

#endif
