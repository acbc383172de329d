/* SPDX-License-Identifier: MIT */
/* A job's runs: their records and where their logs go. */
#ifndef SLOWWORKD_RECORD_H
#define SLOWWORKD_RECORD_H

#include <stdbool.h>
#include <stdint.h>

struct job;
struct run_record;

/* Counts one more run of the job and makes its record: id, number, class, owner, summary and
 * log path. NULL when out of memory; the run is counted all the same, so the loop sees it end. */
struct run_record *record_new_run(struct job *job);
/* The record of run number run, in progress, that the daemon's last program handed over (the
 * job's row counts it already); NULL when out of memory. */
struct run_record *record_resumed_run(struct job *job, int64_t run);
/* The run starts now (or, taken up, started when its record says): its record's start, and the
 * job's, which the state database keeps while it runs. Before EVENT_STARTED is posted. */
void record_start(struct job *job, struct run_record *rec);
/* The record of a run that the loop ends itself, now, with outcome: one that never started
 * (cancelled while queued: no log), or one the daemon's end cut (interrupted: its log). */
struct run_record *record_new_ended(struct job *job, int64_t run, const char *outcome,
                                    bool has_log);
/* Notes the size of the run's log, in the logs folder dir_fd (0 when it has none). */
void record_measure_log(struct run_record *rec, int dir_fd);
/* The log file of run number `run` of job `id`: "LOG_DIR/ID.RUN.log" (NULL: out of memory). */
char *record_log_path(const char *log_dir, int64_t id, int64_t run);
/* What a job is after a run ended: "pending" when it is due again, else "idle". The pool may not
 * have cleared its executing flag yet: never "running". */
const char *record_state_after_run(struct job *job);

#endif
