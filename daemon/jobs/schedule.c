/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/job.h"
#include "jobs/schedule.h"
#include "run/run.h"
#include "util/cron.h"

double schedule_next(const struct job *job, double after)
{
        time_t t;

        if (job->x->every > 0)
                return after + job->x->every;
        t = cron_next(job->x->cron, (time_t)floor(after));
        return t < 0 ? 0 : (double)t;
}

static void on_tick(uv_timer_t *timer);

/* Sets the timer for the earliest tick. */
static void arm(struct schedule *s)
{
        double first = 0, now = run_wall_now();

        if (s->stopped) {
                uv_timer_stop(&s->timer);
                return;
        }
        for (size_t i = 0; i < s->n; i++)
                if (first == 0 || s->jobs[i]->next_run < first)
                        first = s->jobs[i]->next_run;
        if (first == 0) {
                uv_timer_stop(&s->timer);
                return;
        }
        /* Rounded up: a tick is never early. */
        uv_timer_start(&s->timer, on_tick, first > now ? (uint64_t)ceil((first - now) * 1000) : 0, 0);
}

static void on_tick(uv_timer_t *timer)
{
        schedule_check(timer->data);
}

void schedule_check(struct schedule *s)
{
        double now = run_wall_now();
        size_t n = s->n, ndue = 0;
        struct job **due;

        if (s->stopped)
                return;
        due = malloc((n ? n : 1) * sizeof(*due));
        if (!due) {
                uv_timer_start(&s->timer, on_tick, 1000, 0);
                return;
        }
        /* Taken first: a tick may release a job, which leaves the list. */
        for (size_t i = 0; i < n; i++)
                if (s->jobs[i]->next_run > 0 && s->jobs[i]->next_run <= now) {
                        struct job *job = s->jobs[i];

                        /* every keeps its phase; however many ticks were missed, one run. */
                        job->next_run = job->x->every > 0
                                            ? job->next_run + job->x->every *
                                                                 (floor((now - job->next_run) /
                                                                        job->x->every) +
                                                                  1)
                                            : schedule_next(job, now);
                        due[ndue++] = job_ref(s->jobs[i]);
                }
        for (size_t i = 0; i < ndue; i++) {
                s->tick(s->data, due[i]);
                job_unref(due[i]);
        }
        free(due);
        arm(s);
}

int schedule_init(struct schedule *s, uv_loop_t *loop, void (*tick)(void *data, struct job *job),
                  void *data)
{
        *s = (struct schedule){.tick = tick, .data = data};
        s->timer.data = s;
        return uv_timer_init(loop, &s->timer);
}

int schedule_add(struct schedule *s, struct job *job)
{
        for (size_t i = 0; i < s->n; i++)
                if (s->jobs[i] == job)
                        return 0;
        if (s->n == s->size) {
                size_t size = s->size ? 2 * s->size : 8;
                struct job **jobs = realloc(s->jobs, size * sizeof(*jobs));

                if (!jobs)
                        return -ENOMEM;
                s->jobs = jobs;
                s->size = size;
        }
        s->jobs[s->n++] = job_ref(job);
        arm(s);
        return 0;
}

void schedule_stop(struct schedule *s)
{
        s->stopped = true;
        uv_timer_stop(&s->timer);
}

void schedule_remove(struct schedule *s, struct job *job)
{
        for (size_t i = 0; i < s->n; i++)
                if (s->jobs[i] == job) {
                        s->jobs[i] = s->jobs[--s->n];
                        job_unref(job);
                        arm(s);
                        return;
                }
}

void schedule_close(struct schedule *s)
{
        while (s->n > 0)
                job_unref(s->jobs[--s->n]);
        free(s->jobs);
        s->jobs = NULL;
        s->size = 0;
        if (s->timer.loop && !uv_is_closing((uv_handle_t *)&s->timer))
                uv_close((uv_handle_t *)&s->timer, NULL);
}
