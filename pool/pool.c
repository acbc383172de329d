/* SPDX-License-Identifier: MIT */
/*
 * The pool: one mutex, two FIFO run queues (slow, very slow), and worker threads that sleep on
 * their own condition variable on an idle stack, so a wake-up goes to exactly one thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool-internal.h"

uint64_t pool_now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int slow_work_settings_validate(const struct slow_work_settings *s)
{
        if (s->min_threads < 1 || s->min_threads > s->max_threads ||
            s->max_threads > SLOW_WORK_THREADS_MAX)
                return -EINVAL;
        if (s->vslow_percentage < 1 || s->vslow_percentage > 99)
                return -EINVAL;
        if (s->idle_timeout_ms < 1 || s->idle_timeout_ms > SLOW_WORK_IDLE_TIMEOUT_MAX_MS)
                return -EINVAL;
        return 0;
}

unsigned slow_work_very_slow_cap(const struct slow_work_settings *s)
{
        unsigned cap = s->max_threads * s->vslow_percentage / 100;

        if (cap < 1)
                cap = 1;
        if (s->max_threads > 1 && cap > s->max_threads - 1)
                cap = s->max_threads - 1;
        return cap;
}

static struct runq *class_queue(struct slow_work_pool *pool, const struct slow_work *work)
{
        return work_is_very_slow(work) ? &pool->vslow : &pool->slow;
}

void pool_queue(struct slow_work_pool *pool, struct slow_work *work)
{
        work->mark_ns = pool_now_ns();
        runq_append(class_queue(pool, work), work);
}

/* Items a thread could start now. */
static unsigned runnable(const struct slow_work_pool *pool)
{
        unsigned vslow = 0;

        if (pool->vslow_cap > pool->nbusy_vslow) {
                vslow = pool->vslow_cap - pool->nbusy_vslow;
                if (vslow > pool->vslow.n)
                        vslow = pool->vslow.n;
        }
        return pool->slow.n + vslow;
}

static struct slow_work *pick(struct slow_work_pool *pool)
{
        struct runq *q;
        struct slow_work *work;

        if (pool->vslow.n && pool->nbusy_vslow < pool->vslow_cap)
                q = &pool->vslow;
        else if (pool->slow.n)
                q = &pool->slow;
        else
                return NULL;
        work = q->head;
        runq_remove(q, work);
        return work;
}

static struct worker *wake_idle(struct slow_work_pool *pool)
{
        struct worker *t = pool->idle_top;

        pool->idle_top = t->idle_next;
        t->idle = false;
        pool->nwaking++;
        pthread_cond_signal(&t->wake);
        return t;
}

static void idle_remove(struct slow_work_pool *pool, struct worker *t)
{
        struct worker **p;

        for (p = &pool->idle_top; *p != t; p = &(*p)->idle_next)
                ;
        *p = t->idle_next;
        t->idle = false;
}

static void *worker_main(void *arg);

static int start_worker(struct slow_work_pool *pool)
{
        pthread_attr_t attr;
        pthread_t thread;
        sigset_t all, old;
        struct worker *t = NULL;
        unsigned i;
        int r;

        for (i = 0; i < SLOW_WORK_THREADS_MAX && !t; i++)
                if (!pool->workers[i].used)
                        t = &pool->workers[i];
        if (!t)
                return -EAGAIN;

        t->used = true;
        t->idle = t->retire = false;
        t->current = NULL;
        t->tid = 0;
        pool->nthreads++;
        pool->nalive++;
        pool->nwaking++;

        /* Workers never take the process's signals: the creator's mask is inherited. */
        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, &old);
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = pthread_create(&thread, &attr, worker_main, t);
        pthread_attr_destroy(&attr);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r) {
                t->used = false;
                pool->nthreads--;
                pool->nalive--;
                pool->nwaking--;
                return -r;
        }
        return 0;
}

void pool_kick(struct slow_work_pool *pool)
{
        unsigned want = runnable(pool);

        while (want > pool->nwaking) {
                if (pool->idle_top)
                        wake_idle(pool);
                else if (pool->nthreads >= pool->settings.max_threads || start_worker(pool) < 0)
                        break;
        }
}

/* Waits on the idle stack until woken (false) or idle for idle-timeout above min-threads (true). */
static bool idle_wait(struct slow_work_pool *pool, struct worker *t)
{
        t->idle = true;
        t->idle_next = pool->idle_top;
        pool->idle_top = t;

        while (t->idle) {
                uint64_t deadline = pool_now_ns() + pool->settings.idle_timeout_ms * 1000000ull;
                struct timespec ts = {
                    .tv_sec = (time_t)(deadline / 1000000000u),
                    .tv_nsec = (long)(deadline % 1000000000u),
                };

                if (pthread_cond_timedwait(&t->wake, &pool->lock, &ts) == ETIMEDOUT && t->idle &&
                    pool->nthreads > pool->settings.min_threads) {
                        idle_remove(pool, t);
                        return true;
                }
        }
        pool->nwaking--;
        return false;
}

