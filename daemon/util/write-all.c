/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <unistd.h>

#include "util/write-all.h"

int write_all(int fd, const void *data, size_t n)
{
        const char *p = data;

        while (n > 0) {
                ssize_t w = write(fd, p, n);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w < 0)
                        return -errno;
                p += w;
                n -= (size_t)w;
        }
        return 0;
}
