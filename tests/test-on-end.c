/* SPDX-License-Identifier: MIT */
/*
 * On-end commands through a real slowworkd: a job's "on_end" and the daemon's on-end setting,
 * run after each run with the run's variables, in the job's cwd and environment, and never
 * touching the job; what they leave at a stop or a crash.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;
static int fd;
static char err_log[PATH_MAX]; /* the daemon's stderr, for the cases that read its log */

/* Starts the daemon with its stderr in a file of the test's (err_log). */
static void start_logged(const char *first, ...)
{
        int saved = dup(STDERR_FILENO), log;

        snprintf(err_log, sizeof(err_log), "/tmp/slowwork-on-end-%d.log", (int)getpid());
        log = open(err_log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(log, 0);
        ck_assert_int_ge(saved, 0);
        ck_assert_int_ge(dup2(log, STDERR_FILENO), 0);
        close(log);
        daemon_start(&d, "--kill-grace", "1", "--plugin-dir", PLUGINS_BUILT, first, NULL);
        ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
        close(saved);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
}

static void setup(void)
{
        start_logged(NULL);
}

static void teardown(void)
{
        close(fd);
        daemon_stop(&d);
        unlink(err_log);
}

/* Waits (20 s at most) for the daemon's log to have a line that contains text. */
static void wait_logged(const char *text)
{
        for (int i = 0; i < 2000; i++) {
                FILE *f = fopen(err_log, "r");
                char line[1024];
                bool found = false;

                ck_assert_ptr_nonnull(f);
                while (!found && fgets(line, sizeof(line), f))
                        found = strstr(line, text) != NULL;
                fclose(f);
                if (found)
                        return;
                usleep(10000);
        }
        ck_abort_msg("the daemon's log never said \"%s\"", text);
}

/* What on-end commands write into the FIFO, until n lines have come, sorted. */
static char *read_lines(const char *fifo, int n)
{
        char *all = strdup(""), *more, *lines[16], *out, *save = NULL;
        int got = 0;

        ck_assert_int_le(n, 16);
        while (got < n) {
                more = fifo_read_all(fifo);
                ck_assert_int_gt(asprintf(&out, "%s%s", all, more), 0);
                free(all);
                free(more);
                all = out;
                got = 0;
                for (const char *c = all; *c; c++)
                        got += *c == '\n';
        }
        ck_assert_int_eq(got, n);
        out = calloc(1, strlen(all) + 1);
        ck_assert_ptr_nonnull(out);
        for (int i = 0; i < n; i++)
                lines[i] = strtok_r(i ? NULL : all, "\n", &save);
        for (int i = 0; i < n; i++)
                for (int j = i + 1; j < n; j++)
                        if (strcmp(lines[j], lines[i]) < 0) {
                                char *t = lines[i];

                                lines[i] = lines[j];
                                lines[j] = t;
                        }
        for (int i = 0; i < n; i++) {
                strcat(out, lines[i]);
                strcat(out, "\n");
        }
        free(all);
        return out;
}

static int call_code(const char *method, const char *params)
{
        json_object *reply = client_call(fd, method, params);
        int code = reply_code(reply);

        json_object_put(reply);
        return code;
}

static const char *setting_text(const char *name)
{
        static char buf[8192];
        json_object *reply = client_call(fd, "settings.get", NULL);

        ck_assert_int_eq(reply_code(reply), 0);
        snprintf(buf, sizeof(buf), "%s", str_member(reply_result(reply), name));
        json_object_put(reply);
        return buf;
}

START_TEST(on_end_runs_after_each_run_with_the_runs_variables_env_and_cwd)
{
        char *fifo = fifo_make(d.dir, "said"), job[2 * PATH_MAX + 256], want[2 * PATH_MAX + 128];
        char *got;
        json_object *rec;
        int64_t id;

        snprintf(job, sizeof(job),
                 "{\"command\":\"exit 3\",\"retries\":1,\"retry_delay\":0,\"cwd\":\"%s\","
                 "\"env\":{\"FOO\":\"bar\"},\"on_end\":\"echo $SLOWWORK_JOB $SLOWWORK_RUN "
                 "$SLOWWORK_OUTCOME [$SLOWWORK_EXIT_CODE] $FOO $(pwd) >%s\"}",
                 d.dir, fifo);
        id = job_submit(fd, job);
        got = read_lines(fifo, 2);
        snprintf(want, sizeof(want), "%lld 1 failed [3] bar %s\n%lld 2 failed [3] bar %s\n",
                 (long long)id, d.dir, (long long)id, d.dir);
        ck_assert_str_eq(got, want);
        free(got);
        rec = job_wait(fd, id);
        ck_assert_int_eq(int_member(rec, "run"), 2);
        json_object_put(rec);
        free(fifo);
}
END_TEST

/* Contained and limited like the job's runs: in a cgroup of its own, with the job's limits. */
START_TEST(on_end_runs_in_its_own_cgroup_with_the_jobs_limits)
{
        char *fifo = fifo_make(d.dir, "said"), job[PATH_MAX + 256], want[64], *got;
        int64_t id;

        snprintf(job, sizeof(job),
                 "{\"command\":\"true\",\"limits\":{\"open_files\":77},\"on_end\":\"echo "
                 "$(ulimit -n) $(grep -c end-$SLOWWORK_JOB.$SLOWWORK_RUN /proc/self/cgroup) >%s\"}",
                 fifo);
        id = job_submit(fd, job);
        got = read_lines(fifo, 1);
        snprintf(want, sizeof(want), "77 %d\n", has_cgroups() ? 1 : 0);
        ck_assert_str_eq(got, want);
        free(got);
        json_object_put(job_wait(fd, id));
        free(fifo);
}
END_TEST

/* A plugin job runs inside the daemon; its on_end is a shell command all the same. */
START_TEST(a_plugin_jobs_on_end_is_a_shell_command)
{
        char *fifo = fifo_make(d.dir, "said"), job[PATH_MAX + 256], want[64], *got;
        int64_t id;

        snprintf(job, sizeof(job),
                 "{\"plugin\":\"hello\",\"entry\":\"exit_with\",\"arg\":5,\"on_end\":"
                 "\"echo $SLOWWORK_JOB $SLOWWORK_OUTCOME $SLOWWORK_EXIT_CODE $(pwd) >%s\"}",
                 fifo);
        id = job_submit(fd, job);
        got = read_lines(fifo, 1);
        snprintf(want, sizeof(want), "%lld failed 5 /\n", (long long)id);
        ck_assert_str_eq(got, want);
        free(got);
        free(fifo);
}
END_TEST

/* An edit keeps it (it is in the payload written again), and so does a restart (the spec). */
START_TEST(an_edit_and_a_restart_keep_on_end)
{
        char *fifo = fifo_make(d.dir, "said"), job[PATH_MAX + 256], want[64], *got;
        json_object *reply;
        int64_t id, again;

        snprintf(job, sizeof(job),
                 "{\"command\":\"exit 1\",\"stashed\":true,\"on_end\":\"echo $SLOWWORK_JOB "
                 "$SLOWWORK_EXIT_CODE >%s\"}",
                 fifo);
        id = job_submit(fd, job);
        snprintf(job, sizeof(job), "{\"id\":%lld,\"command\":\"exit 2\"}", (long long)id);
        ck_assert_int_eq(call_code("edit", job), 0);
        snprintf(job, sizeof(job), "{\"id\":%lld}", (long long)id);
        ck_assert_int_eq(call_code("enqueue", job), 0);
        got = read_lines(fifo, 1);
        snprintf(want, sizeof(want), "%lld 2\n", (long long)id);
        ck_assert_str_eq(got, want);
        free(got);
        json_object_put(job_wait(fd, id));
        reply = client_call(fd, "restart", job);
        ck_assert_int_eq(reply_code(reply), 0);
        again = int_member(reply_result(reply), "id");
        json_object_put(reply);
        got = read_lines(fifo, 1);
        snprintf(want, sizeof(want), "%lld 2\n", (long long)again);
        ck_assert_str_eq(got, want);
        free(got);
        free(fifo);
}
END_TEST

START_TEST(a_run_ended_by_a_signal_or_never_started_has_no_exit_code)
{
        char *fifo = fifo_make(d.dir, "said"), *gate = fifo_make(d.dir, "gate");
        char job[2 * PATH_MAX + 256], want[128], *got;
        int64_t first, second;

        /* The first job runs until cancelled; the second waits for it, and is cancelled queued. */
        snprintf(job, sizeof(job),
                 "{\"command\":\"cat %s\",\"on_end\":\"echo $SLOWWORK_OUTCOME "
                 "[$SLOWWORK_EXIT_CODE] >%s\"}",
                 gate, fifo);
        first = job_submit(fd, job);
        job_wait_state(fd, first, "running");
        snprintf(job, sizeof(job),
                 "{\"command\":\"true\",\"after\":[%lld],\"on_end\":\"echo second "
                 "$SLOWWORK_OUTCOME [$SLOWWORK_EXIT_CODE] >%s\"}",
                 (long long)first, fifo);
        second = job_submit(fd, job);
        snprintf(job, sizeof(job), "{\"id\":%lld}", (long long)second);
        ck_assert_int_eq(call_code("cancel", job), 0);
        got = read_lines(fifo, 1);
        ck_assert_str_eq(got, "second cancelled []\n");
        free(got);
        snprintf(job, sizeof(job), "{\"id\":%lld}", (long long)first);
        ck_assert_int_eq(call_code("cancel", job), 0);
        got = read_lines(fifo, 1);
        snprintf(want, sizeof(want), "cancelled []\n");
        ck_assert_str_eq(got, want);
        free(got);
        free(fifo);
        free(gate);
}
END_TEST

START_TEST(a_failing_on_end_is_logged_and_changes_nothing_of_the_job)
{
        char *fifo = fifo_make(d.dir, "said"), job[PATH_MAX + 128], line[128], *got;
        json_object *rec, *st;
        int64_t id;

        snprintf(job, sizeof(job),
                 "{\"command\":\"echo fine\",\"persist\":true,\"on_end\":\"echo ran >%s; echo "
                 "it broke >&2; exit 7\"}",
                 fifo);
        id = job_submit(fd, job);
        got = read_lines(fifo, 1);
        ck_assert_str_eq(got, "ran\n");
        free(got);
        snprintf(line, sizeof(line), "Job %lld run 1: on-end command failed: exit code 7: it broke",
                 (long long)id);
        wait_logged(line);
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "exit_code"), 0);
        json_object_put(rec);
        st = job_status(fd, id);
        ck_assert_int_eq(int_member(st, "runs"), 1);
        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "succeeded");
        json_object_put(st);
        /* Never retried; the daemon goes on. */
        rec = job_wait(fd, job_submit(fd, "{\"command\":\"true\"}"));
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        free(fifo);
}
END_TEST

