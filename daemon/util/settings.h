/* SPDX-License-Identifier: MIT */
/* The daemon's settings: their defaults, and what the thread pools make of them. */
#ifndef SLOWWORKD_SETTINGS_H
#define SLOWWORKD_SETTINGS_H

#include <json-c/json.h>

#include "methods.h"
#include "slowwork.h"

/* The settings before any file or flag: the kernel's pool defaults and SPEC's. */
void settings_default(struct sw_settings *s);
/* What the system instance has before its file says otherwise, over settings_default. */
void settings_default_system(struct sw_settings *s);
/* Whether a node-queues list has the queue: "*", or the queue among its names. */
bool settings_serves(const char *node_queues, const char *queue);
/* Checks a whole set of settings: 0 or -EINVAL. */
int settings_validate(const struct sw_settings *s);
/* The default queue's part of them: its threads, and the per-user limits (the daemon's, which
 * count every queue's jobs, so the default queue's own never bind before them). */
struct sw_queue_settings settings_queue_part(const struct sw_settings *s);
/* A named queue's settings before any file line or queue.add says otherwise. */
struct sw_queue_settings settings_queue_default(void);
/* What a pool makes of a queue's settings. */
struct slow_work_settings settings_for_pool(const struct sw_queue_settings *q);
/* A queue's settings from what given names ({"max-threads": 1, ...}) over base, checked as a
 * whole: 0, or -EINVAL (-ENOMEM) with err saying why, and ret unchanged. */
int settings_queue_parse(json_object *given, const struct sw_queue_settings *base,
                         struct sw_queue_settings *ret, char *err, size_t errlen);

#endif
