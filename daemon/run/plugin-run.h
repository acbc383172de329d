/* SPDX-License-Identifier: MIT */
/* The plugin job runner: calls the job's entry point on the pool thread. */
#ifndef SLOWWORKD_PLUGIN_RUN_H
#define SLOWWORKD_PLUGIN_RUN_H

struct run_context;
struct run_job;
struct run_record;

/* Runs the job once, and writes how it went into its record. */
void plugin_run(const struct run_context *ctx, const struct run_job *job, struct run_record *rec);

#endif
