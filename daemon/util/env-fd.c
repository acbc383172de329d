/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>

#include "util/env-fd.h"

int env_fd(const char *name)
{
        const char *value = getenv(name);
        char *end;
        long fd;
        int bad;

        if (!value)
                return 0;
        errno = 0;
        fd = strtol(value, &end, 10);
        bad = errno || end == value || *end || fd < 3 || fd > INT_MAX ||
              fcntl((int)fd, F_SETFD, FD_CLOEXEC) < 0;
        unsetenv(name);
        return bad ? -EINVAL : (int)fd;
}
