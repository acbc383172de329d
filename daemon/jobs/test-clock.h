/* SPDX-License-Identifier: MIT */
/*
 * The tests' hook on the daemon's clocks (HACKING.md, the tests): with SLOWWORKD_TEST_CLOCK_FD=N
 * in its environment (read by main.c), whoever started the daemon holds the other end of the
 * socket N, and each line "advance SECONDS" written there moves both clocks (run_mono_now,
 * run_wall_now) forward. Then everything that waits on them looks again: the recurring jobs'
 * ticks due by now run and the schedule's timer is set anew, delayed runs are queued again with
 * what is left of their delay, and running jobs are kicked, which makes them look at their
 * timeout and kill-grace. Only then is "advanced" written back: a test waits on that line, not
 * on the clock. Without the variable none of this exists; no client of the daemon's socket can
 * reach it. Leases, the metrics file, the status timer and the stop timers keep the real clock.
 * Loop thread only.
 */
#ifndef SLOWWORKD_TEST_CLOCK_H
#define SLOWWORKD_TEST_CLOCK_H

#include <uv.h>

struct daemon;
struct test_clock;

/* Listens on fd (a socket, which it takes): 0, or -errno (fd closed). */
int test_clock_open(struct daemon *d, uv_loop_t *loop, int fd, struct test_clock **ret);
/* Stops listening and closes the socket (NULL: nothing). */
void test_clock_close(struct test_clock *c);

#endif
