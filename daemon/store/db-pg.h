/* SPDX-License-Identifier: MIT */
/*
 * What the PostgreSQL driver's files share: the connection, and its helpers (db-pg.c). Each part
 * of the driver has its own header: db-pg-nodes.h, db-pg-claim.h, db-pg-load.h, db-pg-sign.h,
 * db-pg-mail.h, db-pg-query.h.
 */
#ifndef SLOWWORKD_DB_PG_H
#define SLOWWORKD_DB_PG_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "store/db.h"
#include "store/pq.h"
#include "util/mac.h"

/* The tables whose rows are signed, as slowwork_rejected_rows_total names them. */
enum pg_table { PG_MAIL, PG_JOBS, PG_ENVS, PG_SETTINGS, PG_RUNS, PG_TABLES };

/* The names of users by uid, as this node's rows carry them (the store's thread alone). */
#define PG_USERS_KEPT 16
struct pg_users {
        struct {
                uid_t uid;
                char *name; /* NULL: none */
        } kept[PG_USERS_KEPT];
        unsigned n, next;
};

struct pg_db {
        struct db base;
        PGconn *conn; /* NULL, or connected and prepared */
        char *conninfo, *schema, *node;
        int64_t epoch;              /* this node's, since it joined */
        double lease_time;          /* seconds */
        double timeout;             /* seconds a call may go unanswered (store-timeout) */
        char *error;                /* why the last call failed */
        int sent;                   /* statements in the pipeline of the transaction under way */
        int prune_at;               /* the prune's place among them, or -1 */
        char ***logs;               /* where the prune's logs go */
        struct db_result **outs;    /* where each statement of the pipeline puts its first row */
        int nouts;                  /* their room */
        struct db_result *out;      /* the next statement's */
        struct pg_mailbox *mailbox; /* db-pg-mail.c's, once started */
        enum db_stmt *out_stmts;    /* the statement of each of them */
        /* What the last renewal saw: another node's lease ran out (pg_adopt has jobs to take),
         * a job of this node was asked to run again (pg_take_again has some). */
        bool lapsed_seen, again_seen;

        /* Signing (db-pg-sign.c): the cluster key, the number of the last mail sent, the
         * owners' names; the rows rejected (under reject_lock: any thread). */
        struct mac_key *key;
        int64_t mail_sent;
        struct pg_users users;
        pthread_mutex_t reject_lock;
        uint64_t rejected[PG_TABLES];
        struct pg_rejected *rejected_rows; /* those logged, each once */
};

/* libpq's message, on one line, as why the last call failed. */
void pg_set_error(struct pg_db *p, const char *msg);
/* After a failed call: its message kept, and a connection that is gone closed; -EIO. */
int pg_failed(struct pg_db *p, const PGresult *res);
/* A new connection to the node's database, named after the node in pg_stat_activity
 * (application_name, unless its conninfo names one); NULL when out of memory. */
PGconn *pg_connect_to(const struct pg_db *p);
/* Connected again when the connection was lost: 0, or -EIO. */
int pg_connect(struct pg_db *p);
/* A statement without rows: 0, or -EIO. */
int pg_exec(struct pg_db *p, const char *sql);

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

#endif
