/* SPDX-License-Identifier: MIT */
/*
 * A program of slowwork's own started from the daemon, any thread: the supervisor (the daemon's
 * own binary again) and a run's fence. posix_spawn(3), which neither copies the daemon's memory
 * nor runs any of its code in the child, so it is safe in a process with threads.
 */
#ifndef SLOWWORKD_UTIL_SPAWN_HELPER_H
#define SLOWWORKD_UTIL_SPAWN_HELPER_H

#include <sys/types.h>

/* The first descriptor passed on: fds[i] becomes SPAWN_HELPER_FD + i in the program. */
#define SPAWN_HELPER_FD 3

/*
 * Starts path with argv in a session of its own, every signal at its default and none blocked,
 * /dev/null as stdin and stdout, the daemon's stderr, and fds[0..nfds) as 3, 4, ...: nothing
 * else of the daemon's, every other descriptor of which is close-on-exec. 0 with *ret_pid, or
 * -errno (the program could not be started).
 */
int spawn_helper(const char *path, char *const *argv, const int *fds, int nfds, pid_t *ret_pid);

#endif
