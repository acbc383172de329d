/* SPDX-License-Identifier: MIT */
/*
 * How runs are contained: each in a cgroup of its own where the daemon can manage a cgroup v2
 * subtree (its own cgroup when systemd delegated it, Delegate=yes; else, as root, a subtree
 * named after the state folder, so that a restarted daemon finds it), else in process groups
 * only. Leftovers of a daemon that died are stopped before anything runs again.
 */
#ifndef SLOWWORKD_CONTAIN_H
#define SLOWWORKD_CONTAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run/inflight.h"

struct cgroup_run;
struct cgroup_tree;
struct run_handover;

struct contain {
        struct cgroup_tree *tree; /* NULL: process groups only */
        char *path;               /* the subtree's folder */
        bool made;                /* we made the subtree (not systemd's): it goes with us */
        unsigned controllers;     /* CGROUP_CTRL_* enabled in the subtree */
        struct run_handover *taken_up; /* at a start after a reexec: the runs handed over, which
                                        * are no leftovers */
};

/* Sets up the subtree for the daemon of state_dir, or falls back to process groups; says which
 * in the log. Never fails the start. */
void contain_init(struct contain *c, const char *state_dir);
/* Removes a subtree the daemon made, when it is empty. */
void contain_free(struct contain *c);
/* A new run's cgroup, "run-ID.RUN": 0 with *ret_run, NULL when runs are not contained; -errno. */
int contain_run_new(struct contain *c, int64_t id, int64_t run, struct cgroup_run **ret_run);
/* The cgroup of a run in progress that the daemon's last program handed over: 0 with *ret_run
 * (NULL when runs are not contained), or -errno. */
int contain_run_open(struct contain *c, int64_t id, int64_t run, struct cgroup_run **ret_run);
/* The same for the on-end command after the run, "end-ID.RUN", apart from the runs'. */
int contain_on_end_new(struct contain *c, int64_t id, int64_t run, struct cgroup_run **ret_run);
/* Kills what each run cgroup of a daemon before this one still holds, waits for it, removes the
 * cgroup, and tells cb the run's job, number and how many processes were left (an on-end
 * command's are said in the log, not told). */
void contain_stop_leftovers(struct contain *c,
                            void (*cb)(void *data, int64_t id, int64_t run, int left),
                            void *data);
/* Kills every process of every run cgroup now (SIGKILL, cgroup.kill), leaving the cgroups to
 * the daemon whose runs they are. */
void contain_kill_runs(struct contain *c);
/* The same for the shell runs no cgroup held (the inflight file's, pid > 0): what is left of
 * each run's process group, unless its first process's pid names another process now. left is
 * -1 for those that would not go. An on-end command's (run < 0) is said in the log alone. */
void contain_stop_group_leftovers(const struct inflight_run *runs, size_t n,
                                  void (*cb)(void *data, int64_t id, int64_t run, int left),
                                  void *data);

#endif
