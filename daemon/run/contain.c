/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "run/contain.h"
#include "run/handover.h"
#include "util/cgroup.h"
#include "util/log.h"
#include "util/strv.h"

/* How long a leftover of a dead daemon may take to die once killed. */
#define LEFTOVER_WAIT_MS 10000

/* Whether systemd delegated the cgroup at path to us (Delegate=yes marks it, systemd 251). */
static bool delegated(const char *path)
{
        static const char *const names[] = {"trusted.delegate", "user.delegate"};
        char value[8];

        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
                ssize_t n = getxattr(path, names[i], value, sizeof(value) - 1);

                if (n > 0) {
                        value[n] = '\0';
                        if (strcmp(value, "1") == 0)
                                return true;
                }
        }
        return false;
}

/* Our own subtree beside our cgroup, named after the state folder: one per daemon, and the same
 * one after a restart. */
static char *own_subtree(const char *cgroup, const char *state_dir)
{
        char *real = realpath(state_dir, NULL), *path;
        uint64_t h = 1469598103934665603ull;

        for (const char *p = real ? real : state_dir; *p; p++)
                h = (h ^ (unsigned char)*p) * 1099511628211ull;
        free(real);
        if (asprintf(&path, "%s/slowworkd-%016" PRIx64, strcmp(cgroup, "/") == 0 ? "" : cgroup,
                     h) < 0)
                return NULL;
        return path;
}

static int setup(struct contain *c, const char *state_dir)
{
        char *mount = NULL, *own = NULL, *path = NULL;
        int r;

        r = cgroup_find_mount(&mount);
        if (r == 0)
                r = cgroup_pid_path(0, &own);
        if (r == 0 && asprintf(&path, "%s%s", mount, strcmp(own, "/") == 0 ? "" : own) < 0)
                r = -ENOMEM;
        if (r < 0)
                goto out;
        if (delegated(path)) {
                c->path = path;
                path = NULL;
                r = cgroup_tree_setup(c->path, CGROUP_CTRL_ALL, &c->tree, &c->controllers);
        } else if (geteuid() == 0) {
                c->path = own_subtree(path, state_dir);
                c->made = true;
                r = c->path ? cgroup_tree_open(c->path, true, &c->tree) : -ENOMEM;
                if (r == 0)
                        r = cgroup_tree_enable(c->tree, CGROUP_CTRL_ALL, &c->controllers);
        } else {
                r = -EACCES;
        }
out:
        free(mount);
        free(own);
        free(path);
        return r;
}

void contain_init(struct contain *c, const char *state_dir)
{
        int r = setup(c, state_dir);

        if (r < 0) {
                c->tree = cgroup_tree_unref(c->tree);
                log_info("Runs are contained in process groups only: no cgroup v2 subtree of "
                         "ours (%s)",
                         r == -EACCES ? "not delegated by systemd, and not root" : strerror(-r));
                return;
        }
        log_info("Runs are contained in cgroups under %s (limits: %s%s%s%s)", c->path,
                 c->controllers & CGROUP_CTRL_MEMORY ? "memory " : "",
                 c->controllers & CGROUP_CTRL_PIDS ? "pids " : "",
                 c->controllers & CGROUP_CTRL_CPU ? "cpu " : "", c->controllers ? "" : "none");
}

void contain_free(struct contain *c)
{
        c->tree = cgroup_tree_unref(c->tree);
        if (c->made && c->path)
                rmdir(c->path); /* not empty: a run is left for the next start */
        free(c->path);
        *c = (struct contain){0};
}

static int run_new(struct contain *c, const char *kind, int64_t id, int64_t run,
                   struct cgroup_run **ret_run)
{
        char name[64];

        if (!c->tree) {
                *ret_run = NULL;
                return 0;
        }
        snprintf(name, sizeof(name), "%s-%" PRId64 ".%" PRId64, kind, id, run);
        return cgroup_run_create(c->tree, name, ret_run);
}

int contain_run_new(struct contain *c, int64_t id, int64_t run, struct cgroup_run **ret_run)
{
        return run_new(c, "run", id, run, ret_run);
}

int contain_on_end_new(struct contain *c, int64_t id, int64_t run, struct cgroup_run **ret_run)
{
        return run_new(c, "end", id, run, ret_run);
}

/* What an on-end command a daemon before this one ran left: said, but no run's. */
static void on_end_left(int64_t id, int64_t run, int left)
{
        if (left > 0)
                log_info("Job %" PRId64 ": killed the %d process%s the on-end command of its run "
                         "%" PRId64 " left",
                         id, left, left == 1 ? "" : "es", run);
}

int contain_run_open(struct contain *c, int64_t id, int64_t run, struct cgroup_run **ret_run)
{
        char name[64];

        *ret_run = NULL;
        if (!c->tree)
                return 0;
        snprintf(name, sizeof(name), "run-%" PRId64 ".%" PRId64, id, run);
        return cgroup_run_open(c->tree, name, ret_run);
}

