/* SPDX-License-Identifier: MIT */
/*
 * The pool keeps the rules of pool/RULES.md (numbered there, once); this says how.
 *
 * The pool is as plain as libuv's threadpool.c: one mutex guards everything, two FIFO run queues
 * (slow, very slow) hold the queued items, and idle workers wait on one condition. Not the
 * kernel's: an item may have a priority (rule 13), and a queue is kept in priority order, FIFO
 * within a priority; with every priority alike, as the kernel's users have them, an enqueue
 * appends at the tail as before and a queue is the kernel's FIFO. Enqueue takes
 * the lock like everything else: the daemon's jobs are processes, so the nanoseconds a lock-free
 * way in could save do not matter, and it is what makes cancel exact (below).
 *
 * Two more conditions exist because their waiters are not workers, and a signal meant for a
 * worker must never reach them: "changed" wakes callers waiting for a run to end (cancel) or for
 * the threads to go (free), and "timer_wake" the delay timer thread (timer.c: a min-heap of
 * delayed items, and one thread per pool, started by the first delayed enqueue, that queues them
 * when they are due).
 *
 * Wake-ups are counted. Whoever signals work_cond takes a thread off nidle and leaves a token in
 * nwoken; a waiting thread that wakes takes a token, or waits again if there is none, so neither
 * a spurious wake-up nor a broadcast is taken for work. ncoming counts the threads woken or
 * started that have not yet looked at the queues; pool_kick() wakes or starts threads while the
 * runnable items (very slow ones only up to the cap) outnumber them, which starts a thread only
 * when no idle one is left (rule 8). Lowering max-threads hands exit tokens (nretiring) to idle
 * threads the same way, and busy threads above it exit when their item ends (rule 9). What the
 * counters keep is asserted (check_counters).
 *
 * Only one wake-up is in flight at a time, and every worker kicks again once it has taken an
 * item: a burst wakes idle threads one after another, each as the one before gets going, and no
 * thread is woken for an item that a busy one takes first (a wake-up per queued item woke idle
 * threads to find their items taken by busy ones).
 *
 * A producer with a burst of items can plug the pool: the items are queued (and taken by threads
 * that end a run) but nobody is woken until the last unplug, which kicks once for all of them.
 * Where the items take microseconds, as the daemon's no-op plugin runs do, threads that finish
 * faster than items come go idle after each one, and each enqueue would wake one: a futex wake
 * on the producer's side and a wait and a context switch on the thread's, more than the item.
 * The daemon plugs a pool from its first enqueue until its loop is about to wait again.
 *
 * An idle thread above min-threads waits until its idle deadline, at or below it until woken;
 * the choice is made again after every wake-up, so no wait is ever on a deadline that has passed
 * and an idle pool costs no CPU (rule 8). Which waiter a signal wakes is the condition's business, so
 * under a steady trickle of work the pool keeps the threads that each get an item within
 * idle-timeout.
 *
 * A worker holds the lock once per item: it finishes a run and takes the next item in one hold,
 * and calls the finished item's put_ref once the lock is dropped, always before it waits (two
 * holds per item cost the benchmark much of its speed: bench/ measures it against libuv).
 *
 * Fewer holds than one per run and one per enqueue would cost exactness, so the pool does not
 * batch. A start (pending to executing) and an end must each happen under the lock for cancel
 * and re-queue to be exact, and a thread's starts are apart by its runs. A worker that took
 * several items in one hold would mark them executing before they run: slow_work_is_executing()
 * would be true of an item still waiting, a cancel of it would wait for other items' runs, and
 * it would wait behind a long run while another thread is free; and, measured with make bench,
 * it was not even faster.
 *
 * The lock's cost is the cache lines it moves between CPUs (a line that crosses costs several
 * uncontended enqueues). So the
 * pool's first line holds only what every enqueue and every run write, the lock and the slow
 * queue; the counters both read come next and change only when threads come, go or wait, or
 * around very slow items, so every CPU keeps a copy; and each worker has a line of its own for
 * its current item and its count of runs, which the statistics add up. Apart from the items,
 * nothing shared is written on every run.
 *
 * An item belongs to a pool while it is pending, running or being cancelled: work->pool names
 * that pool, and the item's flags, links and counters change only under its lock. An enqueue
 * claims an idle item for its pool in the same lock hold that sets PENDING (a compare-and-swap
 * from NULL, since two pools may race for one item), and the pool lets go of it, under the lock,
 * when it goes idle. So a cancel that finds no pool finds the item idle, and one that finds a
 * pool takes its lock and sees the item as the enqueue left it: a cancel cannot miss an enqueue
 * that has set PENDING. The flags are stored atomically only because slow_work_is_pending() and
 * slow_work_is_executing() read them without the lock.
 */