static void run(struct slow_work_pool *pool, struct worker *t, struct slow_work *work)
{
        bool vslow = work_is_very_slow(work);
        bool requeue;

        work->flags = (work->flags & ~SLOW_WORK_PENDING) | SLOW_WORK_EXECUTING;
        work->mark_ns = pool_now_ns();
        t->current = work;
        pool->nbusy++;
        if (vslow)
                pool->nbusy_vslow++;
        pthread_mutex_unlock(&pool->lock);

        work->ops->execute(work);

        pthread_mutex_lock(&pool->lock);
        work->flags &= ~SLOW_WORK_EXECUTING;
        t->current = NULL;
        pool->items_run++;
        requeue = work->flags & SLOW_WORK_ENQ_DEFERRED;
        if (requeue) {
                /* The run's reference goes over to the new queue entry. */
                work->flags &= ~SLOW_WORK_ENQ_DEFERRED;
                pool_queue(pool, work);
        }
        if (pool->nwaiters)
                pthread_cond_broadcast(&pool->changed);
        if (!requeue) {
                pthread_mutex_unlock(&pool->lock);
                work->ops->put_ref(work);
                pthread_mutex_lock(&pool->lock);
        }
        pool->nbusy--;
        if (vslow)
                pool->nbusy_vslow--;
        if (requeue)
                pool_kick(pool);
}

static void *worker_main(void *arg)
{
        struct worker *t = arg;
        struct slow_work_pool *pool = t->pool;
        char name[16];

        snprintf(name, sizeof(name), "slowd%03u", t->id);
        pthread_setname_np(pthread_self(), name);

        pthread_mutex_lock(&pool->lock);
        t->tid = gettid();
        pool->nwaking--;
        while (!t->retire) {
                struct slow_work *work;

                if (pool->nthreads > pool->settings.max_threads) {
                        pool->nthreads--;
                        break;
                }
                work = pick(pool);
                if (work) {
                        run(pool, t, work);
                        continue;
                }
                if (pool->stopping || idle_wait(pool, t)) {
                        pool->nthreads--;
                        break;
                }
        }
        t->used = false;
        pool->nalive--;
        pthread_cond_broadcast(&pool->changed);
        pthread_mutex_unlock(&pool->lock);
        return NULL;
}