START_TEST(the_setting_runs_for_jobs_without_their_own)
{
        char *fifo = fifo_make(d.dir, "said"), *own = fifo_make(d.dir, "own"),
             params[2 * PATH_MAX + 128], want[64], *got;
        int64_t a, b, c;

        snprintf(params, sizeof(params),
                 "{\"on-end\":\"echo setting $SLOWWORK_JOB $SLOWWORK_OUTCOME >%s\"}", fifo);
        ck_assert_int_eq(call_code("settings.set", params), 0);
        snprintf(params, sizeof(params), "echo setting $SLOWWORK_JOB $SLOWWORK_OUTCOME >%s", fifo);
        ck_assert_str_eq(setting_text("on-end"), params);

        a = job_submit(fd, "{\"command\":\"true\"}");
        got = read_lines(fifo, 1);
        snprintf(want, sizeof(want), "setting %lld succeeded\n", (long long)a);
        ck_assert_str_eq(got, want);
        free(got);
        snprintf(params, sizeof(params),
                 "{\"command\":\"false\",\"on_end\":\"echo own $SLOWWORK_JOB >%s\"}", own);
        b = job_submit(fd, params);
        got = read_lines(own, 1);
        snprintf(want, sizeof(want), "own %lld\n", (long long)b);
        ck_assert_str_eq(got, want);
        free(got);
        /* Had the setting run for b too, its line would come here before c's. */
        c = job_submit(fd, "{\"command\":\"true\"}");
        got = read_lines(fifo, 1);
        snprintf(want, sizeof(want), "setting %lld succeeded\n", (long long)c);
        ck_assert_str_eq(got, want);
        free(got);

        ck_assert_int_eq(call_code("settings.set", "{\"on-end\":\"\"}"), 0);
        ck_assert_str_eq(setting_text("on-end"), "");
        free(fifo);
        free(own);
}
END_TEST

