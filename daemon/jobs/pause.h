/* SPDX-License-Identifier: MIT */
/*
 * Pause and resume, of the daemon or of one queue: while paused no new run starts there (item.c
 * holds them on the gate, pending) and running ones go on. The state is kept in the state
 * database, among the kept settings under a name no setting has ("paused", "queue.NAME/paused"),
 * so that a restart or a crash keeps it. A pause with drain is answered once no run is in
 * progress there. Loop thread, but for the two counters.
 */
#ifndef SLOWWORKD_PAUSE_H
#define SLOWWORKD_PAUSE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#define PAUSE_KEPT_NAME "paused"

struct conn;
struct drain;
struct store;

struct pause {
        bool paused;          /* atomic: no new run starts */
        int64_t runs;         /* atomic: runs past their start, until the loop saw them end */
        char kept_name[96];   /* its row among the kept settings */
        const char *queue;    /* NULL: the daemon's pause */
        struct store *store;
        struct drain *drains; /* pause requests with drain, answered when no run is in progress */
};

/* The pause of the queue (its name must outlive p), or of the daemon (NULL). */
void pause_init(struct pause *p, const char *queue, struct store *store);
/* A run of its jobs is past its start (any thread). */
void pause_run_started(struct pause *p);
/* Start: the state the database kept. */
void pause_restore(struct pause *p, bool paused);
/* Pauses or resumes, kept in the state database; a resume answers the drains waiting (the caller
 * opens the gate, which queues the held runs again). */
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
