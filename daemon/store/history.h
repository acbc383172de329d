/* SPDX-License-Identifier: MIT */
/* Finished runs, newest last, at most history-limit of each owner's: the in-memory store. */
#ifndef SLOWWORKD_HISTORY_H
#define SLOWWORKD_HISTORY_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct run_record;

/* An owner's records in the history, and the bytes of the logs they still name. */
struct history_owner {
        uid_t owner;
        size_t runs;
        int64_t log_bytes;
};

struct history {
        struct run_record **ring;
        size_t size, start, n;
        struct history_owner *owners; /* one per owner seen, in no order: there are few */
        size_t nowners;
};

void history_free(struct history *h);
/* Takes the record over; drops its owner's oldest beyond limit (other owners' stay). 0 or
 * -ENOMEM. */
int history_add(struct history *h, struct run_record *rec, size_t limit);
/* The same, but the oldest of all go beyond limit, whoever's they are (a cache). */
int history_add_any(struct history *h, struct run_record *rec, size_t limit);
/* The newest record of an item, or NULL. */
const struct run_record *history_last(const struct history *h, int64_t id);
/* Gives the newest record of an item, when it is its run, the spec (taken over); else frees it.
 * 0, or -ENOENT. */
int history_set_spec(struct history *h, int64_t id, int64_t run, char *spec);
/* The item's newest record, if any, is marked left: its item went to another node. */
void history_set_left(struct history *h, int64_t id);
/* The record of an item's run number run, or NULL. */
const struct run_record *history_find(const struct history *h, int64_t id, int64_t run);
/* The i-th record, 0 the oldest (i < h->n). */
struct run_record *history_at(const struct history *h, size_t i);
/* The bytes of the logs that owner's records name, without a walk. */
int64_t history_logged_by(const struct history *h, uid_t owner);
/* The record (one of the history's) names its log no more. */
void history_forget_log(struct history *h, struct run_record *rec);

#endif
