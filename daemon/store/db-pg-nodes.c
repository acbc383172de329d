/* SPDX-License-Identifier: MIT */
/*
 * The nodes of a shared job database: a node joins with a row of nodes that holds its lease, on
 * the database's clock; it renews the lease, reserves blocks of job ids, and sees which nodes
 * are live.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "store/db-pg.h"
#include "store/db-pg-query.h"
#include "store/db-pg-load.h"
#include "store/db-pg-nodes.h"
#include "util/log.h"

/* What the live node of that name is, for the refusal. */
static void refuse(struct pg_db *p, const char *const *values)
{
        PGresult *res = NULL;

        if (pg_params_exec(p,
                           "SELECT host, pid, extract(epoch FROM lease_until - now()) FROM nodes"
                           " WHERE name = $1",
                           1, values, &res) == 0 &&
            PQntuples(res) == 1)
                log_error("Another live slowworkd node is named %s (pid %s on %s; its lease "
                          "holds %.1f s more)",
                          p->node, PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 0),
                          strtod(PQgetvalue(res, 0, 2), NULL));
        else
                log_error("Another live slowworkd node is named %s", p->node);
        PQclear(res);
}

/* Whether the process lives on this host (a zombie does not). */
static bool alive(pid_t pid)
{
        char path[64], stat[256], *end;
        FILE *f;
        size_t n;

        if (kill(pid, 0) < 0 && errno == ESRCH)
                return false;
        snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
        f = fopen(path, "re");
        if (!f)
                return true;
        n = fread(stat, 1, sizeof(stat) - 1, f);
        fclose(f);
        stat[n] = '\0';
        end = strrchr(stat, ')');
        return !(end && end[1] == ' ' && (end[2] == 'Z' || end[2] == 'X'));
}

/* How far a node's epoch rises at a start: by a random step, so that a writer of the database who
 * sets it back cannot make a node take again the epoch that old mail to it was bound to. */
static void epoch_step(char buf[32])
{
        uint32_t step = 0;

        if (getrandom(&step, sizeof(step), 0) != (ssize_t)sizeof(step))
                step = (uint32_t)getpid();
        snprintf(buf, 32, "%u", (step >> 1) + 1);
}

/* A live row of this name whose daemon was on this host and is gone (a restart after a crash):
 * taken at once, with a new epoch. 0, -EBUSY when it is not so, or -EIO. */
static int take_own(struct pg_db *p, const char *const *values)
{
        PGresult *res = NULL, *now = NULL;
        int r = pg_params_exec(p, "SELECT host, pid, epoch FROM nodes WHERE name = $1 FOR UPDATE",
                               1, values, &res);
        const char *take[] = {values[0], values[1], values[2], values[3],
                              values[4], values[5], NULL,      values[6]};
        pid_t pid;

        if (r < 0)
                return r;
        if (PQntuples(res) != 1 || strcmp(PQgetvalue(res, 0, 0), values[1]) != 0 ||
            (pid = (pid_t)strtol(PQgetvalue(res, 0, 1), NULL, 10)) <= 0 ||
            alive(pid)) {
                PQclear(res);
                return -EBUSY;
        }
        take[6] = PQgetvalue(res, 0, 2);
        r = pg_params_exec(
            p,
            "UPDATE nodes SET epoch = epoch + $8, host = $2, pid = $3, started = now(),"
            " renewed = now(), lease_until = now() + $4 * interval '1 second',"
            " running = 0, min_threads = $5, max_threads = $6, taken = false"
            " WHERE name = $1 AND epoch = $7 RETURNING epoch",
            8, take, &now);
        PQclear(res);
        if (r == 0 && PQntuples(now) == 1)
                p->epoch = strtoll(PQgetvalue(now, 0, 0), NULL, 10);
        else if (r == 0)
                r = -EBUSY;
        PQclear(now);
        return r;
}