static void wait_threads_gone(struct slow_work_pool *pool)
{
        pthread_mutex_lock(&pool->lock);
        pool->stopping = true;
        while (pool->idle_top)
                wake_idle(pool);
        while (pool->nalive)
                pthread_cond_wait(&pool->changed, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
}

static void pool_destroy(struct slow_work_pool *pool)
{
        unsigned i;

        for (i = 0; i < SLOW_WORK_THREADS_MAX; i++)
                pthread_cond_destroy(&pool->workers[i].wake);
        pthread_cond_destroy(&pool->timer_wake);
        pthread_cond_destroy(&pool->changed);
        pthread_mutex_destroy(&pool->lock);
        free(pool->timers);
        free(pool);
}

int slow_work_pool_new(const struct slow_work_settings *settings,
                       struct slow_work_pool **ret_pool)
{
        struct slow_work_settings defaults = SLOW_WORK_SETTINGS_DEFAULT;
        struct slow_work_pool *pool;
        pthread_condattr_t attr;
        unsigned i;
        int r;

        if (!settings)
                settings = &defaults;
        r = slow_work_settings_validate(settings);
        if (r < 0)
                return r;

        pool = calloc(1, sizeof(*pool));
        if (!pool)
                return -ENOMEM;
        pool->settings = *settings;
        pool->vslow_cap = slow_work_very_slow_cap(settings);
        pthread_mutex_init(&pool->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&pool->changed, &attr);
        pthread_cond_init(&pool->timer_wake, &attr);
        for (i = 0; i < SLOW_WORK_THREADS_MAX; i++) {
                pool->workers[i].pool = pool;
                pool->workers[i].id = i;
                pthread_cond_init(&pool->workers[i].wake, &attr);
        }
        pthread_condattr_destroy(&attr);

        pthread_mutex_lock(&pool->lock);
        for (i = 0; i < settings->min_threads && r == 0; i++)
                r = start_worker(pool);
        pthread_mutex_unlock(&pool->lock);
        if (r < 0) {
                wait_threads_gone(pool);
                pool_destroy(pool);
                return r;
        }
        *ret_pool = pool;
        return 0;
}

void slow_work_pool_free(struct slow_work_pool *pool)
{
        struct slow_work *work, *next;

        if (!pool)
                return;
        pthread_mutex_lock(&pool->lock);
        pool->stopping = true;
        pthread_mutex_unlock(&pool->lock);
        for (work = pool_timer_stop(pool); work; work = next) {
                next = work->next;
                work->next = NULL;
                work->ops->put_ref(work);
        }
        wait_threads_gone(pool);
        pool_destroy(pool);
}

int slow_work_pool_enqueue(struct slow_work_pool *pool, struct slow_work *work)
{
        int r = 0;

        pthread_mutex_lock(&pool->lock);
        if (work->flags & SLOW_WORK_CANCELLING) {
                r = -ECANCELED;
        } else if (work->flags & SLOW_WORK_PENDING) {
                /* Coalesced: it runs once, after this call. */
        } else if (work->flags & SLOW_WORK_EXECUTING) {
                work->flags |= SLOW_WORK_PENDING | SLOW_WORK_ENQ_DEFERRED;
        } else if (work->ops->get_ref(work)) {
                r = -EAGAIN;
        } else {
                __atomic_store_n(&work->pool, pool, __ATOMIC_RELEASE);
                work->flags |= SLOW_WORK_PENDING;
                pool_queue(pool, work);
                pool_kick(pool);
        }
        pthread_mutex_unlock(&pool->lock);
        return r;
}

int slow_work_pool_enqueue_delayed(struct slow_work_pool *pool, struct delayed_slow_work *dwork,
                                   unsigned long delay_ms)
{
        struct slow_work *work = &dwork->work;
        bool put = false;
        int r = 0;

        if (delay_ms == 0)
                return slow_work_pool_enqueue(pool, work);

        pthread_mutex_lock(&pool->lock);
        if (work->flags & SLOW_WORK_CANCELLING) {
                r = -ECANCELED;
        } else if (work->flags & SLOW_WORK_PENDING) {
                /* Already due: the delay is neither moved forward nor extended. */
        } else if (work->ops->get_ref(work)) {
                r = -EAGAIN;
        } else {
                r = pool_timer_add(pool, dwork, pool_now_ns() + delay_ms * 1000000ull);
                if (r == 0) {
                        __atomic_store_n(&work->pool, pool, __ATOMIC_RELEASE);
                        work->flags |= SLOW_WORK_PENDING | SLOW_WORK_DELAYED;
                } else {
                        put = true;
                }
        }
        pthread_mutex_unlock(&pool->lock);
        if (put)
                work->ops->put_ref(work);
        return r;
}

void slow_work_cancel(struct slow_work *work)
{
        struct slow_work_pool *pool = __atomic_load_n(&work->pool, __ATOMIC_ACQUIRE);
        bool put = false;

        if (!pool)
                return;

        pthread_mutex_lock(&pool->lock);
        work->flags |= SLOW_WORK_CANCELLING;
        work->cancellers++;
        if (work->flags & SLOW_WORK_DELAYED) {
                pool_timer_remove(pool, (struct delayed_slow_work *)work);
                work->flags &= ~(SLOW_WORK_DELAYED | SLOW_WORK_PENDING);
                put = true;
        } else if ((work->flags & SLOW_WORK_PENDING) && !(work->flags & SLOW_WORK_EXECUTING)) {
                runq_remove(class_queue(pool, work), work);
                work->flags &= ~SLOW_WORK_PENDING;
                put = true;
        } else if (work->flags & SLOW_WORK_ENQ_DEFERRED) {
                work->flags &= ~(SLOW_WORK_ENQ_DEFERRED | SLOW_WORK_PENDING);
        }
        pool->nwaiters++;
        while (work->flags & SLOW_WORK_EXECUTING)
                pthread_cond_wait(&pool->changed, &pool->lock);
        pool->nwaiters--;
        if (--work->cancellers == 0)
                work->flags &= ~SLOW_WORK_CANCELLING;
        pthread_mutex_unlock(&pool->lock);
        if (put)
                work->ops->put_ref(work);
}

int slow_work_pool_configure(struct slow_work_pool *pool, const struct slow_work_settings *settings)
{
        int r = slow_work_settings_validate(settings);

        if (r < 0)
                return r;

        pthread_mutex_lock(&pool->lock);
        pool->settings = *settings;
        pool->vslow_cap = slow_work_very_slow_cap(settings);
        while (pool->nthreads > settings->max_threads && pool->idle_top) {
                wake_idle(pool)->retire = true;
                pool->nthreads--;
        }
        while (pool->nthreads < settings->min_threads && start_worker(pool) == 0)
                ;
        pool_kick(pool);
        pthread_mutex_unlock(&pool->lock);
        return 0;
}

void slow_work_pool_settings(struct slow_work_pool *pool, struct slow_work_settings *ret_settings)
{
        pthread_mutex_lock(&pool->lock);
        *ret_settings = pool->settings;
        pthread_mutex_unlock(&pool->lock);
}

void slow_work_pool_stats(struct slow_work_pool *pool, struct slow_work_stats *ret_stats)
{
        struct worker *t;
        unsigned idle = 0;

        pthread_mutex_lock(&pool->lock);
        for (t = pool->idle_top; t; t = t->idle_next)
                idle++;
        *ret_stats = (struct slow_work_stats){
            .threads = pool->nthreads,
            .busy = pool->nbusy,
            .busy_very_slow = pool->nbusy_vslow,
            .idle = idle,
            .very_slow_cap = pool->vslow_cap,
            .queued_slow = pool->slow.n,
            .queued_very_slow = pool->vslow.n,
            .delayed = (unsigned)pool->ntimers,
            .items_run = pool->items_run,
        };
        pthread_mutex_unlock(&pool->lock);
}