#define _GNU_SOURCE
#include <assert.h>
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

/* The run queue view's ages: a coarse clock is plenty, and cheap. */
uint64_t pool_mark_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
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
        work->mark_ns = pool_mark_ns();
        work->seq = ++pool->next_seq;
        work->seq_pool = pool->id;
        runq_insert(class_queue(pool, work), work);
}

void pool_queue_back(struct slow_work_pool *pool, struct slow_work *work)
{
        if (work->seq_pool != pool->id) {
                pool_queue(pool, work);
                return;
        }
        work->mark_ns = pool_mark_ns();
        runq_insert(class_queue(pool, work), work);
}

/* Linked on its class's run queue: pending, neither running (a run due after this one) nor
 * waiting for its delay. */
static bool is_linked(const struct slow_work *work)
{
        unsigned long flags = flags_get(work);

        return (flags & SLOW_WORK_PENDING) && !(flags & (SLOW_WORK_EXECUTING | SLOW_WORK_DELAYED));
}

/* Lets another pool have the item once it is idle and no cancel waits on it here. */
void pool_disown(struct slow_work *work)
{
        if (!(flags_get(work) & (SLOW_WORK_PENDING | SLOW_WORK_EXECUTING)) && !work->cancellers)
                __atomic_store_n(&work->pool, NULL, __ATOMIC_RELEASE);
}

/* Under the lock: what the thread and wake-up counters keep (pool/RULES.md). */
static void check_counters(const struct slow_work_pool *pool)
{
        assert(pool->nwoken <= 1);
        assert(pool->nwoken <= pool->ncoming);
        assert(pool->nidle + pool->nwoken + pool->nretiring <= pool->nalive);
        assert(pool->nidle <= pool->nthreads && pool->nthreads <= pool->nalive);
        assert(pool->nbusy_vslow <= pool->nalive);
        (void)pool;
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
        t->current = NULL;
        t->runs = 0;
        t->tid = 0;
        pool->nthreads++;
        pool->nalive++;
        pool->ncoming++;

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
                pool->ncoming--;
                return -r;
        }
        return 0;
}

/* Wakes idle threads, or starts new ones up to max-threads, for the items nobody comes for;
 * once unplugged. */
void pool_kick(struct slow_work_pool *pool)
{
        if (pool->plugged)
                return;
        while (runnable(pool) > pool->ncoming) {
                if (pool->nidle) {
                        if (pool->nwoken)
                                break; /* one wake-up at a time: its thread kicks for the rest */
                        pool->nidle--;
                        pool->nwoken++;
                        pool->ncoming++;
                        pthread_cond_signal(&pool->work_cond);
                } else if (pool->nthreads >= pool->settings.max_threads || start_worker(pool) < 0) {
                        break;
                }
        }
        check_counters(pool);
}

/*
 * Waits for work. Returns true when the thread is to exit, no longer counted in nthreads: it was
 * idle for idle-timeout above min-threads, or a lower max-threads sent it away.
 */
