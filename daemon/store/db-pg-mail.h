/* SPDX-License-Identifier: MIT */
/* The mail to this node of a PostgreSQL database: a thread with a connection of its own that
 * listens. */
#ifndef SLOWWORKD_DB_PG_MAIL_H
#define SLOWWORKD_DB_PG_MAIL_H

struct db;
struct db_mail;

int pg_mail_start(struct db *db, void (*arrived)(void *data), void *data);
struct db_mail *pg_mail_take(struct db *db);
void pg_mail_stop(struct db *db);

#endif
