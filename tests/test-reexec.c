/* SPDX-License-Identifier: MIT */
/*
 * reexec and SIGUSR2: the daemon executes its program again in place, and every run in progress
 * goes on under the new program: one run, its log whole, its timeout kept; what was queued,
 * persisted or paused stays so; a program that cannot start leaves the old one serving.
 */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;

static void teardown(void)
{
        daemon_stop(&d);
}

/* Job id's wait answers with its run number run (0: any) ended with outcome. */
static void ends_as(int fd, int64_t id, const char *outcome, int64_t run)
{
        json_object *rec = job_wait(fd, id);

        ck_assert_str_eq(str_member(rec, "outcome"), outcome);
        if (run)
                ck_assert_int_eq(int_member(rec, "run"), run);
        json_object_put(rec);
}

/* reexec over fd, answered by the new program: its pid is the daemon's. */
static void reexec(int fd)
{
        json_object *r = call_ok(fd, "reexec", NULL);

        ck_assert_int_eq(int_member(r, "pid"), d.pid);
        json_object_put(r);
}

/* A job that says it started (into ready), then prints a numbered line every 100 ms until the
 * file stop is there, and "last"; it holds a lock the whole time, and fails at once (99) if
 * another run holds it: two runs at once would show. */
static int64_t submit_printer(int fd, const char *ready, const char *stop, const char *lock)
{
        char params[4 * PATH_MAX + 400];

        snprintf(params, sizeof(params),
                 "{\"command\":\"exec 9>>%s; flock -n 9 || exit 99; echo >%s; i=0; "
                 "while :; do i=$((i+1)); echo line $i; [ -e %s ] && break; sleep 0.1; done; "
                 "echo last\"}",
                 lock, ready, stop);
        return job_submit(fd, params);
}

/* The log is line 1, line 2, ... line N (N >= min), last: nothing lost, nothing twice. */
static void check_unbroken(const char *log, int min)
{
        const char *p = log;
        char want[32];
        int n = 0;

        for (;;) {
                snprintf(want, sizeof(want), "line %d\n", n + 1);
                if (strncmp(p, want, strlen(want)) != 0)
                        break;
                p += strlen(want);
                n++;
        }
        ck_assert_msg(n >= min && strcmp(p, "last\n") == 0, "log broken after line %d: \"%s\"",
                      n, log);
}

