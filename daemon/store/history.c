/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include "store/history.h"
#include "store/run-record.h"

static struct run_record **at(const struct history *h, size_t i)
{
        return &h->ring[(h->start + i) % h->size];
}

static struct history_owner *owner_of(const struct history *h, uid_t owner)
{
        for (size_t i = 0; i < h->nowners; i++)
                if (h->owners[i].owner == owner)
                        return &h->owners[i];
        return NULL;
}

/* The owner's entry, made if needed; NULL when out of memory. */
static struct history_owner *owner_entry(struct history *h, uid_t owner)
{
        struct history_owner *o = owner_of(h, owner), *more;

        if (o)
                return o;
        more = realloc(h->owners, (h->nowners + 1) * sizeof(*more));
        if (!more)
                return NULL;
        h->owners = more;
        o = &h->owners[h->nowners++];
        *o = (struct history_owner){.owner = owner};
        return o;
}

/* Counts rec and its log bytes in (sign 1) or out (-1) of its owner's (whose entry exists). */
static void count(struct history *h, const struct run_record *rec, int sign)
{
        struct history_owner *o = owner_of(h, rec->owner);

        o->runs += sign;
        if (rec->log)
                o->log_bytes += sign * rec->log_bytes;
}

/* Drops the i-th record: those before it move one place up. */
static void drop_at(struct history *h, size_t i)
{
        struct run_record *rec = *at(h, i);

        count(h, rec, -1);
        run_record_free(rec);
        for (; i > 0; i--)
                *at(h, i) = *at(h, i - 1);
        h->start = (h->start + 1) % h->size;
        h->n--;
}

/* Drops the owner's oldest record. */
static void drop_oldest_of(struct history *h, uid_t owner)
{
        for (size_t i = 0; i < h->n; i++)
                if ((*at(h, i))->owner == owner) {
                        drop_at(h, i);
                        return;
                }
}

void history_free(struct history *h)
{
        while (h->n)
                drop_at(h, 0);
        free(h->ring);
        free(h->owners);
        *h = (struct history){0};
}

static int grow(struct history *h, size_t size)
{
        struct run_record **ring = malloc(size * sizeof(*ring));
        size_t i;

        if (!ring)
                return -ENOMEM;
        for (i = 0; i < h->n; i++)
                ring[i] = *at(h, i);
        free(h->ring);
        h->ring = ring;
        h->size = size;
        h->start = 0;
        return 0;
}

/* The record, after the oldest of its owner's (per_owner) or of all beyond limit. */
static int add(struct history *h, struct run_record *rec, size_t limit, bool per_owner)
{
        struct history_owner *o = owner_entry(h, rec->owner);

        if (!o || (h->n == h->size && grow(h, h->size ? 2 * h->size : 64) < 0)) {
                run_record_free(rec);
                return -ENOMEM;
        }
        while (per_owner && o->runs > 0 && o->runs >= limit)
                drop_oldest_of(h, rec->owner);
        while (!per_owner && h->n > 0 && h->n >= limit)
                drop_at(h, 0);
        count(h, rec, 1);
        *at(h, h->n++) = rec;
        return 0;
}

int history_add(struct history *h, struct run_record *rec, size_t limit)
{
        /* The owner's oldest make room: other owners' runs stay whatever this one runs. */
        return add(h, rec, limit, true);
}

int history_add_any(struct history *h, struct run_record *rec, size_t limit)
{
        return add(h, rec, limit, false);
}

int64_t history_logged_by(const struct history *h, uid_t owner)
{
        const struct history_owner *o = owner_of(h, owner);

        return o ? o->log_bytes : 0;
}

void history_forget_log(struct history *h, struct run_record *rec)
{
        if (rec->log)
                owner_of(h, rec->owner)->log_bytes -= rec->log_bytes;
        free(rec->log);
        rec->log = NULL;
        rec->log_bytes = 0;
}

struct run_record *history_at(const struct history *h, size_t i)
{
        return *at(h, i);
}

int history_set_spec(struct history *h, int64_t id, int64_t run, char *spec)
{
        struct run_record *rec = (struct run_record *)history_last(h, id);

        if (!rec || rec->run != run) {
                free(spec);
                return -ENOENT;
        }
        free(rec->spec);
        rec->spec = spec;
        return 0;
}

void history_set_left(struct history *h, int64_t id)
{
        struct run_record *rec = (struct run_record *)history_last(h, id);

        if (rec)
                rec->left = true;
}

const struct run_record *history_last(const struct history *h, int64_t id)
{
        size_t i;

        for (i = h->n; i-- > 0;)
                if ((*at(h, i))->id == id)
                        return *at(h, i);
        return NULL;
}

const struct run_record *history_find(const struct history *h, int64_t id, int64_t run)
{
        size_t i;

        for (i = h->n; i-- > 0;)
                if ((*at(h, i))->id == id && (*at(h, i))->run == run)
                        return *at(h, i);
        return NULL;
}
