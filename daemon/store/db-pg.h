/* SPDX-License-Identifier: MIT */
/* What the PostgreSQL driver's files share: the connection, and its helpers (db-pg.c). */
#ifndef SLOWWORKD_DB_PG_H
#define SLOWWORKD_DB_PG_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "store/db.h"

struct pg_db {
        struct db base;
        PGconn *conn; /* NULL, or connected and prepared */
        char *conninfo, *schema, *node;
        int64_t epoch;     /* this node's, since it joined */
        double lease_time; /* seconds */
        char *error;   /* why the last call failed */
        int sent;      /* statements in the pipeline of the transaction under way */
        int prune_at;  /* the prune's place among them, or -1 */
        char ***logs;  /* where the prune's logs go */
        struct db_result **outs; /* where each statement of the pipeline puts its first row */
        int nouts;               /* their room */
        struct db_result *out;   /* the next statement's */
        struct pg_mailbox *mailbox; /* db-pg-mail.c's, once started */
};

/* libpq's message, on one line, as why the last call failed. */
void pg_set_error(struct pg_db *p, const char *msg);
/* After a failed call: its message kept, and a connection that is gone closed; -EIO. */
int pg_failed(struct pg_db *p, const PGresult *res);
/* Connected again when the connection was lost: 0, or -EIO. */
int pg_connect(struct pg_db *p);
/* A statement without rows: 0, or -EIO. */
int pg_exec(struct pg_db *p, const char *sql);
/* The first column of the first row of a query as a number (fallback when NULL or none). */
int pg_query_int(struct pg_db *p, const char *sql, int64_t fallback, int64_t *ret);
/* A query read a row at a time: row() gets each as the only row of its result. 0, or -EIO
 * logged as failing to read what. */
int pg_query_rows(struct pg_db *p, const char *sql, int n, const char *const *values,
                  void (*row)(void *ctx, const PGresult *res), void *ctx, const char *what);

static inline const char *col_text(const PGresult *res, int c)
{
        return PQgetisnull(res, 0, c) ? NULL : PQgetvalue(res, 0, c);
}

static inline int64_t col_int(const PGresult *res, int c)
{
        return PQgetisnull(res, 0, c) ? 0 : strtoll(PQgetvalue(res, 0, c), NULL, 10);
}

static inline double col_real(const PGresult *res, int c)
{
        return PQgetisnull(res, 0, c) ? 0 : strtod(PQgetvalue(res, 0, c), NULL);
}

/* The jobs of node (ids: only those of the array, "{1,2}", taken as asked to run again), in
 * their order: rows as the store's loaders give them (node set, again when ids). */
int pg_read_jobs(struct pg_db *p, const char *node, const char *ids,
                 void (*cb)(void *data, const struct store_job_row *row), void *data);

/* The node's part (db-pg-nodes.c). Joins as p->node: takes its row (with what me reports) with a
 * new epoch and a lease of lease_time seconds, unless a live node has that name (-EBUSY, logged),
 * and the rows of before nodes; 0, or -EIO. */
int pg_node_join(struct pg_db *p, const struct db_node *me, double lease_time);
int pg_reserve_ids(struct db *db, int64_t n, int64_t *ret_last);
int pg_renew(struct db *db, const struct db_node *me, struct db_node **ret, size_t *ret_n);
int pg_adopt(struct db *db, void (*cb)(void *data, const struct store_job_row *row), void *data);
int pg_take_again(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                  void *data);

/* The mail to this node (db-pg-mail.c): a thread with a connection of its own that listens. */
int pg_mail_start(struct db *db, void (*arrived)(void *data), void *data);
struct db_mail *pg_mail_take(struct db *db);
void pg_mail_stop(struct db *db);

#endif
