/* SPDX-License-Identifier: MIT */
/*
 * Runs held back from starting: while the daemon is paused, and a user's while the state
 * folder's file system is below min-free-space (item.c decides, at the start of a run). They stay
 * pending here, in the order they came, and go back to their places in their pools at once on
 * resume, or when a check every second finds room again (and the daemon is not paused).
 * A pool thread gives a run back before the loop has it here: from then (gate_coming) until it is
 * back in its pool, no run of its queue starts (each is held too, and comes here behind it), and
 * the runs that go back are counted until the last of them is back; a run that a thread took
 * before one ahead of it was back is held (slow_work_is_first, item.c). So however a resume falls
 * among the holds, no run starts before one queued ahead of it. Loop thread only, but for
 * gate_coming and gate_holds_back.
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

/* Whether a run of the job must wait: paused, a run of its queue on its way to the gate or on it
 * (not for space alone), or a user's (not root's, who may run what frees it) while space is low.
 * Any thread. */
bool gate_holds_back(const struct run_context *ctx, const struct job *job);
/* A pool thread holds the job's run back for the gate (EVENT_HELD, EVENT_HELD_KEY, each of which
 * comes to gate_hold): before it tells the loop. Any thread. */
void gate_coming(struct job *job);

int gate_init(struct gate *g, uv_loop_t *loop, const struct run_context *ctx,
              void (*release)(void *data, struct job *job), void *data);
/* The job's run did not start (EVENT_HELD, EVENT_HELD_KEY: after gate_coming): it waits, unless
 * that was undone meanwhile (gate_drop) or it waits already; once no other run of its queue is
 * on its way, those that nothing holds back any more go, in order. */
void gate_hold(struct gate *g, struct job *job);
/* The job no longer waits (a cancel): whether it did, or was about to. */
bool gate_drop(struct gate *g, struct job *job);
/* Resume: every waiting run no pause (the daemon's, its queue's) holds is queued again now, in
 * order (one still short of space is held again by its start); the others stay. */
void gate_open(struct gate *g);
/* Drops every waiting job (they stay pending on disk) and closes the timer. */
void gate_close(struct gate *g);

#endif
