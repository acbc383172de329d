/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util/proc-stats.h"

static double open_fds(void)
{
        DIR *d = opendir("/proc/self/fd");
        struct dirent *e;
        double n = 0;

        if (!d)
                return -1;
        while ((e = readdir(d)))
                if (e->d_name[0] != '.')
                        n++;
        closedir(d);
        return n - 1; /* not the one that read the folder */
}

void proc_stats_read(struct proc_stats *ret)
{
        double page = (double)sysconf(_SC_PAGESIZE);
        unsigned long long size, resident;
        struct rlimit rl;
        struct rusage ru;
        FILE *f = fopen("/proc/self/statm", "re");

        *ret = (struct proc_stats){-1, -1, -1, -1, -1};
        if (f && fscanf(f, "%llu %llu", &size, &resident) == 2) {
                ret->virtual_bytes = (double)size * page;
                ret->resident_bytes = (double)resident * page;
        }
        if (f)
                fclose(f);
        ret->open_fds = open_fds();
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                ret->max_fds = rl.rlim_cur == RLIM_INFINITY ? -1 : (double)rl.rlim_cur;
        if (getrusage(RUSAGE_SELF, &ru) == 0)
                ret->cpu_seconds = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
                                   (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
