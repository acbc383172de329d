/* SPDX-License-Identifier: MIT */
#include <errno.h>
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

/* Counts rec's log bytes in (sign 1) or out (-1) of its owner's. 0 or -ENOMEM. */
static int count_log(struct history *h, const struct run_record *rec, int sign)
{
        struct history_owner *o, *more;

        if (!rec->log || rec->log_bytes == 0)
                return 0;
        o = owner_of(h, rec->owner);
        if (!o) {
                more = realloc(h->owners, (h->nowners + 1) * sizeof(*more));
                if (!more)
                        return -ENOMEM;
                h->owners = more;
                o = &h->owners[h->nowners++];
                *o = (struct history_owner){.owner = rec->owner};
        }
        o->log_bytes += sign * rec->log_bytes;
        return 0;
}

static void drop_oldest(struct history *h)
{
        count_log(h, *at(h, 0), -1);
        run_record_free(*at(h, 0));
        h->start = (h->start + 1) % h->size;
        h->n--;
}

void history_free(struct history *h)
{
        while (h->n)
                drop_oldest(h);
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

int history_add(struct history *h, struct run_record *rec, size_t limit)
{
        while (h->n > 0 && h->n >= limit)
                drop_oldest(h);
        if (h->n == h->size) {
                size_t size = h->size ? 2 * h->size : 64;

                if (grow(h, size < limit ? size : limit) < 0) {
                        run_record_free(rec);
                        return -ENOMEM;
                }
        }
        if (count_log(h, rec, 1) < 0) {
                run_record_free(rec);
                return -ENOMEM;
        }
        *at(h, h->n++) = rec;
        return 0;
}

int64_t history_logged_by(const struct history *h, uid_t owner)
{
        const struct history_owner *o = owner_of(h, owner);

        return o ? o->log_bytes : 0;
}

void history_forget_log(struct history *h, struct run_record *rec)
{
        count_log(h, rec, -1);
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
