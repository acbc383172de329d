/* SPDX-License-Identifier: MIT */
/* history's pages, and history on a node of a shared database: every node's runs. */
#ifndef SLOWWORKD_HISTORY_NODES_H
#define SLOWWORKD_HISTORY_NODES_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "methods/method.h"

struct run_record;

/* A history page's records stop near this many bytes, whatever the limit: a client reads a reply
 * whole, and the connection drops one that leaves replies this large unread (CONN_OUT_MAX). */
#define HISTORY_PAGE_BYTES (4u * 1024 * 1024)
#define RECORD_BYTES       320 /* a record's JSON beside its command and log path, about */
/* history's page: the record added to runs unless the page is full (limit records, or about
 * HISTORY_PAGE_BYTES with bytes so far; false). */
bool history_page_add(json_object *runs, const struct run_record *rec, int64_t limit,
                      size_t *bytes);
/* history of a shared database: every node's runs, from the database; owner -1 for any,
 * outcomes a mask of sw_outcomes (0: any), before.id 0 for none. */
void history_of_all_nodes(struct daemon *d, struct conn *c, const struct sw_history_params *p,
                          int64_t owner, unsigned outcomes, const struct sw_run_position *before,
                          struct reply *r);

#endif
