/* SPDX-License-Identifier: MIT */
/*
 * The run queue view: executing items by thread, then the slow queue, then the very slow one,
 * in the layout of the kernel's /proc/slow_work_rq.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "pool-internal.h"

static void fill(struct slow_work_rq_entry *e, struct slow_work *work, int thread, pid_t pid,
                 uint64_t now)
{
        e->thread = thread;
        e->pid = pid;
        e->item = work;
        e->flags = flags_get(work);
        e->age_ns = now - work->mark_ns;
        e->desc[0] = '\0';
        if (work->ops->desc)
                work->ops->desc(work, e->desc, sizeof(e->desc));
}

int slow_work_pool_rq_max(struct slow_work_pool *pool, size_t max_queued,
                          struct slow_work_rq_entry **ret_entries, size_t *ret_n)
{
        struct slow_work_rq_entry *entries;
        struct slow_work *work;
        size_t n = 0, queued, running;
        uint64_t now;
        unsigned i;

        pthread_mutex_lock(&pool->lock);
        queued = pool->slow.n + pool->vslow.n;
        if (queued > max_queued)
                queued = max_queued;
        entries = calloc(pool->nalive + queued + 1, sizeof(*entries));
        if (!entries) {
                pthread_mutex_unlock(&pool->lock);
                return -ENOMEM;
        }
        now = pool_mark_ns();
        for (i = 0; i < SLOW_WORK_THREADS_MAX; i++) {
                struct worker *t = &pool->workers[i];

                if (t->used && t->current)
                        fill(&entries[n++], t->current, (int)t->id, t->tid, now);
        }
        running = n;
        for (work = pool->slow.head; work && n - running < queued; work = work->next)
                fill(&entries[n++], work, -1, 0, now);
        for (work = pool->vslow.head; work && n - running < queued; work = work->next)
                fill(&entries[n++], work, -1, 0, now);
        pthread_mutex_unlock(&pool->lock);

        *ret_entries = entries;
        *ret_n = n;
        return 0;
}

int slow_work_pool_rq(struct slow_work_pool *pool, struct slow_work_rq_entry **ret_entries,
                      size_t *ret_n)
{
        return slow_work_pool_rq_max(pool, SIZE_MAX, ret_entries, ret_n);
}
