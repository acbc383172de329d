/* SPDX-License-Identifier: MIT */
/* The plugin job runner: calls the job's entry point on the pool thread. */
#ifndef SLOWWORKD_PLUGIN_RUN_H
#define SLOWWORKD_PLUGIN_RUN_H

struct job;
struct run_record;

/* Runs the job once; returns the run's record (NULL only when out of memory). */
struct run_record *plugin_run(struct job *job);

#endif
