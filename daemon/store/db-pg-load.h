/* SPDX-License-Identifier: MIT */
/* What a node of a PostgreSQL database reads back: settings, jobs, history. */
#ifndef SLOWWORKD_DB_PG_LOAD_H
#define SLOWWORKD_DB_PG_LOAD_H

#include <stdint.h>
#include <sys/types.h>

struct db;
struct pg_db;
struct run_record;
struct store_job_row;

/* What rows read back are to the node that reads them: its own or a dead node's, its own
 * asked to run again (row->again), or claimed from another node (row->claimed). */
enum pg_read { PG_READ_TAKEN, PG_READ_AGAIN, PG_READ_CLAIMED };

/* The jobs of node (ids: only those of the array, "{1,2}"), in their order: rows as the
 * store's loaders give them (node set, and as how says). */
int pg_read_jobs(struct pg_db *p, const char *node, const char *ids, enum pg_read how,
                 void (*cb)(void *data, const struct store_job_row *row), void *data);

/* The loaders, as struct db_driver says. */
int pg_load_settings(struct db *db,
                     void (*cb)(void *data, const char *name, double value, const char *text),
                     void *data);
int pg_find_foreign_job(struct db *db, uid_t uid, int64_t *ret_id, uid_t *ret_owner);
int pg_load_jobs(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                 void *data);
int pg_load_runs(struct db *db, int64_t limit, void (*cb)(void *data, struct run_record *rec),
                 void *data);

#endif