static bool idle_wait(struct slow_work_pool *pool)
{
        uint64_t since = 0, deadline;
        struct timespec ts;

        pool->nidle++;
        for (;;) {
                check_counters(pool);
                if (pool->nwoken) {
                        pool->nwoken--;
                        pool->ncoming--;
                        return false;
                }
                if (pool->nretiring) {
                        pool->nretiring--;
                        return true;
                }
                if (pool->stopping) {
                        pool->nidle--;
                        return false;
                }
                if (pool->nthreads <= pool->settings.min_threads) {
                        pthread_cond_wait(&pool->work_cond, &pool->lock);
                        continue;
                }
                /* Only a thread above min-threads reads the clock. */
                if (!since)
                        since = pool_now_ns();
                deadline = since + pool->settings.idle_timeout_ms * 1000000ull;
                if (pool_now_ns() >= deadline) {
                        pool->nidle--;
                        pool->nthreads--;
                        return true;
                }
                ts.tv_sec = (time_t)(deadline / 1000000000u);
                ts.tv_nsec = (long)(deadline % 1000000000u);
                pthread_cond_timedwait(&pool->work_cond, &pool->lock, &ts);
        }
}

static void start(struct slow_work_pool *pool, struct worker *t, struct slow_work *work)
{
        flags_change(work, SLOW_WORK_PENDING, SLOW_WORK_EXECUTING);
        work->mark_ns = pool_mark_ns();
        t->current = work;
        if (work_is_very_slow(work))
                pool->nbusy_vslow++;
}

/* Ends a run; returns the item if its reference is to be dropped, NULL if it runs again. */
static struct slow_work *finish(struct slow_work_pool *pool, struct worker *t,
                                struct slow_work *work)
{
        unsigned long flags = flags_get(work);

        flags_change(work, SLOW_WORK_EXECUTING | SLOW_WORK_ENQ_DEFERRED | SLOW_WORK_ENQ_BACK, 0);
        t->current = NULL;
        t->runs++;
        if (flags & SLOW_WORK_VERY_SLOW)
                pool->nbusy_vslow--;
        if (pool->nwaiters)
                pthread_cond_broadcast(&pool->changed);
        if (flags & SLOW_WORK_ENQ_DEFERRED) {
                /* The run's reference goes over to the new queue entry. This thread is about to
                 * look at the queues, so nobody needs waking. */
                if (flags & SLOW_WORK_ENQ_BACK)
                        pool_queue_back(pool, work); /* put back while its execute() ran */
                else
                        pool_queue(pool, work);
                return NULL;
        }
        pool_disown(work);
        return work;
}

static void *worker_main(void *arg)
{
        struct worker *t = arg;
        struct slow_work_pool *pool = t->pool;
        struct slow_work *work, *put = NULL;
        char name[16];

        snprintf(name, sizeof(name), "slowd%03u", t->id);
        pthread_setname_np(pthread_self(), name);

        pthread_mutex_lock(&pool->lock);
        t->tid = gettid();
        pool->ncoming--;
        for (;;) {
                if (pool->nthreads > pool->settings.max_threads) {
                        /* Surplus after max-threads was lowered; another may be due for work. */
                        pool->nthreads--;
                        pool_kick(pool);
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
                                pool->nthreads--;
                                break;
                        }
                        if (idle_wait(pool))
                                break;
                        continue;
                }
                start(pool, t, work);
                pool_kick(pool); /* passes a wake-up on, or starts a thread, for what is left */
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
        pool->items_run += t->runs;
        pool->nalive--;
        pthread_cond_broadcast(&pool->changed);
        pthread_mutex_unlock(&pool->lock);
        return NULL;
}

/* Lets the threads run what is queued, then waits until they are gone. */
static void wait_threads_gone(struct slow_work_pool *pool)
{
        pthread_mutex_lock(&pool->lock);
        pool->stopping = true;
        pthread_cond_broadcast(&pool->work_cond);
        while (pool->nalive)
                pthread_cond_wait(&pool->changed, &pool->lock);
        pthread_mutex_unlock(&pool->lock);
}