START_TEST(bad_on_end_params_are_invalid_params_and_change_nothing)
{
        static const char *const bad[] = {
            "{\"command\":\"true\",\"on_end\":\"\"}",
            "{\"command\":\"true\",\"on_end\":5}",
            "{\"command\":\"true\",\"on_end\":null}",
            "{\"command\":\"true\",\"on_end\":[\"echo\"]}",
            "{\"command\":\"true\",\"on_end\":\"a\\u0000b\"}",
        };
        char *long_command = malloc(70000);
        json_object *reply;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(call_code("submit", bad[i]) == -32602, "%s", bad[i]);
        ck_assert_ptr_nonnull(long_command);
        snprintf(long_command, 70000, "{\"command\":\"true\",\"on_end\":\"%065537d\"}", 0);
        ck_assert_int_eq(call_code("submit", long_command), -32602);
        free(long_command);
        ck_assert_int_eq(call_code("settings.set", "{\"on-end\":7}"), -32602);
        ck_assert_int_eq(call_code("settings.set", "{\"on-end\":\"x\",\"max-threads\":0}"), -32602);
        ck_assert_str_eq(setting_text("on-end"), "");
        reply = client_call(fd, "list", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        ck_assert_int_eq(
            json_object_array_length(json_object_object_get(reply_result(reply), "items")), 0);
        json_object_put(reply);
        /* The ids were not taken either. */
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\"}"), 1);
}
END_TEST

