/* SPDX-License-Identifier: MIT */
/*
 * Runs that wait for free space: a user's job whose run found the state folder's file system
 * below min-free-space did not start (item.c) and stays pending here. Every second the gate looks
 * again; once there is room (or min-free-space is lowered) they are queued again, in the order
 * they came. Loop thread only.
 */
#ifndef SLOWWORKD_SPACE_GATE_H
#define SLOWWORKD_SPACE_GATE_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct job;
struct run_context;

struct space_gate {
        uv_timer_t timer;
        const struct run_context *ctx; /* the logs folder, min-free-space, stopping */
        struct job **jobs;             /* each a reference, oldest first */
        size_t n, size;
        /* A job may run again (its space_held is clear): queue it. */
        void (*release)(void *data, struct job *job);
        void *data;
};

int space_gate_init(struct space_gate *g, uv_loop_t *loop, const struct run_context *ctx,
                    void (*release)(void *data, struct job *job), void *data);
/* The job's run did not start for want of space (EVENT_HELD): it waits, unless that was undone
 * meanwhile (space_gate_drop) or it waits already. */
void space_gate_hold(struct space_gate *g, struct job *job);
/* The job no longer waits (a cancel): whether it did, or was about to. */
bool space_gate_drop(struct space_gate *g, struct job *job);
/* Drops every waiting job (they stay pending on disk) and closes the timer. */
void space_gate_close(struct space_gate *g);

#endif
