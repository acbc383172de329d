/* SPDX-License-Identifier: MIT */
/* A job's life after its submit: its runs' starts and ends, retries, cancels, going idle. Loop
 * thread only. */
#ifndef SLOWWORKD_LIFECYCLE_H
#define SLOWWORKD_LIFECYCLE_H

#include <json-c/json.h>

struct answer;
struct daemon;
struct event;
struct job;
struct run_record;

/* The daemon's events callback: what a pool thread told of a job's run. */
void lifecycle_on_event(void *data, struct event *e);
/* A run's end (rec NULL: none to record): counted, written, kept in the history, its retry
 * planned. The record is the job's last from now. */
void lifecycle_run_ended(struct daemon *d, struct job *job, struct run_record *rec);
/* A run taken off the queue (or the gate, or one a job waited for) before it ever started: a run
 * that never was, with that outcome (cancelled, dependency-failed). */
void lifecycle_ended_before_start(struct daemon *d, struct job *job, const char *outcome);
/* A job neither pending nor running answers its waiters, and leaves the tables unless a handle
 * keeps it; a retry planned is queued once the pool has let go of the run before it. */
void lifecycle_check_idle(struct daemon *d, struct job *job);
/* A wait, answered when the job goes idle (with its last run's record). */
void lifecycle_add_waiter(struct job *job, struct answer *a);
/* Cancels what is pending of the job and stops its run: 0 when done, with the reply's result
 * (a is still the caller's); 1 when a run is still in progress (a is answered at the run's
 * end). */
int lifecycle_cancel(struct daemon *d, struct job *job, struct answer *a, json_object **ret_result);

#endif
