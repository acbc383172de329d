/* SPDX-License-Identifier: MIT */
/* Logging to stderr with sd-daemon <N> priority prefixes, so journald keeps the levels; lines
 * start with "slowworkd: " unless stderr is the journal's stream ($JOURNAL_STREAM). */
#ifndef SLOWWORKD_LOG_H
#define SLOWWORKD_LOG_H

#include <errno.h>
#include <stdbool.h>
#include <systemd/sd-daemon.h>

/* Whether standard error is the journal (JOURNAL_STREAM), which names the daemon on each line. */
bool log_to_journal(void);
void log_msg(const char *prefix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(SD_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(SD_WARNING, __VA_ARGS__)
#define log_info(...) log_msg(SD_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(SD_DEBUG, __VA_ARGS__)

/* Logs with errno set from r (a negative errno) for %m, and returns r. */
#define log_error_errno(r, ...)                                                                    \
        ({                                                                                         \
                int r_ = (r);                                                                      \
                errno = -r_;                                                                       \
                log_error(__VA_ARGS__);                                                            \
                r_;                                                                                \
        })

#endif
