/* SPDX-License-Identifier: MIT */
/*
 * cgroup v2: a subtree the daemon owns, and one child cgroup per run inside it. Knows nothing of
 * jobs. Every call returns 0 (or a count) or -errno and logs nothing; ret_* out-parameters are
 * written only on success. No static state. Objects are reference counted (atomically), and
 * calls on one object from several threads are safe: each is a few syscalls on descriptors that
 * never change after creation.
 *
 * Errors with a meaning of their own:
 *   -ENOMEDIUM   no cgroup2 mount, no "0::" line, or the path is not on a cgroup2 file system
 *   -EACCES      the subtree is not ours to write (not delegated, not root)
 *   -EOPNOTSUPP  a limit whose controller is not enabled in the subtree
 *   -EBUSY       (kernel) processes in the subtree root when enabling controllers; a run
 *                cgroup that still has processes when removing it
 *   -ETIMEDOUT   the wait ended before the run cgroup was empty
 *
 * The daemon's start:
 *   cgroup_find_mount(&mnt); cgroup_pid_path(0, &own);          -> "<mnt><own>", or a folder
 *   cgroup_tree_setup(path, CGROUP_CTRL_ALL, &tree, &enabled);  -> moves us into <path>/daemon
 * A run:
 *   cgroup_run_create(tree, "run-12.3", &run); limits; place the child (see cgroup_run_fd());
 *   ...wait for the process...; cgroup_run_kill(run); cgroup_run_wait_empty(run, ms);
 *   cgroup_run_stats(run, &st); cgroup_run_remove(run); cgroup_run_unref(run);
 * After a restart: cgroup_tree_list_runs(), then cgroup_run_open() each, kill, wait, remove.
 */
#ifndef SLOWWORKD_UTIL_CGROUP_H
#define SLOWWORKD_UTIL_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* The controllers a run's limits need. */
#define CGROUP_CTRL_MEMORY (1u << 0)
#define CGROUP_CTRL_PIDS   (1u << 1)
#define CGROUP_CTRL_CPU    (1u << 2)
#define CGROUP_CTRL_ALL    (CGROUP_CTRL_MEMORY | CGROUP_CTRL_PIDS | CGROUP_CTRL_CPU)

/* The leaf the daemon moves itself into; never a run's name. */
#define CGROUP_TREE_LEAF "daemon"

/* memory.max or pids.max: no limit. */
#define CGROUP_LIMIT_MAX UINT64_MAX
/* A statistic whose file or key the kernel does not have here. */
#define CGROUP_UNKNOWN UINT64_MAX

struct cgroup_tree;
struct cgroup_run;

/* The first cgroup2 mount in /proc/self/mountinfo, e.g. "/sys/fs/cgroup" or ".../unified". */
int cgroup_find_mount(char **ret_path);
/* The v2 cgroup of pid (0: this process) from /proc/PID/cgroup's "0::" line, e.g. "/" or
 * "/system.slice/slowworkd.service". Relative to the mount. */
int cgroup_pid_path(pid_t pid, char **ret_path);
/* The "a" of controllers given as "a b c" (a cgroup.controllers line) as CGROUP_CTRL_* bits. */
unsigned cgroup_controllers_parse(const char *line);

/*
 * Opens the subtree at path (absolute, on the cgroup2 mount), creating the folder first with
 * create. Checks that it is cgroup2 (-ENOMEDIUM) and that we may create cgroups in it and move
 * processes in it (-EACCES): a Delegate=yes unit's own cgroup, or anything when root.
 */
int cgroup_tree_open(const char *path, bool create, struct cgroup_tree **ret_tree);
/* Enables in the subtree every controller of want that its cgroup.controllers lists; the others
 * are left out without error. ret_enabled (may be NULL): what is enabled afterwards. -EBUSY when
 * processes are still in the subtree root (cgroup_tree_setup() moves them into the leaf). */
int cgroup_tree_enable(struct cgroup_tree *t, unsigned want, unsigned *ret_enabled);
/* For the daemon's start: cgroup_tree_open(), the calling process, all its threads, moved into
 * <subtree>/CGROUP_TREE_LEAF (made if needed) so that the subtree root holds no process, then
 * cgroup_tree_enable(). */
int cgroup_tree_setup(const char *path, unsigned want, struct cgroup_tree **ret_tree,
                      unsigned *ret_enabled);
/* The run cgroups in the subtree (every child folder but the leaf), as a NULL-terminated array
 * of names, each and the array to be freed with free() (strv_free() does). */
