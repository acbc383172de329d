/* SPDX-License-Identifier: MIT */
/*
 * Pause and resume, of the daemon or of one queue: while paused no new run starts there (item.c
 * holds them on the gate, pending) and running ones go on. The state is kept in the state
 * database, among the kept settings under a name no setting has ("paused", "queue.NAME/paused"),
 * so that a restart or a crash keeps it. A pause with drain is answered once no run is in
 * progress there. Pauses nest: a queue's runs are the daemon's too, and the daemon's the node's;
 * a run is counted in each pause over it, and any of them holds it. Loop thread, but for the two
 * counters.
 */
#ifndef SLOWWORKD_PAUSE_H
#define SLOWWORKD_PAUSE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#define PAUSE_KEPT_NAME "paused"

struct drain;
struct store;

struct pause {
        bool paused;          /* atomic: no new run starts */
        int64_t runs;         /* atomic: runs past their start, until the loop saw them end */
        char kept_name[96];   /* its row among the kept settings */
        const char *queue;    /* NULL: the daemon's pause */
        const char *node;     /* a node's own pause (its row of nodes keeps it: claims.c) */
        struct store *store;
        struct drain *drains; /* pause requests with drain, answered when no run is in progress */
        struct pause *over;   /* whose runs its runs are too (NULL: none) */
};

/* The pause of the queue (its name must outlive p), or of the daemon (NULL); over it, the
 * daemon's or the node's. */
void pause_init(struct pause *p, const char *queue, struct store *store, struct pause *over);
/* A node's own pause (its name must outlive p), which the caller keeps. */
void pause_init_node(struct pause *p, const char *node);
/* A run of its jobs is past its start (any thread): counted in p and each pause over it. */
void pause_run_started(struct pause *p);
/* The state the database keeps, as read at start or after another node changed it (how: " before
 * the restart", " on another node"), kept as it is; a resume answers the drains waiting. */
void pause_restore(struct pause *p, bool paused, const char *how);
#define PAUSE_AT_START " before the restart"
#define PAUSE_ELSEWHERE " on another node"
/* Pauses or resumes, kept in the state database; a resume answers the drains waiting (the caller
 * opens the gate, which queues the held runs again). */
void pause_set(struct pause *p, bool paused);
bool pause_is_on(const struct pause *p);
/* Whether p or a pause over it is on (any thread). */
bool pause_any_on(const struct pause *p);
/* {"paused":B,"running":N}: N the runs in progress. */
json_object *pause_result(const struct pause *p);
/* done(data, true) once no run is in progress (1; also at a resume), or now none is (0, and
 * done is not called); -ENOMEM. done(data, false) when p closes first. */
int pause_add_drain(struct pause *p, void (*done)(void *data, bool drained), void *data);
/* A run the pool started has ended, or was held back (EVENT_ENDED, EVENT_HELD): one less in
 * progress, in p and each pause over it. */
void pause_run_done(struct pause *p);
/* Drops the drains unanswered (shutdown, a queue removed). */
void pause_close(struct pause *p);

#endif
