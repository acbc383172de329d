/* SPDX-License-Identifier: MIT */
/*
 * Delay timers: a binary min-heap of delayed items ordered by expiry, and one thread per pool,
 * started by the first delayed enqueue, that moves expired items onto the run queues.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>

#include "pool-internal.h"

static void heap_set(struct slow_work_pool *pool, size_t i, struct delayed_slow_work *dwork)
{
        pool->timers[i] = dwork;
        dwork->timer_slot = i;
}

static void sift_up(struct slow_work_pool *pool, size_t i)
{
        struct delayed_slow_work *dwork = pool->timers[i];

        while (i > 0) {
                size_t parent = (i - 1) / 2;

                if (pool->timers[parent]->expires_ns <= dwork->expires_ns)
                        break;
                heap_set(pool, i, pool->timers[parent]);
                i = parent;
        }
        heap_set(pool, i, dwork);
}

static void sift_down(struct slow_work_pool *pool, size_t i)
{
        struct delayed_slow_work *dwork = pool->timers[i];

        for (;;) {
                size_t child = 2 * i + 1;

                if (child >= pool->ntimers)
                        break;
                if (child + 1 < pool->ntimers &&
                    pool->timers[child + 1]->expires_ns < pool->timers[child]->expires_ns)
                        child++;
                if (dwork->expires_ns <= pool->timers[child]->expires_ns)
                        break;
                heap_set(pool, i, pool->timers[child]);
                i = child;
        }
        heap_set(pool, i, dwork);
}

void pool_timer_remove(struct slow_work_pool *pool, struct delayed_slow_work *dwork)
{
        size_t i = dwork->timer_slot;
        struct delayed_slow_work *last = pool->timers[--pool->ntimers];

        if (last == dwork)
                return;
        heap_set(pool, i, last);
        sift_up(pool, i);
        sift_down(pool, last->timer_slot);
}

static void fire(struct slow_work_pool *pool, struct delayed_slow_work *dwork)
{
        struct slow_work *work = &dwork->work;

        pool_timer_remove(pool, dwork);
        if (!(flags_get(work) & SLOW_WORK_EXECUTING)) {
                flags_change(work, SLOW_WORK_DELAYED, 0);
                pool_queue(pool, work);
                pool_kick(pool);
                return;
        }
        /* The running instance's reference carries the next run; the timer's goes. */
        flags_change(work, SLOW_WORK_DELAYED, SLOW_WORK_ENQ_DEFERRED);
        pthread_mutex_unlock(&pool->lock);
        work->ops->put_ref(work);
        pthread_mutex_lock(&pool->lock);
}

static void *timer_main(void *arg)
{
        struct slow_work_pool *pool = arg;

        pthread_setname_np(pthread_self(), "slowd-timer");
        pthread_mutex_lock(&pool->lock);
        while (!pool->stopping) {
                uint64_t now = pool_now_ns();
                struct timespec ts;

                if (pool->ntimers == 0) {
                        pthread_cond_wait(&pool->timer_wake, &pool->lock);
                } else if (pool->timers[0]->expires_ns <= now) {
                        fire(pool, pool->timers[0]);
                } else {
                        ts.tv_sec = (time_t)(pool->timers[0]->expires_ns / 1000000000u);
                        ts.tv_nsec = (long)(pool->timers[0]->expires_ns % 1000000000u);
                        pthread_cond_timedwait(&pool->timer_wake, &pool->lock, &ts);
                }
        }
        pthread_mutex_unlock(&pool->lock);
        return NULL;
}

static int timer_start(struct slow_work_pool *pool)
{
        sigset_t all, old;
        int r;

        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        r = pthread_create(&pool->timer_thread, NULL, timer_main, pool);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r)
                return -r;
        pool->timer_started = true;
        return 0;
}

int pool_timer_reserve(struct slow_work_pool *pool)
{
        int r;

        if (pool->stopping)
                return -ESHUTDOWN;
        if (!pool->timer_started) {
                r = timer_start(pool);
                if (r < 0)
                        return r;
        }
        if (pool->ntimers == pool->timers_size) {
                size_t size = pool->timers_size ? 2 * pool->timers_size : 16;
                struct delayed_slow_work **timers = realloc(pool->timers, size * sizeof(*timers));

                if (!timers)
                        return -ENOMEM;
                pool->timers = timers;
                pool->timers_size = size;
        }
        return 0;
}

void pool_timer_add(struct slow_work_pool *pool, struct delayed_slow_work *dwork, uint64_t expires)
{
        dwork->expires_ns = expires;
        heap_set(pool, pool->ntimers++, dwork);
        sift_up(pool, dwork->timer_slot);
        if (dwork->timer_slot == 0)
                pthread_cond_signal(&pool->timer_wake);
}

size_t pool_timer_stop(struct slow_work_pool *pool)
{
        size_t i, n;

        pthread_mutex_lock(&pool->lock);
        pthread_cond_signal(&pool->timer_wake);
        pthread_mutex_unlock(&pool->lock);
        if (pool->timer_started)
                pthread_join(pool->timer_thread, NULL);

        pthread_mutex_lock(&pool->lock);
        n = pool->ntimers;
        for (i = 0; i < n; i++) {
                struct slow_work *work = &pool->timers[i]->work;

                flags_change(work, SLOW_WORK_DELAYED | SLOW_WORK_PENDING, 0);
                pool_disown(work);
        }
        pool->ntimers = 0;
        pthread_mutex_unlock(&pool->lock);
        return n;
}
