/* SPDX-License-Identifier: MIT */
/*
 * The pool: one mutex, two FIFO run queues (slow, very slow), and worker threads that sleep on
 * their own condition variable on an idle stack, so a wake-up goes to exactly one thread.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool-internal.h"

#define SPIN_NS 20000u /* how long one thread polls for new items before it sleeps */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
}

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

static struct runq *class_queue(struct slow_work_pool *pool, struct slow_work *work)
{
        return work_is_very_slow(work) ? &pool->vslow : &pool->slow;
}

/* The run queue view's ages: a coarse clock is plenty, and cheap. */
uint64_t pool_mark_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Queues from under the lock: behind every push already begun, whether or not it is complete. */
void pool_queue(struct slow_work_pool *pool, struct slow_work *work)
{
        work->mark_ns = pool_mark_ns();
        incoming_push(pool, work);
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

/* The oldest item of a class: run queue first, then what came in since the last drain. */
static struct slow_work *take(struct slow_work_pool *pool, bool very_slow)
{
        struct runq *q = very_slow ? &pool->vslow : &pool->slow;
        struct slow_work *work = q->head;

        if (!work)
                return incoming_pop(pool, very_slow);
        runq_remove(q, work);
        return work;
}

static struct slow_work *pick(struct slow_work_pool *pool)
{
        struct slow_work *work = NULL;

        if (pool->nbusy_vslow < pool->vslow_cap)
                work = take(pool, true);
        return work ? work : take(pool, false);
}

static struct worker *wake_idle(struct slow_work_pool *pool)
{
        struct worker *t = pool->idle_top;

        pool->idle_top = t->idle_next;
        ATOMIC_SET(pool->nidle, pool->nidle - 1);
        t->idle = false;
        ATOMIC_SET(pool->nwaking, pool->nwaking + 1);
        pthread_cond_signal(&t->wake);
        return t;
}

static void idle_remove(struct slow_work_pool *pool, struct worker *t)
{
        struct worker **p;

        for (p = &pool->idle_top; *p != t; p = &(*p)->idle_next)
                ;
        *p = t->idle_next;
        ATOMIC_SET(pool->nidle, pool->nidle - 1);
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
        ATOMIC_SET(pool->nthreads, pool->nthreads + 1);
        pool->nalive++;
        ATOMIC_SET(pool->nwaking, pool->nwaking + 1);

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
                ATOMIC_SET(pool->nthreads, pool->nthreads - 1);
                pool->nalive--;
                ATOMIC_SET(pool->nwaking, pool->nwaking - 1);
                return -r;
        }
        return 0;
}

void pool_kick(struct slow_work_pool *pool)
{
        unsigned want;

        pool_drain(pool);
        want = runnable(pool);

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
        uint64_t since = pool_now_ns();

        t->idle = true;
        t->idle_next = pool->idle_top;
        pool->idle_top = t;
        ATOMIC_SET(pool->nidle, pool->nidle + 1);
        pool_drain(pool);
        if (runnable(pool)) {
                idle_remove(pool, t);
                return false;
        }

        /*
         * At or below min-threads a thread sleeps until woken; above it, until its idle time is
         * up. Both are worked out afresh after every wake-up (settings may have changed), so no
         * wait is ever on a deadline that has passed.
         */
        while (t->idle) {
                uint64_t deadline = since + pool->settings.idle_timeout_ms * 1000000ull;
                struct timespec ts = {
                    .tv_sec = (time_t)(deadline / 1000000000u),
                    .tv_nsec = (long)(deadline % 1000000000u),
                };

                if (pool->nthreads <= pool->settings.min_threads) {
                        pthread_cond_wait(&t->wake, &pool->lock);
                } else if (pool_now_ns() >= deadline) {
                        idle_remove(pool, t);
                        return true;
                } else {
                        pthread_cond_timedwait(&t->wake, &pool->lock, &ts);
                }
        }
        if (!t->retire)
                ATOMIC_SET(pool->nwaking, pool->nwaking - 1);
        return false;
}

static void start(struct slow_work_pool *pool, struct worker *t, struct slow_work *work)
{
        flags_change(work, SLOW_WORK_PENDING | WORK_LINKED, SLOW_WORK_EXECUTING);
        work->mark_ns = pool_mark_ns();
        t->current = work;
        pool->nbusy++;
        if (work_is_very_slow(work))
                pool->nbusy_vslow++;
}

/* Ends a run; returns the item if its reference is to be dropped, NULL if it runs again. */
static struct slow_work *finish(struct slow_work_pool *pool, struct worker *t,
                                struct slow_work *work)
{
        unsigned long old = flags_change(work, SLOW_WORK_EXECUTING | SLOW_WORK_ENQ_DEFERRED, 0);

