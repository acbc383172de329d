/* SPDX-License-Identifier: MIT */
/*
 * slowworkd under systemd: socket activation through systemd-socket-activate, and the sd_notify
 * messages on a notify socket of the test's own.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static char notify_path[PATH_MAX], err_path[PATH_MAX];
static struct daemon d;
static int notify_fd = -1;

static void make_dir(struct daemon *dm)
{
        snprintf(dm->dir, sizeof(dm->dir), "/tmp/slowwork-systemd-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dm->dir));
        snprintf(dm->sock, sizeof(dm->sock), "%s/sock", dm->dir);
        snprintf(dm->state, sizeof(dm->state), "%s/state", dm->dir);
        dm->own_dir = true;
}

static void setup(void)
{
        make_dir(&d);
        snprintf(notify_path, sizeof(notify_path), "%s/notify", d.dir);
        snprintf(err_path, sizeof(err_path), "%s/stderr", d.dir);
        notify_fd = notify_listen(notify_path);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(path);
}

static void teardown(void)
{
        close(notify_fd);
        nftw(d.dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

        nanosleep(&ts, NULL);
}

/* slowworkd with NOTIFY_SOCKET, and with a watchdog of usec microseconds when usec is given: for
 * this process when for_it (WATCHDOG_PID is its own pid, as systemd sets it), else for another. */
static void spawn_notified(const char *usec, bool for_it)
{
        d.pid = fork();
        ck_assert_int_ge(d.pid, 0);
        if (d.pid == 0) {
                char pid[32];

                setenv("NOTIFY_SOCKET", notify_path, 1);
                if (usec) {
                        snprintf(pid, sizeof(pid), "%d", (int)(for_it ? getpid() : getppid()));
                        setenv("WATCHDOG_USEC", usec, 1);
                        setenv("WATCHDOG_PID", pid, 1);
                }
                execl(SLOWWORKD, SLOWWORKD, "--state-dir", d.state, "--socket", d.sock,
                      (char *)NULL);
                _exit(127);
        }
}

/* systemd-socket-activate ARGS... slowworkd, its stderr into err_path. It execs slowworkd in
 * its own process once a client knocks. */
static pid_t spawn_activated(const char *a1, const char *a2, const char *a3, const char *a4,
                             const char *a5)
{
        const char *argv[16] = {"systemd-socket-activate"};
        const char *args[] = {a1, a2, a3, a4, a5};
        int n = 1, i;
        pid_t pid;

        for (i = 0; i < 5 && args[i]; i++)
                argv[n++] = args[i];
        argv[n++] = "-E";
        argv[n++] = "PATH";
        argv[n++] = SLOWWORKD;
        argv[n++] = "--state-dir";
        argv[n++] = d.state;
        argv[n] = NULL;
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

                if (fd < 0 || dup2(fd, STDERR_FILENO) < 0)
                        _exit(126);
                execvp(argv[0], (char **)argv);
                _exit(127);
        }
        return pid;
}

/* Connects as soon as the socket is there. */
static int knock(const char *path, pid_t pid)
{
        int i, fd, status;

        for (i = 0; i < 4000; i++) {
                fd = client_connect(path);
                if (fd >= 0)
                        return fd;
                ck_assert_msg(waitpid(pid, &status, WNOHANG) == 0,
                              "systemd-socket-activate ended with status 0x%x", status);
                sleep_ms(5);
        }
        ck_abort_msg("nothing listens on %s", path);
        return -1;
}

static int exit_status(pid_t pid)
{
        int status;

        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status), "ended with status 0x%x", status);
        return WEXITSTATUS(status);
}

static void ping(int fd)
{
        json_object *reply = client_call(fd, "ping", NULL);

        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "pong")));
        json_object_put(reply);
}

