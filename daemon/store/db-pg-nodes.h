/* SPDX-License-Identifier: MIT */
/* The PostgreSQL driver's node part: a node's row, its lease, its ids, the jobs it takes. */
#ifndef SLOWWORKD_DB_PG_NODES_H
#define SLOWWORKD_DB_PG_NODES_H

#include <stddef.h>
#include <stdint.h>

struct db;
struct db_node;
struct pg_db;
struct store_job_row;

/* Joins as p->node: takes its row (with what me reports) with a new epoch and a lease of
 * p->lease_time seconds, unless a live node has that name (-EBUSY, logged), and the rows of before
 * nodes; 0, or -EIO. */
int pg_node_join(struct pg_db *p, const struct db_node *me);
int pg_reserve_ids(struct db *db, int64_t n, int64_t *ret_last);
int pg_renew(struct db *db, const struct db_node *me, struct db_node **ret, size_t *ret_n);
int pg_adopt(struct db *db, void (*cb)(void *data, const struct store_job_row *row), void *data);
int pg_take_again(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                  void *data);

#endif
