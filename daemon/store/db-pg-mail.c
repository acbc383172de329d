/* SPDX-License-Identifier: MIT */
/*
 * Mail between the nodes of a schema: rows of its mail table, written in the sender's batches
 * (DB_SEND_MAIL, which notifies channel slowwork_mail with "SCHEMA/NODE"), and taken by the
 * receiver's own thread, on a connection of its own that listens on that channel. It takes its
 * mail when notified, when it connects (again), and after 5 s without a notification (one lost
 * with a connection that broke unseen).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "store/db-pg.h"
#include "store/db-pg-mail.h"
#include "store/db-pg-sign.h"
#include "util/log.h"

#define MAIL_POLL_MS 5000 /* a connection that broke unseen loses notifications */

struct pg_mailbox {
        struct pg_db *p;
        pthread_t thread;
        int stop_fd; /* an eventfd: written once to stop */
        char *me;    /* the notifications' payload for this node: "SCHEMA/NODE" */
        void (*arrived)(void *data);
        void *data;
        pthread_mutex_t lock;
        struct db_mail *head, **tail; /* under lock: taken, not yet handed over */
        struct pg_mail_seen *seen;    /* the thread's: each sender's last mail */
};

static PGconn *listen_on(struct pg_mailbox *mb)
{
        PGconn *conn = pg_connect_to(mb->p);
        char sql[160];
        PGresult *res;
        bool ok;

        if (!conn || PQstatus(conn) != CONNECTION_OK) {
                PQfinish(conn);
                return NULL;
        }
        snprintf(sql, sizeof(sql), "SET search_path TO %s; LISTEN slowwork_mail", mb->p->schema);
        res = PQexec(conn, sql);
        ok = PQresultStatus(res) == PGRES_COMMAND_OK;
        PQclear(res);
        if (!ok) {
                PQfinish(conn);
                return NULL;
        }
        return conn;
}

/* The node's mail, taken off the table, queued in the order it was sent: only what holds its MAC
 * and is no replay (db-pg-sign.c). false when the connection failed. */
static bool take(struct pg_mailbox *mb, PGconn *conn)
{
        const char *values[] = {mb->p->node};
        PGresult *res = PQexecParams(conn,
                                     "WITH m AS (DELETE FROM mail WHERE to_node = $1 RETURNING"
                                     " *) SELECT seq, from_node, session, kind, body, epoch,"
                                     " to_epoch, n, uid, user_name, mac FROM m ORDER BY seq",
                                     1, NULL, values, NULL, NULL, 0);
        struct db_mail **all;
        int n, i, got = 0;

        if (PQresultStatus(res) != PGRES_TUPLES_OK) {
                PQclear(res);
                return PQstatus(conn) == CONNECTION_OK;
        }
        n = PQntuples(res);
        all = calloc(n ? (size_t)n : 1, sizeof(*all));
        for (i = 0; all && i < n; i++)
                if ((all[got] = pg_mail_trusted(mb->p, res, i, &mb->seen)))
                        got++;
        PQclear(res);
        if (!all) {
                log_error("%s: out of memory for mail from other nodes: %d messages dropped",
                          mb->p->base.name, n);
                return true;
        }
        pthread_mutex_lock(&mb->lock);
        for (i = 0; i < got; i++) {
                *mb->tail = all[i];
                mb->tail = &all[i]->next;
        }
        pthread_mutex_unlock(&mb->lock);
        free(all);
        if (got > 0)
                mb->arrived(mb->data);
        return true;
}

/* Whether a notification for this node came (all of them read). */
static bool notified(struct pg_mailbox *mb, PGconn *conn)
{
        PGnotify *n;
        bool mine = false;

        while ((n = PQnotifies(conn))) {
                mine |= strcmp(n->extra, mb->me) == 0;
                PQfreemem(n);
        }
        return mine;
}

static void *mailbox_thread(void *arg)
{
        struct pg_mailbox *mb = arg;
        PGconn *conn = NULL;
        bool due = false;

        for (;;) {
                struct pollfd fds[2] = {{.fd = mb->stop_fd, .events = POLLIN},
                                        {.fd = -1, .events = POLLIN}};

                if (!conn && (conn = listen_on(mb)))
                        due = true; /* what came while it did not listen */
                /* Notifications that came during a take are read by it, not by poll(). */
                while (conn && due) {
                        if (!take(mb, conn)) {
                                PQfinish(conn);
                                conn = NULL;
                        } else {
                                due = notified(mb, conn);
                        }
                }
                fds[1].fd = conn ? PQsocket(conn) : -1;
                if (poll(fds, 2, MAIL_POLL_MS) < 0 && errno != EINTR)
                        break;
                if (fds[0].revents)
                        break;
                due = !fds[1].revents;
                if (conn && fds[1].revents && !PQconsumeInput(conn)) {
                        PQfinish(conn);
                        conn = NULL;
                } else if (conn && fds[1].revents) {
                        due = notified(mb, conn);
                }
        }
        PQfinish(conn);
        pg_mail_seen_free(mb->seen);
        return NULL;
}

int pg_mail_start(struct db *db, void (*arrived)(void *data), void *data)
{
        struct pg_db *p = (struct pg_db *)db;
        struct pg_mailbox *mb = calloc(1, sizeof(*mb));
        int r;

        if (!mb || asprintf(&mb->me, "%s/%s", p->schema, p->node) < 0) {
                free(mb);
                return log_error_errno(-ENOMEM, "%s: cannot start the mailbox: %m", db->name);
        }
        mb->p = p;
        mb->arrived = arrived;
        mb->data = data;
        mb->tail = &mb->head;
        pthread_mutex_init(&mb->lock, NULL);
        mb->stop_fd = eventfd(0, EFD_CLOEXEC);
        r = mb->stop_fd < 0 ? -errno : -pthread_create(&mb->thread, NULL, mailbox_thread, mb);
        if (r < 0) {
                if (mb->stop_fd >= 0)
                        close(mb->stop_fd);
                free(mb->me);
                free(mb);
                return log_error_errno(r, "%s: cannot start the mailbox: %m", db->name);
        }
        p->mailbox = mb;
        return 0;
}

struct db_mail *pg_mail_take(struct db *db)
{
        struct pg_mailbox *mb = ((struct pg_db *)db)->mailbox;
        struct db_mail *m;

        if (!mb)
                return NULL;
        pthread_mutex_lock(&mb->lock);
        m = mb->head;
        mb->head = NULL;
        mb->tail = &mb->head;
        pthread_mutex_unlock(&mb->lock);
        return m;
}

void pg_mail_stop(struct db *db)
{
        struct pg_db *p = (struct pg_db *)db;
        struct pg_mailbox *mb = p->mailbox;
        uint64_t one = 1;

        if (!mb)
                return;
        if (write(mb->stop_fd, &one, sizeof(one)) < 0) {
                /* an eventfd's counter does not fill up with one write */
        }
        pthread_join(mb->thread, NULL);
        close(mb->stop_fd);
        db_mail_free(mb->head);
        pthread_mutex_destroy(&mb->lock);
        free(mb->me);
        free(mb);
        p->mailbox = NULL;
}