int pg_node_join(struct pg_db *p, const struct db_node *me)
{
        char pid[32], lease[32], min[32], max[32], step[32];
        const char *values[] = {p->node, me->host, pid, lease, min, max, step};
        PGresult *res = NULL;
        int r;

        snprintf(pid, sizeof(pid), "%" PRId64, me->pid);
        snprintf(lease, sizeof(lease), "%.3f", p->lease_time);
        snprintf(min, sizeof(min), "%" PRId64, me->min_threads);
        snprintf(max, sizeof(max), "%" PRId64, me->max_threads);
        epoch_step(step);
        r = pg_exec(p, "BEGIN");
        /* One join at a time: one that finds no other node gives up the ids reserved unused. */
        if (r == 0)
                r = pg_exec(p, "LOCK TABLE nodes IN EXCLUSIVE MODE");
        if (r == 0)
                r = pg_params_exec(p,
                                   "INSERT INTO nodes (name, epoch, host, pid, started, renewed,"
                                   " lease_until, min_threads, max_threads) VALUES ($1, $7, $2, $3,"
                                   " now(), now(), now() + $4 * interval '1 second', $5, $6)"
                                   " ON CONFLICT (name) DO UPDATE SET epoch = nodes.epoch + $7,"
                                   " host = excluded.host, pid = excluded.pid,"
                                   " started = excluded.started, renewed = excluded.renewed,"
                                   " lease_until = excluded.lease_until, running = 0,"
                                   " min_threads = excluded.min_threads,"
                                   " max_threads = excluded.max_threads, taken = false"
                                   " WHERE nodes.lease_until < now() RETURNING epoch",
                                   7, values, &res);
        if (r == 0 && PQntuples(res) == 1)
                p->epoch = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        else if (r == 0)
                r = take_own(p, values);
        PQclear(res);
        if (r == 0)
                r = pg_params_do(p,
                                 "UPDATE meta SET value = greatest("
                                 "(SELECT value FROM meta WHERE key = 'used_id'),"
                                 " (SELECT max(used_id) FROM nodes), (SELECT max(id) FROM jobs),"
                                 " (SELECT max(id) FROM runs), 0) WHERE key = 'next_id' AND"
                                 " NOT EXISTS (SELECT 1 FROM nodes WHERE name <> $1 AND NOT taken)",
                                 1, values);
        /* The rows of the time before nodes go to the first node that joins; no run of this
         * node's is under way. */
        if (r == 0)
                r = pg_params_do(p, "UPDATE jobs SET node = $1 WHERE node = ''", 1, values);
        if (r == 0)
                r = pg_params_do(p, "UPDATE jobs SET running = false WHERE node = $1 AND running",
                                 1, values);
        /* What it offered before is its own again: it starts knowing of no offer. */
        if (r == 0)
                r = pg_params_do(p, "UPDATE jobs SET offered = false WHERE node = $1 AND offered",
                                 1, values);
        /* Mail to a node of that name before is for sessions that ended with it. */
        if (r == 0)
                r = pg_params_do(p, "DELETE FROM mail WHERE to_node = $1", 1, values);
        if (r == 0)
                r = pg_params_do(p, "UPDATE envs SET node = $1 WHERE node = ''", 1, values);
        if (r == 0)
                r = pg_params_do(p,
                                 "UPDATE settings SET node = $1 WHERE node = '' AND NOT EXISTS"
                                 " (SELECT 1 FROM settings s WHERE s.node = $1)",
                                 1, values);
        if (r == 0)
                r = pg_exec(p, "COMMIT");
        if (r < 0 && p->conn)
                pg_exec(p, "ROLLBACK");
        if (r == -EBUSY)
                refuse(p, values);
        return r;
}

int pg_reserve_ids(struct db *db, int64_t n, int64_t *ret_last)
{
        struct pg_db *p = (struct pg_db *)db;
        char text[32];
        const char *values[] = {text};
        PGresult *res = NULL;
        int r;

        snprintf(text, sizeof(text), "%" PRId64, n);
        r = pg_params_exec(
            p, "UPDATE meta SET value = value + $1 WHERE key = 'next_id' RETURNING value", 1,
            values, &res);
        if (r == 0 && PQntuples(res) != 1) {
                pg_set_error(p, "the job database has no id counter");
                r = -EIO;
        }
        if (r == 0)
                *ret_last = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        return r;
}

/* The live nodes (the others whose lease ran out and whose jobs are still to take only noted,
 * in lapsed_seen: a row marked taken with jobs of its name is taken again). A lease's age is
 * taken against the clock, not now(): this runs in the renewal's transaction, and another node's
 * renewal committed since that began carries a later now() than ours. */