static void pool_destroy(struct slow_work_pool *pool)
{
        pthread_cond_destroy(&pool->timer_wake);
        pthread_cond_destroy(&pool->changed);
        pthread_cond_destroy(&pool->work_cond);
        pthread_mutex_destroy(&pool->lock);
        free(pool->timers);
        free(pool);
}

static uint64_t last_pool_id;

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

        /* Cache-line aligned: the lock and what it guards start a line of their own. */
        if (posix_memalign((void **)&pool, 64, sizeof(*pool)) != 0)
                return -ENOMEM;
        memset(pool, 0, sizeof(*pool));
        pool->id = __atomic_add_fetch(&last_pool_id, 1, __ATOMIC_RELAXED);
        pool->settings = *settings;
        pool->vslow_cap = slow_work_very_slow_cap(settings);
        pthread_mutex_init(&pool->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&pool->work_cond, &attr);
        pthread_cond_init(&pool->changed, &attr);
        pthread_cond_init(&pool->timer_wake, &attr);
        pthread_condattr_destroy(&attr);
        for (i = 0; i < SLOW_WORK_THREADS_MAX; i++) {
                pool->workers[i].pool = pool;
                pool->workers[i].id = i;
        }

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
        size_t i, n;

        if (!pool)
                return;
        pthread_mutex_lock(&pool->lock);
        pool->stopping = true;
        pthread_mutex_unlock(&pool->lock);
        n = pool_timer_stop(pool);
        for (i = 0; i < n; i++)
                pool->timers[i]->work.ops->put_ref(&pool->timers[i]->work);
        wait_threads_gone(pool);
        pool_destroy(pool);
}

/* Locks the pool the item belongs to and returns it, or returns NULL if the item is idle. */
static struct slow_work_pool *lock_owner(struct slow_work *work)
{
        struct slow_work_pool *pool;

        while ((pool = __atomic_load_n(&work->pool, __ATOMIC_ACQUIRE))) {
                pthread_mutex_lock(&pool->lock);
                if (__atomic_load_n(&work->pool, __ATOMIC_RELAXED) == pool)
                        return pool;
                pthread_mutex_unlock(&pool->lock);
        }
        return NULL;
}

/* Locks the pool the item belongs to, claiming an idle item for pool; returns the locked pool. */
static struct slow_work_pool *lock_or_claim(struct slow_work_pool *pool, struct slow_work *work)
{
        struct slow_work_pool *owner;

        for (;;) {
                owner = lock_owner(work);
                if (owner)
                        return owner;
                pthread_mutex_lock(&pool->lock);
                if (__atomic_compare_exchange_n(&work->pool, &owner, pool, false, __ATOMIC_ACQ_REL,
                                                __ATOMIC_ACQUIRE))
                        return pool;
                pthread_mutex_unlock(&pool->lock);
        }
}

/*
 * Queues the item (back at its last place: rule 14), or arms its delay when dwork is given. An
 * enqueue on a pool other than the one the item belongs to acts on the item's pool: it coalesces,
 * defers or is refused there.
 */
static int enqueue(struct slow_work_pool *pool, struct slow_work *work,
                   struct delayed_slow_work *dwork, unsigned long delay_ms, bool back)
{
        unsigned long flags;
        int r = 0;

