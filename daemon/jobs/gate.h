/* SPDX-License-Identifier: MIT */
/*
 * Runs held back from starting: while the daemon is paused, and a user's while the state
 * folder's file system is below min-free-space (item.c decides, at the start of a run). They stay
 * pending here, in the order they came, and are queued again at once on resume, or when a check
 * every second finds room again (and the daemon is not paused). Loop thread only.
 */
#ifndef SLOWWORKD_GATE_H
#define SLOWWORKD_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct job;
struct run_context;

struct gate {
        uv_timer_t timer;
        const struct run_context *ctx; /* the logs folder, min-free-space, paused, stopping */
        struct job **jobs;             /* each a reference, oldest first */
        size_t n, size;
        /* A job may run again (its held is clear): queue it. */
        void (*release)(void *data, struct job *job);
        void *data;
};

/* Whether a run of the job must wait: paused, or a user's (not root's, who may run what frees
 * it) while space is low. Any thread. */
bool gate_holds_back(const struct run_context *ctx, const struct job *job);

int gate_init(struct gate *g, uv_loop_t *loop, const struct run_context *ctx,
              void (*release)(void *data, struct job *job), void *data);
/* The job's run did not start (EVENT_HELD): it waits, unless that was undone meanwhile
 * (gate_drop) or it waits already. */
void gate_hold(struct gate *g, struct job *job);
/* The job no longer waits (a cancel): whether it did, or was about to. */
bool gate_drop(struct gate *g, struct job *job);
/* Resume: every waiting run no pause (the daemon's, its queue's) holds is queued again now, in
 * order (one still short of space is held again by its start); the others stay. */
void gate_open(struct gate *g);
/* Drops every waiting job (they stay pending on disk) and closes the timer. */
void gate_close(struct gate *g);

#endif
