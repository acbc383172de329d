/* SPDX-License-Identifier: MIT */
/* Every row of a PostgreSQL database signed with the cluster key, and checked before use. */
#ifndef SLOWWORKD_DB_PG_SIGN_H
#define SLOWWORKD_DB_PG_SIGN_H

#include <stdbool.h>
#include <stdint.h>

#include "store/db.h"
#include "store/pq.h"
#include "util/mac.h"

struct pg_db;
struct pg_mail_seen;
struct store_job_row;

/* The params a statement adds to with[0..n) when its rows are signed (their texts in buf, which
 * must outlive the statement's sending): the new n. */
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
/* Whether a run's spec (restart's, spec_mac) holds for its id, run and owner; else it is
 * rejected and logged. */
bool pg_spec_trusted(struct pg_db *p, int64_t id, int64_t run, int64_t owner, const char *spec,
                     const char *mac);
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
struct db_mail *pg_mail_trusted(struct pg_db *p, const PGresult *res, int i,
                                struct pg_mail_seen **last);
void pg_mail_seen_free(struct pg_mail_seen *last);
int64_t pg_rejected_rows(struct db *db, int table, const char **ret_name);
void pg_sign_free(struct pg_db *p);

#endif
