/* SPDX-License-Identifier: MIT */
#include <stdarg.h>
#include <stdio.h>

#include "util/log.h"

void log_msg(const char *prefix, const char *fmt, ...)
{
        int saved = errno;
        va_list ap;

        flockfile(stderr);
        fputs(prefix, stderr);
        fputs("slowworkd: ", stderr);
        va_start(ap, fmt);
        errno = saved;
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        funlockfile(stderr);
        errno = saved;
}