static void runs_go_on(bool in_cgroup)
{
        char ready[PATH_MAX], stop[PATH_MAX], lock[PATH_MAX], *r, *log;
        int64_t printer, timed, queued;
        json_object *st;
        int fd;

        if (!in_cgroup && has_cgroups())
                daemons_without_cgroups();
        if (in_cgroup && !has_cgroups())
                return;
        daemon_start(&d, "--max-threads", "2", NULL);
        fd = client_connect(d.sock);
        r = fifo_make(d.dir, "ready");
        snprintf(ready, sizeof(ready), "%s", r);
        free(r);
        snprintf(stop, sizeof(stop), "%s/stop", d.dir);
        snprintf(lock, sizeof(lock), "%s/lock", d.dir);
        printer = submit_printer(fd, ready, stop, lock);
        free(fifo_read_all(ready));
        timed = job_submit(fd, "{\"command\":\"sleep 60\",\"timeout\":2}");
        job_wait_process(fd, timed);
        /* Two threads, both taken: this one waits in the queue. */
        queued = job_submit(fd, "{\"command\":\"echo queued\"}");
        ck_assert_str_eq(job_state_of(fd, queued), "pending");

        reexec(fd);
        close(fd); /* connections do not outlive it */
        fd = client_connect(d.sock);
        st = job_status(fd, printer);
        ck_assert_str_eq(str_member(st, "state"), "running");
        ck_assert_int_eq(int_member(st, "runs"), 1);
        json_object_put(st);
        /* The timeout set before fires after. */
        ends_as(fd, timed, "timed-out", 0);
        close(open(stop, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
        ends_as(fd, printer, "succeeded", 1);
        log = job_log(fd, printer);
        check_unbroken(log, 1);
        free(log);
        ends_as(fd, queued, "succeeded", 0);
        close(fd);
}

START_TEST(runs_in_their_cgroups_go_on_across_a_reexec)
{
        runs_go_on(true);
}
END_TEST

START_TEST(runs_in_process_groups_go_on_across_a_reexec)
{
        runs_go_on(false);
}
END_TEST

/* A job's state and when it runs next, as status says: "state next_run". */
static void state_of(int fd, int64_t id, char *buf, size_t len)
{
        json_object *st = job_status(fd, id), *next = json_object_object_get(st, "next_run");

        snprintf(buf, len, "%s %.3f", str_member(st, "state"), next ? json_object_get_double(next) : 0);
        json_object_put(st);
}

/* A persist job, a delayed one, a recurring one, one waiting for another and the pause stay as
 * they were through two reexecs, the second by SIGUSR2, which closes the connections as the
 * method does. */
START_TEST(two_reexecs_keep_what_waits_and_the_pause)
{
        char before[4][64], after[64], params[64], *line;
        int64_t ids[4], id;
        json_object *r;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        id = job_submit(fd, "{\"command\":\"true\",\"persist\":true}");
        json_object_put(job_wait(fd, id));
        ids[0] = id;
        ids[1] = job_submit(fd, "{\"command\":\"true\",\"delay\":3600}");
        ids[2] = job_submit(fd, "{\"command\":\"true\",\"every\":3600}");
        snprintf(params, sizeof(params), "{\"command\":\"true\",\"after\":[%lld]}",
                 (long long)ids[1]);
        ids[3] = job_submit(fd, params);
        json_object_put(call_ok(fd, "pause", NULL));
        for (int i = 0; i < 4; i++)
                state_of(fd, ids[i], before[i], sizeof(before[i]));
        ck_assert_str_eq(before[3], "waiting 0.000");
        reexec(fd);
        close(fd);
        fd = client_connect(d.sock);
        ck_assert_int_eq(kill(d.pid, SIGUSR2), 0);
        line = client_read_line(fd);
        ck_assert_msg(line == NULL, "a connection outlived SIGUSR2's reexec: %s", line);
        close(fd);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
        ck_assert_str_eq(job_state_of(fd, id), "idle");
        for (int i = 0; i < 4; i++) {
                state_of(fd, ids[i], after, sizeof(after));
                ck_assert_str_eq(after, before[i]);
        }
        r = call_ok(fd, "resume", NULL);
        ck_assert(!json_object_get_boolean(json_object_object_get(r, "paused")));
        json_object_put(r);
        r = call_ok(fd, "pause", NULL);
        json_object_put(r);
        close(fd);
        ck_assert(daemon_alive(&d));
}
END_TEST

/* A program that cannot start (its configuration broken since) is not executed: the reply says
 * why and the daemon goes on, its run too. */
START_TEST(a_program_that_cannot_start_leaves_the_daemon_serving)
{
        char conf[PATH_MAX], msg[512], *gate;
        int64_t id;
        FILE *f;
        int fd;

        snprintf(conf, sizeof(conf), "/tmp/slowwork-reexec-%d.conf", (int)getpid());
        f = fopen(conf, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "max-threads = 2\n");
        fclose(f);
        daemon_start(&d, "--config", conf, NULL);
        fd = client_connect(d.sock);
        gate = fifo_make(d.dir, "gate");
        snprintf(msg, sizeof(msg), "{\"command\":\"cat %s; echo done\"}", gate);
        id = job_submit(fd, msg);
        job_wait_process(fd, id);
        f = fopen(conf, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "max-threads = lots\n");
        fclose(f);
        ck_assert_int_eq(call_error(fd, "reexec", NULL, msg, sizeof(msg)), -32603);
        ck_assert_msg(strstr(msg, "cannot start") && strstr(msg, "max-threads"), "%s", msg);
        json_object_put(call_ok(fd, "ping", NULL));
        fifo_release(gate);
        ends_as(fd, id, "succeeded", 0);
        unlink(conf);
        free(gate);
        close(fd);
}
END_TEST

static json_object *id_call(int fd, const char *method, int64_t id)
{
        char params[64];

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        return call_ok(fd, method, params);
}

static bool suspended(int fd, int64_t id)
{
        json_object *st = job_status(fd, id);
        bool on = json_object_get_boolean(json_object_object_get(st, "suspended"));

        json_object_put(st);
        return on;
}

/* Whether the job's run has its process in hand. */
static bool has_pid(int fd, int64_t id)
{
        json_object *st = job_status(fd, id);
        bool has = json_object_object_get(st, "pid") != NULL;

        json_object_put(st);
        return has;
}

/* A suspended run is still suspended after a reexec, and goes on at continue. */
START_TEST(a_suspended_run_stays_suspended_across_a_reexec)
{
        char *gate;
        int64_t id;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        gate = fifo_make(d.dir, "gate");
        {
                char params[PATH_MAX + 64];

                snprintf(params, sizeof(params), "{\"command\":\"cat %s; echo through\"}", gate);
                id = job_submit(fd, params);
        }
        job_wait_process(fd, id);
        json_object_put(id_call(fd, "suspend", id));
        reexec(fd);
        close(fd);
        fd = client_connect(d.sock);
        ck_assert(suspended(fd, id));
        json_object_put(id_call(fd, "continue", id));
        ck_assert(!suspended(fd, id));
        fifo_release(gate);
        ends_as(fd, id, "succeeded", 1);
        free(gate);
        close(fd);
}
END_TEST

/* A plugin's run cannot be handed over: a reexec waits for it up to stop-timeout, then is given
 * up (-32004) and everything goes on: the shell run handed over meanwhile is taken up again here,
 * and a job queued meanwhile starts. Once the plugin's run is gone, a reexec goes through. */
START_TEST(a_reexec_that_a_plugin_run_outlasts_is_given_up_and_everything_goes_on)
{
        char msg[512], *gate, *line;
        json_object *reply;
        int64_t plugin, shell, queued;
        int fd, fd2;

        daemon_start(&d, "--plugin-dir", PLUGINS_BUILT, "--stop-timeout", "1", NULL);
        fd = client_connect(d.sock);
        plugin = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"until_stopped\"}");
        job_wait_started(fd, plugin);
        gate = fifo_make(d.dir, "gate");
        snprintf(msg, sizeof(msg), "{\"command\":\"cat %s; echo through\"}", gate);
        shell = job_submit(fd, msg);
        job_wait_process(fd, shell);
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"reexec\"}");
        /* Once the shell run is handed over (no process in hand), a job queued then waits. */
        fd2 = client_connect(d.sock);
        while (has_pid(fd2, shell))
                usleep(1000);
        queued = job_submit(fd2, "{\"command\":\"echo queued\"}");
        line = client_read_line(fd);
        reply = json_tokener_parse(line);
        ck_assert_msg(reply_code(reply) == -32004 && strstr(line, "stop-timeout"), "%s", line);
        json_object_put(reply);
        free(line);
        ends_as(fd, queued, "succeeded", 0);
        fifo_release(gate);
        ends_as(fd, shell, "succeeded", 1);
        json_object_put(id_call(fd, "cancel", plugin));
        json_object_put(job_wait(fd, plugin));
        reexec(fd);
        free(gate);
        close(fd);
        close(fd2);
}
END_TEST

