/* SPDX-License-Identifier: MIT */
/* What the PostgreSQL driver's files share: the connection, and its helpers (db-pg.c). */
#ifndef SLOWWORKD_DB_PG_H
#define SLOWWORKD_DB_PG_H

#include <libpq-fe.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>

#include "store/db.h"
#include "util/mac.h"

/* The tables whose rows are signed, as slowwork_rejected_rows_total names them. */
enum pg_table { PG_MAIL, PG_JOBS, PG_ENVS, PG_SETTINGS, PG_TABLES };

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
        char *error;                /* why the last call failed */
        int sent;                   /* statements in the pipeline of the transaction under way */
        int prune_at;               /* the prune's place among them, or -1 */
        char ***logs;               /* where the prune's logs go */
        struct db_result **outs;    /* where each statement of the pipeline puts its first row */
        int nouts;                  /* their room */
        struct db_result *out;      /* the next statement's */
        struct pg_mailbox *mailbox; /* db-pg-mail.c's, once started */
        enum db_stmt *out_stmts;    /* the statement of each of them */

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
/* Connected again when the connection was lost: 0, or -EIO. */
int pg_connect(struct pg_db *p);
/* A statement without rows: 0, or -EIO. */
int pg_exec(struct pg_db *p, const char *sql);
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

/* Signing (db-pg-sign.c). The params a statement adds to with[0..n) when its rows are signed
 * (their texts in buf, which must outlive the statement's sending): the new n. */
struct pg_sign_buf {
        char mac[2][MAC_TEXT_LEN + 1], num[2][24];
};
int pg_sign_params(struct pg_db *p, enum db_stmt stmt, struct db_value *with, int n,
                   struct pg_sign_buf *buf);
/* What a job's row holds beside its store_job_row, as PostgreSQL gives it: its environment's id,
 * its owner's name, its MACs, and its environment's vars and MAC. */
struct pg_job_signs {
        const char *env, *user, *mac, *state_mac, *env_vars, *env_mac;
};
/* Whether a job's row holds (env_held: its environment was found to hold already); else it is
 * rejected, or refused for its user, and logged. */
bool pg_job_trusted(struct pg_db *p, const struct store_job_row *row,
                    const struct pg_job_signs *signs, bool env_held);
/* Whether a setting's row (node, name, value or NULL, text, mac) holds. */
bool pg_setting_trusted(struct pg_db *p, const char *node, const char *name, const double *value,
                        const char *text, const char *mac);
/* DB_SHARED_SETTINGS' result with only the rows that hold, as [[name, value], ...]. */
void pg_shared_settings_trusted(struct pg_db *p, struct db_result *res);
/* Every row of a schema from before rows were signed, signed (in the migration). 0 or -EIO. */
int pg_sign_all(struct pg_db *p);
/* The mail a node received (its columns from seq on, as db-pg-mail.c reads them) as a message
 * to hand over, or NULL when it does not hold (rejected), is a replay (last: the sender's last
 * number seen, by node), or when out of memory. */
struct pg_mail_seen;
struct db_mail *pg_mail_trusted(struct pg_db *p, const PGresult *res, int i,
                                struct pg_mail_seen **last);
void pg_mail_seen_free(struct pg_mail_seen *last);
int64_t pg_rejected_rows(struct db *db, int table, const char **ret_name);
void pg_sign_free(struct pg_db *p);

/* The loaders (db-pg-load.c), as struct db_driver says. */
int pg_load_settings(struct db *db,
                     void (*cb)(void *data, const char *name, double value, const char *text),
                     void *data);
int pg_find_foreign_job(struct db *db, uid_t uid, int64_t *ret_id, uid_t *ret_owner);
int pg_load_jobs(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                 void *data);
int pg_load_runs(struct db *db, int64_t limit, void (*cb)(void *data, struct run_record *rec),
                 void *data);

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
