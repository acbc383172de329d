/* SPDX-License-Identifier: MIT */
/*
 * libslowwork: the Linux kernel's "slow work" thread pool (2.6.30-2.6.36) in user space.
 *
 * The kernel's names and contracts on a process-wide default pool (slow_work_register_user() and
 * friends), plus explicit pools (slow_work_pool_*) for programs that want their own settings,
 * change them at run time and read statistics. See slowwork(3).
 */
#ifndef SLOWWORK_H
#define SLOWWORK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SLOW_WORK_THREADS_MAX 255 /* upper bound of max-threads */
#define SLOW_WORK_DESC_MAX 64     /* bytes given to ops->desc, NUL included */

/* Item flags, with the kernel's bit numbers (shown in the FL column of the run queue). */
#define SLOW_WORK_PENDING (1UL << 0)      /* queued, on a delay timer, or due to run again */
#define SLOW_WORK_EXECUTING (1UL << 1)    /* execute() is running */
#define SLOW_WORK_ENQ_DEFERRED (1UL << 2) /* enqueued while executing: runs once more */
#define SLOW_WORK_VERY_SLOW (1UL << 3)    /* the class */
#define SLOW_WORK_CANCELLING (1UL << 4)   /* slow_work_cancel() in progress */
#define SLOW_WORK_DELAYED (1UL << 5)      /* a delay timer is armed */
#define SLOW_WORK_ENQ_BACK (1UL << 6)     /* not the kernel's: the run once more is put back */

struct slow_work;
struct slow_work_pool;

struct slow_work_ops {
        /* Take a reference for the pool; nonzero refuses the enqueue. Called with the lock held,
         * once for each enqueue that queues the item or arms its delay. */
        int (*get_ref)(struct slow_work *work);
        /* Drop the reference taken by get_ref. Called without the lock; may free the item. */
        void (*put_ref)(struct slow_work *work);
        void (*execute)(struct slow_work *work);
        /* Optional: a short description for the run queue view. Called with the lock held. */
        void (*desc)(struct slow_work *work, char *buf, size_t len);
};

/* Embed in your own structure. The members are the pool's; callers only initialise the item
 * with slow_work_init() or vslow_work_init() and never touch them. */
struct slow_work {
        unsigned long flags;
        const struct slow_work_ops *ops;
        struct slow_work *prev, *next;
        struct slow_work_pool *pool; /* while pending, running or being cancelled */
        uint64_t mark_ns;
        unsigned cancellers;
        int priority; /* slow_work_set_priority()'s; 0 by default */
        uint64_t seq; /* its place among the items of its priority: when it was queued */
        uint64_t seq_pool; /* the id of the pool whose queue order seq is (a freed pool's address
                            * may be a new pool's: an id never is) */
};

struct delayed_slow_work {
        struct slow_work work;
        uint64_t expires_ns;
        size_t timer_slot;
};

struct slow_work_settings {
        unsigned min_threads;      /* 1 .. max_threads */
        unsigned max_threads;      /* min_threads .. SLOW_WORK_THREADS_MAX */
        unsigned vslow_percentage; /* 1 .. 99 */
        unsigned idle_timeout_ms;  /* 1 .. SLOW_WORK_IDLE_TIMEOUT_MAX_MS */
};

#define SLOW_WORK_IDLE_TIMEOUT_MAX_MS (24U * 3600U * 1000U)
#define SLOW_WORK_SETTINGS_DEFAULT                                                                 \
        ((struct slow_work_settings){                                                              \
            .min_threads = 2, .max_threads = 4, .vslow_percentage = 50, .idle_timeout_ms = 5000})

struct slow_work_stats {
        unsigned threads;            /* worker threads counted against max-threads */
        unsigned busy;               /* threads running an item */
        unsigned busy_very_slow;     /* threads running a very slow item */
        unsigned idle;               /* threads waiting for work */
        unsigned very_slow_cap;      /* at most this many very slow items run at once */
        unsigned queued_slow;        /* slow items waiting for a thread */
        unsigned queued_very_slow;   /* very slow items waiting for a thread */
        unsigned delayed;            /* items waiting for their delay to pass */
        uint64_t items_run;          /* runs completed since the pool started */
};

/* One line of the run queue view: an executing item (thread >= 0) or a queued one. */
struct slow_work_rq_entry {
        int thread;    /* the thread's id, or -1 for a queued item */
        pid_t pid;     /* the thread's kernel tid, or 0 */
        const void *item;
        unsigned long flags;
        uint64_t age_ns; /* since the item was queued or started */
        char desc[SLOW_WORK_DESC_MAX];
};

