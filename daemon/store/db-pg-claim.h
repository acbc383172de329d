/* SPDX-License-Identifier: MIT */
/* The PostgreSQL driver's claims: other nodes' offered jobs taken by a node with free threads. */
#ifndef SLOWWORKD_DB_PG_CLAIM_H
#define SLOWWORKD_DB_PG_CLAIM_H

#include <stddef.h>

struct db;
struct db_claim;
struct store_job_row;

/* As struct db_driver's claim says: the number of jobs claimed, or -EIO. */
int pg_claim(struct db *db, const struct db_claim *wants, size_t n,
             void (*cb)(void *data, const struct store_job_row *row), void *data);

#endif
