/* SPDX-License-Identifier: MIT */
/* What every run has, a shell job's or a plugin's: its clocks, its record and its log. */
#ifndef SLOWWORKD_RUN_H
#define SLOWWORKD_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct job;
struct run_record;

double run_mono_now(void); /* seconds, for deadlines */
double run_wall_now(void); /* Unix seconds, for records */

/* Counts one more run of the job and makes its record: id, number, class, owner, summary and
 * log path. NULL when out of memory; the run is counted all the same, so the loop sees it end. */
struct run_record *run_record_new(struct job *job);

/* A run's log file, cut at log-limit with a note that says so. */
struct run_log {
        int fd; /* -1 until opened */
        int64_t logged, limit;
        bool cut;
};

void run_log_init(struct run_log *log, struct job *job);
/* Creates the file (mode 0600): 0 or -errno. */
int run_log_open(struct run_log *log, const char *path);
/* 0, or -errno. */
int run_log_write(struct run_log *log, const void *data, size_t n);
void run_log_close(struct run_log *log);

#endif
