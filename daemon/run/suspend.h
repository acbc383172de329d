/* SPDX-License-Identifier: MIT */
/*
 * A shell run's processes stopped and let go on (suspend, continue): frozen in the run's cgroup
 * (cgroup.freeze), else stopped with SIGSTOP to its process group and continued with SIGCONT.
 * The time spent suspended does not count against the run's timeout. The loop suspends and
 * continues; the runner says when its processes can be suspended and when no longer (it stops
 * them, or they ended), which lets them go on first. Any thread, under the lock.
 */
#ifndef SLOWWORKD_SUSPEND_H
#define SLOWWORKD_SUSPEND_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct cgroup_run;

struct suspend {
        struct cgroup_run *cgroup; /* the run's (a reference), NULL: its process group only */
        pid_t pid;                 /* the run's process group; 0: nothing to suspend */
        bool starting;             /* a run is starting: its processes are not in hand yet */
        bool on;                   /* its processes are stopped (or will be, once in hand) */
        bool handed_on;            /* handed over stopped: they stand so until in hand again */
        uint64_t signals;          /* signal n at bit n-1: asked while starting, sent once in hand */
        double since, total;       /* monotonic seconds: the last suspend, and all before */
};

void suspend_init(struct suspend *s);
void suspend_destroy(struct suspend *s);
/* Runner: a run starts; a suspend asked before its processes are in hand applies to them. */
void suspend_begin(struct suspend *s);
/* Runner: the run's processes may be suspended from now on. */
void suspend_attach(struct suspend *s, struct cgroup_run *cgroup, pid_t pid);
/* Runner: no longer; suspended processes go on. */
void suspend_detach(struct suspend *s);
/* Runner: lets go of the run's processes as they are, suspended or not (a handover), saying how
 * it stands. */
void suspend_hand_over(struct suspend *s, bool *ret_on, double *ret_since, double *ret_total);
/* A run handed over, to be taken up (the loop, before its runner starts): as it stood, and
 * starting, so that a suspend, continue or signal asked meanwhile applies once its processes
 * are in hand again (suspend_attach). */
void suspend_expect(struct suspend *s, bool on, double since, double total);
/* Runner: a deadline (monotonic seconds, 0: none) moved by the time spent suspended; 0 while
 * suspended. */
double suspend_deadline(struct suspend *s, double deadline);
/* Loop: 1 done, 0 when it was so already, -ESRCH when no run's processes can be; -errno. */
int suspend_stop(struct suspend *s);
int suspend_continue(struct suspend *s);
bool suspend_is_on(struct suspend *s);
/* Loop: sig to every process of the run: its cgroup's, else its process group's; while the
 * run is starting, as soon as its processes are in hand. 0, -ESRCH when there is no run (none,
 * or its processes ended); -errno. */
int suspend_signal(struct suspend *s, int sig);

#endif
