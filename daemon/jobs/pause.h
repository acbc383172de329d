/* SPDX-License-Identifier: MIT */
/*
 * Pause and resume: while the daemon is paused no new run starts (item.c holds them on the gate,
 * pending) and running ones go on. The state is kept in the state database, among the kept
 * settings under a name no setting has, so that a restart or a crash keeps it. A pause with drain
 * is answered once no run is in progress. Loop thread only.
 */
#ifndef SLOWWORKD_PAUSE_H
#define SLOWWORKD_PAUSE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#define PAUSE_KEPT_NAME "paused"

struct conn;
struct drain;
struct gate;
struct run_context;
struct store;

struct pause {
        struct run_context *ctx; /* paused, and the runs in progress */
        struct gate *gate;
        struct store *store;
        struct drain *drains; /* pause requests with drain, answered when no run is in progress */
};

void pause_init(struct pause *p, struct run_context *ctx, struct gate *gate, struct store *store);
/* Start: the state the database kept. */
void pause_restore(struct pause *p, bool paused);
/* Pauses or resumes, kept in the state database; a resume queues the held runs again, in the
 * order they came, and answers the drains waiting. */
void pause_set(struct pause *p, bool paused);
bool pause_is_on(const struct pause *p);
/* {"paused":B,"running":N}: N the runs in progress. */
json_object *pause_result(const struct pause *p);
/* A drain answered later (1), or now when no run is in progress (0); -ENOMEM. */
int pause_add_drain(struct pause *p, struct conn *c, json_object *id);
/* A run the pool started has ended, or was held back (EVENT_ENDED, EVENT_HELD): one less in
 * progress. */
void pause_run_done(struct pause *p);
/* Drops the drains unanswered (shutdown). */
void pause_close(struct pause *p);

#endif
