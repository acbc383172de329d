/* SPDX-License-Identifier: MIT */
/*
 * What the store asks of a database, whichever it is: SQLite's file in the state folder or a
 * schema of a PostgreSQL database. The store's queue, thread and sequence numbers are the same
 * for both; a driver only runs the statements, in transactions, and reads the rows back at start.
 */
#ifndef SLOWWORKD_DB_H
#define SLOWWORKD_DB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DB_SCHEMA 4 /* the schema version of the databases this daemon writes */

struct store_job_row;
struct run_record;

/* The writes; their parameters, in order, are the store's (store.c). */
enum db_stmt {
        DB_PUT_JOB,
        DB_PUT_JOB_STATE,
        DB_DELETE_JOB,
        DB_PUT_ENV,
        DB_ADD_RUN,
        DB_PUT_SETTING, /* name, and a number or a text */
        DB_DELETE_SETTINGS,
        DB_PUT_NEXT_ID,
        DB_FORGET_LOG,
        DB_STMT_MAX
};

struct db_value {
        enum { DB_NULL, DB_INT, DB_REAL, DB_TEXT } type;
        int64_t i;
        double d;
        const char *text;
};

struct db;

struct db_driver {
        /* What a submit refused while commits fail says of it. */
        const char *failing;
        /* Seconds between the tries of a failing commit: the first, doubling up to the last;
         * and how the log says it. */
        double retry_first, retry_last;
        const char *retrying;

        /* One transaction: begin, run..., prune, commit (or rollback). Each returns 0 or -EIO;
         * why() says what failed last (a new string, or NULL when out of memory). */
        int (*begin)(struct db *db);
        int (*run)(struct db *db, enum db_stmt stmt, const struct db_value *v, int n);
        /* Drops the oldest runs beyond limit; their logs in *logs (NULL-terminated). */
        int (*prune)(struct db *db, int64_t limit, char ***logs);
        int (*commit)(struct db *db);
        void (*rollback)(struct db *db);
        char *(*why)(struct db *db);

        /* Reading back at start, as store.h says; errors are logged. */
        int (*load_settings)(struct db *db,
                             void (*cb)(void *data, const char *name, double value,
                                        const char *text),
                             void *data);
        int (*find_foreign_job)(struct db *db, uid_t uid, int64_t *ret_id, uid_t *ret_owner);
        int (*load_jobs)(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                         void *data);
        int (*load_runs)(struct db *db, int64_t limit,
                         void (*cb)(void *data, struct run_record *rec), void *data);
        int64_t (*load_next_id)(struct db *db);

        void (*free)(struct db *db);
};

struct db {
        const struct db_driver *driver;
        char *name;         /* in messages: "State database PATH" */
        int64_t max_env_id; /* the highest environment's row at start */
};

/* DIR/slowworkd.db, created and brought up to date; errors are logged. */
int db_sqlite_open(const char *dir, struct db **ret);
/* The schema of the database that conninfo (a libpq connection string) names, created and
 * brought up to date, held by this daemon alone while it lives; errors are logged. */
int db_pg_open(const char *conninfo, const char *schema, struct db **ret);

/* Shared by the drivers: an environment's row ("[\"K=V\", ...]") as a NULL-terminated vector. */
char **db_parse_env(const char *text);
/* Jobs read in order share their environments: the vars of row id (its text), parsed only when
 * id is not the last one's. db_env_rows_free() once all are read. */
struct db_env_rows {
        int64_t id;
        char **vars;
};
char **db_env_of(struct db_env_rows *rows, int64_t id, const char *text);
void db_env_rows_free(struct db_env_rows *rows);
/* The outcome's name as the protocol spells it (a string that lives on); unknown: interrupted. */
const char *db_outcome_name(const char *text);

#endif
