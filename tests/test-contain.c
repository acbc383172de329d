/* SPDX-License-Identifier: MIT */
/*
 * What a job can reach outside itself: the daemon's terminal, processes that leave its process
 * group or session, a run of its own after a crash; and runs where pidfd_open or clone3 fails.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <stddef.h>
#include <pty.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
        char said[] = "/tmp/slowwork-test-stderr-XXXXXX", err[4096] = "", go[PATH_MAX],
             params[PATH_MAX + 64 + sizeof(WAIT_FOR_FILE)];
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
        /* Its timeouts come when the test moves its clocks (daemon_advance_clock). */
        daemon_start_clocked(&d, "--kill-grace", "0.5", NULL);
        unsetenv("LD_PRELOAD");
        dup2(saved, 2);
        close(saved);
        fd = client_connect(d.sock);
        /* ok runs until the file go is there. */
        snprintf(go, sizeof(go), "%s/go", d.dir);
        snprintf(params, sizeof(params), "{\"command\":\"" WAIT_FOR_FILE " %s\"}", go);
        ok = job_submit(fd, params);
        five = job_submit(fd, "{\"command\":\"exit 5\"}");
        slow = job_submit(fd, "{\"command\":\"sleep 30\"}");
        late = job_submit(fd, "{\"command\":\"sleep 30\",\"timeout\":600}");
        job_wait_state(fd, ok, "running");
        ck_assert_int_eq(close(open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)), 0);
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
        job_wait_process(fd, late);
        daemon_advance_clock(&d, 601);
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

/* Dead: gone, or a zombie nobody has reaped yet. Waits up to 5 s for it. */
static bool dies(pid_t pid)
{
        for (int i = 0; i < 500; i++) {
                char path[64], stat[256], *p;
                FILE *f;

                snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
                f = fopen(path, "re");
                if (!f)
                        return true;
                p = fgets(stat, sizeof(stat), f) ? strrchr(stat, ')') : NULL;
                fclose(f);
                if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
                        return true;
                usleep(10000);
        }
        return false;
}

/* A daemon's first run sees its own cgroup, which is gone once the run has ended; its second
 * starts with no signal blocked or ignored, although the daemon was started with SIGUSR2 and
 * SIGHUP ignored (as nohup would), and ignores SIGPIPE itself. */
