/* SPDX-License-Identifier: MIT */
/* What a node reads back of its schema at start and when it takes jobs: its settings, its jobs
 * and the history; rows whose MAC does not hold are left out (db-pg-sign.c). */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/db-pg.h"
#include "store/db-pg-query.h"
#include "store/db-pg-load.h"
#include "store/db-pg-sign.h"
#include "store/run-record.h"
#include "store/store.h"

struct settings_ctx {
        struct pg_db *p;
        void (*cb)(void *data, const char *name, double value, const char *text);
        void *data;
};

static void setting_row(void *ctx, const PGresult *res)
{
        struct settings_ctx *c = ctx;
        double value = col_real(res, 1);

        if (pg_setting_trusted(c->p, col_text(res, 4), col_text(res, 0),
                               PQgetisnull(res, 0, 1) ? NULL : &value, col_text(res, 2),
                               col_text(res, 3)))
                c->cb(c->data, col_text(res, 0), value, col_text(res, 2));
}

int pg_load_settings(struct db *db,
                     void (*cb)(void *data, const char *name, double value, const char *text),
                     void *data)
{
        struct pg_db *p = (struct pg_db *)db;
        struct settings_ctx c = {p, cb, data};
        const char *values[] = {p->node};

        /* The shared ones last: a node's own row of the same name is from before schema 9. */
        return pg_query_rows(p,
                             "SELECT name, value, text, mac, node FROM settings"
                             " WHERE node IN ($1, '*')"
                             " ORDER BY node = '*', seq",
                             1, values, setting_row, &c, "the settings");
}

struct foreign_ctx {
        int64_t id;
        uid_t owner;
};

static void foreign_row(void *ctx, const PGresult *res)
{
        struct foreign_ctx *c = ctx;

        c->id = col_int(res, 0);
        c->owner = (uid_t)col_int(res, 1);
}

int pg_find_foreign_job(struct db *db, uid_t uid, int64_t *ret_id, uid_t *ret_owner)
{
        struct foreign_ctx c = {0, 0};
        char text[32];
        const char *values[] = {text};
        int r;

        snprintf(text, sizeof(text), "%u", (unsigned)uid);
        r = pg_query_rows((struct pg_db *)db,
                          "SELECT id, owner FROM jobs WHERE owner != $1 LIMIT 1", 1, values,
                          foreign_row, &c, "the jobs");
        if (r < 0)
                return r;
        *ret_id = c.id;
        if (c.id)
                *ret_owner = c.owner;
        return 0;
}

struct jobs_ctx {
        struct pg_db *p;
        void (*cb)(void *data, const struct store_job_row *row);
        void *data;
        struct db_env_rows envs;
        const char *node;
        enum pg_read how;
        bool env_held; /* the environment of the last row held */
};

static void job_row(void *ctx, const PGresult *res)
{
        struct jobs_ctx *c = ctx;
        struct store_job_row row = {
            .id = col_int(res, 0),
            .owner = (uid_t)col_int(res, 1),
            .very_slow = col_int(res, 2),
            .payload = col_text(res, 3),
            .key = col_text(res, 5),
            .name = col_text(res, 6),
            .persist = col_int(res, 7),
            .state = col_text(res, 8),
            .qorder = col_int(res, 9),
            .due = col_real(res, 10),
            .runs = col_int(res, 11),
            .env_id = col_int(res, 12),
            .flow = col_text(res, 13),
            .started = col_real(res, 14),
            .key_starts = col_int(res, 15),
            .node = c->node,
            .again = c->how == PG_READ_AGAIN,
            .claimed = c->how == PG_READ_CLAIMED,
        };
        struct pg_job_signs signs = {col_text(res, 12), col_text(res, 16), col_text(res, 17),
                                     col_text(res, 18), col_text(res, 4),  col_text(res, 19)};

        c->env_held = pg_job_trusted(c->p, &row, &signs, c->env_held && row.env_id == c->envs.id);
        if (!c->env_held)
                return; /* left as it is: neither run nor deleted */
        row.env = db_env_of(&c->envs, row.env_id, col_text(res, 4));
        c->cb(c->data, &row);
}

