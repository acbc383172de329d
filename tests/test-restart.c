/* SPDX-License-Identifier: MIT */
/* restart over the socket: an ended job's spec run again as a new job, and what is refused. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;

/* A job run to its end and retired: its id. */
static int64_t ended_job(int fd, const char *params)
{
        int64_t id = job_submit(fd, params);

        json_object_put(job_wait(fd, id));
        job_wait_retired(fd, id);
        return id;
}

static int64_t restart(int fd, const char *params)
{
        json_object *r = call_ok(fd, "restart", params);
        int64_t id = int_member(r, "id");

        /* Just the id. */
        ck_assert_int_eq(json_object_object_length(r), 1);
        json_object_put(r);
        return id;
}

static const char *member_text(json_object *o, const char *name)
{
        json_object *v = json_object_object_get(o, name);

        return v ? json_object_get_string(v) : "(none)";
}

START_TEST(a_restart_runs_the_ended_jobs_spec_as_a_new_job_of_its_owner)
{
        char params[2 * PATH_MAX + 512], sub[PATH_MAX], *log, *again;
        json_object *st, *old, *rec;
        int fd;
        int64_t id, new_id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        json_object_put(call_ok(fd, "queue.add", "{\"name\":\"side\"}"));
        snprintf(sub, sizeof(sub), "%s/sub", d.dir);
        ck_assert_int_eq(mkdir(sub, 0700), 0);
        snprintf(params, sizeof(params),
                 "{\"command\":\"pwd; echo \\\"$COLOUR\\\"; echo run >>%s/runs\",\"cwd\":\"%s\","
                 "\"env\":{\"COLOUR\":\"teal\",\"PATH\":\"/usr/bin:/bin\"},\"name\":\"nightly\","
                 "\"class\":\"very-slow\",\"queue\":\"side\",\"timeout\":300,\"retries\":2,"
                 "\"retry_delay\":7,\"limits\":{\"nice\":3},\"key\":\"k\",\"priority\":-7}",
                 d.dir, sub);
        id = ended_job(fd, params);
        log = job_log(fd, id);
        snprintf(params, sizeof(params), "%s\nteal\n", sub);
        ck_assert_str_eq(log, params);

        /* Its queue paused, the new job waits there, live, to be looked at. */
        json_object_put(call_ok(fd, "pause", "{\"queue\":\"side\"}"));
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        new_id = restart(fd, params);
        ck_assert_int_gt(new_id, id);
        st = job_status(fd, new_id);
        ck_assert_str_eq(member_text(st, "state"), "pending");
        ck_assert_str_eq(member_text(st, "name"), "nightly");
        ck_assert_str_eq(member_text(st, "class"), "very-slow");
        ck_assert_str_eq(member_text(st, "queue"), "side");
        ck_assert_str_eq(member_text(st, "key"), "k");
        ck_assert_int_eq(int_member(st, "priority"), -7);
        ck_assert_int_eq(int_member(st, "owner"), (int64_t)getuid());
        old = job_status(fd, id);
        ck_assert_str_eq(member_text(st, "command"), member_text(old, "command"));
        json_object_put(old);
        json_object_put(st);
        json_object_put(call_ok(fd, "resume", "{\"queue\":\"side\"}"));
        rec = job_wait(fd, new_id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        /* Same command, folder and environment. */
        again = job_log(fd, new_id);
        ck_assert_str_eq(again, log);
        free(again);
        /* Both runs ran it. */
        snprintf(params, sizeof(params), "%s/runs", d.dir);
        again = fifo_read_all(params);
        ck_assert_str_eq(again, "run\nrun\n");
        free(again);
        free(log);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Its timeout, retries and limits come along: the status of the live new job shows the limits
 * and the retries, and its timeout ends it (the daemon's clock moved by the test). */
START_TEST(a_restart_keeps_the_timeout_the_limits_and_the_retries)
{
        char params[PATH_MAX + 256], want[PATH_MAX + 16], *gate;
        json_object *st, *limits, *rec;
        int fd;
        int64_t id, new_id;

        daemon_start_clocked(&d, NULL);
        fd = client_connect(d.sock);
        gate = fifo_make(d.dir, "gate");
        id = ended_job(fd, "{\"command\":\"true\",\"timeout\":300,\"retries\":2,\"retry_delay\":7,"
                           "\"limits\":{\"nice\":3,\"open_files\":99}}");
        snprintf(params, sizeof(params), "{\"id\":%lld,\"command\":\"cat %s\"}", (long long)id,
                 gate);
        new_id = restart(fd, params);
        job_wait_process(fd, new_id);
        st = job_status(fd, new_id);
        snprintf(want, sizeof(want), "cat %s", gate);
        ck_assert_str_eq(member_text(st, "command"), want);
        limits = json_object_object_get(st, "limits");
        ck_assert_int_eq(int_member(limits, "nice"), 3);
        ck_assert_int_eq(int_member(limits, "open_files"), 99);
        ck_assert_int_eq(int_member(st, "retries"), 2);
        ck_assert(json_object_get_double(json_object_object_get(st, "retry_delay")) == 7);
        json_object_put(st);
        daemon_advance_clock(&d, 301);
        /* Timed out; its first retry is due 7 s later: cancelled before. */
        for (int i = 0;; i++) {
                st = job_status(fd, new_id);
                rec = json_object_object_get(st, "last");
                if (rec && strcmp(member_text(rec, "outcome"), "timed-out") == 0) {
                        json_object_put(st);
                        break;
                }
                json_object_put(st);
                ck_assert_msg(i < 4000, "job %lld did not time out", (long long)new_id);
                usleep(5000);
        }
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)new_id);
        json_object_put(call_ok(fd, "cancel", params));
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(command_or_argv_replaces_what_the_job_ran_in_the_same_folder)
{
        char params[PATH_MAX + 256], want[PATH_MAX + 16], *log;
        int fd;
        int64_t shell, argv, new_id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        snprintf(params, sizeof(params), "{\"command\":\"echo first\",\"cwd\":\"%s\"}", d.dir);
        shell = ended_job(fd, params);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"command\":\"echo second; pwd\"}",
                 (long long)shell);
        new_id = restart(fd, params);
        json_object_put(job_wait(fd, new_id));
        log = job_log(fd, new_id);
        snprintf(want, sizeof(want), "second\n%s\n", d.dir);
        ck_assert_str_eq(log, want);
        free(log);

        argv = ended_job(fd, "{\"argv\":[\"echo\",\"one\",\"two\"]}");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)argv);
        new_id = restart(fd, params);
        json_object_put(job_wait(fd, new_id));
        log = job_log(fd, new_id);
        ck_assert_str_eq(log, "one two\n");
        free(log);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"argv\":[\"echo\",\"three\"]}",
                 (long long)argv);
        new_id = restart(fd, params);
        json_object_put(job_wait(fd, new_id));
        log = job_log(fd, new_id);
        ck_assert_str_eq(log, "three\n");
        free(log);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* The next id a submit gets: nothing was made in between when it is the one after last. */