/* What a job sees of the daemon's environment (it sends none of its own). */
static char *job_environment(int fd)
{
        int64_t id = job_submit(fd, "{\"argv\":[\"/usr/bin/env\"]}");

        json_object_put(job_wait(fd, id));
        return job_log(fd, id);
}

START_TEST(socket_activation_serves_the_passed_socket)
{
        pid_t pid = spawn_activated("-l", d.sock, NULL, NULL, NULL);
        int fd = knock(d.sock, pid);
        char *env, *err;
        struct stat st;

        ping(fd);
        env = job_environment(fd);
        ck_assert_msg(!strstr(env, "LISTEN_"), "a job inherits %s", env);
        free(env);
        close(fd);
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        ck_assert_int_eq(exit_status(pid), 0);
        /* The socket is systemd's: the daemon leaves its file alone. */
        ck_assert_int_eq(stat(d.sock, &st), 0);
        err = file_text(err_path);
        ck_assert_msg(strstr(err, "(passed by systemd)"), "stderr \"%s\"", err);
        free(err);
}
END_TEST

START_TEST(two_passed_sockets_are_an_error)
{
        char other[PATH_MAX + 8], *err;
        pid_t pid;

        snprintf(other, sizeof(other), "%s/other", d.dir);
        pid = spawn_activated("-l", d.sock, "-l", other, NULL);
        close(knock(d.sock, pid));
        ck_assert_int_eq(exit_status(pid), 1);
        err = file_text(err_path);
        ck_assert_msg(strstr(err, "systemd passed 2 sockets, slowworkd takes exactly one"),
                      "stderr \"%s\"", err);
        free(err);
}
END_TEST

START_TEST(a_passed_datagram_socket_is_an_error)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), i;
        pid_t pid = spawn_activated("-d", "-l", d.sock, NULL, NULL);
        char *err;

        memcpy(sa.sun_path, d.sock, strlen(d.sock) + 1);
        for (i = 0; sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0; i++) {
                ck_assert_int_lt(i, 4000);
                sleep_ms(5);
        }
        close(fd);
        ck_assert_int_eq(exit_status(pid), 1);
        err = file_text(err_path);
        ck_assert_msg(strstr(err, "not a listening Unix stream socket"), "stderr \"%s\"", err);
        free(err);
}
END_TEST

START_TEST(ready_comes_when_the_socket_listens_with_a_status)
{
        char *message;
        int fd;

        spawn_notified(NULL, false);
        message = notify_wait(notify_fd, "READY=1");
        ck_assert_msg(strstr(message, "STATUS=2 threads, 0 running, 0 slow and 0 very slow queued"),
                      "\"%s\"", message);
        free(message);
        /* At once, without waiting for it. */
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
        ping(fd);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Reads notifications until a STATUS= has text in it. */
static void wait_status_with(const char *text)
{
        struct timespec start, now;
        char *message;

        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &now);
                ck_assert_msg(now.tv_sec - start.tv_sec < 20, "no STATUS with \"%s\"", text);
                message = notify_read(notify_fd, 1000);
                if (message && strstr(message, "STATUS=") && strstr(message, text)) {
                        free(message);
                        return;
                }
                free(message);
        }
}

