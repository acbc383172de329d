/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "util/settings.h"

void settings_default(struct sw_settings *s)
{
        *s = (struct sw_settings){
            .min_threads = 2,
            .max_threads = 4,
            .vslow_percentage = 50,
            .idle_timeout = 5.0,
            .history_limit = 10000,
            .log_limit = 16 * 1024 * 1024,
            .kill_grace = 5.0,
            .stop_timeout = 30.0,
            .max_connections_per_user = 64,
            .max_log_bytes_per_user = 1024 * 1024 * 1024,
            .min_free_space = 5,
            .metrics_interval = 15.0,
            .node_queues = "*",
            .store_timeout = 5.0,
        };
}

void settings_default_system(struct sw_settings *s)
{
        s->fair_share = true;
        s->max_jobs_per_user = 10000;
        s->max_job_bytes_per_user = 256 * 1024 * 1024;
}

struct sw_queue_settings settings_queue_part(const struct sw_settings *s)
{
        return (struct sw_queue_settings){
            .min_threads = s->min_threads,
            .max_threads = s->max_threads,
            .vslow_percentage = s->vslow_percentage,
            .idle_timeout = s->idle_timeout,
            .max_queued_per_user = s->max_queued_per_user,
            .max_running_per_user = s->max_running_per_user,
            .ceilings = s->ceilings,
        };
}

struct sw_queue_settings settings_queue_default(void)
{
        struct sw_settings d;
        struct sw_queue_settings q;

        settings_default(&d);
        q = settings_queue_part(&d);
        q.min_threads = 1; /* so that max-threads 1 alone makes a queue */
        return q;
}

struct slow_work_settings settings_for_pool(const struct sw_queue_settings *q)
{
        double ms = q->idle_timeout * 1000.0;

        return (struct slow_work_settings){
            .min_threads = (unsigned)q->min_threads,
            .max_threads = (unsigned)q->max_threads,
            .vslow_percentage = (unsigned)q->vslow_percentage,
            .idle_timeout_ms = ms < 1.0 ? 1u : (unsigned)ms,
        };
}

bool settings_serves(const char *node_queues, const char *queue)
{
        size_t n = strlen(queue);

        if (strcmp(node_queues, "*") == 0)
                return true;
        for (const char *p = node_queues; *p;) {
                size_t k = strcspn(p, ",");

                if (k == n && strncmp(p, queue, n) == 0)
                        return true;
                p += k + (p[k] == ',');
        }
        return false;
}

int settings_validate(const struct sw_settings *s)
{
        struct sw_queue_settings q = settings_queue_part(s);
        struct slow_work_settings ps = settings_for_pool(&q);

        return slow_work_settings_validate(&ps);
}

int settings_queue_parse(json_object *given, const struct sw_queue_settings *base,
                         struct sw_queue_settings *ret, char *err, size_t errlen)
{
        struct sw_queue_settings next = *base;
        struct slow_work_settings ps;
        int r = sw_params_parse(given, sw_queue_settings_params, &next, err, errlen);

        if (r == -ENOMEM)
                return r;
        if (r)
                return -EINVAL;
        ps = settings_for_pool(&next);
        if (slow_work_settings_validate(&ps) < 0) {
                snprintf(err, errlen, "min-threads (%lld) must not exceed max-threads (%lld)",
                         (long long)next.min_threads, (long long)next.max_threads);
                return -EINVAL;
        }
        *ret = next;
        return 0;
}
