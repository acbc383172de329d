/* SPDX-License-Identifier: MIT */
/* The PostgreSQL driver's statements run one at a time, outside the pipelined batches: with
 * parameters, their rows at once or one row at a time. */
#ifndef SLOWWORKD_DB_PG_QUERY_H
#define SLOWWORKD_DB_PG_QUERY_H

#include "store/pq.h"

struct pg_db;

/* One statement with parameters (connected again first when the connection was lost), its rows
 * in *ret (the caller clears it); or one whose rows do not matter. 0, or -EIO. */
int pg_params_exec(struct pg_db *p, const char *sql, int n, const char *const *values,
                   PGresult **ret);
int pg_params_do(struct pg_db *p, const char *sql, int n, const char *const *values);
/* A query read a row at a time: row() gets each as the only row of its result. 0, or -EIO
 * logged as failing to read what. */
int pg_query_rows(struct pg_db *p, const char *sql, int n, const char *const *values,
                  void (*row)(void *ctx, const PGresult *res), void *ctx, const char *what);

#endif
