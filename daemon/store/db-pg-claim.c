/* SPDX-License-Identifier: MIT */
/*
 * Claims, as trusted job queues make them (river, graphile-worker, Oban): a node with free
 * threads takes the first offered jobs of a queue (by priority, then the time they were queued)
 * in one transaction, `FOR UPDATE SKIP LOCKED`, so that two claims never wait for each other nor
 * take the same job, and a job's own node taking it back (DB_RECLAIM_JOB) either comes first or
 * finds it gone. Each row is checked with the cluster key before it is taken; one that fails is
 * offered no more (it stays as it is, neither run nor deleted).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db-pg.h"
#include "store/db-pg-query.h"
#include "store/db-pg-claim.h"
#include "store/db-pg-load.h"
#include "store/store.h"

/* The ids read back and trusted, as an array's text for the update. */
struct claimed {
        void (*cb)(void *data, const struct store_job_row *row);
        void *data;
        char *ids;
        size_t len, size;
        int64_t n;
};

static void trusted(void *data, const struct store_job_row *row)
{
        struct claimed *c = data;
        char num[24];
        int k = snprintf(num, sizeof(num), "%s%" PRId64, c->len > 1 ? "," : "", row->id);

        if (c->len + (size_t)k + 2 > c->size) {
                size_t size = (c->size + (size_t)k + 2) * 2;
                char *more = realloc(c->ids, size);

                if (!more)
                        return; /* not taken: still offered when the claim is made again */
                c->ids = more;
                c->size = size;
        }
        memcpy(c->ids + c->len, num, (size_t)k);
        c->len += (size_t)k;
        c->n++;
        c->cb(c->data, row);
}

/* Of the locked rows of one node (ids, an array's text): those trusted become this node's, each
 * to cb; the others are offered no more. */
static int take_from(struct pg_db *p, const char *node, const char *ids, struct claimed *c)
{
        const char *values[3] = {p->node, NULL, ids};
        int r;

        c->len = 0;
        if (c->size < 2) {
                free(c->ids);
                c->size = 64;
                if (!(c->ids = malloc(c->size))) {
                        pg_set_error(p, "out of memory");
                        return -EIO;
                }
        }
        c->ids[c->len++] = '{';
        r = pg_read_jobs(p, node, ids, PG_READ_CLAIMED, trusted, c);
        c->ids[c->len++] = '}';
        c->ids[c->len] = '\0';
        values[1] = c->ids;
        if (r == 0)
                r = pg_params_do(p,
                                 "UPDATE jobs SET node = $1, offered = false"
                                 " WHERE id = ANY ($2::bigint[])",
                                 2, values);
        if (r == 0)
                r = pg_params_do(p,
                                 "UPDATE jobs SET offered = false WHERE id = ANY ($2::bigint[])"
                                 " AND NOT id = ANY ($1::bigint[])",
                                 2, values + 1);
        return r;
}

/* The first limit offered jobs of the queue and class, locked, of each node (node, ids). */
static int pick(struct pg_db *p, const char *queue, bool very_slow, int64_t limit, PGresult **ret)
{
        char lim[24];
        const char *values[] = {p->node, queue, very_slow ? "1" : "0", lim};

        snprintf(lim, sizeof(lim), "%" PRId64, limit);
        return pg_params_exec(p,
                              "WITH c AS (SELECT id, node FROM jobs WHERE offered AND node <> $1"
                              " AND queue = $2 AND (very_slow <> 0) = ($3::int <> 0)"
                              " AND (pin IS NULL OR pin = $1)"
                              " ORDER BY priority DESC, queued_at, id LIMIT $4"
                              " FOR UPDATE SKIP LOCKED)"
                              " SELECT node, array_agg(id ORDER BY id)::text FROM c GROUP BY node",
                              4, values, ret);
}

/* Claims up to limit jobs of the queue and class; how many in *got. */
static int claim_class(struct pg_db *p, const char *queue, bool very_slow, int64_t limit,
                       struct claimed *c)
{
        PGresult *res = NULL;
        int r = limit > 0 ? pick(p, queue, very_slow, limit, &res) : 0;

        for (int i = 0; r == 0 && res && i < PQntuples(res); i++)
                r = take_from(p, PQgetvalue(res, i, 0), PQgetvalue(res, i, 1), c);
        PQclear(res);
        return r;
}

int pg_claim(struct db *db, const struct db_claim *wants, size_t n,
             void (*cb)(void *data, const struct store_job_row *row), void *data)
{
        struct pg_db *p = (struct pg_db *)db;
        struct claimed c = {cb, data, NULL, 0, 0, 0};
        char epoch[32];
        const char *values[] = {p->node, epoch};
        int r;

        snprintf(epoch, sizeof(epoch), "%" PRId64, p->epoch);
        r = pg_connect(p) < 0 ? -EIO : pg_exec(p, "BEGIN");
        if (r == 0)
                r = pg_params_do(p, "SELECT fence($1, $2)", 2, values);
        for (size_t i = 0; r == 0 && i < n; i++) {
                int64_t before = c.n;

                /* Very slow ones first, as the pool takes them, up to its cap. */
                r = claim_class(p, wants[i].queue, true, wants[i].want_very_slow, &c);
                if (r == 0)
                        r = claim_class(p, wants[i].queue, false, wants[i].want - (c.n - before),
                                        &c);
        }
        if (r == 0)
                r = pg_exec(p, "COMMIT");
        if (r < 0 && p->conn)
                pg_exec(p, "ROLLBACK");
        free(c.ids);
        return r < 0 ? r : (int)c.n;
}
