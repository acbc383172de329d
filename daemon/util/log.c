/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"

static pthread_once_t journal_once = PTHREAD_ONCE_INIT;
static bool to_journal;

/* systemd sets JOURNAL_STREAM to the device and inode of the stream it connected stderr to; a
 * stderr redirected since (a child's, a test's) is not the journal. */
static void check_journal(void)
{
        const char *env = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        to_journal = env && sscanf(env, "%llu:%llu", &dev, &ino) == 2 &&
                     fstat(STDERR_FILENO, &st) == 0 && st.st_dev == dev && st.st_ino == ino;
}

bool log_to_journal(void)
{
        pthread_once(&journal_once, check_journal);
        return to_journal;
}

void log_msg(const char *prefix, const char *fmt, ...)
{
        int saved = errno;
        va_list ap;

        flockfile(stderr);
        fputs(prefix, stderr);
        /* The journal names the daemon on each line already. */
        if (!log_to_journal())
                fputs("slowworkd: ", stderr);
        va_start(ap, fmt);
        errno = saved;
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        funlockfile(stderr);
        errno = saved;
}
