/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORK_TESTS_POOL_HELPERS_H
#define SLOWWORK_TESTS_POOL_HELPERS_H

#include <check.h>
#include <stdbool.h>
#include <stddef.h>

#include "slowwork.h"

#define container_of(ptr, type, member) ((type *)((char *)(ptr) - offsetof(type, member)))

/*
 * Test items record what the pool did to them under one global lock ("ev"), whose condition is
 * broadcast on every change, so tests wait for conditions instead of sleeping.
 */
struct gate {
        bool open;
};

struct group {
        int running, max_running;
};

struct titem {
        struct delayed_slow_work dw;
        struct slow_work_pool *pool; /* where execute() enqueues itself; NULL: the default pool */
        int id;
        bool very_slow;
        bool refuse;                 /* get_ref fails */
        struct gate *gate;           /* execute() waits for it to open */
        struct gate *opens;          /* execute() opens it first */
        struct group *group;         /* concurrency of a set of items */
        int requeue_in_exec;         /* execute() enqueues its own item this many times */
        int gets, puts, runs, running, max_running;
        uint64_t first_start_ns;
};

extern const struct slow_work_ops titem_ops;

/* Global record, under the ev lock. */
extern int ev_running, ev_max_running, ev_vslow_running, ev_max_vslow_running;
extern int ev_order[4096];
extern int ev_norder;

void titem_init(struct titem *t, int id, bool very_slow, struct slow_work_pool *pool);
static inline struct slow_work *W(struct titem *t)
{
        return &t->dw.work;
}

/* Inits n items (ids first_id...) that wait for the gate, and enqueues them in order. */
void enqueue_gated(struct slow_work_pool *pool, struct titem *items, int n, int first_id,
                   bool very_slow, struct gate *gate);

/* Inits an item that waits for the gate, enqueues it and returns once it runs. */
void run_gated(struct slow_work_pool *pool, struct titem *t, int id, bool very_slow,
               struct gate *gate);

void ev_lock(void);
void ev_unlock(void);
bool ev_wait(void); /* false after 20 s without a change */
void gate_open(struct gate *g);

uint64_t now_ns(void);
/* Live worker threads of any pool in this process, by their names (slowd000...). */
int worker_threads(void);
/* The CPU time of this process's pool threads (slowd...), alive now, in nanoseconds. */
uint64_t pool_threads_cpu_ns(void);
/* Sleeps window_ms and fails the test if the pool threads used 5% of a core or more meanwhile. */
void assert_pool_idle_costs_nothing(unsigned window_ms);

#define WAIT_FOR(expr)                                                                             \
        do {                                                                                       \
                bool ok_ = true;                                                                   \
                ev_lock();                                                                         \
                while (ok_ && !(expr))                                                             \
                        ok_ = ev_wait();                                                           \
                ev_unlock();                                                                       \
                ck_assert_msg(ok_, "timed out waiting for %s", #expr);                             \
        } while (0)

/* Polls what has no notification (pool statistics, the process's thread count): 1 ms steps. */
#define POLL_FOR(expr)                                                                             \
        do {                                                                                       \
                uint64_t end_ = now_ns() + 20000000000ull;                                         \
                while (!(expr) && now_ns() < end_)                                                 \
                        poll_pause();                                                              \
                ck_assert_msg((expr), "timed out waiting for %s", #expr);                          \
        } while (0)

void poll_pause(void);
struct slow_work_stats pool_stats(struct slow_work_pool *pool);
struct slow_work_pool *pool_with(unsigned min, unsigned max, unsigned pct, unsigned idle_ms);

#endif
