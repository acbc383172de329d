/* SPDX-License-Identifier: MIT */
/*
 * Recurring jobs (submit's every and cron): one timer for the earliest next tick. At each tick
 * the job is enqueued by the kernel's rules (a tick while it is pending changes nothing; a tick
 * while it runs makes one more run after) and its next tick is computed from now, so ticks
 * missed while the loop was busy or the daemon down make one run, not a pile. Loop thread only.
 */
#ifndef SLOWWORKD_SCHEDULE_H
#define SLOWWORKD_SCHEDULE_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct job;

struct schedule {
        uv_timer_t timer;
        struct job **jobs; /* each a reference */
        size_t n, size;
        void (*tick)(void *data, struct job *job);
        void *data;
        bool stopped;
};

int schedule_init(struct schedule *s, uv_loop_t *loop, void (*tick)(void *data, struct job *job),
                  void *data);
/* The job's first tick after `after` (wall clock seconds): every's period, or cron's next match. */
double schedule_next(const struct job *job, double after);
/* The job (job->next_run set) ticks from now on: 0 or -ENOMEM. */
int schedule_add(struct schedule *s, struct job *job);
/* The ticks due by now are run, and the timer set for the next one: at the timer, and when the
 * test hook moved the clock (jobs/test-clock.c). */
void schedule_check(struct schedule *s);
/* The daemon stops: no tick from now on (the next start runs what it missed). */
void schedule_stop(struct schedule *s);
/* It no longer does (released, or gone). */
void schedule_remove(struct schedule *s, struct job *job);
void schedule_close(struct schedule *s);

#endif
