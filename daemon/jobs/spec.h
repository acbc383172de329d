/* SPDX-License-Identifier: MIT */
/*
 * A job's spec: what restart makes a new job of once the job has ended and left the tables. It
 * is the params of a submit (as JSON text, parsed back by submit's own table): command or argv,
 * cwd, env, class, queue, name, key, priority, timeout, limits, retries and retry_delay, every or
 * cron, on_end, node, persist. Kept with the job's last run record, in the history and in the state database.
 */
#ifndef SLOWWORKD_SPEC_H
#define SLOWWORKD_SPEC_H

struct job;

/* A new string, or NULL when out of memory or for a plugin job (it has no spec to keep). */
char *job_spec(const struct job *job);

#endif
