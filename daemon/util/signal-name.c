/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE /* sigabbrev_np */
#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/signal-name.h"

int signal_is_valid(long long sig)
{
        return sig >= 1 && sig <= SIGRTMAX;
}

/* "RTMIN+N" and "RTMAX-N": glibc has no abbreviation of its own for the real-time signals. */
static int realtime(const char *name)
{
        char *end;
        long n;

        if (strncasecmp(name, "RTMIN", 5) == 0 || strncasecmp(name, "RTMAX", 5) == 0) {
                bool min = toupper((unsigned char)name[4]) == 'N';

                n = 0;
                if (name[5]) {
                        if (name[5] != (min ? '+' : '-') || !isdigit((unsigned char)name[6]))
                                return -EINVAL;
                        errno = 0;
                        n = strtol(name + 6, &end, 10);
                        if (errno || *end)
                                return -EINVAL;
                }
                n = min ? SIGRTMIN + n : SIGRTMAX - n;
                return n >= SIGRTMIN && n <= SIGRTMAX ? (int)n : -EINVAL;
        }
        return -EINVAL;
}

int signal_by_name(const char *name)
{
        const char *abbrev;
        char *end;
        long n;
        int sig;

        if (isdigit((unsigned char)name[0])) {
                errno = 0;
                n = strtol(name, &end, 10);
                return !errno && !*end && signal_is_valid(n) ? (int)n : -EINVAL;
        }
        if (strncasecmp(name, "SIG", 3) == 0)
                name += 3;
        for (sig = 1; sig < SIGRTMIN; sig++) {
                abbrev = sigabbrev_np(sig);
                if (abbrev && strcasecmp(abbrev, name) == 0)
                        return sig;
        }
        return realtime(name);
}

const char *signal_name(int sig)
{
        const char *abbrev = sigabbrev_np(sig);

        return abbrev ? abbrev : "?";
}
