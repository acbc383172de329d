/* SPDX-License-Identifier: MIT */
/* Preloaded into slowworkd by a test: a system where pidfd_open(2) fails, as under an old kernel
 * or a filter that refuses it. */
#include <errno.h>
#include <sys/types.h>

int pidfd_open(pid_t pid, unsigned int flags);

int pidfd_open(pid_t pid, unsigned int flags)
{
        (void)pid;
        (void)flags;
        errno = ENOSYS;
        return -1;
}
