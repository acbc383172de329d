/* SPDX-License-Identifier: MIT */
/*
 * The supervisor: a daemon that dies (kill -9) leaves no run behind, with no daemon started again,
 * in cgroups, in process groups only and as a user instance; a killed supervisor is replaced; a
 * clean stop leaves no supervisor; and the supervisor never keeps the state folder from a daemon
 * started at once after the kill.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;

/* Field n (from 1) of /proc/PID/stat after the name, as a number; -1 when pid is gone. */
static long stat_field(pid_t pid, int n, char *ret_state)
{
        char path[64], text[1024], *p;
        FILE *f;
        long v = -1;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        p = fgets(text, sizeof(text), f) ? strrchr(text, ')') : NULL;
        fclose(f);
        if (!p)
                return -1;
        if (ret_state)
                *ret_state = p[2];
        p += 2; /* the state, field 3 */
        for (int i = 3; i < n && p; i++)
                p = strchr(p + 1, ' ');
        if (p)
                v = strtol(p + 1, NULL, 10);
        return v;
}

/* Each of them gone, or a zombie, within 5 s: 0, or the first that lives on. */
static pid_t survivor(const pid_t *pids, size_t n)
{
        for (int i = 0; i < 500; i++) {
                size_t dead = 0;

                for (size_t k = 0; k < n; k++) {
                        char state = 0;

                        if (stat_field(pids[k], 4, &state) < 0 || state == 'Z' || state == 'X')
                                dead++;
                        else if (i == 499)
                                return pids[k];
                }
                if (dead == n)
                        return 0;
                usleep(10000);
        }
        return 0;
}

static bool dies(pid_t pid)
{
        return survivor(&pid, 1) == 0;
}

/* The processes whose parent is ppid: how many, and the pid of the one named comm (0: none). */
static int children_of(pid_t ppid, const char *comm, pid_t *ret_named)
{
        DIR *proc = opendir("/proc");
        struct dirent *e;
        int n = 0;

        ck_assert_ptr_nonnull(proc);
        if (ret_named)
                *ret_named = 0;
        while ((e = readdir(proc))) {
                pid_t pid = (pid_t)strtol(e->d_name, NULL, 10);
                char path[64], name[64] = "";
                FILE *f;

                if (pid <= 0 || stat_field(pid, 4, NULL) != ppid)
                        continue;
                n++;
                snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
                f = fopen(path, "re");
                if (f) {
                        if (fgets(name, sizeof(name), f))
                                name[strcspn(name, "\n")] = '\0';
                        fclose(f);
                }
                if (ret_named && comm && strcmp(name, comm) == 0)
                        *ret_named = pid;
        }
        closedir(proc);
        return n;
}

/* The daemon's supervisor other than old (0: any), once it has taken its name (up to 5 s). */
static pid_t supervisor_other_than(pid_t daemon, pid_t old)
{
        pid_t pid = 0;

        for (int i = 0; i < 500 && (!pid || pid == old); i++) {
                children_of(daemon, "slowworkd-super", &pid);
                if (!pid || pid == old)
                        usleep(10000);
        }
        ck_assert_msg(pid > 0 && pid != old, "slowworkd %d has no supervisor (but %d)", (int)daemon,
                      (int)old);
        return pid;
}

static pid_t supervisor_of(pid_t daemon)
{
        return supervisor_other_than(daemon, 0);
}

/* The supervisor keeps none of the daemon's descriptors (socket, state folder lock, database):
 * beside 0, 1 and 2, only its pipe, the life pipe and runs-inflight. */
static void holds_only_its_own(pid_t super)
{
        char path[64], target[PATH_MAX];
        struct dirent *e;
        DIR *fds;
        int n = 0;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int)super);
        fds = opendir(path);
        ck_assert_ptr_nonnull(fds);
        while ((e = readdir(fds))) {
                int fd = atoi(e->d_name);
                char link[128];
                ssize_t len;

                if (e->d_name[0] == '.' || fd <= 2)
                        continue;
                snprintf(link, sizeof(link), "%s/%d", path, fd);
                len = readlink(link, target, sizeof(target) - 1);
                ck_assert_int_gt(len, 0);
                target[len] = '\0';
                ck_assert_msg(strncmp(target, "pipe:", 5) == 0 ||
                                  (len > 14 && strcmp(target + len - 14, "/runs-inflight") == 0),
                              "the supervisor holds %d: %s", fd, target);
                n++;
        }
        closedir(fds);
        ck_assert_int_eq(n, 3);
}

