/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>

#include "store/db-pg.h"
#include "store/db-pg-query.h"
#include "util/log.h"

/* One statement with parameters, its rows in *ret (the caller clears it): 0, or -EIO. */
int pg_params_exec(struct pg_db *p, const char *sql, int n, const char *const *values,
                   PGresult **ret)
{
        PGresult *res;

        if (pg_connect(p) < 0)
                return -EIO;
        res = PQexecParams(p->conn, sql, n, NULL, values, NULL, NULL, 0);
        if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK) {
                int r = pg_failed(p, res);

                PQclear(res);
                return r;
        }
        *ret = res;
        return 0;
}

/* The same for a statement whose rows do not matter: 0, or -EIO. */
int pg_params_do(struct pg_db *p, const char *sql, int n, const char *const *values)
{
        PGresult *res = NULL;
        int r = pg_params_exec(p, sql, n, values, &res);

        PQclear(res);
        return r;
}

/* A query read a row at a time (a million jobs are not held at once): row() gets each as the
 * only row of its result. 0, or -EIO logged as failing to read what. */
int pg_query_rows(struct pg_db *p, const char *sql, int n, const char *const *values,
                  void (*row)(void *ctx, const PGresult *res), void *ctx, const char *what)
{
        PGresult *res;
        int r = 0;

        if (!PQsendQueryParams(p->conn, sql, n, NULL, values, NULL, NULL, 0) ||
            !PQsetSingleRowMode(p->conn)) {
                pg_set_error(p, PQerrorMessage(p->conn));
                r = -EIO;
        }
        while (r == 0 && (res = PQgetResult(p->conn))) {
                if (PQresultStatus(res) == PGRES_SINGLE_TUPLE)
                        row(ctx, res);
                else if (PQresultStatus(res) != PGRES_TUPLES_OK)
                        r = pg_failed(p, res);
                PQclear(res);
        }
        while (p->conn && (res = PQgetResult(p->conn)))
                PQclear(res);
        if (r < 0)
                log_error("%s: cannot read %s: %s", p->base.name, what, p->error);
        return r;
}
