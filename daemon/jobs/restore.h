/* SPDX-License-Identifier: MIT */
/* Start: the jobs and the history in the state database, queued again as they were. */
#ifndef SLOWWORKD_RESTORE_H
#define SLOWWORKD_RESTORE_H

struct daemon;

/* Pending jobs are queued again in their order (delayed ones for what is left of their delay);
 * a run the last daemon's end cut is recorded interrupted and queued once more, except a
 * plugin's, which waits, held, for an enqueue. Call before the store's thread starts. */
int restore(struct daemon *d);
/* The same for the jobs this node took from nodes whose lease ran out (the store's list). */
void restore_adopted(struct daemon *d);

#endif
