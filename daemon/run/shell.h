/* SPDX-License-Identifier: MIT */
/* The shell job runner: runs on a pool thread for as long as the job's process runs. */
#ifndef SLOWWORKD_SHELL_H
#define SLOWWORKD_SHELL_H

struct run_context;
struct run_job;
struct run_record;

/* Runs the job once, its output into the run's log, and writes how it went into its record. */
void shell_run(const struct run_context *ctx, const struct run_job *job, struct run_record *rec);
/* Takes up the run job->resume that the daemon's last program handed over (reexec), rec its
 * record (with its number and log), and watches it to its end as shell_run() would; its
 * suspension is as suspend_expect() set it. */
void shell_resume(const struct run_context *ctx, const struct run_job *job,
                  struct run_record *rec);
/* Whether a run's process can be watched with a pidfd here (pidfd_open(2), Linux 5.3): 0, or
 * -errno; without one, runs look every 100 ms whether their process has ended. */
int shell_watch_check(void);

#endif
