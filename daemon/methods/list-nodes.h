/* SPDX-License-Identifier: MIT */
/* list on a node of a shared database: its page merged with the other nodes' live jobs. */
#ifndef SLOWWORKD_LIST_NODES_H
#define SLOWWORKD_LIST_NODES_H

#include "methods/method.h"

struct sw_list_params;

/* list's page of this node (r->result) merged with the other nodes' live jobs of a shared
 * database: the reply is deferred until the database answers (list-nodes.c). */
void list_other_nodes(struct daemon *d, struct conn *c, const struct sw_list_params *p,
                      struct reply *r);

#endif