/* A run whose shell and child ignore SIGTERM: their pids. */
static int64_t stubborn_run(int fd, pid_t *ret_shell, pid_t *ret_child)
{
        static int runs;
        char params[1024], shell[96], child[96];
        int64_t id;

        runs++;
        snprintf(shell, sizeof(shell), "%s/shell-%d.pid", d.dir, runs);
        snprintf(child, sizeof(child), "%s/child-%d.pid", d.dir, runs);
        unlink(shell);
        unlink(child);
        snprintf(params, sizeof(params),
                 "{\"command\":\"trap '' TERM; sh -c 'trap \\\"\\\" TERM; exec sleep 300' & "
                 "echo $! > %s.new; mv %s.new %s; echo $$ > %s.new; mv %s.new %s; wait\"}",
                 child, child, child, shell, shell, shell);
        id = job_submit(fd, params);
        *ret_shell = pid_in_file(shell);
        *ret_child = pid_in_file(child);
        return id;
}

/* A connection as uid (0: as the test): a user instance takes jobs of its own user only. */
static int connect_as(uid_t uid)
{
        int fd;

        ck_assert_int_eq(seteuid(uid), 0);
        fd = client_connect(d.sock);
        ck_assert_int_eq(seteuid(0), 0);
        ck_assert_int_ge(fd, 0);
        return fd;
}

#define RUNS 3

/* kill -9 of the daemon with RUNS runs: the runs' shells, their children and the supervisor are
 * gone within 5 s, with no daemon started again; the next start records each cut run's
 * leftovers, and runs the jobs again. */
static void kill_leaves_nothing(uid_t uid)
{
        pid_t pids[2 * RUNS], super, left;
        int64_t ids[RUNS];
        int fd;

        daemon_start(&d, "--kill-grace", "0.3", "--stop-timeout", "0.2", "--min-threads", "3",
                     "--max-threads", "3", NULL);
        super = supervisor_of(d.pid);
        fd = connect_as(uid);
        for (int i = 0; i < RUNS; i++)
                ids[i] = stubborn_run(fd, &pids[2 * i], &pids[2 * i + 1]);
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
        left = survivor(pids, 2 * RUNS);
        ck_assert_msg(left == 0, "the run process %d outlived the daemon by 5 s", (int)left);
        ck_assert_msg(dies(super), "the supervisor %d outlived its stop", (int)super);
        daemon_start_again(&d, "--kill-grace", "0.3", "--stop-timeout", "0.2", NULL);
        fd = connect_as(uid);
        for (int i = 0; i < RUNS; i++) {
                json_object *status, *last;

                job_wait_state(fd, ids[i], "running");
                status = job_status(fd, ids[i]);
                last = json_object_object_get(status, "last");
                ck_assert_msg(strcmp(str_member(last, "outcome"), "interrupted") == 0 &&
                                  int_member(last, "leftovers") >= 2, /* sh, sh, sleep */
                              "status: %s", json_object_to_json_string(status));
                json_object_put(status);
        }
        close(fd);
        daemon_stop(&d);
}

START_TEST(a_killed_daemon_leaves_no_contained_run_behind)
{
        if (has_cgroups())
                kill_leaves_nothing(0);
}
END_TEST

START_TEST(a_killed_daemon_leaves_no_process_group_behind)
{
        if (!has_cgroups())
                return; /* hiding cgroup2 takes root */
        daemons_without_cgroups();
        kill_leaves_nothing(0);
}
END_TEST

/* A user instance: not root, so its runs are in process groups only. */
START_TEST(a_killed_user_instance_leaves_no_run_behind)
{
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: running the daemon as another user takes root\n");
                return;
        }
        SKIP_UNLESS_USER_CAN_RUN(65534, SLOWWORKD);
        daemons_as_user(65534);
        kill_leaves_nothing(65534);
}
END_TEST

/* kill -9 of the supervisor: the daemon starts another at once, which stops the runs when the
 * daemon is killed in turn. */
