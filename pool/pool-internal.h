/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORK_POOL_INTERNAL_H
#define SLOWWORK_POOL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>

#include "slowwork.h"

/* A run queue: items linked through their prev/next members, by priority, then in the order
 * they were queued (seq). */
struct runq {
        struct slow_work *head, *tail;
        unsigned n;
};

/* Each worker on a cache line of its own: it is written on every run. */
struct worker {
        struct slow_work_pool *pool;
        struct slow_work *current;
        uint64_t runs; /* items run, moved to the pool's count when the thread exits */
        pid_t tid;
        unsigned id;
        bool used; /* the slot holds a live thread */
} __attribute__((aligned(64)));

struct slow_work_pool {
        /* The first cache line holds only what every enqueue and every run write: the lock and the
         * slow queue. The next one is read by both and written only when threads come, go or wait,
         * or for very slow items, so that it stays shared in every CPU's cache. */
        pthread_mutex_t lock;
        struct runq slow;
        uint64_t next_seq; /* the queue order given last (on a line of its own, after these) */
        uint64_t id;       /* the process's pools numbered from 1: an item's seq_pool */

        struct runq vslow __attribute__((aligned(64)));
        unsigned vslow_cap;
        unsigned nbusy_vslow;
        unsigned nthreads; /* threads counted against max-threads */
        unsigned nidle;    /* waiting on work_cond, not yet sent a wake-up or an exit */
        unsigned nwoken;   /* wake-ups sent that no waiting thread has taken yet */
        unsigned plugged;  /* plugs not yet unplugged: no thread is woken or started */
        unsigned ncoming;  /* threads woken or started that have not yet looked for work */
        unsigned nwaiters; /* cancellers waiting for a run to end */
        struct slow_work_settings settings;

        uint64_t items_run; /* by threads that have exited; stats add the live ones' runs */
        unsigned nretiring; /* exits sent that no waiting thread has taken yet */
        unsigned nalive;    /* threads not yet gone, retiring ones included */
        bool stopping;

        pthread_cond_t work_cond; /* idle workers wait here for an item */
        pthread_cond_t changed;   /* an item's run ended, or a thread exited */

        /* Delay timers: a binary min-heap on expires_ns, served by one lazily started thread. */
        struct delayed_slow_work **timers;
        size_t ntimers, timers_size;
        pthread_cond_t timer_wake;
        pthread_t timer_thread;
        bool timer_started;

        struct worker workers[SLOW_WORK_THREADS_MAX];
};

uint64_t pool_now_ns(void);
uint64_t pool_mark_ns(void);

/* All of these run with pool->lock held. */
void pool_queue(struct slow_work_pool *pool, struct slow_work *work);
/* As pool_queue, but at the place of the item's last enqueue here, if it has one (rule 14). */
void pool_queue_back(struct slow_work_pool *pool, struct slow_work *work);
void pool_kick(struct slow_work_pool *pool);
void pool_disown(struct slow_work *work);
int pool_timer_reserve(struct slow_work_pool *pool); /* room and a thread for one more timer */
void pool_timer_add(struct slow_work_pool *pool, struct delayed_slow_work *dwork, uint64_t expires);
void pool_timer_remove(struct slow_work_pool *pool, struct delayed_slow_work *dwork);

/* Takes the lock itself: stops the timer thread and cancels the armed timers. Returns how many
 * there were; their items stay in pool->timers for the caller to put_ref. */
size_t pool_timer_stop(struct slow_work_pool *pool);

/*
 * Flags change only under the lock of the item's pool, but slow_work_is_pending() and
 * slow_work_is_executing() read them without it: so the stores are atomic.
 */
static inline unsigned long flags_get(const struct slow_work *work)
{
        return __atomic_load_n(&work->flags, __ATOMIC_RELAXED);
}

static inline void flags_change(struct slow_work *work, unsigned long clear, unsigned long set)
{
        __atomic_store_n(&work->flags, (flags_get(work) & ~clear) | set, __ATOMIC_RELEASE);
}

static inline bool work_is_very_slow(const struct slow_work *work)
{
        return flags_get(work) & SLOW_WORK_VERY_SLOW;
}

static inline void runq_append(struct runq *q, struct slow_work *work)
{
        work->next = NULL;
        work->prev = q->tail;
        if (q->tail)
                q->tail->next = work;
        else
                q->head = work;
        q->tail = work;
        q->n++;
}

/* Whether a is taken before b. */
static inline bool runq_before(const struct slow_work *a, const struct slow_work *b)
{
        return a->priority > b->priority || (a->priority == b->priority && a->seq < b->seq);
}

/* Where work's priority and seq say. An item queued anew has the highest seq: with priorities
 * alike (the common case) it goes to the tail at once; else the walk passes the items of lower
 * priorities, from the tail, or none when it goes first. One put back (rule 14) keeps its older
 * seq: the walk passes the younger items of its priority too. */
static inline void runq_insert(struct runq *q, struct slow_work *work)
{
        struct slow_work *after = q->tail;

        if (!after || !runq_before(work, after)) {
                runq_append(q, work);
                return;
        }
        if (runq_before(work, q->head))
                after = NULL;
        else
                while (runq_before(work, after))
                        after = after->prev;
        work->prev = after;
        work->next = after ? after->next : q->head;
        work->next->prev = work;
        if (after)
                after->next = work;
        else
                q->head = work;
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
