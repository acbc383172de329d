/* SPDX-License-Identifier: MIT */
/*
 * The supervisor: a process the daemon forks at start, before any run or thread, that outlives
 * it only to stop what its runs left. It waits for the end of a pipe whose write end the daemon
 * alone holds (close-on-exec, so no run inherits it): when the daemon is gone, however it went
 * (kill -9 too), it stops every process of the runs' cgroups and of the process groups in the
 * inflight file, tells the next start which runs left how many processes (DIR/runs-stopped),
 * and exits. It keeps DIR/runs-inflight flock()ed until then, so that a next daemon on the folder
 * waits for it before it reads what the last one left; nothing else of the daemon's (socket,
 * state folder lock, database) stays open in it.
 */
#ifndef SLOWWORKD_SUPERVISOR_H
#define SLOWWORKD_SUPERVISOR_H

#include <stdint.h>
#include <sys/types.h>

#include "jobs/contain.h"

struct supervisor {
        pid_t pid;    /* 0: none */
        int pipe_fd;  /* the write end; -1 when none */
        char *report; /* DIR/runs-stopped */
        double said;  /* the last deadline written */
};

/* Waits for the last daemon's supervisor on state_dir, if it is still stopping runs, then starts
 * ours for the runs of c. Call it on the main thread before any other thread exists, once c is
 * set up and before the inflight file is opened. Never fails the start: without a supervisor
 * (logged), a crash's leftovers wait for the next start as before. */
void supervisor_start(struct supervisor *s, const struct contain *c, const char *state_dir);
/* When (CLOCK_MONOTONIC seconds) the node's lease runs out unrenewed, its runs fenced: should the
 * daemon not say a later one by then (stopped, hung), the supervisor kills every process of its
 * runs itself, then waits for the next deadline. The last said counts; 0: none. */
void supervisor_deadline(struct supervisor *s, double at);
/* A normal end, once the runs are stopped: the supervisor finds nothing, and is waited for. */
void supervisor_stop(struct supervisor *s);
/* What the last daemon's supervisor stopped, to cb as contain_stop_leftovers() tells it (left
 * > 0; -1 for a run whose processes would not go); the report is then removed. */
void supervisor_report(struct supervisor *s,
                       void (*cb)(void *data, int64_t id, int64_t run, int left), void *data);

#endif
