/* SPDX-License-Identifier: MIT */
/*
 * The daemon's queues: "default" first, always there, its settings the daemon's of the same
 * names (threads, very slow share, idle timeout, per-user limits); then the named ones, made by
 * queue.add, by the configuration file's "queue.NAME.SETTING" lines, or for a restored job whose
 * queue is no longer declared. A named queue's settings are a new queue's defaults, under the
 * file's lines, under what queue.add and settings.set gave it; those are kept in the state database
 * among the kept settings as "queue.NAME" (it exists) and "queue.NAME/SETTING" rows (a name may
 * hold dots, never a slash). Loop thread only.
 */
#ifndef SLOWWORKD_QUEUES_H
#define SLOWWORKD_QUEUES_H

#include <json-c/json.h>
#include <stdbool.h>

#include "jobs/daemon.h"
#include "jobs/queue.h"

/* The queue called name (NULL: the default queue), or NULL. */
struct queue *queues_find(struct daemon *d, const char *name);
/* queue.add: 0, or -EEXIST, -EINVAL (err says why), -ENOMEM; given is {"SETTING": value}. */
int queues_add(struct daemon *d, const char *name, json_object *given, char *err, size_t errlen);
/* settings.set of a named queue: 0, or -EINVAL (err says why) with nothing changed. */
int queues_set(struct daemon *d, struct queue *q, json_object *given, bool to_keep, char *err,
               size_t errlen);
/* queue.remove of a named queue without jobs: it goes, with its kept rows. */
void queues_remove(struct daemon *d, struct queue *q);
/* Start: a kept row named "queue.…" (settings.c reads them all). */
void queues_load_kept(struct daemon *d, const char *name, double value);
/* Another node changed the kept rows of the queues, as read again (queues_load_kept()
 * for each): every queue made, set, paused or resumed as its rows say, and removed when its
 * rows have gone (unless it holds jobs). */
void queues_apply_kept(struct daemon *d);
/* Reload, before anything changes: whether the file's queue lines (as queues_set_file
 * takes them) go with every queue's kept settings: 0, or -EINVAL with err naming the queue. */
int queues_check_file(struct daemon *d, json_object *file_queues, char *err, size_t errlen);
/* Start and reload: the file's queues ({"NAME": {"SETTING": value}}, NULL: none; the daemon
 * takes a reference) are made, and every named queue's settings worked out again. */
void queues_set_file(struct daemon *d, json_object *file_queues);
/* {"name", its settings, "threads", "running", "queued" (pending: in its pool, delayed or held
 * back), "paused", "jobs" (live)}. */
json_object *queues_json(struct daemon *d, struct queue *q);
/* The statistics of the queue's pool, or the sums over every queue's (q NULL). */
void queues_stats(struct daemon *d, struct queue *q, struct slow_work_stats *ret);
/* The runs of the queue's jobs (q NULL: of every queue's) held back for space alone, not by the
 * daemon's pause or their queue's. */
int64_t queues_waiting_for_space(struct daemon *d, struct queue *q);
/* The runs held back by a per-user limit: the queue's own (q), or every one (q NULL). */
int64_t queues_waiting_for_turn(struct daemon *d, struct queue *q);
/* A queue for a restored job whose queue is not declared: made with the defaults. */
struct queue *queues_restore(struct daemon *d, const char *name);

#endif
