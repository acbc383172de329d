/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "store/history.h"
#include "store/run-record.h"

static struct run_record **at(const struct history *h, size_t i)
{
        return &h->ring[(h->start + i) % h->size];
}

static void drop_oldest(struct history *h)
{
        run_record_free(*at(h, 0));
        h->start = (h->start + 1) % h->size;
        h->n--;
}

void history_free(struct history *h)
{
        while (h->n)
                drop_oldest(h);
        free(h->ring);
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
        *at(h, h->n++) = rec;
        return 0;
}

struct run_record *history_at(const struct history *h, size_t i)
{
        return *at(h, i);
}

const struct run_record *history_last(const struct history *h, int64_t id)
{
        size_t i;

        for (i = h->n; i-- > 0;)
                if ((*at(h, i))->id == id)
                        return *at(h, i);
        return NULL;
}