START_TEST(the_flag_and_the_config_file_set_it)
{
        char *fifo, config[PATH_MAX + 16], line[PATH_MAX + 64], want[32], *got;
        FILE *f;
        int64_t id;

        close(fd);
        daemon_stop(&d);
        start_logged("--on-end=echo flag $SLOWWORK_JOB >/dev/null");
        ck_assert_str_eq(setting_text("on-end"), "echo flag $SLOWWORK_JOB >/dev/null");
        close(fd);
        daemon_stop_clean(&d);

        fifo = fifo_make(d.dir, "said");
        snprintf(config, sizeof(config), "%s/conf", d.dir);
        f = fopen(config, "w");
        ck_assert_ptr_nonnull(f);
        snprintf(line, sizeof(line), "on-end = echo file $SLOWWORK_JOB >%s\n", fifo);
        fputs(line, f);
        ck_assert_int_eq(fclose(f), 0);
        daemon_start_again(&d, "--config", config, NULL);
        fd = client_connect(d.sock);
        id = job_submit(fd, "{\"command\":\"true\"}");
        got = read_lines(fifo, 1);
        snprintf(want, sizeof(want), "file %lld\n", (long long)id);
        ck_assert_str_eq(got, want);
        free(got);
        free(fifo);
}
END_TEST

