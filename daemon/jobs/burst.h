/* SPDX-License-Identifier: MIT */
/*
 * The enqueues of one loop iteration (a read of pipelined submits, a batch of events) as one
 * burst: each pool they go to is plugged (slow_work_pool_plug) from the first of them until the
 * loop is about to wait again (its prepare phase, which comes before every wait for I/O), so that
 * the burst wakes the pool's threads once, not once an item. Loop thread only.
 */
#ifndef SLOWWORKD_BURST_H
#define SLOWWORKD_BURST_H

#include <stddef.h>
#include <uv.h>

struct slow_work_pool;

struct burst {
        uv_prepare_t prepare;
        struct slow_work_pool **plugged;
        size_t n, size;
};

int burst_init(struct burst *b, uv_loop_t *loop);
/* Before an enqueue into pool: plugs it until the iteration ends (if memory allows). */
void burst_add(struct burst *b, struct slow_work_pool *pool);
/* Unplugs every pool now: before a pool is freed. */
void burst_end(struct burst *b);
/* burst_end(), and the handle closes. */
void burst_close(struct burst *b);

#endif
