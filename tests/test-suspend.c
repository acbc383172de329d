/* SPDX-License-Identifier: MIT */
/*
 * daemon/run/suspend.c with real processes, in process group mode: what a signal asked of a run
 * does before its processes are in hand (the runner has spawned them, not yet attached them), and
 * after they are let go.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/suspend.h"
#include "run-suite.h"

static int got_fd;

/* The child's: the signal's name in the pipe; after USR2 it ends. */
static void on_signal(int sig)
{
        ssize_t n = write(got_fd, sig == SIGUSR1 ? "1" : "2", 1);

        (void)n;
        if (sig == SIGUSR2)
                _exit(0);
}

/* A process group of one that writes "1" or "2" into *ret_got for each USR1 or USR2 it takes,
 * and ends after USR2; returned once its handlers are set. */
static pid_t catcher(int *ret_got)
{
        int ready[2], got[2];
        struct sigaction sa = {.sa_handler = on_signal};
        pid_t pid;
        char c;

        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(got, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                got_fd = got[1];
                /* One handler at a time: the kernel hands over pending signals lowest first. */
                sigfillset(&sa.sa_mask);
                sigaction(SIGUSR1, &sa, NULL);
                sigaction(SIGUSR2, &sa, NULL);
                if (setpgid(0, 0) < 0 || write(ready[1], "", 1) != 1)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(ready[1]);
        close(got[1]);
        ck_assert_int_eq(read(ready[0], &c, 1), 1);
        close(ready[0]);
        *ret_got = got[0];
        return pid;
}

/* What the catcher wrote until it ended; it must have ended well. */
static void ended_having_got(pid_t pid, int got, const char *want)
{
        char text[16] = "";
        ssize_t n, len = 0;
        int status;

        while ((n = read(got, text + len, sizeof(text) - 1 - (size_t)len)) > 0)
                len += n;
        close(got);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ck_assert_str_eq(text, want);
}

START_TEST(signals_asked_while_a_run_starts_reach_its_processes_once_in_hand)
{
        struct suspend s;
        pid_t pid;
        int got;

        suspend_init(&s);
        ck_assert_int_eq(suspend_signal(&s, SIGUSR1), -ESRCH);
        suspend_begin(&s);
        pid = catcher(&got);
        /* Spawned, not yet attached: both are taken, and kept. */
        ck_assert_int_eq(suspend_signal(&s, SIGUSR1), 0);
        ck_assert_int_eq(suspend_signal(&s, SIGUSR2), 0);
        ck_assert_int_eq(waitpid(pid, NULL, WNOHANG), 0);
        suspend_attach(&s, NULL, pid);
        /* USR1, then USR2, which ends it. */
        ended_having_got(pid, got, "12");
        suspend_detach(&s);
        ck_assert_int_eq(suspend_signal(&s, SIGUSR1), -ESRCH);
        suspend_destroy(&s);
}
END_TEST

START_TEST(a_signal_asked_of_a_run_that_failed_to_start_does_not_reach_the_next)
{
        struct suspend s;
        pid_t pid;
        int got;

        suspend_init(&s);
        suspend_begin(&s);
        ck_assert_int_eq(suspend_signal(&s, SIGUSR1), 0);
        /* Its spawn failed: let go with nothing attached. */
        suspend_detach(&s);
        suspend_begin(&s);
        pid = catcher(&got);
        suspend_attach(&s, NULL, pid);
        ck_assert_int_eq(suspend_signal(&s, SIGUSR2), 0);
        ended_having_got(pid, got, "2");
        suspend_detach(&s);
        suspend_destroy(&s);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("suspend");
        TCase *tc = tcase_create("suspend");

        tcase_add_test(tc, signals_asked_while_a_run_starts_reach_its_processes_once_in_hand);
        tcase_add_test(tc, a_signal_asked_of_a_run_that_failed_to_start_does_not_reach_the_next);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