static void assert_next_id(int fd, int64_t last)
{
        int64_t id = job_submit(fd, "{\"command\":\"true\"}");

        ck_assert_int_eq(id, last + 1);
        json_object_put(job_wait(fd, id));
}

START_TEST(restart_refuses_live_jobs_unknown_ones_and_bad_params_making_nothing)
{
        char params[PATH_MAX + 128], msg[256], *gate;
        int fd;
        int64_t shell, argv, running, held, last;

        daemon_start(&d, "--plugin-dir", PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        shell = ended_job(fd, "{\"command\":\"true\"}");
        argv = ended_job(fd, "{\"argv\":[\"true\"]}");
        gate = fifo_make(d.dir, "gate");
        snprintf(params, sizeof(params), "{\"command\":\"cat %s\"}", gate);
        running = job_submit(fd, params);
        job_wait_state(fd, running, "running");
        held = job_submit(fd, "{\"command\":\"true\",\"hold\":true}");
        json_object_put(job_wait(fd, held));
        last = held;

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)running);
        ck_assert_int_eq(call_error(fd, "restart", params, msg, sizeof(msg)), -32003);
        ck_assert_ptr_nonnull(strstr(msg, "live"));
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)held);
        ck_assert_int_eq(call_error(fd, "restart", params, msg, sizeof(msg)), -32003);
        ck_assert_int_eq(call_error(fd, "restart", "{\"id\":4242}", msg, sizeof(msg)), -32001);
        ck_assert_str_eq(msg, "no job 4242");

        static const char *const bad[] = {
            "{}",
            "{\"id\":0}",
            "{\"id\":\"1\"}",
            "{\"id\":1,\"command\":5}",
            "{\"id\":1,\"argv\":\"true\"}",
            "{\"id\":1,\"argv\":[]}",
            "{\"id\":1,\"name\":\"x\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_int_eq(call_error(fd, "restart", bad[i], msg, sizeof(msg)), -32602);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"command\":\"true\",\"argv\":[\"true\"]}",
                 (long long)shell);
        ck_assert_int_eq(call_error(fd, "restart", params, msg, sizeof(msg)), -32602);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"argv\":[\"true\"]}", (long long)shell);
        ck_assert_int_eq(call_error(fd, "restart", params, msg, sizeof(msg)), -32602);
        ck_assert_ptr_nonnull(strstr(msg, "\"command\""));
        snprintf(params, sizeof(params), "{\"id\":%lld,\"command\":\"true\"}", (long long)argv);
        ck_assert_int_eq(call_error(fd, "restart", params, msg, sizeof(msg)), -32602);
        ck_assert_ptr_nonnull(strstr(msg, "\"argv\""));
        /* A plugin job keeps no spec. */
        {
                int64_t plugin = ended_job(fd, "{\"plugin\":\"hello\",\"entry\":\"hello\"}");

                last = plugin;
                snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)plugin);
                ck_assert_int_eq(call_error(fd, "restart", params, msg, sizeof(msg)), -32001);
        }
        assert_next_id(fd, last);

        fifo_release(gate);
        json_object_put(job_wait(fd, running));
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Its spec goes with its last run's record: once the history has let go of it, so has restart. */
START_TEST(a_job_whose_last_run_left_the_history_cannot_be_restarted)
{
        char params[64], msg[256];
        int fd;
        int64_t old;

        daemon_start(&d, "--history-limit", "2", NULL);
        fd = client_connect(d.sock);
        old = ended_job(fd, "{\"command\":\"true\"}");
        ended_job(fd, "{\"command\":\"true\"}");
        ended_job(fd, "{\"command\":\"true\"}");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)old);
        ck_assert_int_eq(call_error(fd, "restart", params, msg, sizeof(msg)), -32001);
        close(fd);
        daemon_stop(&d);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("restart");
        TCase *tc = tcase_create("restart");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, a_restart_runs_the_ended_jobs_spec_as_a_new_job_of_its_owner);
        tcase_add_test(tc, a_restart_keeps_the_timeout_the_limits_and_the_retries);
        tcase_add_test(tc, command_or_argv_replaces_what_the_job_ran_in_the_same_folder);
        tcase_add_test(tc, restart_refuses_live_jobs_unknown_ones_and_bad_params_making_nothing);
        tcase_add_test(tc, a_job_whose_last_run_left_the_history_cannot_be_restarted);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