        t->current = NULL;
        pool->items_run++;
        pool->nbusy--;
        if (old & SLOW_WORK_VERY_SLOW)
                pool->nbusy_vslow--;
        if (pool->nwaiters)
                pthread_cond_broadcast(&pool->changed);
        if (!(old & SLOW_WORK_ENQ_DEFERRED))
                return work;
        /* The run's reference goes over to the new queue entry; this thread looks at it next. */
        pool_queue(pool, work);
        return NULL;
}

/*
 * One lock hold per item: a run is finished and the next one picked together, and the finished
 * item's put_ref is called once the lock is dropped.
 */
/*
 * Before sleeping, one thread at a time polls the incoming FIFOs for a moment, counted as waking,
 * so a stream of short items is taken up without a wake-up per item.
 */
static void spin(struct slow_work_pool *pool)
{
        struct slow_work *tail0 = __atomic_load_n(&pool->incoming[0].tail, __ATOMIC_ACQUIRE);
        struct slow_work *tail1 = __atomic_load_n(&pool->incoming[1].tail, __ATOMIC_ACQUIRE);
        uint64_t deadline;
        unsigned i;

        pool->spinning = true;
        ATOMIC_SET(pool->nwaking, pool->nwaking + 1);
        pthread_mutex_unlock(&pool->lock);
        deadline = pool_now_ns() + SPIN_NS;
        /* Each look takes the producers' cache line from them: look less often as time passes. */
        for (i = 1;; i++) {
                unsigned j;

                if (__atomic_load_n(&pool->incoming[0].tail, __ATOMIC_ACQUIRE) != tail0 ||
                    __atomic_load_n(&pool->incoming[1].tail, __ATOMIC_ACQUIRE) != tail1)
                        break;
                if (i % 16 == 0 && pool_now_ns() > deadline)
                        break;
                for (j = 0; j < i && j < 32; j++)
                        cpu_relax();
        }
        pthread_mutex_lock(&pool->lock);
        pool->spinning = false;
        ATOMIC_SET(pool->nwaking, pool->nwaking - 1);
}

/* More work behind the item just picked, and nobody on the way to it: wake or start threads. */
static void wake_for_more(struct slow_work_pool *pool)
{
        if (pool->nwaking || (!pool->idle_top && pool->nthreads >= pool->settings.max_threads))
                return;
        if (!pool->slow.n && incoming_empty(pool, false) &&
            (pool->nbusy_vslow >= pool->vslow_cap || (!pool->vslow.n && incoming_empty(pool, true))))
                return;
        /* One at a time: the thread woken looks again when it picks. No drain here, so that
         * items taken straight from the incoming FIFOs are not moved twice. */
        if (pool->idle_top)
                wake_idle(pool);
        else
                start_worker(pool);
}

/*
 * One lock hold per item: a run is finished and the next one picked together, and the finished
 * item's put_ref is called once the lock is dropped.
 */