void contain_stop_leftovers(struct contain *c,
                            void (*cb)(void *data, int64_t id, int64_t run, int left),
                            void *data)
{
        char **names = NULL;
        int r;

        if (!c->tree)
                return;
        r = cgroup_tree_list_runs(c->tree, &names);
        if (r < 0) {
                log_warning("Cannot look for the runs a stopped daemon left in %s: %s", c->path,
                            strerror(-r));
                return;
        }
        for (char **name = names; *name; name++) {
                struct cgroup_run *run = NULL;
                int64_t id = 0, number = 0;
                int left = 0;

                /* Not left: handed over, it goes on. */
                if (sscanf(*name, "run-%" SCNd64 ".%" SCNd64, &id, &number) == 2 &&
                    run_handover_find(c->taken_up, id, number))
                        continue;
                r = cgroup_run_open(c->tree, *name, &run);
                if (r == 0 && cgroup_run_populated(run) > 0) {
                        left = cgroup_run_signal(run, SIGKILL);
                        r = cgroup_run_kill(run);
                        if (r == 0)
                                r = cgroup_run_wait_empty(run, LEFTOVER_WAIT_MS);
                }
                if (r == 0)
                        r = cgroup_run_remove(run);
                if (r < 0)
                        log_error("Cannot stop what a run left in %s/%s: %s", c->path, *name,
                                  strerror(-r));
                if (sscanf(*name, "run-%" SCNd64 ".%" SCNd64, &id, &number) == 2)
                        cb(data, id, number, r < 0 ? -1 : left < 0 ? 0 : left);
                else if (r == 0 && sscanf(*name, "end-%" SCNd64 ".%" SCNd64, &id, &number) == 2)
                        on_end_left(id, number, left);
                cgroup_run_unref(run);
        }
        strv_free(names);
}

void contain_kill_runs(struct contain *c)
{
        char **names = NULL;

        if (!c->tree || cgroup_tree_list_runs(c->tree, &names) < 0)
                return;
        for (char **name = names; *name; name++) {
                struct cgroup_run *run = NULL;
                int r = cgroup_run_open(c->tree, *name, &run);

                if (r == 0)
                        r = cgroup_run_kill(run);
                if (r < 0 && r != -ENOENT)
                        log_error("Cannot kill the run in %s/%s: %s", c->path, *name, strerror(-r));
                cgroup_run_unref(run);
        }
        strv_free(names);
}

/* How many processes are in process group pgrp, the process pid counted too with leader_too;
 * not those that have exited (zombies: they hold nothing, and wait for whoever reaps them). */
static int count_group(pid_t pgrp, bool leader_too)
{
        DIR *proc = opendir("/proc");
        struct dirent *e;
        int n = 0;

        if (!proc)
                return -errno;
        while ((e = readdir(proc))) {
                pid_t pid = (pid_t)strtol(e->d_name, NULL, 10), group;
                char state;

                if (pid > 0 && inflight_proc_stat(pid, NULL, &group, &state) == 0 &&
                    (group == pgrp || (leader_too && pid == pgrp)) &&
                    state != 'Z' && state != 'X')
                        n++;
        }
        closedir(proc);
        return n;
}

/* Whether the run's first process lives on (a zombie too), its pid not given to another. */
static bool is_first_process(const struct inflight_run *r)
{
        uint64_t start;

        return inflight_proc_stat((pid_t)r->pid, &start, NULL, NULL) == 0 && start == r->start;
}

/*
 * A run's process group has the id of its first process, whose pid the kernel gives no one else
 * while the group has members. So: when that pid names a process with the start time we kept,
 * it and its group are the run's; when it names another one, the run's group had ended before;
 * when it names none, whatever is left in the group is the run's.
 */
static int stop_group(const struct inflight_run *r)
{
        pid_t pid = (pid_t)r->pid;
        uint64_t start;
        int e = inflight_proc_stat(pid, &start, NULL, NULL), n;

        if (e == 0 && start != r->start)
                return 0;
        if (e < 0 && e != -ENOENT)
                return e;
        n = count_group(pid, e == 0);
        if (n <= 0)
                return n;
        if (kill(-pid, SIGKILL) < 0 && errno != ESRCH)
                return -errno;
        if (e == 0 && kill(pid, SIGKILL) < 0 && errno != ESRCH)
                return -errno;
        for (int waited = 0; count_group(pid, is_first_process(r)) > 0; waited += 20) {
                if (waited >= LEFTOVER_WAIT_MS)
                        return -ETIMEDOUT;
                poll(NULL, 0, 20);
        }
        return n;
}

void contain_stop_group_leftovers(const struct inflight_run *runs, size_t n,
                                  void (*cb)(void *data, int64_t id, int64_t run, int left),
                                  void *data)
{
        for (size_t i = 0; i < n; i++) {
                int left;

                if (runs[i].pid <= 0)
                        continue;
                left = stop_group(&runs[i]);
                if (left == 0)
                        continue;
                if (left < 0)
                        log_error("Cannot stop what %s %" PRId64 " of job %" PRId64
                                  " left (process group %" PRId64 "): %s",
                                  runs[i].run < 0 ? "the on-end command of run" : "run",
                                  runs[i].run < 0 ? -runs[i].run : runs[i].run, runs[i].id,
                                  runs[i].pid, strerror(-left));
                if (runs[i].run < 0)
                        on_end_left(runs[i].id, -runs[i].run, left);
                else
                        cb(data, runs[i].id, runs[i].run, left < 0 ? -1 : left);
        }
}