static void first_run_sees_its_own_cgroup(void)
{
        char mount[512], path[1200], *log, *line;
        json_object *rec;
        int64_t id;
        int fd;

        signal(SIGUSR2, SIG_IGN);
        signal(SIGHUP, SIG_IGN);
        daemon_start(&d, NULL);
        signal(SIGUSR2, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        fd = client_connect(d.sock);
        id = job_submit(fd, "{\"command\":\"cat /proc/self/cgroup\"}");
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        log = job_log(fd, id);
        line = strstr(log, "0::/");
        ck_assert_msg(line && strstr(line, "/run-1.1\n"), "the job's cgroups: %s", log);
        *strchr(line, '\n') = '\0';
        cgroup2_mount(mount, sizeof(mount));
        snprintf(path, sizeof(path), "%s%s", mount, line + 3);
        ck_assert_msg(access(path, F_OK) < 0 && errno == ENOENT, "%s is still there", path);
        free(log);
        json_object_put(rec);
        id = job_submit(fd, "{\"command\":\"exec grep -E '^Sig(Blk|Ign):' /proc/self/status\"}");
        json_object_put(job_wait(fd, id));
        log = job_log(fd, id);
        ck_assert_str_eq(log, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
        free(log);
        close(fd);
        daemon_stop(&d);
}

START_TEST(a_run_sees_its_own_cgroup_which_goes_with_it)
{
        if (has_cgroups())
                first_run_sees_its_own_cgroup();
}
END_TEST

/* Where clone3() is refused as unknown (a seccomp filter such as Docker's, an old kernel), a run
 * is put into its cgroup all the same, before it runs. The filter is this test process's, and the
 * daemon's, which inherits it. */
START_TEST(without_clone3_a_run_is_in_its_own_cgroup_all_the_same)
{
#ifdef __x86_64__
        struct sock_filter code[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

        if (!has_cgroups())
                return;
        ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
        ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
        ck_assert_int_eq(syscall(SYS_clone3, NULL, 0), -1);
        ck_assert_int_eq(errno, ENOSYS);
        first_run_sees_its_own_cgroup();
#endif
}
END_TEST

/* A contained run records the CPU time its processes used (and whether the OOM killer struck). */
START_TEST(a_contained_run_records_the_cpu_time_it_used)
{
        json_object *rec, *reply;
        int64_t id;
        int fd;

        if (!has_cgroups())
                return;
        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        id = job_submit(fd, "{\"command\":\"i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done\"}");
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_msg(json_object_get_double(json_object_object_get(rec, "cpu_time")) >= 0.05,
                      "record: %s", json_object_to_json_string(rec));
        ck_assert(!json_object_get_boolean(json_object_object_get(rec, "oom")));
        json_object_put(rec);
        /* As the history keeps it, after a restart too. */
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        reply = client_call(fd, "wait", "{\"id\":1}");
        ck_assert_double_ge(
            json_object_get_double(json_object_object_get(reply_result(reply), "cpu_time")), 0.05);
        json_object_put(reply);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Ways out of a run's process group, each writing the escaped process's pid to the file $F. */
static const char *const escapes[] = {
    "setsid sh -c 'echo $$ > \"$F\"; exec sleep 60' & sleep 60",
    "set -m; sleep 60 & echo $! > \"$F\"; sleep 60",
    "(setsid sh -c 'echo $$ > \"$F\"; exec sleep 60' &); sleep 60",
};

START_TEST(escapes_from_the_process_group_are_stopped_by_cancel_and_timeout)
{
        int fd, i, how;

        if (!has_cgroups())
                return;
        daemon_start(&d, "--kill-grace", "0.3", NULL);
        fd = client_connect(d.sock);
        for (how = 0; how < 2; how++)
                for (i = 0; i < 3; i++) {
                        char file[128], params[1024];
                        json_object *o = json_object_new_object(), *env = json_object_new_object();
                        json_object *rec;
                        int64_t id;
                        pid_t pid;

                        snprintf(file, sizeof(file), "%s/escaped-%d-%d", d.dir, how, i);
                        json_object_object_add(o, "command", json_object_new_string(escapes[i]));
                        json_object_object_add(env, "F", json_object_new_string(file));
                        json_object_object_add(env, "PATH", json_object_new_string(getenv("PATH")));
                        json_object_object_add(o, "env", env);
                        if (how == 1)
                                json_object_object_add(o, "timeout", json_object_new_double(0.5));
                        snprintf(params, sizeof(params), "%s", json_object_to_json_string(o));
                        json_object_put(o);
                        id = job_submit(fd, params);
                        pid = pid_in_file(file);
                        if (how == 0) {
                                snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
                                json_object_put(client_call(fd, "cancel", params));
                        }
                        rec = job_wait(fd, id);
                        ck_assert_str_eq(str_member(rec, "outcome"),
                                         how == 0 ? "cancelled" : "timed-out");
                        json_object_put(rec);
                        ck_assert_msg(dies(pid), "escape %d outlived a %s", i,
                                      how == 0 ? "cancel" : "timeout");
                }
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* kill -9 of the daemon while a job holds a flock: what the run left is stopped (by the dead
 * daemon's supervisor, else by the restart) before the job runs again, so the second run always
 * gets the lock, and the cut run's record says how many processes were stopped. */
static void crash_and_restart(void)
{
        char lock[128], params[512], *log;
        json_object *rec, *status, *last;
        int64_t id;
        pid_t old;
        int fd, status_code;

        daemon_start(&d, "--kill-grace", "0.3", NULL);
        snprintf(lock, sizeof(lock), "%s/lock", d.dir);
        snprintf(params, sizeof(params),
                 "{\"command\":\"flock -n %s -c 'echo got the lock; echo $$ >> %s.pids; "
                 "sleep 60' || echo the lock was taken\"}",
                 lock, lock);
        fd = client_connect(d.sock);
        id = job_submit(fd, params);
        snprintf(params, sizeof(params), "%s.pids", lock);
        old = pid_in_file(params);
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, &status_code, 0), d.pid);
        daemon_start_again(&d, "--kill-grace", "0.3", NULL);
        ck_assert_msg(dies(old), "the first run's process %d lives on", (int)old);
        fd = client_connect(d.sock);
        job_wait_state(fd, id, "running");
        for (int i = 0; i < 500; i++) {
                log = job_log(fd, id);
                if (strstr(log, "lock"))
                        break;
                free(log);
                log = NULL;
                usleep(10000);
        }
        ck_assert_ptr_nonnull(log);
        ck_assert_msg(strstr(log, "got the lock"), "the second run: %s", log);
        free(log);
        status = job_status(fd, id);
        last = json_object_object_get(status, "last");
        ck_assert_msg(strcmp(str_member(last, "outcome"), "interrupted") == 0 &&
                          int_member(last, "leftovers") >= 2, /* sh, flock, sh, sleep */
                      "status: %s", json_object_to_json_string(status));
        json_object_put(status);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        json_object_put(client_call(fd, "cancel", params));
        rec = job_wait(fd, id);
        ck_assert_int_eq(int_member(rec, "run"), 2);
        json_object_put(rec);
        close(fd);
        daemon_stop(&d);
}

START_TEST(a_restart_after_a_crash_never_runs_a_job_beside_its_old_run)
{
        if (has_cgroups())
                crash_and_restart();
}
END_TEST

/* The same where runs have no cgroups: the inflight file keeps each run's process group and its
 * first process's start time. */
START_TEST(without_cgroups_a_restart_after_a_crash_stops_the_old_runs_group)
{
        if (!has_cgroups())
                return; /* hiding cgroup2 takes root */
        daemons_without_cgroups();
        crash_and_restart();
}
END_TEST

int main(void)
{
        Suite *s = suite_create("contain");
        TCase *tc = tcase_create("terminal");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, a_job_can_neither_open_nor_type_into_the_daemons_terminal);
        suite_add_tcase(s, tc);
        tc = tcase_create("cgroups");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, a_run_sees_its_own_cgroup_which_goes_with_it);
        tcase_add_test(tc, without_clone3_a_run_is_in_its_own_cgroup_all_the_same);
        tcase_add_test(tc, a_contained_run_records_the_cpu_time_it_used);
        tcase_add_test(tc, escapes_from_the_process_group_are_stopped_by_cancel_and_timeout);
        tcase_add_test(tc, a_restart_after_a_crash_never_runs_a_job_beside_its_old_run);
        tcase_add_test(tc, without_cgroups_a_restart_after_a_crash_stops_the_old_runs_group);
        suite_add_tcase(s, tc);
        tc = tcase_create("watch");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, without_pidfd_runs_are_watched_all_the_same);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
