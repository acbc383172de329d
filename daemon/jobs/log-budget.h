/* SPDX-License-Identifier: MIT */
/*
 * Run logs within max-log-bytes-per-user: when a run ends, its owner's oldest finished logs go,
 * file and path, until what is left of that user's logs fits. A run's own log is cut at the
 * budget (run.c), so the log of the run that just ended always stays.
 */
#ifndef SLOWWORKD_LOG_BUDGET_H
#define SLOWWORKD_LOG_BUDGET_H

#include <stdint.h>

struct history;
struct run_record;
struct store;

/* A run ended (not in the history yet): the history's records of its owner lose their logs,
 * oldest first, until they and its own fit the budget. removed is told of each (its log is NULL
 * by then), so that copies of the record can follow. */
void log_budget_keep(struct history *h, struct store *s, int64_t budget,
                     const struct run_record *ended,
                     void (*removed)(void *data, const struct run_record *rec), void *data);

#endif