START_TEST(status_follows_the_jobs)
{
        json_object *reply;
        char params[64];
        int64_t id;
        int fd;

        spawn_notified(NULL, false);
        free(notify_wait(notify_fd, "READY=1"));
        fd = client_connect(d.sock);
        id = job_submit(fd, "{\"command\":\"sleep 60\",\"class\":\"very-slow\"}");
        wait_status_with(", 1 running,");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        reply = client_call(fd, "cancel", params);
        json_object_put(reply);
        wait_status_with(", 0 running,");
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(sigterm_sends_stopping)
{
        int status;

        spawn_notified(NULL, false);
        free(notify_wait(notify_fd, "READY=1"));
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        free(notify_wait(notify_fd, "STOPPING=1"));
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}
END_TEST

START_TEST(sighup_sends_reloading_then_ready)
{
        char *message;

        spawn_notified(NULL, false);
        free(notify_wait(notify_fd, "READY=1"));
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        message = notify_wait(notify_fd, "RELOADING=1");
        ck_assert_msg(strstr(message, "MONOTONIC_USEC="), "\"%s\"", message);
        free(message);
        free(notify_wait(notify_fd, "READY=1"));
        ck_assert(daemon_alive(&d));
        daemon_stop(&d);
}
END_TEST

/* SIGUSR2's reexec: RELOADING=1, then READY=1 from the new program, which has the notify socket
 * and feeds the watchdog as the old one did. */
START_TEST(sigusr2_reexec_sends_reloading_then_ready_and_keeps_the_watchdog)
{
        char *message;

        spawn_notified("5000000", true);
        free(notify_wait(notify_fd, "READY=1"));
        ck_assert_int_eq(kill(d.pid, SIGUSR2), 0);
        free(notify_wait(notify_fd, "RELOADING=1"));
        message = notify_wait(notify_fd, "READY=1");
        free(message);
        free(notify_wait(notify_fd, "WATCHDOG=1"));
        ck_assert(daemon_alive(&d));
        daemon_stop(&d);
}
END_TEST

START_TEST(the_watchdog_is_fed_from_the_loop)
{
        char *env;
        int i, fd;

        spawn_notified("200000", true);
        free(notify_wait(notify_fd, "READY=1"));
        /* Every 100 ms: several in a row, not one at start. */
        for (i = 0; i < 3; i++)
                free(notify_wait(notify_fd, "WATCHDOG=1"));
        fd = client_connect(d.sock);
        env = job_environment(fd);
        ck_assert_msg(!strstr(env, "NOTIFY_SOCKET") && !strstr(env, "WATCHDOG_"),
                      "a job inherits %s", env);
        free(env);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_watchdog_for_another_pid_is_not_fed)
{
        struct timespec start, now;
        char *message;

        spawn_notified("200000", false);
        free(notify_wait(notify_fd, "READY=1"));
        clock_gettime(CLOCK_MONOTONIC, &start);
        do {
                message = notify_read(notify_fd, 100);
                ck_assert_msg(!message || !has_line(message, "WATCHDOG=1"), "\"%s\"", message);
                free(message);
                clock_gettime(CLOCK_MONOTONIC, &now);
        } while ((now.tv_sec - start.tv_sec) * 1000 + (now.tv_nsec - start.tv_nsec) / 1000000 <
                 600);
        daemon_stop(&d);
}
END_TEST

static Suite *systemd_suite(void)
{
        Suite *s = suite_create("systemd");
        TCase *activation = tcase_create("activation"), *notify = tcase_create("notify");

        tcase_add_checked_fixture(activation, setup, teardown);
        tcase_set_timeout(activation, 60);
        tcase_add_test(activation, socket_activation_serves_the_passed_socket);
        tcase_add_test(activation, two_passed_sockets_are_an_error);
        tcase_add_test(activation, a_passed_datagram_socket_is_an_error);
        suite_add_tcase(s, activation);

        tcase_add_checked_fixture(notify, setup, teardown);
        tcase_set_timeout(notify, 60);
        tcase_add_test(notify, ready_comes_when_the_socket_listens_with_a_status);
        tcase_add_test(notify, status_follows_the_jobs);
        tcase_add_test(notify, sigterm_sends_stopping);
        tcase_add_test(notify, sighup_sends_reloading_then_ready);
        tcase_add_test(notify, sigusr2_reexec_sends_reloading_then_ready_and_keeps_the_watchdog);
        tcase_add_test(notify, the_watchdog_is_fed_from_the_loop);
        tcase_add_test(notify, a_watchdog_for_another_pid_is_not_fed);
        suite_add_tcase(s, notify);
        return s;
}

int main(void)
{
        return run_suite(systemd_suite());
}