        pool = lock_or_claim(pool, work);
        flags = flags_get(work);
        if (flags & SLOW_WORK_CANCELLING) {
                r = -ECANCELED;
                goto out;
        }
        if (flags & SLOW_WORK_PENDING)
                goto out; /* it runs once, after this call; a delay is neither moved nor extended */
        if ((flags & SLOW_WORK_EXECUTING) && !dwork) {
                /* The run's reference carries one more run. */
                flags_change(work, 0,
                             SLOW_WORK_PENDING | SLOW_WORK_ENQ_DEFERRED |
                                 (back ? SLOW_WORK_ENQ_BACK : 0));
                goto out;
        }
        if (dwork) {
                r = pool_timer_reserve(pool);
                if (r < 0)
                        goto out;
        }
        if (work->ops->get_ref(work)) {
                r = -EAGAIN;
                goto out;
        }
        if (dwork) {
                flags_change(work, 0, SLOW_WORK_PENDING | SLOW_WORK_DELAYED);
                pool_timer_add(pool, dwork, pool_now_ns() + delay_ms * 1000000ull);
        } else {
                flags_change(work, 0, SLOW_WORK_PENDING);
                if (back)
                        pool_queue_back(pool, work);
                else
                        pool_queue(pool, work);
                pool_kick(pool);
        }
out:
        pool_disown(work);
        pthread_mutex_unlock(&pool->lock);
        return r;
}

void slow_work_pool_plug(struct slow_work_pool *pool)
{
        pthread_mutex_lock(&pool->lock);
        pool->plugged++;
        pthread_mutex_unlock(&pool->lock);
}

void slow_work_pool_unplug(struct slow_work_pool *pool)
{
        pthread_mutex_lock(&pool->lock);
        if (pool->plugged && --pool->plugged == 0)
                pool_kick(pool);
        pthread_mutex_unlock(&pool->lock);
}

int slow_work_pool_enqueue(struct slow_work_pool *pool, struct slow_work *work)
{
        return enqueue(pool, work, NULL, 0, false);
}

int slow_work_pool_enqueue_delayed(struct slow_work_pool *pool, struct delayed_slow_work *dwork,
                                   unsigned long delay_ms)
{
        return enqueue(pool, &dwork->work, delay_ms ? dwork : NULL, delay_ms, false);
}

int slow_work_pool_put_back(struct slow_work_pool *pool, struct slow_work *work)
{
        return enqueue(pool, work, NULL, 0, true);
}

/* Of an item not running (idle, queued, delayed) there is no answer to give: true. */
bool slow_work_is_first(struct slow_work *work)
{
        struct slow_work_pool *pool = lock_owner(work);
        const struct slow_work *head;
        bool first = true;

        if (!pool)
                return true;
        if (flags_get(work) & SLOW_WORK_EXECUTING) {
                head = class_queue(pool, work)->head;
                first = !head || !runq_before(head, work);
        }
        pthread_mutex_unlock(&pool->lock);
        return first;
}

/*
 * Drops what is pending of the item (lock held): its delay timer, the run it is due after the
 * current one, or its queue entry. Returns whether a reference is to be dropped.
 */
static bool drop_pending(struct slow_work_pool *pool, struct slow_work *work)
{
        unsigned long flags = flags_get(work);

        if (flags & SLOW_WORK_DELAYED) {
                pool_timer_remove(pool, (struct delayed_slow_work *)work);
                flags_change(work, SLOW_WORK_DELAYED | SLOW_WORK_PENDING, 0);
                return true;
        }
        if (flags & SLOW_WORK_ENQ_DEFERRED) {
                flags_change(work, SLOW_WORK_ENQ_DEFERRED | SLOW_WORK_ENQ_BACK | SLOW_WORK_PENDING,
                             0);
                return false;
        }
        if (flags & SLOW_WORK_PENDING) {
                runq_remove(class_queue(pool, work), work);
                flags_change(work, SLOW_WORK_PENDING, 0);
                return true;
        }
        return false;
}

/*
 * Drops what is pending of the item; with wait, also waits for a run in progress to end, refusing
 * enqueues meanwhile. Returns whether the item was pending.
 */