START_TEST(a_killed_supervisor_is_replaced_and_stops_the_runs_of_a_daemon_killed_next)
{
        pid_t pids[2], super, again, left;
        int fd;

        daemon_start(&d, "--kill-grace", "0.3", "--stop-timeout", "0.2", NULL);
        super = supervisor_of(d.pid);
        fd = client_connect(d.sock);
        stubborn_run(fd, &pids[0], &pids[1]);
        close(fd);
        ck_assert_int_eq(kill(super, SIGKILL), 0);
        again = supervisor_other_than(d.pid, super);
        holds_only_its_own(again);
        ck_assert_msg(dies(super), "the killed supervisor %d is still there", (int)super);
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
        left = survivor(pids, 2);
        ck_assert_msg(left == 0, "the run process %d outlived the daemon by 5 s", (int)left);
        ck_assert_msg(dies(again), "the second supervisor %d outlived its stop", (int)again);
        daemon_start_again(&d, "--kill-grace", "0.3", "--stop-timeout", "0.2", NULL);
        daemon_stop(&d);
}
END_TEST

/* The supervisor keeps none of the daemon's descriptors. A clean stop records what it always did
 * (the cut run interrupted, nothing left over) and waits for the supervisor: no process of the
 * daemon's is left. */
START_TEST(a_clean_stop_leaves_no_supervisor)
{
        char report[PATH_MAX + 16], params[64];
        json_object *rec, *status, *last;
        pid_t shell, child, super;
        int64_t id;
        int fd, status_code;

        daemon_start(&d, "--kill-grace", "0.3", "--stop-timeout", "0.2", NULL);
        super = supervisor_of(d.pid);
        holds_only_its_own(super);
        fd = client_connect(d.sock);
        id = stubborn_run(fd, &shell, &child);
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &status_code, 0), d.pid);
        ck_assert(WIFEXITED(status_code) && WEXITSTATUS(status_code) == 0);
        ck_assert_int_eq(children_of(d.pid, NULL, NULL), 0);
        ck_assert_int_eq(kill(super, 0), -1);
        ck_assert_int_eq(errno, ESRCH);
        ck_assert(dies(shell) && dies(child));
        snprintf(report, sizeof(report), "%s/runs-stopped", d.state);
        ck_assert_int_eq(access(report, F_OK), -1);
        daemon_start_again(&d, "--kill-grace", "0.3", "--stop-timeout", "0.2", NULL);
        fd = client_connect(d.sock);
        job_wait_state(fd, id, "running");
        status = job_status(fd, id);
        last = json_object_object_get(status, "last");
        ck_assert_msg(strcmp(str_member(last, "outcome"), "interrupted") == 0 &&
                          !json_object_object_get_ex(last, "leftovers", NULL),
                      "status: %s", json_object_to_json_string(status));
        json_object_put(status);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        json_object_put(client_call(fd, "cancel", params));
        rec = job_wait(fd, id);
        json_object_put(rec);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* A daemon started on the folder at once after kill -9, while the supervisor may still be
 * stopping the runs, starts: the supervisor holds neither the folder's lock nor the socket. */
START_TEST(a_daemon_starts_at_once_after_a_kill)
{
        pid_t shell, child;
        int fd;

        daemon_start(&d, "--kill-grace", "0.3", "--stop-timeout", "0.2", NULL);
        fd = client_connect(d.sock);
        stubborn_run(fd, &shell, &child);
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
        daemon_start_again(&d, "--kill-grace", "0.3", "--stop-timeout", "0.2", NULL);
        ck_assert(daemon_alive(&d));
        ck_assert(dies(shell) && dies(child));
        daemon_stop(&d);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("supervisor");
        TCase *tc = tcase_create("supervisor");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, a_killed_daemon_leaves_no_contained_run_behind);
        tcase_add_test(tc, a_killed_daemon_leaves_no_process_group_behind);
        tcase_add_test(tc, a_killed_user_instance_leaves_no_run_behind);
        tcase_add_test(tc,
                       a_killed_supervisor_is_replaced_and_stops_the_runs_of_a_daemon_killed_next);
        tcase_add_test(tc, a_clean_stop_leaves_no_supervisor);
        tcase_add_test(tc, a_daemon_starts_at_once_after_a_kill);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
