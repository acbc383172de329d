/* SPDX-License-Identifier: MIT */
/*
 * What a connection has of the jobs: who may see and touch what, the handles it holds (hold),
 * its subscription to events, and its requests answered later (wait, cancel, pause with drain)
 * as the jobs' answers. Handles go with the connection (requests_forget). Loop thread only.
 */
#ifndef SLOWWORKD_REQUESTS_H
#define SLOWWORKD_REQUESTS_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct answer;
struct clients;
struct conn;
struct daemon;
struct job;
struct run_record;
struct slow_work_rq_entry;

/* Whether the client may see and act on what this user owns: the owner, and admins. */
bool requests_may_touch(const struct conn *c, uid_t owner);
/* Whether the client may see a row of the pool's run queue: its own job's, or any for an admin. */
bool requests_may_see_rq_entry(struct daemon *d, const struct conn *c,
                               const struct slow_work_rq_entry *e);

/* The request id of c, answered on c later: NULL when out of memory. Freed by its done or drop
 * (or requests_answer_free, when the jobs did not keep it). */
struct answer *requests_answer_new(struct conn *c, json_object *id);
void requests_answer_free(struct answer *a);
/* Should its job leave for another node, again(data, c, id, job) makes the request again (with
 * the connection still waiting for its reply). */
void requests_answer_again(struct answer *a,
                           void (*again)(void *data, struct conn *c, json_object *id, int64_t job),
                           void *data, int64_t job);

/* Handles: 0 or -ENOMEM; unhold says whether the connection had one on the job. */
int requests_hold(struct conn *c, struct job *job);
bool requests_unhold(struct conn *c, struct job *job);
/* The connection goes: its handles go with it. */
void requests_forget(struct daemon *d, struct conn *c);

/* Subscribed clients hear of every job they may see: its state, and a run's outcome. */
int requests_subscribe(struct conn *c);
/* The daemon's on_event, its data the daemon's clients. */
void requests_notify(void *clients, const struct job *job, const char *state,
                     const struct run_record *ended);

#endif
