/* SPDX-License-Identifier: MIT */
/* Requests about a job this node neither holds nor last ran, on a node of a shared database. */
#ifndef SLOWWORKD_ELSEWHERE_H
#define SLOWWORKD_ELSEWHERE_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct conn;
struct daemon;
struct method;

/* How this node answers a request line, whatever job it names (dispatch.c's). */
typedef void elsewhere_here_fn(struct daemon *d, struct conn *c, const char *line, size_t len);

/* Whether a request of a shared database's node waits to learn where a job it names is, and is
 * then passed to that node or answered here (by here); id and params are the request's. */
bool elsewhere_ask(struct daemon *d, struct conn *c, const struct method *method, json_object *id,
                   json_object *params, const char *line, size_t len, elsewhere_here_fn *here,
                   bool again);
/* Whether a request that changes a job this node offered to the others (anything by id but
 * status, wait and log, and a submit or enqueue by the job's key) waits while the node takes the
 * job back; it is then made by again(),
 * here, or where the job went when another node claimed it first. Requests made again (again)
 * are passed on even from another node's client. */
bool elsewhere_take_back(struct daemon *d, struct conn *c, const struct method *method,
                         json_object *id, json_object *params, const char *line, size_t len,
                         elsewhere_here_fn *again);

#endif
