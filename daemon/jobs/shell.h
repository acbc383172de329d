/* SPDX-License-Identifier: MIT */
/* The shell job runner: runs on a pool thread for as long as the job's process runs. */
#ifndef SLOWWORKD_SHELL_H
#define SLOWWORKD_SHELL_H

struct job;
struct run_record;

/* Runs the job once, its output into the run's log; returns the run's record (NULL only when
 * out of memory). */
struct run_record *shell_run(struct job *job);
/* Whether a run's process can be watched with a pidfd here (pidfd_open(2), Linux 5.3): 0, or
 * -errno; without one, runs look every 100 ms whether their process has ended. */
int shell_watch_check(void);

#endif
