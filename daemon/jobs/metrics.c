/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "jobs/job.h"
#include "jobs/metrics.h"
#include "jobs/queue.h"
#include "store/run-record.h"

const double metrics_run_seconds_bounds[] = {0.01, 0.1, 0.5, 1,    5,     10,    30,
                                             60,   300, 900, 3600, 14400, 86400, 0};
const double metrics_start_delay_bounds[] = {0.001, 0.005, 0.01, 0.05, 0.1,  0.5, 1,
                                             5,     10,    60,   300,  3600, 0};

const char *const metrics_states[] = {"pending", "running", "waiting", "idle", "stashed", NULL};

void metrics_init(struct metrics *m)
{
        *m = (struct metrics){.start_time = (double)time(NULL)};
}

void metrics_free(struct metrics *m)
{
        while (m->queues) {
                struct metrics_queue *q = m->queues;

                m->queues = q->next;
                free(q->name);
                free(q);
        }
}

/* The queue a job is counted under. */
static const char *metrics_queue_of(const struct job *job)
{
        return job->queue->name;
}

struct metrics_queue *metrics_queue(struct metrics *m, const char *name)
{
        struct metrics_queue *q, **tail = &m->queues;

        for (q = m->queues; q; q = q->next) {
                if (strcmp(q->name, name) == 0)
                        return q;
                tail = &q->next;
        }
        q = calloc(1, sizeof(*q));
        if (!q || !(q->name = strdup(name))) {
                free(q);
                return NULL;
        }
        *tail = q;
        return q;
}

static void metrics_histogram_observe(struct metrics_histogram *h, const double *bounds, double value)
{
        for (size_t i = 0; bounds[i] != 0; i++)
                if (value <= bounds[i])
                        h->le[i]++;
        h->count++;
        h->sum += value;
}

void metrics_submitted(struct metrics *m)
{
        m->submits++;
}

void metrics_run_started(struct metrics *m, struct job *job)
{
        struct metrics_queue *q = metrics_queue(m, metrics_queue_of(job));
        double started;

        __atomic_load(&job->run_started, &started, __ATOMIC_RELAXED);
        if (q && job->queued_at > 0)
                metrics_histogram_observe(&q->start_delay[job->very_slow],
                                          metrics_start_delay_bounds,
                                          started > job->queued_at ? started - job->queued_at : 0);
        job->queued_at = 0;
}

static unsigned outcome_index(const char *outcome)
{
        unsigned bit = sw_outcome_bit(outcome), i = 0;

        if (bit == 0)
                return METRICS_OUTCOMES;
        while (bit > 1) {
                bit >>= 1;
                i++;
        }
        return i;
}

void metrics_run_ended(struct metrics *m, struct job *job, const struct run_record *rec)
{
        struct metrics_queue *q = metrics_queue(m, metrics_queue_of(job));
        unsigned i = outcome_index(rec->outcome);

        if (rec->started == 0)
                job->queued_at = 0; /* taken off the queue: the next enqueue starts anew */
        if (!q || i >= METRICS_OUTCOMES)
                return;
        q->runs[rec->very_slow][i]++;
        if (rec->started > 0)
                metrics_histogram_observe(
                    &q->run_seconds[rec->very_slow], metrics_run_seconds_bounds,
                    rec->ended > rec->started ? rec->ended - rec->started : 0);
}

static int state_index(const char *state)
{
        int i = 0;

        while (metrics_states[i] && strcmp(metrics_states[i], state) != 0)
                i++;
        return i < METRICS_STATES ? i : -1;
}

void metrics_job_recount(struct metrics *m, struct job *job)
{
        metrics_job_count(m, job, job->live ? job_state(job) : NULL);
}

void metrics_job_count(struct metrics *m, struct job *job, const char *state_now)
{
        struct metrics_queue *q = job->counted_in;
        int state = state_now ? state_index(state_now) : -1;

        if (q && job->counted_state == state)
                return;
        if (q)
                q->jobs[job->very_slow][job->counted_state]--;
        job->counted_in = NULL;
        if (state < 0)
                return;
        q = metrics_queue(m, metrics_queue_of(job));
        if (!q)
                return;
        q->jobs[job->very_slow][state]++;
        job->counted_in = q;
        job->counted_state = state;
}
