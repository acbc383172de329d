/* SPDX-License-Identifier: MIT */
/* The daemon's own process as the Prometheus client libraries describe one: memory, descriptors,
 * CPU time. Read from /proc and getrusage(2); what cannot be read is -1. */
#ifndef SLOWWORKD_PROC_STATS_H
#define SLOWWORKD_PROC_STATS_H

struct proc_stats {
        double resident_bytes, virtual_bytes;
        double open_fds, max_fds;
        double cpu_seconds;
};

void proc_stats_read(struct proc_stats *ret);

#endif
