/* SPDX-License-Identifier: MIT */
/* Finished runs, newest last, at most history-limit of them: the in-memory store. */
#ifndef SLOWWORKD_HISTORY_H
#define SLOWWORKD_HISTORY_H

#include <stddef.h>
#include <stdint.h>

struct run_record;

struct history {
        struct run_record **ring;
        size_t size, start, n;
};

void history_free(struct history *h);
/* Takes the record over; drops the oldest beyond limit. 0 or -ENOMEM. */
int history_add(struct history *h, struct run_record *rec, size_t limit);
/* The newest record of an item, or NULL. */
const struct run_record *history_last(const struct history *h, int64_t id);
/* The i-th record, 0 the oldest (i < h->n). */
struct run_record *history_at(const struct history *h, size_t i);

#endif
