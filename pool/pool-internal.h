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

struct slow_work_pool {
        pthread_mutex_t lock;
        pthread_cond_t changed; /* an item finished, or a thread exited */
        struct slow_work_settings settings;
        unsigned vslow_cap;

        struct runq slow, vslow;
        struct worker *idle_top;
        unsigned nthreads;    /* threads counted against max-threads */
        unsigned nalive;      /* threads not yet gone, retiring ones included */
        unsigned nwaking;     /* woken or new threads that have not looked at the queues yet */
        unsigned nbusy, nbusy_vslow;
        unsigned nwaiters;    /* cancellers waiting for a run to end */
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

uint64_t pool_now_ns(void);

/* All of these run with pool->lock held. */
void pool_queue(struct slow_work_pool *pool, struct slow_work *work);
void pool_kick(struct slow_work_pool *pool);
int pool_timer_add(struct slow_work_pool *pool, struct delayed_slow_work *dwork, uint64_t expires);
void pool_timer_remove(struct slow_work_pool *pool, struct delayed_slow_work *dwork);

/* Takes the lock itself: stops the timer thread and returns the items whose timers were armed,
 * linked through their next member, for the caller to put_ref. */
struct slow_work *pool_timer_stop(struct slow_work_pool *pool);

static inline bool work_is_very_slow(const struct slow_work *work)
{
        return work->flags & SLOW_WORK_VERY_SLOW;
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
