/* SPDX-License-Identifier: MIT */
/*
 * The run queue view: executing items by thread, then the slow queue, then the very slow one,
 * in the layout of the kernel's /proc/slow_work_rq.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "pool-internal.h"

const char slow_work_rq_header[] = "THR PID   ITEM ADDR        FL MARK  DESC\n"
                                   "=== ===== ================ == ===== ==========\n";

static void fill(struct slow_work_rq_entry *e, struct slow_work *work, int thread, pid_t pid,
                 uint64_t now)
{
        e->thread = thread;
        e->pid = pid;
        e->item = work;
        e->flags = flags_get(work) & WORK_KERNEL_FLAGS;
        e->age_ns = now - work->mark_ns;
        e->desc[0] = '\0';
        if (work->ops->desc)
                work->ops->desc(work, e->desc, sizeof(e->desc));
}

int slow_work_pool_rq(struct slow_work_pool *pool, struct slow_work_rq_entry **ret_entries,
                      size_t *ret_n)
{
        struct slow_work_rq_entry *entries;
        struct slow_work *work;
        uint64_t now;
        size_t n = 0;
        unsigned i;

        pthread_mutex_lock(&pool->lock);
        pool_drain(pool);
        entries = calloc(pool->nbusy + pool->slow.n + pool->vslow.n + 1, sizeof(*entries));
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
        for (work = pool->slow.head; work; work = work->next)
                fill(&entries[n++], work, -1, 0, now);
        for (work = pool->vslow.head; work; work = work->next)
                fill(&entries[n++], work, -1, 0, now);
        pthread_mutex_unlock(&pool->lock);

        *ret_entries = entries;
        *ret_n = n;
        return 0;
}

static int format_mark(char *buf, size_t len, uint64_t ns)
{
        uint64_t s = ns / 1000000000u;

        if (ns < 1000u)
                return snprintf(buf, len, "%3" PRIu64 "ns ", ns);
        if (ns < 1000000u)
                return snprintf(buf, len, "%3" PRIu64 "us ", ns / 1000u);
        if (ns < 1000000000u)
                return snprintf(buf, len, "%3" PRIu64 "ms ", ns / 1000000u);
        if (s <= 1)
                return snprintf(buf, len, "   1s ");
        if (s < 60)
                return snprintf(buf, len, "%4" PRIu64 "s ", s);
        if (s < 60 * 60)
                return snprintf(buf, len, "%4" PRIu64 "m ", s / 60);
        if (s < 60 * 60 * 24)
                return snprintf(buf, len, "%4" PRIu64 "h ", s / 3600);
        return snprintf(buf, len, "exces ");
}

int slow_work_rq_format(const struct slow_work_rq_entry *e, char *buf, size_t len)
{
        char mark[16];
        int n;

        format_mark(mark, sizeof(mark), e->age_ns);
        if (e->thread >= 0)
                n = snprintf(buf, len, "%3d %5d %016" PRIxPTR " %2lx %s%s", e->thread, (int)e->pid,
                             (uintptr_t)e->item, e->flags, mark, e->desc);
        else
                n = snprintf(buf, len, "%3s     - %016" PRIxPTR " %2lx %s%s",
                             e->flags & SLOW_WORK_VERY_SLOW ? "vsq" : "sq", (uintptr_t)e->item,
                             e->flags, mark, e->desc);
        if (n < 0)
                return -EINVAL;
        return (size_t)n < len ? n : -ENOBUFS;
}
