/* SPDX-License-Identifier: MIT */
/* The writes of a batch that a later delete in it makes moot. */
#include <stdlib.h>

#include "store/store-internal.h"

struct deleted {
        int64_t id;
        size_t at; /* the position of its last delete in the batch */
};

static int by_id(const void *a, const void *b)
{
        const struct deleted *x = a, *y = b;

        return x->id < y->id ? -1 : x->id > y->id;
}

static int by_id_at(const void *a, const void *b)
{
        const struct deleted *x = a, *y = b;

        return by_id(a, b) ? by_id(a, b) : x->at < y->at ? -1 : x->at > y->at;
}

/* Whether the deletes are in order already: jobs end mostly in the order they were made. */
static bool in_order(const struct deleted *del, size_t n)
{
        for (size_t i = 1; i < n; i++)
                if (by_id_at(&del[i - 1], &del[i]) > 0)
                        return false;
        return true;
}

void store_mark_superseded(const struct db_driver *d, struct op *batch)
{
        struct deleted *del, key, *hit;
        size_t n = 0, at;
        struct op *op;
        bool reads = false;

        for (op = batch; op; op = op->next) {
                op->superseded = false;
                /* A read sees the rows as the batch wrote them up to it. */
                reads |= store_is_read(op->stmt);
                n += op->stmt == DB_DELETE_JOB && !op->done;
        }
        if (!d->delete_supersedes || reads || n == 0)
                return;
        del = malloc(n * sizeof(*del));
        if (!del)
                return; /* every write is run, as without this */
        n = 0;
        for (op = batch, at = 0; op; op = op->next, at++)
                if (op->stmt == DB_DELETE_JOB && !op->done)
                        del[n++] = (struct deleted){op->v[0].i, at};
        if (!in_order(del, n))
                qsort(del, n, sizeof(*del), by_id_at);
        for (op = batch, at = 0; op; op = op->next, at++) {
                if ((op->stmt != DB_PUT_JOB && op->stmt != DB_PUT_JOB_STATE) || op->done)
                        continue;
                key.id = op->v[0].i;
                hit = bsearch(&key, del, n, sizeof(*del), by_id);
                /* The last delete of the id. */
                while (hit && hit + 1 < del + n && hit[1].id == key.id)
                        hit++;
                op->superseded = hit && hit->at > at;
        }
        free(del);
}
