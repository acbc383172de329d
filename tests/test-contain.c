/* SPDX-License-Identifier: MIT */
/* What a job can reach outside itself (the daemon's terminal), and runs where pidfd_open fails. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

#if !defined(TTY_INJECT) || !defined(NO_PIDFD)
#error "TTY_INJECT and NO_PIDFD must name the tests' tty-inject program and no-pidfd shim"
#endif

static struct daemon d;

/* Everything the terminal's other side shows until it has been quiet for a moment. */
static char *drain_terminal(int master)
{
        size_t len = 0, size = 65536;
        char *text = malloc(size);
        struct pollfd p = {.fd = master, .events = POLLIN};
        ssize_t n;

        ck_assert_ptr_nonnull(text);
        while (poll(&p, 1, 200) > 0 && len < size - 1) {
                n = read(master, text + len, size - 1 - len);
                if (n <= 0)
                        break;
                len += (size_t)n;
        }
        text[len] = '\0';
        return text;
}

/* slowworkd started from a terminal (a pty this test made, whose other side is *ret_master): its
 * controlling terminal. Returns a connection to it. */
static int start_on_terminal(int *ret_master)
{
        int master, slave;
        pid_t pid;

        ck_assert_int_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
        snprintf(d.dir, sizeof(d.dir), "/tmp/slowwork-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d.dir));
        snprintf(d.sock, sizeof(d.sock), "%s/sock", d.dir);
        snprintf(d.state, sizeof(d.state), "%s/state", d.dir);
        d.own_dir = true;
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (setsid() < 0 || ioctl(slave, TIOCSCTTY, 0) < 0 || dup2(slave, 0) < 0 ||
                    dup2(slave, 1) < 0 || dup2(slave, 2) < 0)
                        _exit(126);
                close(master);
                execl(SLOWWORKD, SLOWWORKD, "--socket", d.sock, "--state-dir", d.state, NULL);
                _exit(127);
        }
        close(slave);
        d.pid = pid;
        *ret_master = master;
        for (int i = 0; i < 2000; i++) {
                int fd = client_connect(d.sock);

                if (fd >= 0)
                        return fd;
                ck_assert(daemon_alive(&d));
                usleep(5000);
        }
        ck_abort_msg("slowworkd did not answer on %s", d.sock);
        return -1;
}

START_TEST(a_job_can_neither_open_nor_type_into_the_daemons_terminal)
{
        int master, fd;
        json_object *rec;
        char *shown, *log;

        fd = start_on_terminal(&master);
        rec = job_wait(fd, job_submit(fd, "{\"argv\":[\"" TTY_INJECT "\"]}"));
        log = job_log(fd, int_member(rec, "id"));
        ck_assert_msg(int_member(rec, "exit_code") == 3, "the job %s", log);
        ck_assert_str_eq(str_member(rec, "outcome"), "failed");
        shown = drain_terminal(master);
        ck_assert_msg(!strstr(shown, "INJECTED"), "the terminal got: %s", shown);
        free(shown);
        free(log);
        json_object_put(rec);
        close(fd);
        daemon_stop(&d);
        close(master);
}
END_TEST

/* Without pidfd_open the daemon says so once and still watches its runs: exit codes, cancel and
 * timeout as anywhere else, never "failed" for want of a pidfd. */
START_TEST(without_pidfd_runs_are_watched_all_the_same)
{
        char said[] = "/tmp/slowwork-test-stderr-XXXXXX", err[4096] = "";
        int64_t ok, five, slow, late;
        int fd, out, saved = dup(2);
        json_object *rec;
        ssize_t n;

        /* What slowworkd writes to its stderr goes to a file, for a look at the end. */
        out = mkstemp(said);
        ck_assert_int_ge(out, 0);
        ck_assert_int_ge(dup2(out, 2), 0);
        /* The sanitizers' runtimes want to come first; the shim does not mind. */
        setenv("ASAN_OPTIONS", "verify_asan_link_order=0", 1);
        setenv("LD_PRELOAD", NO_PIDFD, 1);
        daemon_start(&d, "--kill-grace", "0.5", NULL);
        unsetenv("LD_PRELOAD");
        dup2(saved, 2);
        close(saved);
        fd = client_connect(d.sock);
        ok = job_submit(fd, "{\"command\":\"sleep 0.2\"}");
        five = job_submit(fd, "{\"command\":\"exit 5\"}");
        slow = job_submit(fd, "{\"command\":\"sleep 30\"}");
        late = job_submit(fd, "{\"command\":\"sleep 30\",\"timeout\":0.3}");
        rec = job_wait(fd, ok);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        rec = job_wait(fd, five);
        ck_assert_str_eq(str_member(rec, "outcome"), "failed");
        ck_assert_int_eq(int_member(rec, "exit_code"), 5);
        json_object_put(rec);
        job_wait_state(fd, slow, "running");
        json_object_put(client_call(fd, "cancel", "{\"id\":3}"));
        ck_assert_int_eq(slow, 3);
        rec = job_wait(fd, slow);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);
        rec = job_wait(fd, late);
        ck_assert_str_eq(str_member(rec, "outcome"), "timed-out");
        json_object_put(rec);
        close(fd);
        daemon_stop(&d);
        n = pread(out, err, sizeof(err) - 1, 0);
        ck_assert_int_gt(n, 0);
        err[n] = '\0';
        close(out);
        unlink(said);
        ck_assert_msg(strstr(err, "pidfd_open(2) fails here"), "slowworkd said: %s", err);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("contain");
        TCase *tc = tcase_create("terminal");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, a_job_can_neither_open_nor_type_into_the_daemons_terminal);
        suite_add_tcase(s, tc);
        tc = tcase_create("watch");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, without_pidfd_runs_are_watched_all_the_same);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