int pg_read_jobs(struct pg_db *p, const char *node, const char *ids, enum pg_read how,
                 void (*cb)(void *data, const struct store_job_row *row), void *data)
{
        struct jobs_ctx c = {p, cb, data, {0, NULL}, node, how, false};
        const char *values[] = {node, ids};
        int r =
            pg_query_rows(p,
                          "SELECT j.id, owner, very_slow, payload, e.vars, key, name, persist,"
                          " state, qorder, due, runs, j.env, flow, started, starts, j.user_name,"
                          " j.mac, j.state_mac, e.mac FROM jobs j"
                          " LEFT JOIN envs e ON e.id = j.env WHERE j.node = $1"
                          " AND ($2::bigint[] IS NULL OR j.id = ANY ($2::bigint[]))"
                          " ORDER BY qorder, j.id",
                          2, values, job_row, &c, "the jobs");

        db_env_rows_free(&c.envs);
        return r;
}

int pg_load_jobs(struct db *db, void (*cb)(void *data, const struct store_job_row *row), void *data)
{
        struct pg_db *p = (struct pg_db *)db;

        return pg_read_jobs(p, p->node, NULL, PG_READ_TAKEN, cb, data);
}

struct runs_ctx {
        struct pg_db *p;
        void (*cb)(void *data, struct run_record *rec);
        void *data;
};

static void run_row(void *ctx, const PGresult *res)
{
        struct runs_ctx *c = ctx;
        struct run_record *rec = calloc(1, sizeof(*rec));
        const char *log = col_text(res, 10);

        if (!rec)
                return;
        rec->id = col_int(res, 0);
        rec->run = col_int(res, 1);
        rec->very_slow = col_int(res, 2);
        rec->owner = (uid_t)col_int(res, 3);
        rec->summary = strdup(col_text(res, 4));
        rec->started = col_real(res, 5);
        rec->ended = col_real(res, 6);
        rec->outcome = db_outcome_name(col_text(res, 7));
        rec->exit_code = (int)col_int(res, 8);
        rec->signal = (int)col_int(res, 9);
        rec->log = log ? strdup(log) : NULL;
        rec->oom = col_int(res, 11);
        rec->cpu_time = PQgetisnull(res, 0, 12) ? -1 : col_real(res, 12);
        rec->memory_peak = PQgetisnull(res, 0, 13) ? -1 : col_int(res, 13);
        rec->leftovers = (int)col_int(res, 14);
        rec->attempt = col_int(res, 15);
        rec->node = run_record_node(col_text(res, 16));
        /* A spec is run again by restart: only one signed with the cluster key is kept, and
         * only by the node that ran the job (whose user names it checked; a restart of it is
         * asked there). */
        if (!PQgetisnull(res, 0, 17) && c->p->node && strcmp(col_text(res, 16), c->p->node) == 0 &&
            pg_spec_trusted(c->p, rec->id, rec->run, rec->owner, col_text(res, 17),
                            col_text(res, 18)))
                rec->spec = strdup(col_text(res, 17));
        c->cb(c->data, rec);
}

int pg_load_runs(struct db *db, int64_t limit, void (*cb)(void *data, struct run_record *rec),
                 void *data)
{
        struct runs_ctx c = {(struct pg_db *)db, cb, data};
        char text[32];
        const char *values[] = {text};

        snprintf(text, sizeof(text), "%" PRId64, limit);
        return pg_query_rows((struct pg_db *)db,
                             "SELECT " DB_RUN_COLUMNS ", spec, spec_mac FROM (SELECT *,"
                             " row_number() OVER (PARTITION BY owner ORDER BY seq DESC) AS k"
                             " FROM runs) r WHERE k <= $1 ORDER BY seq",
                             1, values, run_row, &c, "the history");
}
