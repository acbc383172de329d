/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <unistd.h>

#include "util/spawn-helper.h"

extern char **environ;

/* Enough for the supervisor's descriptors; each is first copied above the places they go to. */
#define FDS_MAX   4
#define FDS_ABOVE (SPAWN_HELPER_FD + FDS_MAX)

int spawn_helper(const char *path, char *const *argv, const int *fds, int nfds, pid_t *ret_pid)
{
        int copies[FDS_MAX], made = 0, r = 0;
        posix_spawn_file_actions_t actions;
        posix_spawnattr_t attr;
        sigset_t all, none;
        pid_t pid;

        if (nfds > FDS_MAX)
                return -EINVAL;
        /* A descriptor already at the place of another would be overwritten before it moves. */
        for (; made < nfds; made++) {
                copies[made] = fcntl(fds[made], F_DUPFD_CLOEXEC, FDS_ABOVE);
                if (copies[made] < 0) {
                        r = -errno;
                        goto out;
                }
        }
        sigfillset(&all);
        sigemptyset(&none);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETSID);
        posix_spawn_file_actions_init(&actions);
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
        /* dup2() leaves the copy without close-on-exec: it is passed on. */
        for (int i = 0; i < nfds; i++)
                posix_spawn_file_actions_adddup2(&actions, copies[i], SPAWN_HELPER_FD + i);
        r = -posix_spawn(&pid, path, &actions, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&actions);
        posix_spawnattr_destroy(&attr);
        if (r == 0)
                *ret_pid = pid;
out:
        while (made > 0)
                close(copies[--made]);
        return r;
}
