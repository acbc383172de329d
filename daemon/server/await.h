/* SPDX-License-Identifier: MIT */
/*
 * A connection's waits for a shared job database, bounded by store-timeout (await.c). A request
 * that waits for the database (a read, or a take back) begins a wait; once it has waited
 * store-timeout it is answered -32603, the message naming the nodes that could not be asked,
 * and the requests after it go on. The wait's token tells its answer, when it comes, whether
 * the request is still waited for (await_current). A reply ends the wait (conn_resume, with
 * conn_await_end()), and so
 * does await_done() when the request goes on otherwise (to another node, or to a wait of
 * another kind). Without a shared database nothing is bounded: a wait is never given up.
 */
#ifndef SLOWWORKD_AWAIT_H
#define SLOWWORKD_AWAIT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

struct conn;

/* The request in progress (its id) waits for the database: its token. */
uint64_t await_begin(struct conn *c, json_object *id);
/* Whether the request of that token is still waited for (not given up, the connection open). */
bool await_current(const struct conn *c, uint64_t token);
/* The request of that token waits no more, if it is still the one waiting. */
void await_done(struct conn *c, uint64_t token);
/* A line was held for a write not committed yet: store-timeout from now, it is looked at (the
 * clients' on_held). */
void await_held(struct conn *c);

#endif