static void write_conf(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

/* Runs a (waiting for its gate, the FIFO *ret_gate_a) and b (b_command, in the daemon's folder,
 * where the FIFO *ret_gate_b is "b"; suspended when suspend_b) in progress on two threads, then a
 * reexec into one (the configuration at conf changed): a is taken up, b waits for the thread.
 * Returns the connection to the new program. */
static int reexec_into_one_thread(const char *conf, const char *b_command, bool suspend_b,
                                  int64_t *ret_a, int64_t *ret_b, char **ret_gate_a,
                                  char **ret_gate_b)
{
        char params[2 * PATH_MAX + 96];
        int fd;

        write_conf(conf, "min-threads = 1\nmax-threads = 2\n");
        daemon_start(&d, "--config", conf, NULL);
        fd = client_connect(d.sock);
        *ret_gate_a = fifo_make(d.dir, "a");
        *ret_gate_b = fifo_make(d.dir, "b");
        snprintf(params, sizeof(params), "{\"command\":\"cat %s; echo a\"}", *ret_gate_a);
        *ret_a = job_submit(fd, params);
        snprintf(params, sizeof(params), "{\"command\":\"%s\",\"cwd\":\"%s\",\"persist\":true}",
                 b_command, d.dir);
        *ret_b = job_submit(fd, params);
        job_wait_process(fd, *ret_a);
        job_wait_process(fd, *ret_b);
        if (suspend_b)
                json_object_put(id_call(fd, "suspend", *ret_b));
        write_conf(conf, "min-threads = 1\nmax-threads = 1\n");
        reexec(fd);
        close(fd);
        return client_connect(d.sock);
}

/* With fewer threads after the reexec than runs handed over, a run waits for a thread to be taken
 * up: meanwhile it is running to status and log, and a cancel stops it once it is taken up. */
START_TEST(a_run_that_waits_for_a_thread_after_a_reexec_is_still_running)
{
        char conf[PATH_MAX], params[160], *gate_a, *gate_b, *log, *line;
        json_object *r;
        int64_t a, b;
        int fd;

        snprintf(conf, sizeof(conf), "/tmp/slowwork-reexec-%d.conf", (int)getpid());
        fd = reexec_into_one_thread(conf, "echo b-start; cat b; echo b-end", false, &a, &b,
                                    &gate_a, &gate_b);
        /* a has the one thread; b waits for it, and is running all the same. */
        ck_assert_str_eq(job_state_of(fd, b), "running");
        log = job_log(fd, b);
        ck_assert_str_eq(log, "b-start\n");
        free(log);
        snprintf(params, sizeof(params),
                 "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"cancel\",\"params\":{\"id\":%lld}}",
                 (long long)b);
        client_send(fd, params);
        fifo_release(gate_a);
        line = client_read_line(fd);
        r = json_tokener_parse(line);
        ck_assert_msg(r && reply_code(r) == 0, "cancel of b: %s", line);
        json_object_put(r);
        free(line);
        ends_as(fd, b, "cancelled", 1);
        ends_as(fd, a, "succeeded", 0);
        unlink(conf);
        free(gate_a);
        free(gate_b);
        close(fd);
}
END_TEST

/* A run suspended before a reexec and continued while it waits for a thread to be taken up goes
 * on once it is: its processes, stopped as the last program left them, are let go then. */
START_TEST(a_run_continued_while_it_waits_to_be_taken_up_goes_on)
{
        char conf[PATH_MAX], *gate_a, *gate_b;
        int64_t a, b;
        int fd;

        snprintf(conf, sizeof(conf), "/tmp/slowwork-reexec-%d.conf", (int)getpid());
        fd = reexec_into_one_thread(conf, "cat b; echo b-end", true, &a, &b, &gate_a, &gate_b);
        ck_assert(suspended(fd, b));
        json_object_put(id_call(fd, "continue", b));
        ck_assert(!suspended(fd, b));
        fifo_release(gate_a);
        ends_as(fd, a, "succeeded", 0);
        fifo_release(gate_b);
        ends_as(fd, b, "succeeded", 1);
        unlink(conf);
        free(gate_a);
        free(gate_b);
        close(fd);
}
END_TEST

/* An enqueue of a run that waits for a thread after a reexec is deferred, as for any running
 * job: the run once taken up ends, and the job runs once more. */
START_TEST(an_enqueue_of_a_run_waiting_to_be_taken_up_runs_it_once_more)
{
        char conf[PATH_MAX], params[64], *gate_a, *gate_b;
        json_object *r;
        int64_t a, b;
        int fd;

        snprintf(conf, sizeof(conf), "/tmp/slowwork-reexec-%d.conf", (int)getpid());
        /* Its first run waits for its gate, the next not. */
        fd = reexec_into_one_thread(conf, "[ -e done ] || cat b; touch done", false, &a, &b,
                                    &gate_a,
                                    &gate_b);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)b);
        r = call_ok(fd, "enqueue", params);
        ck_assert_msg(json_object_get_boolean(json_object_object_get(r, "deferred")),
                      "enqueue of b: %s", json_object_to_json_string(r));
        json_object_put(r);
        fifo_release(gate_a);
        fifo_release(gate_b);
        for (;;) {
                json_object *st = job_status(fd, b);
                int64_t runs = int_member(st, "runs");
                bool idle = strcmp(str_member(st, "state"), "idle") == 0;

                json_object_put(st);
                if (runs == 2 && idle)
                        break;
                ck_assert_int_le(runs, 2);
                usleep(10000);
        }
        ends_as(fd, b, "succeeded", 2);
        unlink(conf);
        free(gate_a);
        free(gate_b);
        close(fd);
}
END_TEST

