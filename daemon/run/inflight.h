/* SPDX-License-Identifier: MIT */
/*
 * The runs in flight, in a small file mapped shared: stores to it outlive a crash of the daemon
 * (the kernel keeps the page), cost no system call, and tell the next start which runs were cut,
 * even if the database never heard of them: plugin runs (inside their entry point), and shell
 * runs that no cgroup holds, with what it takes to find their processes again and never another
 * process that got the same pid since: the pid (which is also their process group's and session's
 * id) and the start time the kernel gave it.
 */
#ifndef SLOWWORKD_INFLIGHT_H
#define SLOWWORKD_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define INFLIGHT_SLOTS 256 /* more than max-threads can be */

struct inflight_run {
        int64_t id;     /* the job; 0 for a free slot, -1 for one being written */
        int64_t run;    /* a shell run's number; -number for the on-end command after it */
        int64_t pid;    /* a shell run's first process; 0 for a plugin's run */
        uint64_t start; /* its start time, field 22 of /proc/PID/stat */
};

struct inflight {
        struct inflight_run *slots;
        int fd;
};

/* Maps DIR/runs-inflight; the runs the last daemon left there (it died running them) in
 * *ret_runs (*ret_n of them, the caller frees), and clears them. */
int inflight_open(struct inflight *f, const char *dir, struct inflight_run **ret_runs,
                  size_t *ret_n);
void inflight_close(struct inflight *f);
/* The runs in flight now, as inflight_open() would find them, read through fd (an open of
 * DIR/runs-inflight of its own: the supervisor's) and left there: *ret_runs (*ret_n of them,
 * the caller frees). 0, or -errno. */
int inflight_read(int fd, struct inflight_run **ret_runs, size_t *ret_n);
/* Pool threads: a slot for the run while it runs, or -1 when none is free. */
int inflight_enter(struct inflight *f, const struct inflight_run *run);
void inflight_leave(struct inflight *f, int slot);

/* The start time of pid, its process group and its state ('Z' for a zombie), from
 * /proc/PID/stat: 0, or -errno (-ENOENT when it is gone). */
int inflight_proc_stat(pid_t pid, uint64_t *ret_start, pid_t *ret_pgrp, char *ret_state);

#endif
