/* SPDX-License-Identifier: MIT */
/* A signal by its name, as kill(1) takes it: "USR1", "SIGUSR1" (any case) or "10". */
#ifndef SLOWWORKD_SIGNAL_NAME_H
#define SLOWWORKD_SIGNAL_NAME_H

/* The signal's number (1..SIGRTMAX), or -EINVAL for no such signal. */
int signal_by_name(const char *name);
/* Its name without "SIG" ("USR1"); "?" for none (the real-time signals). */
const char *signal_name(int sig);
/* Whether 1 <= sig <= SIGRTMAX. */
int signal_is_valid(long long sig);

#endif
