/* SPDX-License-Identifier: MIT */
/*
 * The supervisor, as the daemon sees it: a process the daemon starts (its own binary again,
 * supervise.c) that outlives it only to stop what its runs left. It waits for the end of a pipe
 * whose write end the daemon alone holds (close-on-exec, so no run inherits it): when the daemon
 * is gone, however it went (kill -9 too), it stops every process of the runs' cgroups and of the
 * process groups in the inflight file, tells the next start which runs left how many processes
 * (DIR/runs-stopped), and exits. It keeps DIR/runs-inflight flock()ed until then, so that a next
 * daemon on the folder waits for it before it reads what the last one left; nothing else of the
 * daemon's (socket, state folder lock, database) is open in it.
 *
 * The daemon watches it in turn (a pidfd on the loop): a supervisor that dies while the daemon
 * lives is replaced at once. And both hold the write end of the node's life pipe, whose read end
 * each run's fence waits on (fence.h): it sees end of file only once neither is left.
 */
#ifndef SLOWWORKD_SUPERVISOR_H
#define SLOWWORKD_SUPERVISOR_H

#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "run/contain.h"

struct supervisor_watch;

struct supervisor {
        uv_loop_t *loop;
        pid_t pid;   /* 0: none */
        int pipe_fd; /* the write end of its pipe; -1 when none */
        int life[2]; /* the life pipe: [0] for the fences, [1] held by daemon and supervisor */
        char *state_dir, *cgroup, *report;
        double deadline; /* the last one asked for (0: none) */
        double said;     /* the last one written to this supervisor */
        double started;  /* when this one started (monotonic seconds) */
        int quick_ends;  /* supervisors in a row that died within a second of their start */
        struct supervisor_watch *watch; /* its pidfd on the loop; NULL: not watched */
};

/* Waits for the last daemon's supervisor on state_dir, if it is still stopping runs, then starts
 * ours for the runs of c, watched on loop. Call it once c is set up and before the inflight file
 * is opened. Never fails the start: without a supervisor (logged), a crash's leftovers wait for
 * the next start as before. */
void supervisor_start(struct supervisor *s, uv_loop_t *loop, const struct contain *c,
                      const char *state_dir);
/* The read end of the life pipe, for the runs' fences; -1 when there is none. */
int supervisor_life_fd(const struct supervisor *s);
/* When (CLOCK_MONOTONIC seconds) the node's lease runs out unrenewed, its runs fenced: should the
 * daemon not say a later one by then (stopped, hung), the supervisor kills every process of its
 * runs itself, then waits for the next deadline. The last said counts; 0: none. */
void supervisor_deadline(struct supervisor *s, double at);
/* Stops watching it (before the loop ends): one that dies from now on is not replaced. */
void supervisor_unwatch(struct supervisor *s);
/* Before a reexec: the supervisor exits at once, stopping nothing (the runs go on, handed over),
 * and is waited for; the next program starts its own. */
void supervisor_let_go(struct supervisor *s);
/* A normal end, once the runs are stopped: the supervisor finds nothing, and is waited for. */
void supervisor_stop(struct supervisor *s);
/* What the last daemon's supervisor stopped, to cb as contain_stop_leftovers() tells it (left
 * > 0; -1 for a run whose processes would not go); the report is then removed. */
void supervisor_report(struct supervisor *s,
                       void (*cb)(void *data, int64_t id, int64_t run, int left), void *data);

#endif
