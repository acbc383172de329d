/* SPDX-License-Identifier: MIT */
/* Starting a job's process, as the daemon or as another user. Any thread. */
#ifndef SLOWWORKD_SPAWN_H
#define SLOWWORKD_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/resource.h>
#include <sys/types.h>

struct user_creds;

/* The environment of another user's job that came without one. */
#define SPAWN_USER_PATH "/usr/local/bin:/usr/bin:/bin"
/* The most resource limits a process is started with. */
#define SPAWN_RLIMITS_MAX 16

/* What the process is started with besides its cgroup's limits. */
struct spawn_limits {
        struct {
                int resource; /* RLIMIT_* */
                struct rlimit value;
        } rlimits[SPAWN_RLIMITS_MAX];
        unsigned nrlimits;
        bool set_nice;
        int nice;
};

struct spawn_params {
        char *const *argv; /* argv[0] is searched in the daemon's PATH */
        char *const *envp; /* NULL: the daemon's, or for another user PATH=SPAWN_USER_PATH */
        char *const *extra_env; /* "NAME=VALUE" set over envp's (NULL: none) */
        const char *cwd;
        int out_fd;                         /* the process's stdout and stderr */
        const struct user_creds *as;        /* NULL: as the daemon */
        int cgroup_fd;                      /* the run cgroup, -1: none */
        int cgroup_procs_fd;                /* its cgroup.procs, open for writing */
        const struct spawn_limits *limits; /* NULL: the daemon's own */
};

/*
 * Starts the process in a session of its own (so its own process group, and no controlling
 * terminal: the daemon's is not the job's to read or type into), with default signal dispositions
 * and an empty signal mask, stdin from /dev/null, out_fd as stdout and stderr and no other
 * descriptor, in cwd, in the run cgroup when given one (before exec: no process of the job is
 * ever outside it), with the limits and niceness given. With `as`, it runs with that user's uid,
 * gid and groups, in a session keyring of its own, with its HOME, USER and LOGNAME from the
 * user's entry, and enters cwd with the user's permissions. On failure: -errno, and what failed,
 * for the run's log, in note.
 */
int spawn_job(const struct spawn_params *p, pid_t *ret_pid, char *note, size_t notelen);

#endif
