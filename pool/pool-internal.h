/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORK_POOL_INTERNAL_H
#define SLOWWORK_POOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "slowwork.h"

/* A FIFO of items linked through their prev/next members. */
struct runq {
        struct slow_work *head, *tail;
        unsigned n;
};

struct worker {
        struct slow_work_pool *pool;
        pthread_cond_t wake;
        struct worker *idle_next; /* on the pool's idle stack */
        struct slow_work *current;
        pid_t tid;
        unsigned id;
        bool used;    /* the slot holds a live thread */
        bool idle;    /* on the idle stack; cleared by whoever wakes it */
        bool retire;  /* exit at the next look at the queues */
};

#define CACHELINE 64

/*
 * Enqueues come in without the lock, one lock-free FIFO per class (slow, very slow); the lock
 * holder takes from them directly or moves them onto the run queues (pool_drain). The producers'
 * end and the lock holder's end live on cache lines of their own.
 */
struct incoming {
        _Alignas(CACHELINE) struct slow_work *tail; /* atomic: producers swap themselves in */
        _Alignas(CACHELINE) struct slow_work *head; /* lock holder's end */
        struct slow_work stub;
};

struct slow_work_pool {
        /* Read by every enqueue, written only when threads come, go, sleep or wake. */
        _Alignas(CACHELINE) unsigned nthreads; /* threads counted against max-threads */
        unsigned max_threads;                  /* mirror of settings.max_threads */
        unsigned nidle;                        /* mirror of the idle stack's depth */
        unsigned nwaking; /* threads woken, new or spinning, on their way to the queues */

        struct incoming incoming[2];

        _Alignas(CACHELINE) pthread_mutex_t lock;
        pthread_cond_t changed; /* an item finished, or a thread exited */
        struct slow_work_settings settings;
        unsigned vslow_cap;

        struct runq slow, vslow;
        struct worker *idle_top;
        unsigned nalive;   /* threads not yet gone, retiring ones included */
        bool spinning;     /* a thread polls the incoming FIFOs before it sleeps */
        unsigned nbusy, nbusy_vslow;
        unsigned nwaiters; /* cancellers waiting for a run to end */
        uint64_t items_run;
        bool stopping;

        /* Delay timers: a binary min-heap on expires_ns, served by one lazily started thread. */
        struct delayed_slow_work **timers;
        size_t ntimers, timers_size;
        pthread_cond_t timer_wake;
        pthread_t timer_thread;
        bool timer_started;

        struct worker workers[SLOW_WORK_THREADS_MAX];
};

/* Internal flag: the item is linked on a run queue, not on an incoming FIFO. Set by
 * runq_append(); whoever unlinks the item clears it with the flags it changes. */
#define WORK_LINKED (1UL << 6)
#define WORK_KERNEL_FLAGS 0x3fUL

uint64_t pool_now_ns(void);
uint64_t pool_mark_ns(void);

void incoming_init(struct slow_work_pool *pool);
void incoming_push(struct slow_work_pool *pool, struct slow_work *work);
struct slow_work *incoming_pop(struct slow_work_pool *pool, bool very_slow); /* lock held */
bool incoming_empty(struct slow_work_pool *pool, bool very_slow);               /* lock held */

/* All of these run with pool->lock held. */
void pool_drain(struct slow_work_pool *pool);
void pool_queue(struct slow_work_pool *pool, struct slow_work *work);
void pool_kick(struct slow_work_pool *pool);
int pool_timer_reserve(struct slow_work_pool *pool); /* room and a thread for one more timer */
void pool_timer_add(struct slow_work_pool *pool, struct delayed_slow_work *dwork, uint64_t expires);
void pool_timer_remove(struct slow_work_pool *pool, struct delayed_slow_work *dwork);

/* Takes the lock itself: stops the timer thread and returns the items whose timers were armed,
 * linked through their next member, for the caller to put_ref. */
struct slow_work *pool_timer_stop(struct slow_work_pool *pool);

/* Flags change without the lock (enqueue), so every access is atomic. */
static inline unsigned long flags_get(struct slow_work *work)
{
        return __atomic_load_n(&work->flags, __ATOMIC_ACQUIRE);
}

static inline void flags_set(struct slow_work *work, unsigned long bits)
{
        __atomic_fetch_or(&work->flags, bits, __ATOMIC_ACQ_REL);
}

static inline void flags_clear(struct slow_work *work, unsigned long bits)
{
        __atomic_fetch_and(&work->flags, ~bits, __ATOMIC_ACQ_REL);
}

/* Clears and sets bits in one step; returns the flags before. */
static inline unsigned long flags_change(struct slow_work *work, unsigned long clear,
                                         unsigned long set)
{
        unsigned long old = flags_get(work);

        while (!__atomic_compare_exchange_n(&work->flags, &old, (old & ~clear) | set, false,
                                            __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                ;
        return old;
}

static inline bool work_is_very_slow(struct slow_work *work)
{
        return flags_get(work) & SLOW_WORK_VERY_SLOW;
}

/*
 * The counters enqueue reads without the lock. Sequentially consistent, like the FIFO's links, so
 * that an enqueue and a thread going idle cannot miss each other: either the enqueue sees the
 * thread idle, or the thread, looking again after saying so, sees the item (Dekker's pattern).
 */
#define ATOMIC_GET(x) __atomic_load_n(&(x), __ATOMIC_SEQ_CST)
#define ATOMIC_SET(x, v) __atomic_store_n(&(x), (v), __ATOMIC_SEQ_CST)

static inline void runq_append(struct runq *q, struct slow_work *work)
{
        flags_set(work, WORK_LINKED);
        work->next = NULL;
        work->prev = q->tail;
        if (q->tail)
                q->tail->next = work;
        else
                q->head = work;
        q->tail = work;
        q->n++;
}

static inline void runq_remove(struct runq *q, struct slow_work *work)
{
        if (work->prev)
                work->prev->next = work->next;
        else
                q->head = work->next;
        if (work->next)
                work->next->prev = work->prev;
        else
                q->tail = work->prev;
        work->prev = work->next = NULL;
        q->n--;
}

#endif
