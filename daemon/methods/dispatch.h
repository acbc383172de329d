/* SPDX-License-Identifier: MIT */
/* Requests to their methods: the one entry point for a request line. */
#ifndef SLOWWORKD_DISPATCH_H
#define SLOWWORKD_DISPATCH_H

#include <stddef.h>

struct conn;

/* Handles one request line from a client (data: the daemon), replying on the connection. */
void dispatch_line(void *data, struct conn *c, const char *line, size_t len);
/* A request of c made again (its reply still awaited): its job left this node for another
 * (jobs/claims.c), where it goes, even from a connection of another node's client. */
void dispatch_again(void *data, struct conn *c, const char *line, size_t len);

#endif
