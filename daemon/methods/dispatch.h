/* SPDX-License-Identifier: MIT */
/* Requests to their methods: the one entry point for a request line. */
#ifndef SLOWWORKD_DISPATCH_H
#define SLOWWORKD_DISPATCH_H

#include <stddef.h>

#include <json-c/json.h>
#include <stdbool.h>

struct conn;
struct method;
struct registry;

/* Handles one request line from a client (data: the registry), replying on the connection. */
void dispatch_line(void *data, struct conn *c, const char *line, size_t len);
/* The same, answered by this node whatever job it names. */
void dispatch_here(struct registry *reg, struct conn *c, const char *line, size_t len);

/* Whether a request of a shared database's node waits to learn where a job it names is, and is
 * then passed to that node or answered here (elsewhere.c); id and params are the request's. */
bool elsewhere_ask(struct registry *reg, struct conn *c, const struct method *method,
                   json_object *id, json_object *params, const char *line, size_t len);

#endif
