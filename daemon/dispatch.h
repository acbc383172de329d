/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORKD_DISPATCH_H
#define SLOWWORKD_DISPATCH_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "methods.h"
#include "proto.h"

struct conn;

/* What a method handler returns: a result, or an error code and message. */
struct reply {
        json_object *id;     /* the request's; a handler that defers takes a reference */
        json_object *result;
        int code;
        char message[256];
        bool deferred;       /* the handler answers later, with conn_reply() */
};

/* Handles one request line from a client, replying on the connection. */
void dispatch_line(struct conn *c, const char *line, size_t len);
/* Replies to a request that could not be read (an oversized line): id null. */
void dispatch_error(struct conn *c, int code, const char *message);

int reply_error(struct reply *r, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

#endif