int cgroup_tree_list_runs(struct cgroup_tree *t, char ***ret_names);
struct cgroup_tree *cgroup_tree_unref(struct cgroup_tree *t); /* NULL: nothing; returns NULL */

/* A run's name: 1..NAME_MAX of [A-Za-z0-9._@:+-], no leading dot, not CGROUP_TREE_LEAF. */
bool cgroup_name_is_valid(const char *name);
/* Makes <subtree>/<name> (-EEXIST if it is there) or opens an existing one (a leftover). */
int cgroup_run_create(struct cgroup_tree *t, const char *name, struct cgroup_run **ret_run);
int cgroup_run_open(struct cgroup_tree *t, const char *name, struct cgroup_run **ret_run);
struct cgroup_run *cgroup_run_ref(struct cgroup_run *run);
struct cgroup_run *cgroup_run_unref(struct cgroup_run *run); /* NULL: nothing; returns NULL */

/*
 * Placing a job's process, best first; both are race-free:
 *  - clone3() with CLONE_INTO_CGROUP and .cgroup = cgroup_run_fd(run) (an O_PATH|O_DIRECTORY
 *    descriptor, close-on-exec): the child is born in the run cgroup.
 *  - fork(), then in the child, before exec and before dropping privileges:
 *    write(cgroup_run_procs_fd(run), "0", 1) == 1, else _exit(). Async-signal-safe: the
 *    descriptor (cgroup.procs, O_WRONLY, close-on-exec) is opened at create, so the child only
 *    writes. Keep it open across any close_range() before that write.
 */
int cgroup_run_fd(const struct cgroup_run *run);
int cgroup_run_procs_fd(const struct cgroup_run *run);

/* Limits. -EOPNOTSUPP when the controller is not enabled in the subtree, -EINVAL out of range
 * (cpu.weight is 1..10000; CGROUP_LIMIT_MAX is "max"). */
int cgroup_run_set_memory_max(struct cgroup_run *run, uint64_t bytes);
int cgroup_run_set_pids_max(struct cgroup_run *run, uint64_t pids);
int cgroup_run_set_cpu_weight(struct cgroup_run *run, uint64_t weight);

/* Freezes every process in the run cgroup and below (cgroup.freeze 1), or thaws them (0). The
 * kernel completes a freeze on its own; "frozen 1" in cgroup.events says when. -EOPNOTSUPP on a
 * kernel without the freezer (before 5.2). */
int cgroup_run_freeze(struct cgroup_run *run, bool frozen);

/* Sends sig to every process in the run cgroup, again until a pass finds none it has not
 * signalled (so children forked meanwhile get it too). Returns how many it signalled. */
int cgroup_run_signal(struct cgroup_run *run, int sig);
/* SIGKILL to every process in the run cgroup and its descendants: cgroup.kill where the kernel
 * has it (5.14), which no fork can outrun, else cgroup_run_signal(run, SIGKILL). Returns at
 * once; the processes are gone when cgroup_run_wait_empty() says so. */
int cgroup_run_kill(struct cgroup_run *run);

/* 1 when a process is in the run cgroup or below, 0 when not ("populated" of cgroup.events).
 * It reads through the run's descriptor of cgroup.events, which cgroup_run_wait_empty() polls,
 * so it also rearms it. */
int cgroup_run_populated(struct cgroup_run *run);
/* Waits until the run cgroup is empty, at most timeout_ms (negative: forever). -ETIMEDOUT. */
int cgroup_run_wait_empty(struct cgroup_run *run, int timeout_ms);

struct cgroup_stats {
        uint64_t cpu_usec;    /* cpu.stat usage_usec (there even without the cpu controller) */
        uint64_t user_usec;   /* cpu.stat user_usec */
        uint64_t system_usec; /* cpu.stat system_usec */
        uint64_t memory_peak; /* memory.peak, bytes (memory controller, kernel 5.19) */
        uint64_t oom_kills;   /* memory.events oom_kill (memory controller) */
};
/* Reads them, each CGROUP_UNKNOWN when the kernel has no such file or key here. Read them
 * before cgroup_run_remove(): a removed cgroup has no files. */
int cgroup_run_stats(struct cgroup_run *run, struct cgroup_stats *ret_stats);

/* Removes the run cgroup, and any cgroups a job made inside it. It must be empty: kill and wait
 * first (-EBUSY if not). Removing one already gone is not an error. */
int cgroup_run_remove(struct cgroup_run *run);

#endif
