/* SPDX-License-Identifier: MIT */
/*
 * The kernel's API: items, and the process-wide default pool that lives while users are
 * registered.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include "slowwork.h"

static pthread_mutex_t users_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned users;
static struct slow_work_pool *default_pool;

struct slow_work_pool *slow_work_default_pool(void)
{
        return __atomic_load_n(&default_pool, __ATOMIC_ACQUIRE);
}

int slow_work_register_user(void)
{
        struct slow_work_pool *pool;
        int r = 0;

        pthread_mutex_lock(&users_lock);
        if (users == 0) {
                r = slow_work_pool_new(NULL, &pool);
                if (r == 0)
                        __atomic_store_n(&default_pool, pool, __ATOMIC_RELEASE);
        }
        if (r == 0)
                users++;
        pthread_mutex_unlock(&users_lock);
        return r;
}

void slow_work_unregister_user(void)
{
        pthread_mutex_lock(&users_lock);
        if (users > 0 && --users == 0) {
                /* Items that run during the drain may still enqueue on the default pool. */
                slow_work_pool_free(default_pool);
                __atomic_store_n(&default_pool, NULL, __ATOMIC_RELEASE);
        }
        pthread_mutex_unlock(&users_lock);
}

void slow_work_init(struct slow_work *work, const struct slow_work_ops *ops)
{
        memset(work, 0, sizeof(*work));
        work->ops = ops;
}

void vslow_work_init(struct slow_work *work, const struct slow_work_ops *ops)
{
        slow_work_init(work, ops);
        work->flags = SLOW_WORK_VERY_SLOW;
}

void delayed_slow_work_init(struct delayed_slow_work *dwork, const struct slow_work_ops *ops)
{
        memset(dwork, 0, sizeof(*dwork));
        slow_work_init(&dwork->work, ops);
}

void delayed_vslow_work_init(struct delayed_slow_work *dwork, const struct slow_work_ops *ops)
{
        memset(dwork, 0, sizeof(*dwork));
        vslow_work_init(&dwork->work, ops);
}

bool slow_work_is_pending(struct slow_work *work)
{
        return __atomic_load_n(&work->flags, __ATOMIC_ACQUIRE) & SLOW_WORK_PENDING;
}

bool slow_work_is_executing(struct slow_work *work)
{
        return __atomic_load_n(&work->flags, __ATOMIC_ACQUIRE) & SLOW_WORK_EXECUTING;
}

int slow_work_enqueue(struct slow_work *work)
{
        struct slow_work_pool *pool = slow_work_default_pool();

        return pool ? slow_work_pool_enqueue(pool, work) : -ENODEV;
}

int delayed_slow_work_enqueue(struct delayed_slow_work *dwork, unsigned long delay_ms)
{
        struct slow_work_pool *pool = slow_work_default_pool();

        return pool ? slow_work_pool_enqueue_delayed(pool, dwork, delay_ms) : -ENODEV;
}
