/* SPDX-License-Identifier: MIT */
/*
 * Requests passed between the nodes of a shared database, as mail (store_send_mail). A node
 * passes a client's request about another node's job to that node, in a session of the client's
 * connection with that node, opened with the client's credentials; the other node serves it on
 * a connection of its own (a socket pair), and every line that connection writes (the reply, and
 * the events after it) comes back and goes to the client. A session ends with either side's
 * connection, or when the other node is no longer live.
 */
#ifndef SLOWWORKD_RELAY_H
#define SLOWWORKD_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct clients;
struct conn;
struct store;
struct db_mail;
struct relay_out;
struct relay_in;

struct relay {
        struct clients *clients;
        struct store *store;
        int64_t last_session;
        struct relay_out *outs; /* the sessions this node opened for its clients */
        struct relay_in *ins;   /* the sessions other nodes opened here */
        uv_timer_t timer;       /* while there are sessions: ends those of nodes gone */
};

int relay_init(struct relay *r, uv_loop_t *loop, struct clients *clients, struct store *store);
void relay_close(struct relay *r);
/* Passes the request line to node for the client c, whose reply is deferred until that node's
 * comes back (a notification's is not awaited): false, and nothing done, when node is not live
 * as last seen. */
bool relay_forward(struct relay *r, struct conn *c, const char *node, const char *line,
                   size_t len);
/* The same to a node that the database, read just now, says is live with that epoch, though
 * the last lease renewal did not see it (a node that just started). */
void relay_forward_read(struct relay *r, struct conn *c, const char *node, int64_t epoch,
                        const char *line, size_t len);
/* The client subscribed here: it gets the events of every other live node too (of the nodes
 * live now). */
void relay_subscribe(struct relay *r, struct conn *c);
/* The client is gone: its sessions end. */
void relay_conn_closed(struct relay *r, struct conn *c);
/* Mail from another node of a session's kind (store_on_mail()'s, through the caller's). */
void relay_on_mail(void *data, const struct db_mail *m);

#endif
