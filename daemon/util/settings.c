/* SPDX-License-Identifier: MIT */
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
        };
}

struct slow_work_settings settings_for_pool(const struct sw_settings *s)
{
        double ms = s->idle_timeout * 1000.0;

        return (struct slow_work_settings){
            .min_threads = (unsigned)s->min_threads,
            .max_threads = (unsigned)s->max_threads,
            .vslow_percentage = (unsigned)s->vslow_percentage,
            .idle_timeout_ms = ms < 1.0 ? 1u : (unsigned)ms,
        };
}

int settings_validate(const struct sw_settings *s)
{
        struct slow_work_settings ps = settings_for_pool(s);

        return slow_work_settings_validate(&ps);
}