static int list_nodes(struct pg_db *p, struct db_node **ret, size_t *ret_n)
{
        PGresult *res = NULL;
        struct db_node *nodes;
        const char *values[] = {p->node};
        int r, i, n, live = 0;

        r = pg_params_exec(p,
                           "SELECT name, host, pid, running, min_threads, max_threads,"
                           " extract(epoch FROM clock_timestamp() - renewed), epoch,"
                           " lease_until >= now(), (SELECT count(*) FROM jobs"
                           " WHERE jobs.node = nodes.name AND offered), node_queues, paused"
                           " FROM nodes WHERE lease_until >= now() OR (name <> $1 AND (NOT taken"
                           " OR EXISTS (SELECT 1 FROM jobs WHERE jobs.node = nodes.name)))"
                           " ORDER BY name",
                           1, values, &res);
        if (r < 0)
                return r;
        n = PQntuples(res);
        nodes = calloc(n ? (size_t)n : 1, sizeof(*nodes));
        p->lapsed_seen = false;
        for (i = 0; nodes && i < n; i++) {
                struct db_node *node = &nodes[live];

                if (strcmp(PQgetvalue(res, i, 8), "t") != 0) {
                        p->lapsed_seen = true;
                        continue;
                }
                snprintf(node->name, sizeof(node->name), "%s", PQgetvalue(res, i, 0));
                snprintf(node->host, sizeof(node->host), "%s", PQgetvalue(res, i, 1));
                node->pid = strtoll(PQgetvalue(res, i, 2), NULL, 10);
                node->running = strtoll(PQgetvalue(res, i, 3), NULL, 10);
                node->min_threads = strtoll(PQgetvalue(res, i, 4), NULL, 10);
                node->max_threads = strtoll(PQgetvalue(res, i, 5), NULL, 10);
                node->lease_age = strtod(PQgetvalue(res, i, 6), NULL);
                node->epoch = strtoll(PQgetvalue(res, i, 7), NULL, 10);
                node->offered = strtoll(PQgetvalue(res, i, 9), NULL, 10);
                snprintf(node->queues, sizeof(node->queues), "%s", PQgetvalue(res, i, 10));
                node->paused = strcmp(PQgetvalue(res, i, 11), "t") == 0;
                live++;
        }
        PQclear(res);
        if (!nodes) {
                pg_set_error(p, "out of memory");
                return -EIO;
        }
        *ret = nodes;
        *ret_n = (size_t)live;
        return 0;
}

/* One transaction: the lease renewed, the live nodes read, and whether pg_adopt and
 * pg_take_again have anything to do (each costs a transaction only then). */
int pg_renew(struct db *db, const struct db_node *me, struct db_node **ret, size_t *ret_n)
{
        struct pg_db *p = (struct pg_db *)db;
        char epoch[32], lease[32], running[32], min[32], max[32];
        const char *values[] = {p->node, epoch, lease, running, min, max, me->queues};
        PGresult *res = NULL;
        int64_t again = 0, claimable = 0;
        int r;

        snprintf(epoch, sizeof(epoch), "%" PRId64, p->epoch);
        snprintf(lease, sizeof(lease), "%.3f", p->lease_time);
        snprintf(running, sizeof(running), "%" PRId64, me->running);
        snprintf(min, sizeof(min), "%" PRId64, me->min_threads);
        snprintf(max, sizeof(max), "%" PRId64, me->max_threads);
        r = pg_connect(p) < 0 ? -EIO : pg_exec(p, "BEGIN");
        if (r == 0)
                r = pg_params_exec(p,
                                   "UPDATE nodes SET renewed = now(),"
                                   " lease_until = now() + $3 * interval '1 second', running = $4,"
                                   " min_threads = $5, max_threads = $6, node_queues = $7"
                                   " WHERE name = $1 AND epoch = $2",
                                   7, values, &res);
        if (r == 0 && strcmp(PQcmdTuples(res), "1") != 0)
                r = -ESTALE;
        PQclear(res);
        res = NULL;
        if (r == 0)
                r = pg_params_exec(p,
                                   "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE node = $1 AND"
                                   " again AND NOT running AND state = 'idle' LIMIT 1) t",
                                   1, values, &res);
        if (r == 0)
                again = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        res = NULL;
        /* Of its queues, placed on no other node: what a claim of its would find. */
        if (r == 0)
                r = pg_params_exec(p,
                                   "SELECT count(*) FROM (SELECT 1 FROM jobs WHERE offered"
                                   " AND node <> $1 AND (pin IS NULL OR pin = $1) AND ($2 = '*'"
                                   " OR queue = ANY (string_to_array($2, ','))) LIMIT 1) t",
                                   2, (const char *const[]){p->node, me->queues}, &res);
        if (r == 0)
                claimable = strtoll(PQgetvalue(res, 0, 0), NULL, 10);
        PQclear(res);
        if (r == 0)
                r = list_nodes(p, ret, ret_n);
        for (size_t i = 0; r == 0 && i < *ret_n; i++)
                if (strcmp((*ret)[i].name, p->node) == 0)
                        (*ret)[i].claimable = claimable;
        if (r == 0) {
                r = pg_exec(p, "COMMIT");
                if (r < 0)
                        free(*ret);
        }
        if (r < 0 && p->conn)
                pg_exec(p, "ROLLBACK");
        p->again_seen = r == 0 && again > 0;
        return r;
}