static bool cancel(struct slow_work *work, bool wait)
{
        struct slow_work_pool *pool = lock_owner(work);
        bool was_pending, put;

        if (!pool)
                return false; /* idle: nothing to cancel, and no pool to touch */
        was_pending = flags_get(work) & SLOW_WORK_PENDING;
        put = drop_pending(pool, work);
        if (wait && (flags_get(work) & SLOW_WORK_EXECUTING)) {
                work->cancellers++;
                flags_change(work, 0, SLOW_WORK_CANCELLING);
                pool->nwaiters++;
                while (flags_get(work) & SLOW_WORK_EXECUTING)
                        pthread_cond_wait(&pool->changed, &pool->lock);
                pool->nwaiters--;
                if (--work->cancellers == 0)
                        flags_change(work, SLOW_WORK_CANCELLING, 0);
        }
        pool_disown(work);
        pthread_mutex_unlock(&pool->lock);
        if (put)
                work->ops->put_ref(work);
        return was_pending;
}

void slow_work_set_priority(struct slow_work *work, int priority)
{
        struct slow_work_pool *pool = lock_owner(work);

        if (!pool) {
                work->priority = priority; /* idle: whoever enqueues it sets it */
                return;
        }
        if (is_linked(work) && work->priority != priority) {
                struct runq *q = class_queue(pool, work);

                runq_remove(q, work);
                work->priority = priority;
                runq_insert(q, work); /* its seq kept: among its new peers by queue order */
        } else {
                work->priority = priority;
        }
        pthread_mutex_unlock(&pool->lock);
}

int slow_work_call_unless_executing(struct slow_work *work,
                                    void (*fn)(struct slow_work *work, void *data), void *data)
{
        struct slow_work_pool *pool = lock_owner(work);
        int r = 0;

        if (pool && (flags_get(work) & SLOW_WORK_EXECUTING))
                r = -EBUSY;
        else
                fn(work, data);
        if (pool)
                pthread_mutex_unlock(&pool->lock);
        return r;
}

int slow_work_call_if_queued(struct slow_work *work,
                             void (*fn)(struct slow_work *work, void *data), void *data)
{
        struct slow_work_pool *pool = lock_owner(work);
        unsigned long f = pool ? flags_get(work) : 0;
        int r = -EBUSY;

        if ((f & SLOW_WORK_PENDING) &&
            !(f & (SLOW_WORK_EXECUTING | SLOW_WORK_DELAYED | SLOW_WORK_CANCELLING))) {
                fn(work, data);
                r = 0;
        }
        if (pool)
                pthread_mutex_unlock(&pool->lock);
        return r;
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
        unsigned surplus;

        if (r < 0)
                return r;

        pthread_mutex_lock(&pool->lock);
        pool->settings = *settings;
        pool->vslow_cap = slow_work_very_slow_cap(settings);
        if (pool->nthreads > settings->max_threads) {
                /* Idle surplus goes now; busy surplus when its item ends (worker_main). */
                surplus = pool->nthreads - settings->max_threads;
                if (surplus > pool->nidle)
                        surplus = pool->nidle;
                pool->nidle -= surplus;
                pool->nretiring += surplus;
                pool->nthreads -= surplus;
        }
        /* Every idle thread looks at its idle timeout again; nretiring of them exit. */
        pthread_cond_broadcast(&pool->work_cond);
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
        unsigned i, busy = 0;
        uint64_t runs;

        pthread_mutex_lock(&pool->lock);
        runs = pool->items_run;
        for (i = 0; i < SLOW_WORK_THREADS_MAX; i++) {
                if (pool->workers[i].used) {
                        busy += pool->workers[i].current != NULL;
                        runs += pool->workers[i].runs;
                }
        }
        *ret_stats = (struct slow_work_stats){
            .threads = pool->nthreads,
            .busy = busy,
            .busy_very_slow = pool->nbusy_vslow,
            .idle = pool->nidle,
            .very_slow_cap = pool->vslow_cap,
            .queued_slow = pool->slow.n,
            .queued_very_slow = pool->vslow.n,
            .delayed = (unsigned)pool->ntimers,
            .items_run = runs,
        };
        pthread_mutex_unlock(&pool->lock);
}
