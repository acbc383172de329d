/* SPDX-License-Identifier: MIT */
/*
 * The node's lease, as the loop sees it (a job database that several nodes share): what the node
 * reports at each renewal, its fence when the lease is about to run out unrenewed (runs killed,
 * none started, until a renewal lifts it), and the end when another node took its place.
 */
#ifndef SLOWWORKD_LEASE_H
#define SLOWWORKD_LEASE_H

#include <stdbool.h>
#include <uv.h>

struct daemon;

struct lease {
        uv_timer_t timer;
        struct daemon *d;
        double renew; /* seconds between renewals */
        /* Another node took this one's place, and its jobs: called once. */
        void (*lost)(void *data);
        void *data;
        bool told;
        double fence_at; /* the last deadline set (monotonic; 0: none yet) */
};

int lease_init(struct lease *l, uv_loop_t *loop, struct daemon *d, double renew,
               void (*lost)(void *data), void *data);
/* After each renewal (the store's thread tells the loop): the jobs taken from other nodes, the
 * drains and the ends of jobs of other nodes that jobs here wait for are read from what it saw,
 * and the fence is checked (as it is on the lease's own timer). */
void lease_renewed(struct lease *l);
void lease_close(struct lease *l);

#endif