/* A copy of the build's daemon at path. */
static void copy_program(const char *path)
{
        char cmd[2 * PATH_MAX + 16];

        snprintf(cmd, sizeof(cmd), "cp %s %s", SLOWWORKD, path);
        ck_assert_int_eq(system(cmd), 0);
}

/* What /proc says the daemon runs. */
static void daemon_exe(char *buf, size_t len)
{
        char link[64];
        ssize_t n;

        snprintf(link, sizeof(link), "/proc/%d/exe", (int)d.pid);
        n = readlink(link, buf, len - 1);
        ck_assert_int_gt(n, 0);
        buf[n] = '\0';
}

/* The program at the daemon's path now is the one a reexec runs, as after an upgrade that put a
 * new file there; a file there that is no program is refused, and the daemon goes on. */
START_TEST(a_reexec_runs_the_program_at_its_path_now_and_refuses_one_that_is_none)
{
        char dir[] = "/tmp/slowwork-reexec-XXXXXX", path[PATH_MAX], next[PATH_MAX], exe[PATH_MAX];
        char msg[512], want[PATH_MAX + 16];
        int fd;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/slowworkd", dir);
        snprintf(next, sizeof(next), "%s/slowworkd.next", dir);
        copy_program(path);
        daemons_from(path);
        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        /* An upgrade: a new file in its place, the one running deleted. */
        copy_program(next);
        ck_assert_int_eq(rename(next, path), 0);
        daemon_exe(exe, sizeof(exe));
        snprintf(want, sizeof(want), "%s (deleted)", path);
        ck_assert_str_eq(exe, want);
        reexec(fd);
        close(fd);
        daemon_exe(exe, sizeof(exe));
        ck_assert_str_eq(exe, path);
        /* Then a file that is no program. */
        fd = open(next, O_WRONLY | O_CREAT | O_CLOEXEC, 0755);
        ck_assert_int_eq(write(fd, "garbage\n", 8), 8);
        close(fd);
        ck_assert_int_eq(rename(next, path), 0);
        fd = client_connect(d.sock);
        ck_assert_int_eq(call_error(fd, "reexec", NULL, msg, sizeof(msg)), -32603);
        ck_assert_msg(strstr(msg, "cannot start") && strstr(msg, path), "%s", msg);
        json_object_put(call_ok(fd, "ping", NULL));
        close(fd);
        unlink(path);
        rmdir(dir);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("reexec");
        TCase *tc = tcase_create("reexec");

        tcase_set_timeout(tc, 60);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, runs_in_their_cgroups_go_on_across_a_reexec);
        tcase_add_test(tc, runs_in_process_groups_go_on_across_a_reexec);
        tcase_add_test(tc, two_reexecs_keep_what_waits_and_the_pause);
        tcase_add_test(tc, a_program_that_cannot_start_leaves_the_daemon_serving);
        tcase_add_test(tc, a_suspended_run_stays_suspended_across_a_reexec);
        tcase_add_test(tc, a_run_that_waits_for_a_thread_after_a_reexec_is_still_running);
        tcase_add_test(tc, an_enqueue_of_a_run_waiting_to_be_taken_up_runs_it_once_more);
        tcase_add_test(tc, a_run_continued_while_it_waits_to_be_taken_up_goes_on);
        tcase_add_test(tc, a_reexec_that_a_plugin_run_outlasts_is_given_up_and_everything_goes_on);
        tcase_add_test(tc, a_reexec_runs_the_program_at_its_path_now_and_refuses_one_that_is_none);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
