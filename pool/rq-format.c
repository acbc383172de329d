/* SPDX-License-Identifier: MIT */
/*
 * One run queue entry as a line of the kernel's /proc/slow_work_rq. Needs nothing of the pool, so
 * slowctl builds it in too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include "slowwork.h"

const char slow_work_rq_header[] = "THR PID   ITEM ADDR        FL MARK  DESC\n"
                                   "=== ===== ================ == ===== ==========\n";

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