static void *worker_main(void *arg)
{
        struct worker *t = arg;
        struct slow_work_pool *pool = t->pool;
        struct slow_work *work, *put = NULL;
        bool spun = false;
        char name[16];

        snprintf(name, sizeof(name), "slowd%03u", t->id);
        pthread_setname_np(pthread_self(), name);

        pthread_mutex_lock(&pool->lock);
        t->tid = gettid();
        ATOMIC_SET(pool->nwaking, pool->nwaking - 1);
        while (!t->retire) {
                if (pool->nthreads > pool->settings.max_threads) {
                        ATOMIC_SET(pool->nthreads, pool->nthreads - 1);
                        break;
                }
                work = pick(pool);
                if (!work && put) {
                        pthread_mutex_unlock(&pool->lock);
                        put->ops->put_ref(put);
                        put = NULL;
                        pthread_mutex_lock(&pool->lock);
                        continue;
                }
                if (!work) {
                        if (pool->stopping) {
                                ATOMIC_SET(pool->nthreads, pool->nthreads - 1);
                                break;
                        }
                        if (!spun && !pool->spinning) {
                                spin(pool);
                                spun = true;
                                continue;
                        }
                        if (idle_wait(pool, t)) {
                                ATOMIC_SET(pool->nthreads, pool->nthreads - 1);
                                break;
                        }
                        spun = false;
                        continue;
                }
                spun = false;
                start(pool, t, work);
                wake_for_more(pool);
                pthread_mutex_unlock(&pool->lock);
                if (put)
                        put->ops->put_ref(put);
                work->ops->execute(work);
                pthread_mutex_lock(&pool->lock);
                put = finish(pool, t, work);
        }
        if (put) {
                pthread_mutex_unlock(&pool->lock);
                put->ops->put_ref(put);
                pthread_mutex_lock(&pool->lock);
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
        pthread_mutexattr_t mattr;
        pthread_condattr_t attr;
        unsigned i;
        int r;

        if (!settings)
                settings = &defaults;
        r = slow_work_settings_validate(settings);
        if (r < 0)
                return r;

        pool = aligned_alloc(CACHELINE, sizeof(*pool));
        if (!pool)
                return -ENOMEM;
        memset(pool, 0, sizeof(*pool));
        pool->settings = *settings;
        pool->max_threads = settings->max_threads;
        pool->vslow_cap = slow_work_very_slow_cap(settings);
        incoming_init(pool);
        pthread_mutexattr_init(&mattr);
        pthread_mutexattr_settype(&mattr, PTHREAD_MUTEX_ADAPTIVE_NP);
        pthread_mutex_init(&pool->lock, &mattr);
        pthread_mutexattr_destroy(&mattr);
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

enum { CLAIM_COALESCED, CLAIM_TAKEN, CLAIM_NEEDS_REF };

/*
 * Marks an item pending (with extra bits), or finds that it needs nothing more: already pending,
 * or running and now due to run again. A fresh claim needs the caller's get_ref first.
 */
static int claim(struct slow_work *work, bool have_ref, bool delayed)
{
        unsigned long old = flags_get(work), set;

        for (;;) {
                if (old & SLOW_WORK_CANCELLING)
                        return -ECANCELED;
                if (old & SLOW_WORK_PENDING)
                        return CLAIM_COALESCED;
                if ((old & SLOW_WORK_EXECUTING) && !delayed)
                        set = SLOW_WORK_PENDING | SLOW_WORK_ENQ_DEFERRED;
                else if (!have_ref)
                        return CLAIM_NEEDS_REF;
                else
                        set = SLOW_WORK_PENDING | (delayed ? SLOW_WORK_DELAYED : 0);
                if (__atomic_compare_exchange_n(&work->flags, &old, old | set, false,
                                                __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
                        return set & SLOW_WORK_ENQ_DEFERRED ? CLAIM_COALESCED : CLAIM_TAKEN;
        }
}

/* Claims with a reference; drops the reference again when the claim did not need it. */
static int claim_with_ref(struct slow_work *work, bool delayed)
{
        bool have_ref = false;
        int r;

        while ((r = claim(work, have_ref, delayed)) == CLAIM_NEEDS_REF) {
                if (work->ops->get_ref(work))
                        return -EAGAIN;
                have_ref = true;
        }
        if (have_ref && r != CLAIM_TAKEN)
                work->ops->put_ref(work);
        return r;
}

int slow_work_pool_enqueue(struct slow_work_pool *pool, struct slow_work *work)
{
        int r = claim_with_ref(work, false);

        if (r != CLAIM_TAKEN)
                return r < 0 ? r : 0;

        __atomic_store_n(&work->pool, pool, __ATOMIC_RELEASE);
        work->mark_ns = pool_mark_ns();
        incoming_push(pool, work);

        /* Take the lock only to wake an idle thread when none is on its way, or to start one. */
        if (ATOMIC_GET(pool->nidle) ? !ATOMIC_GET(pool->nwaking)
                                    : ATOMIC_GET(pool->nthreads) < ATOMIC_GET(pool->max_threads)) {
                pthread_mutex_lock(&pool->lock);
                pool_kick(pool);
                pthread_mutex_unlock(&pool->lock);
        }
        return 0;
}

int slow_work_pool_enqueue_delayed(struct slow_work_pool *pool, struct delayed_slow_work *dwork,
                                   unsigned long delay_ms)
{
        struct slow_work *work = &dwork->work;
        unsigned long flags = flags_get(work);
        int r;

        if (delay_ms == 0)
                return slow_work_pool_enqueue(pool, work);
        if (flags & SLOW_WORK_CANCELLING)
                return -ECANCELED;
        if (flags & SLOW_WORK_PENDING)
                return 0; /* the delay is neither moved forward nor extended */
        if (work->ops->get_ref(work))
                return -EAGAIN;

        pthread_mutex_lock(&pool->lock);
        r = pool_timer_reserve(pool);
        if (r == 0)
                r = claim(work, true, true);
        if (r == CLAIM_TAKEN) {
                __atomic_store_n(&work->pool, pool, __ATOMIC_RELEASE);
                pool_timer_add(pool, dwork, pool_now_ns() + delay_ms * 1000000ull);
        }
        pthread_mutex_unlock(&pool->lock);
        if (r != CLAIM_TAKEN)
                work->ops->put_ref(work);
        return r < 0 ? r : 0;
}

/* Ends this cancel's part in the CANCELLING state. */
static void cancel_done(struct slow_work *work)
{
        if (__atomic_sub_fetch(&work->cancellers, 1, __ATOMIC_ACQ_REL) == 0)
                flags_clear(work, SLOW_WORK_CANCELLING);
}

/*
 * Drops what is pending of the item on pool (lock held): its delay timer, its queue entry, or the
 * run it is due after the current one. Returns 1 when a queue reference is to be dropped, 0 when
 * nothing needs it, -EAGAIN when an enqueue is still pushing the item in (drop the lock, retry).
 */
static int drop_pending(struct slow_work_pool *pool, struct slow_work *work)
{
        unsigned long flags;

        pool_drain(pool);
        flags = flags_get(work);
        if (flags & SLOW_WORK_DELAYED) {
                pool_timer_remove(pool, (struct delayed_slow_work *)work);
                flags_clear(work, SLOW_WORK_DELAYED | SLOW_WORK_PENDING);
                return 1;
        }
        if ((flags & SLOW_WORK_PENDING) && !(flags & SLOW_WORK_EXECUTING)) {
                if (!(flags & WORK_LINKED))
                        return -EAGAIN;
                runq_remove(class_queue(pool, work), work);
                flags_clear(work, SLOW_WORK_PENDING | WORK_LINKED);
                return 1;
        }
        if (flags & SLOW_WORK_ENQ_DEFERRED)
                flags_clear(work, SLOW_WORK_ENQ_DEFERRED | SLOW_WORK_PENDING);
        return 0;
}

/*
 * Takes the lock of the pool the item is on and drops what is pending of it; with wait, also
 * waits for a run in progress to end, refusing enqueues meanwhile. Returns whether the item was
 * pending.
 */
static bool cancel(struct slow_work *work, bool wait)
{
        struct slow_work_pool *pool;
        bool was_pending;
        int put;

again:
        /* An idle item has nothing to cancel; it may be enqueued on another pool next. */
        if (!(flags_get(work) & (SLOW_WORK_PENDING | SLOW_WORK_EXECUTING)))
                return false;
        pool = __atomic_load_n(&work->pool, __ATOMIC_ACQUIRE);
        if (!pool)
                return false;

        pthread_mutex_lock(&pool->lock);
        if (wait) {
                __atomic_add_fetch(&work->cancellers, 1, __ATOMIC_ACQ_REL);
                flags_set(work, SLOW_WORK_CANCELLING);
        }
        for (;;) {
                if (__atomic_load_n(&work->pool, __ATOMIC_ACQUIRE) != pool) {
                        /* Enqueued on another pool meanwhile: cancel it there. */
                        if (wait)
                                cancel_done(work);
                        pthread_mutex_unlock(&pool->lock);
                        goto again;
                }
                was_pending = flags_get(work) & SLOW_WORK_PENDING;
                put = drop_pending(pool, work);
                if (put != -EAGAIN)
                        break;
                /* An enqueue is pushing it in right now: let it finish. */
                pthread_mutex_unlock(&pool->lock);
                sched_yield();
                pthread_mutex_lock(&pool->lock);
        }
        if (wait) {
                pool->nwaiters++;
                while (flags_get(work) & SLOW_WORK_EXECUTING)
                        pthread_cond_wait(&pool->changed, &pool->lock);
                pool->nwaiters--;
                cancel_done(work);
        }
        pthread_mutex_unlock(&pool->lock);
        if (put > 0)
                work->ops->put_ref(work);
        return was_pending;
}

void slow_work_cancel(struct slow_work *work)
{
        cancel(work, true);
}

bool slow_work_cancel_pending(struct slow_work *work)
{
        return cancel(work, false);
}

int slow_work_pool_configure(struct slow_work_pool *pool, const struct slow_work_settings *settings)
{
        int r = slow_work_settings_validate(settings);
        struct worker *t;

        if (r < 0)
                return r;

        pthread_mutex_lock(&pool->lock);
        pool->settings = *settings;
        ATOMIC_SET(pool->max_threads, settings->max_threads);
        pool->vslow_cap = slow_work_very_slow_cap(settings);
        while (pool->nthreads > settings->max_threads && pool->idle_top) {
                t = pool->idle_top;
                idle_remove(pool, t);
                t->retire = true;
                ATOMIC_SET(pool->nthreads, pool->nthreads - 1);
                pthread_cond_signal(&t->wake);
        }
        /* The idle ones left look at their idle timeout again. */
        for (t = pool->idle_top; t; t = t->idle_next)
                pthread_cond_signal(&t->wake);
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
        pool_drain(pool);
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