int pg_adopt(struct db *db, void (*cb)(void *data, const struct store_job_row *row), void *data)
{
        struct pg_db *p = (struct pg_db *)db;
        const char *values[] = {p->node, NULL};
        PGresult *res = NULL;
        char *gone;
        int r;

        if (!p->lapsed_seen)
                return 0;
        r = pg_exec(p, "BEGIN");
        if (r == 0)
                r = pg_params_exec(p,
                                   "SELECT name FROM nodes WHERE lease_until < now() AND name <> $1"
                                   " AND (NOT taken OR EXISTS (SELECT 1 FROM jobs"
                                   " WHERE jobs.node = nodes.name))"
                                   " ORDER BY lease_until LIMIT 1 FOR UPDATE SKIP LOCKED",
                                   1, values, &res);
        if (r < 0 || PQntuples(res) == 0) {
                PQclear(res);
                if (p->conn)
                        pg_exec(p, "ROLLBACK");
                return r;
        }
        gone = strdup(PQgetvalue(res, 0, 0));
        PQclear(res);
        values[1] = gone;
        if (!gone) {
                pg_set_error(p, "out of memory");
                r = -EIO;
        }
        /* Its rows locked first: a claim under way (pg_claim) either took a row before, which
         * is then no longer the dead node's, or skips it. */
        if (r == 0)
                r = pg_params_do(p, "SELECT 1 FROM jobs WHERE node = $1 FOR UPDATE", 1, values + 1);
        if (r == 0)
                r = pg_read_jobs(p, gone, NULL, PG_READ_TAKEN, cb, data);
        if (r == 0)
                r = pg_params_do(p,
                                 "UPDATE jobs SET node = $1, running = false, offered = false"
                                 " WHERE node = $2",
                                 2, values);
        if (r == 0)
                r = pg_params_do(
                    p,
                    "UPDATE meta SET value = greatest(value, (SELECT used_id FROM nodes"
                    " WHERE name = $1)) WHERE key = 'used_id'",
                    1, values + 1);
        if (r == 0)
                r = pg_params_do(p, "DELETE FROM mail WHERE to_node = $1", 1, values + 1);
        /* Its row stays, for `nodes`, with a new epoch: its daemon, should it live on, is
         * fenced as if the row were gone. */
        if (r == 0)
                r = pg_params_do(p,
                                 "UPDATE nodes SET taken = true, epoch = epoch + 1 WHERE name = $1",
                                 1, values + 1);
        if (r == 0)
                r = pg_exec(p, "COMMIT");
        if (r < 0 && p->conn)
                pg_exec(p, "ROLLBACK");
        if (r == 0)
                log_info("%s: node %s took the jobs of node %s, whose lease ran out", db->name,
                         p->node, gone);
        free(gone);
        return r < 0 ? r : 1;
}

int pg_take_again(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                  void *data)
{
        struct pg_db *p = (struct pg_db *)db;
        char epoch[32];
        const char *values[] = {p->node, epoch};
        PGresult *res = NULL;
        int r;

        if (!p->again_seen)
                return 0;
        p->again_seen = false; /* what fails is asked for still: seen again at the next renewal */
        snprintf(epoch, sizeof(epoch), "%" PRId64, p->epoch);
        r = pg_exec(p, "BEGIN");
        if (r == 0)
                r = pg_params_do(p, "SELECT fence($1, $2)", 2, values);
        /* One statement picks the rows and clears their asks: an ask that comes after is
         * another's. Only an idle job's: one that is queued, held or waiting runs, and its
         * start answers the ask. */
        if (r == 0)
                r = pg_params_exec(p,
                                   "WITH t AS (UPDATE jobs SET again = false WHERE node = $1 AND"
                                   " again AND NOT running AND state = 'idle' RETURNING id)"
                                   " SELECT array_agg(id)::text FROM t",
                                   1, values, &res);
        if (r == 0 && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0))
                r = pg_read_jobs(p, p->node, PQgetvalue(res, 0, 0), PG_READ_AGAIN, cb, data);
        PQclear(res);
        if (r == 0)
                r = pg_exec(p, "COMMIT");
        if (r < 0 && p->conn)
                pg_exec(p, "ROLLBACK");
        return r;
}
