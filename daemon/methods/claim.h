/* SPDX-License-Identifier: MIT */
/* A keyed submit's claim of its key among the nodes of a shared database. */
#ifndef SLOWWORKD_CLAIM_H
#define SLOWWORKD_CLAIM_H

#include "methods/method.h"

struct sw_submit_params;

/* A keyed submit of a shared database, its job new (added, not yet saved): its first row
 * claims the key among the nodes, and the request is answered once that is known. */
void claim_submit(struct daemon *d, struct conn *c, struct job *job,
                  const struct sw_submit_params *p, struct reply *r);

#endif
