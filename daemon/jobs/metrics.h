/* SPDX-License-Identifier: MIT */
/*
 * The counters behind the metrics method: submits, runs by queue, class and outcome, the
 * histograms of run time and start delay (enqueue to start), and the live jobs by state, kept as
 * they change so that no call walks every job. Everything else the metrics show is read when
 * they are asked for. Loop thread only.
 */
#ifndef SLOWWORKD_METRICS_H
#define SLOWWORKD_METRICS_H

#include <stddef.h>
#include <stdint.h>

struct job;
struct run_record;

#define METRICS_OUTCOMES 8  /* room for sw_outcomes[] */
#define METRICS_BUCKETS  16 /* room for the longest list of bucket bounds */
#define METRICS_STATES   5  /* job_state()'s: pending, running, waiting, idle, stashed */

extern const char *const metrics_states[];

/* A histogram as Prometheus counts it: observations at most each bound, all, and their sum. */
struct metrics_histogram {
        uint64_t le[METRICS_BUCKETS];
        uint64_t count;
        double sum;
};

/* The bucket bounds (seconds), ending in a 0 (the +Inf bucket is count). */
extern const double metrics_run_seconds_bounds[];
extern const double metrics_start_delay_bounds[];

/* What one queue counted; class is 0 for slow, 1 for very slow. */
struct metrics_queue {
        char *name;
        uint64_t runs[2][METRICS_OUTCOMES];
        struct metrics_histogram run_seconds[2], start_delay[2];
        int64_t jobs[2][METRICS_STATES]; /* live jobs by class and state */
        struct metrics_queue *next;
};

struct metrics {
        uint64_t submits;
        struct metrics_queue *queues;
        double start_time; /* wall clock, Unix seconds */
};

void metrics_init(struct metrics *m);
void metrics_free(struct metrics *m);
/* That queue's counters, made on first use; NULL when out of memory. */
struct metrics_queue *metrics_queue(struct metrics *m, const char *name);

/* A submit was accepted. */
void metrics_submitted(struct metrics *m);
/* The job's run started (the loop heard of it): its start delay. */
void metrics_run_started(struct metrics *m, struct job *job);
/* A run ended, started or not: its outcome and, if it started, its time. */
void metrics_run_ended(struct metrics *m, struct job *job, const struct run_record *rec);
/* The job is counted under its state now (a job that is not live, under none). */
void metrics_job_recount(struct metrics *m, struct job *job);
/* The same, with the state its caller has just read (job_state()'s; NULL: none). */
void metrics_job_count(struct metrics *m, struct job *job, const char *state);

#endif