START_TEST(the_setting_is_kept_through_a_restart)
{
        ck_assert_int_eq(call_code("settings.set", "{\"on-end\":\"logger done\"}"), 0);
        close(fd);
        daemon_kill_hard(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_str_eq(setting_text("on-end"), "logger done");
}
END_TEST

/* An on-end command in progress is waited for at a stop like a run, then stopped with it. */
START_TEST(a_stop_stops_an_on_end_command_in_progress)
{
        char *fifo, job[PATH_MAX + 128], *got;
        pid_t pid;

        close(fd);
        daemon_stop(&d);
        start_logged("--stop-timeout=0.2");
        fifo = fifo_make(d.dir, "said");
        snprintf(job, sizeof(job),
                 "{\"command\":\"true\",\"on_end\":\"echo $$ >%s; exec sleep 600\"}", fifo);
        job_submit(fd, job);
        got = read_lines(fifo, 1);
        pid = (pid_t)atoi(got);
        free(got);
        ck_assert(!process_gone(pid));
        close(fd);
        daemon_stop_clean(&d);
        ck_assert(process_gone(pid));
        wait_logged("on-end command failed: interrupted");
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        free(fifo);
}
END_TEST

/* Without a cgroup, the runner writes a process into the state folder's runs-inflight (slots of
 * {id, run, pid, start}, int64 each) a moment after it started: what lets the next start find it.
 * Waits until the command's pid is there. */
static void wait_inflight(pid_t pid)
{
        char path[PATH_MAX + 32];
        int64_t slot[4];

        snprintf(path, sizeof(path), "%s/runs-inflight", d.state);
        for (int i = 0; i < 2000; i++) {
                FILE *f = fopen(path, "re");
                bool found = false;

                while (f && fread(slot, sizeof(slot), 1, f) == 1 && !found)
                        found = slot[0] > 0 && slot[2] == pid;
                if (f)
                        fclose(f);
                if (found)
                        return;
                usleep(10000);
        }
        ck_abort_msg("process %d is not in %s", (int)pid, path);
}

/* A crash leaves the command running: the supervisor (or the next start) stops it, and it is
 * taken for no run of the job. */
static void crash_leaves_an_on_end_command(bool in_cgroup)
{
        char *fifo = fifo_make(d.dir, "said"), job[PATH_MAX + 128], *got;
        json_object *st;
        int64_t id;
        pid_t pid;

        snprintf(job, sizeof(job),
                 "{\"command\":\"true\",\"persist\":true,\"on_end\":\"echo $$ >%s; exec sleep "
                 "600\"}",
                 fifo);
        id = job_submit(fd, job);
        got = read_lines(fifo, 1);
        pid = (pid_t)atoi(got);
        free(got);
        /* Its run's end is on disk before the crash: answered once written. */
        json_object_put(job_wait(fd, id));
        if (!in_cgroup) /* a cgroup holds it from its start */
                wait_inflight(pid);
        close(fd);
        daemon_kill_hard(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        for (int i = 0; i < 2000 && !process_gone(pid); i++)
                usleep(10000);
        ck_assert(process_gone(pid));
        st = job_status(fd, id);
        ck_assert_int_eq(int_member(st, "runs"), 1);
        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "succeeded");
        ck_assert_ptr_null(json_object_object_get(json_object_object_get(st, "last"), "leftovers"));
        json_object_put(st);
        free(fifo);
}

START_TEST(what_a_crash_leaves_of_an_on_end_command_is_stopped)
{
        if (!has_cgroups())
                return;
        crash_leaves_an_on_end_command(true);
}
END_TEST

START_TEST(what_a_crash_leaves_of_an_on_end_command_in_a_process_group_is_stopped)
{
        close(fd);
        daemon_stop(&d);
        daemons_without_cgroups();
        start_logged(NULL);
        crash_leaves_an_on_end_command(false);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("on-end");
        TCase *tc = tcase_create("on-end");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, on_end_runs_after_each_run_with_the_runs_variables_env_and_cwd);
        tcase_add_test(tc, on_end_runs_in_its_own_cgroup_with_the_jobs_limits);
        tcase_add_test(tc, a_plugin_jobs_on_end_is_a_shell_command);
        tcase_add_test(tc, a_run_ended_by_a_signal_or_never_started_has_no_exit_code);
        tcase_add_test(tc, an_edit_and_a_restart_keep_on_end);
        tcase_add_test(tc, a_failing_on_end_is_logged_and_changes_nothing_of_the_job);
        tcase_add_test(tc, the_setting_runs_for_jobs_without_their_own);
        tcase_add_test(tc, bad_on_end_params_are_invalid_params_and_change_nothing);
        tcase_add_test(tc, the_flag_and_the_config_file_set_it);
        tcase_add_test(tc, the_setting_is_kept_through_a_restart);
        tcase_add_test(tc, a_stop_stops_an_on_end_command_in_progress);
        tcase_add_test(tc, what_a_crash_leaves_of_an_on_end_command_is_stopped);
        tcase_add_test(tc, what_a_crash_leaves_of_an_on_end_command_in_a_process_group_is_stopped);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