/* The kernel's API on the process-wide default pool. */
int slow_work_register_user(void);
void slow_work_unregister_user(void);
void slow_work_init(struct slow_work *work, const struct slow_work_ops *ops);
void vslow_work_init(struct slow_work *work, const struct slow_work_ops *ops);
int slow_work_enqueue(struct slow_work *work);
void delayed_slow_work_init(struct delayed_slow_work *dwork, const struct slow_work_ops *ops);
void delayed_vslow_work_init(struct delayed_slow_work *dwork, const struct slow_work_ops *ops);
int delayed_slow_work_enqueue(struct delayed_slow_work *dwork, unsigned long delay_ms);
void slow_work_cancel(struct slow_work *work);
/* Not the kernel's: drops what is pending of the item (its queue entry, its delay, or the run it
 * is due after the current one) without waiting for a run in progress, which goes on. Returns
 * whether the item was pending. */
bool slow_work_cancel_pending(struct slow_work *work);

/* Not the kernel's: within its class a queued item of a higher priority is taken before one of
 * a lower, and items of one priority in the order they were queued. An item's priority is 0
 * until set; set it on an idle item before enqueueing it, from the thread that enqueues it. A
 * queued item whose priority changes moves, keeping its place in queue order among the items of
 * its new priority. */
void slow_work_set_priority(struct slow_work *work, int priority);
/* Not the kernel's: calls fn(work, data) while no thread can start the item (with the lock of
 * the pool it belongs to, if any, held: fn must not call the pool), so that what it runs may be
 * changed while it waits. Returns -EBUSY without calling fn when the item is executing. */
int slow_work_call_unless_executing(struct slow_work *work,
                                    void (*fn)(struct slow_work *work, void *data), void *data);

/* Not the kernel's: the same, only while the item waits in its queue for a thread (not
 * executing, no delay left, not being cancelled); -EBUSY without calling fn otherwise. */
int slow_work_call_if_queued(struct slow_work *work,
                             void (*fn)(struct slow_work *work, void *data), void *data);

/* A snapshot of what the pool does with an item: pending means queued, waiting for its delay, or
 * due to run again; executing means execute() is running. */
bool slow_work_is_pending(struct slow_work *work);
bool slow_work_is_executing(struct slow_work *work);

/* The default pool while a user is registered, else NULL. */
struct slow_work_pool *slow_work_default_pool(void);

/* Explicit pools. settings NULL means SLOW_WORK_SETTINGS_DEFAULT. */
int slow_work_pool_new(const struct slow_work_settings *settings,
                       struct slow_work_pool **ret_pool);
void slow_work_pool_free(struct slow_work_pool *pool);
int slow_work_pool_enqueue(struct slow_work_pool *pool, struct slow_work *work);
int slow_work_pool_enqueue_delayed(struct slow_work_pool *pool, struct delayed_slow_work *dwork,
                                   unsigned long delay_ms);
/* Not the kernel's: as slow_work_pool_enqueue(), but an idle item last queued on this pool goes
 * back to its place in queue order (that enqueue's) among the items of its priority, not to the
 * tail: for a run that execute() gave back without running it, so that the items queued after it
 * stay after it. */
int slow_work_pool_put_back(struct slow_work_pool *pool, struct slow_work *work);
/* Not the kernel's: whether no item queued in the class of a running item (from its execute())
 * would be taken before it, by priority and queue order: false when one queued ahead of it was
 * put back, or queued at a higher priority, since a thread took it. Of an item not running:
 * true. */
bool slow_work_is_first(struct slow_work *work);
/* Not the kernel's slow work, but its block layer's plugging: while a pool is plugged, items
 * enqueued into it are queued as ever (pending; a thread that ends a run takes them) but wake or
 * start no thread. The last unplug wakes or starts threads for all that is queued. For a burst of
 * enqueues from one thread, so that it wakes the threads once rather than once an item; plugs
 * nest. */
void slow_work_pool_plug(struct slow_work_pool *pool);
void slow_work_pool_unplug(struct slow_work_pool *pool);
int slow_work_pool_configure(struct slow_work_pool *pool, const struct slow_work_settings *settings);
void slow_work_pool_settings(struct slow_work_pool *pool, struct slow_work_settings *ret_settings);
void slow_work_pool_stats(struct slow_work_pool *pool, struct slow_work_stats *ret_stats);
int slow_work_pool_rq(struct slow_work_pool *pool, struct slow_work_rq_entry **ret_entries,
                      size_t *ret_n);
/* The same with at most max_queued of the queued items (the first ones). */
int slow_work_pool_rq_max(struct slow_work_pool *pool, size_t max_queued,
                          struct slow_work_rq_entry **ret_entries, size_t *ret_n);

int slow_work_settings_validate(const struct slow_work_settings *settings);
unsigned slow_work_very_slow_cap(const struct slow_work_settings *settings);

/* The run queue in the layout of the kernel's /proc/slow_work_rq. */
extern const char slow_work_rq_header[];
int slow_work_rq_format(const struct slow_work_rq_entry *entry, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif
