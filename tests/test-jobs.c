/* SPDX-License-Identifier: MIT */
/* Shell jobs through a real slowworkd: runs, logs, keys, handles, cancel, timeout, history. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;
static int fd;

static void setup(void)
{
        daemon_start_clocked(&d, "--max-threads", "4", "--kill-grace", "1", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
}

static void teardown(void)
{
        close(fd);
        daemon_stop(&d);
}

static const char *outcome(json_object *rec)
{
        return str_member(rec, "outcome");
}

static void set(const char *params)
{
        json_object *reply = client_call(fd, "settings.set", params);

        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
}

static int submit_error(const char *params)
{
        json_object *reply = client_call(fd, "submit", params);
        int code = reply_code(reply);

        json_object_put(reply);
        return code;
}

static bool live(int64_t id)
{
        json_object *st = job_status(fd, id);
        bool is_live = json_object_get_boolean(json_object_object_get(st, "live"));

        json_object_put(st);
        return is_live;
}

static int strcmp_ptr(const void *a, const void *b)
{
        return strcmp(*(const char *const *)a, *(const char *const *)b);
}

START_TEST(command_runs_and_wait_gives_its_exit_code)
{
        int64_t id = job_submit(fd, "{\"command\":\"echo out; echo err >&2; exit 3\"}");
        json_object *rec = job_wait(fd, id);
        char *log;

        ck_assert_str_eq(outcome(rec), "failed");
        ck_assert_int_eq(int_member(rec, "exit_code"), 3);
        ck_assert_int_eq(int_member(rec, "run"), 1);
        json_object_put(rec);
        log = job_log(fd, id);
        ck_assert_str_eq(log, "out\nerr\n");
        free(log);
        rec = job_wait(fd, job_submit(fd, "{\"command\":\"true\"}"));
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
}
END_TEST

START_TEST(argv_runs_without_a_shell_with_cwd_env_and_no_stdin)
{
        char params[512], *log;
        int64_t id;
        json_object *rec;

        snprintf(
            params, sizeof(params),
            "{\"argv\":[\"/bin/sh\",\"-c\",\"pwd; echo \\\"$FOO\\\" \\\"$0\\\"; cat\","
            "\"x y\"],\"cwd\":\"%s\",\"env\":{\"FOO\":\"bar baz\",\"PATH\":\"/usr/bin:/bin\"}}",
            d.dir);
        id = job_submit(fd, params);
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        log = job_log(fd, id);
        snprintf(params, sizeof(params), "%s\nbar baz x y\n", d.dir);
        ck_assert_str_eq(log, params);
        free(log);

        id = job_submit(fd, "{\"argv\":[\"echo\",\"a;b\",\"$HOME\"]}");
        json_object_put(job_wait(fd, id));
        log = job_log(fd, id);
        ck_assert_str_eq(log, "a;b $HOME\n");
        free(log);
}
END_TEST

/* The log of a command run in d.dir with env (a JSON object's members), once it succeeded or
 * ended with exit_code. */
static char *run_in_dir(const char *command, const char *env, int exit_code)
{
        char params[1024];
        json_object *rec;
        int64_t id;

        snprintf(params, sizeof(params), "{\"command\":\"%s\",\"cwd\":\"%s\",\"env\":{%s}}",
                 command, d.dir, env);
        id = job_submit(fd, params);
        rec = job_wait(fd, id);
        ck_assert_msg(int_member(rec, "exit_code") == exit_code, "%s: %s", command,
                      json_object_to_json_string(rec));
        json_object_put(rec);
        return job_log(fd, id);
}

/* The lines of text, sorted, one string. */
static char *sorted_lines(const char *text)
{
        char *copy = strdup(text), *lines[64], *out, *save = NULL;
        size_t n = 0, size = strlen(text) + 2;

        for (char *l = strtok_r(copy, "\n", &save); l && n < 64; l = strtok_r(NULL, "\n", &save))
                lines[n++] = l;
        qsort(lines, n, sizeof(*lines), strcmp_ptr);
        out = calloc(1, size);
        for (size_t i = 0; i < n; i++) {
                strcat(out, lines[i]);
                strcat(out, "\n");
        }
        free(copy);
        return out;
}

/* An executable file in d.dir. */
static void write_script(const char *name, const char *text)
{
        char path[PATH_MAX];
        int f;

        snprintf(path, sizeof(path), "%s/%s", d.dir, name);
        f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
        ck_assert_int_ge(f, 0);
        ck_assert_int_eq(write(f, text, strlen(text)), (ssize_t)strlen(text));
        close(f);
}

/* A command that is only words is started without /bin/sh, exactly as the shell would start it:
 * its environment (with PWD, which dash sets), a script without #!, a name not found, a builtin. */
START_TEST(a_plain_command_starts_as_the_shell_would_start_it)
{
        char env[512], want[PATH_MAX + 600], *log, *plain, *shell;
        json_object *rec;

        snprintf(env, sizeof(env), "\"PATH\":\"/usr/bin:/bin\",\"PWD\":\"%s\",\"A\":\"1 2\"",
                 d.dir);
        /* Without the shell: the daemon is the process's parent. */
        log = run_in_dir("grep PPid /proc/self/status", env, 0);
        snprintf(want, sizeof(want), "PPid:\t%d\n", (int)d.pid);
        ck_assert_str_eq(log, want);
        free(log);
        /* The environment the shell would give it (the ';' makes the shell run it). */
        log = run_in_dir("env", env, 0);
        plain = sorted_lines(log);
        free(log);
        log = run_in_dir("env;", env, 0);
        shell = sorted_lines(log);
        free(log);
        ck_assert_str_eq(plain, shell);
        snprintf(want, sizeof(want), "A=1 2\nPATH=/usr/bin:/bin\nPWD=%s\n", d.dir);
        ck_assert_str_eq(plain, want);
        free(plain);
        free(shell);
        /* Without PWD the shell sets it. */
        log = run_in_dir("env", "\"PATH\":\"/usr/bin:/bin\"", 0);
        snprintf(want, sizeof(want), "PATH=/usr/bin:/bin\nPWD=%s\n", d.dir);
        plain = sorted_lines(log);
        ck_assert_str_eq(plain, want);
        free(plain);
        free(log);

        /* A file without #! is a script for the shell. */
        write_script("noshebang", "echo from a script\n");
        log = run_in_dir("./noshebang", env, 0);
        ck_assert_str_eq(log, "from a script\n");
        free(log);
        /* The program is the run's process: a signal that ends it is the run's end. */
        write_script("selfkill", "#!/bin/sh\nkill -ABRT $$\n");
        snprintf(want, sizeof(want), "{\"command\":\"./selfkill\",\"cwd\":\"%s\",\"env\":{%s}}",
                 d.dir, env);
        rec = job_wait(fd, job_submit(fd, want));
        ck_assert_str_eq(outcome(rec), "killed");
        ck_assert_int_eq(int_member(rec, "signal"), SIGABRT);
        json_object_put(rec);
        /* Not found: the shell's message and exit code. */
        log = run_in_dir("no-such-program-here x", env, 127);
        ck_assert_msg(strstr(log, "no-such-program-here: not found"), "log: %s", log);
        free(log);
        /* A builtin with arguments is the shell's: /bin/true would print its --help. */
        log = run_in_dir("true --help", env, 0);
        ck_assert_str_eq(log, "");
        free(log);
        log = run_in_dir("false", env, 1);
        free(log);
}
END_TEST

/* What status shows of a job is what it was given: its name, key and command. */
START_TEST(status_shows_the_name_key_and_command_given)
{
        static const struct {
                const char *params, *name, *key, *command;
        } cases[] = {
            {"{\"argv\":[\"echo\",\"a b\",\"c\"],\"name\":\"n1\",\"key\":\"k1\",\"hold\":true}",
             "n1", "k1", "echo a b c"},
            {"{\"argv\":[\"true\"],\"key\":\"k2\",\"hold\":true}", NULL, "k2", "true"},
            {"{\"command\":\"echo x | cat\",\"name\":\"n3\",\"hold\":true}", "n3", NULL,
             "echo x | cat"},
            {"{\"argv\":[\"true\"],\"cwd\":\"/tmp\",\"hold\":true}", NULL, NULL, "true"},
        };

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                int64_t id = job_submit(fd, cases[i].params);
                json_object *st, *v;

                json_object_put(job_wait(fd, id));
                st = job_status(fd, id);
                v = json_object_object_get(st, "name");
                if (cases[i].name)
                        ck_assert_str_eq(json_object_get_string(v), cases[i].name);
                else
                        ck_assert_ptr_null(v);
                v = json_object_object_get(st, "key");
                if (cases[i].key)
                        ck_assert_str_eq(json_object_get_string(v), cases[i].key);
                else
                        ck_assert_ptr_null(v);
                ck_assert_str_eq(str_member(st, "command"), cases[i].command);
                json_object_put(st);
        }
}
END_TEST

/* What /usr/bin/env prints in a job submitted on connection c with the submit's own params. */
static char *env_of_job(int c, const char *extra)
{
        char params[256], *log;
        int64_t id;

        snprintf(params, sizeof(params), "{\"argv\":[\"/usr/bin/env\"]%s}", extra);
        id = job_submit(c, params);
        json_object_put(job_wait(c, id));
        log = job_log(c, id);
        return log;
}

/* env.set on connection c, which says it set vars variables. */
static void env_set(int c, const char *params, int vars)
{
        json_object *res = call_ok(c, "env.set", params);

        ck_assert_int_eq(int_member(res, "vars"), vars);
        json_object_put(res);
}

/* A job on connection c with the submit's own params prints the environment want. */
static void expect_env(int c, const char *extra, const char *want)
{
        char *log = env_of_job(c, extra);

        ck_assert_str_eq(log, want);
        free(log);
}

START_TEST(env_set_is_the_environment_of_the_connections_later_submits)
{
        int other;
        char *log;

        env_set(fd, "{\"env\":{\"A\":\"one two\",\"PATH\":\"/usr/bin:/bin\"}}", 2);
        expect_env(fd, "", "A=one two\nPATH=/usr/bin:/bin\n");
        /* A command's shell sees it too. */
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"echo \\\"$A\\\"\",\"key\":\"k\"}"), 2);
        json_object_put(job_wait(fd, 2));
        log = job_log(fd, 2);
        ck_assert_str_eq(log, "one two\n");
        free(log);

        /* A submit's own env wins. */
        expect_env(fd, ",\"env\":{\"B\":\"own\"}", "B=own\n");

        /* Another connection does not see it: its jobs get the daemon's environment. */
        other = client_connect(d.sock);
        ck_assert_int_ge(other, 0);
        log = env_of_job(other, "");
        ck_assert_ptr_null(strstr(log, "A=one two"));
        ck_assert_ptr_nonnull(strstr(log, "PATH="));
        free(log);
        close(other);

        /* A later env.set replaces it; an empty one leaves the jobs no variable at all. */
        env_set(fd, "{\"env\":{\"C\":\"three\"}}", 1);
        expect_env(fd, "", "C=three\n");
        env_set(fd, "{\"env\":{}}", 0);
        expect_env(fd, "", "");
}
END_TEST

START_TEST(bad_env_set_params_are_invalid_params_and_change_nothing)
{
        static const char *const bad[][2] = {
            {NULL, "missing parameter \"env\""},
            {"{}", "missing parameter \"env\""},
            {"{\"env\":\"A=1\"}", "parameter \"env\" must be an object of strings"},
            {"{\"env\":{\"A\":1}}", "parameter \"env\" must be an object of strings"},
            {"{\"env\":{\"\":\"x\"}}", "parameter \"env\": invalid variable name \"\""},
            {"{\"env\":{\"A=B\":\"x\"}}", "parameter \"env\": invalid variable name \"A=B\""},
            {"{\"env\":{\"A\":\"x\"},\"vars\":1}", "unknown parameter \"vars\""},
        };
        char msg[256];
        size_t i;

        env_set(fd, "{\"env\":{\"KEPT\":\"yes\"}}", 1);
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_int_eq(call_error(fd, "env.set", bad[i][0], msg, sizeof(msg)), -32602);
                ck_assert_str_eq(msg, bad[i][1]);
        }
        expect_env(fd, "", "KEPT=yes\n");
}
END_TEST

START_TEST(a_job_inherits_no_descriptor_but_its_three)
{
        int64_t id = job_submit(fd, "{\"argv\":[\"ls\",\"/proc/self/fd\"]}");
        char *log;

        json_object_put(job_wait(fd, id));
        log = job_log(fd, id);
        ck_assert_str_eq(log, "0\n1\n2\n3\n"); /* 3: the folder ls reads */
        free(log);
}
END_TEST

START_TEST(bad_submits_are_invalid_params_and_queue_nothing)
{
        static const char *const bad[] = {
            "{}",
            "{\"command\":\"true\",\"argv\":[\"true\"]}",
            "{\"command\":\"true\",\"class\":\"fast\"}",
            "{\"command\":\"true\",\"cwd\":\"relative/dir\"}",
            "{\"plugin\":\"p\",\"command\":\"true\"}",
            "{\"argv\":[]}",
            "{\"command\":5}",
            "{\"command\":\"true\",\"timeout\":-1}",
            "{\"command\":\"true\",\"env\":{\"A\":1}}",
            "{\"command\":\"true\",\"colour\":\"red\"}",
        };
        json_object *list, *reply;
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(submit_error(bad[i]) == -32602, "accepted: %s", bad[i]);
        reply = client_call(fd, "list", NULL);
        list = json_object_object_get(reply_result(reply), "items");
        ck_assert_int_eq(json_object_array_length(list), 0);
        json_object_put(reply);
}
END_TEST

/* The job's last run's log is want. */
static void log_is(int64_t id, const char *want)
{
        char *log = job_log(fd, id);

        ck_assert_str_eq(log, want);
        free(log);
}

/* The state of the next event a subscriber reads. */
static char *next_event_state(int watcher)
{
        char *line = client_read_line(watcher), *state;
        json_object *event;

        ck_assert_ptr_nonnull(line);
        event = json_tokener_parse(line);
        free(line);
        state = strdup(str_member(json_object_object_get(event, "params"), "state"));
        json_object_put(event);
        return state;
}

/* A stashed job stays until enqueue by id, which queues it as a submit would; status, list
 * and the metrics say "stashed". */
START_TEST(a_stashed_job_runs_only_once_enqueued)
{
        json_object *reply, *rec, *st, *items;
        int watcher = client_connect(d.sock);
        char params[64], *state;
        int64_t id;

        json_object_put(client_call(watcher, "subscribe", NULL));
        id = job_submit(fd, "{\"command\":\"echo stashed run\",\"stashed\":true}");
        state = next_event_state(watcher);
        ck_assert_str_eq(state, "stashed");
        free(state);
        ck_assert_str_eq(job_state_of(fd, id), "stashed");
        reply = call_ok(fd, "list", "{\"state\":\"stashed\"}");
        items = json_object_object_get(reply, "items");
        ck_assert_int_eq(json_object_array_length(items), 1);
        ck_assert_str_eq(str_member(json_object_array_get_idx(items, 0), "state"), "stashed");
        json_object_put(reply);
        st = job_status(fd, id);
        ck_assert_int_eq(int_member(st, "runs"), 0);
        json_object_put(st);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        reply = call_ok(fd, "enqueue", params);
        ck_assert_int_eq(int_member(reply, "id"), id);
        json_object_put(reply);
        state = next_event_state(watcher);
        ck_assert_str_eq(state, "pending");
        free(state);
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        log_is(id, "stashed run\n");
        close(watcher);
}
END_TEST

START_TEST(a_cancelled_stashed_job_is_gone_without_a_run)
{
        json_object *rec;
        char params[64], msg[256];
        int64_t id;

        id = job_submit(fd, "{\"command\":\"true\",\"stashed\":true}");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        json_object_put(call_ok(fd, "cancel", params));
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "cancelled");
        json_object_put(rec);
        ck_assert_int_eq(call_error(fd, "enqueue", params, msg, sizeof(msg)), -32001);
}
END_TEST

START_TEST(a_stashed_job_counts_as_a_users_queued_job)
{
        char msg[256];

        set("{\"max-queued-per-user\":1}");
        job_submit(fd, "{\"command\":\"true\",\"stashed\":true}");
        ck_assert_int_eq(call_error(fd, "submit", "{\"command\":\"true\"}", msg, sizeof(msg)),
                         -32004);
        set("{\"max-queued-per-user\":0}");
}
END_TEST

START_TEST(a_stashed_job_takes_no_flow_and_a_bad_stashed_is_refused)
{
        char msg[256];
        json_object *reply;

        ck_assert_int_eq(call_error(fd, "submit", "{\"command\":\"true\",\"stashed\":1}", msg,
                                    sizeof(msg)),
                         -32602);
        ck_assert_int_eq(call_error(fd, "submit",
                                    "{\"command\":\"true\",\"stashed\":true,\"every\":60}", msg,
                                    sizeof(msg)),
                         -32602);
        ck_assert_int_eq(call_error(fd, "submit",
                                    "{\"command\":\"true\",\"stashed\":true,\"delay\":5}", msg,
                                    sizeof(msg)),
                         -32602);
        reply = call_ok(fd, "list", NULL);
        ck_assert_int_eq(json_object_array_length(json_object_object_get(reply, "items")), 0);
        json_object_put(reply);
}
END_TEST

/* edit: a job not started yet runs what it was changed to, under its new name and folder. */
START_TEST(an_edited_stashed_job_runs_the_new_command_in_the_new_folder)
{
        char params[PATH_MAX + 128];
        json_object *st, *rec;
        int64_t id;

        id = job_submit(fd, "{\"command\":\"echo old\",\"stashed\":true,\"name\":\"a\"}");
        snprintf(params, sizeof(params),
                 "{\"id\":%lld,\"command\":\"echo new in $(pwd)\",\"name\":\"b\",\"cwd\":\"%s\","
                 "\"priority\":9}",
                 (long long)id, d.dir);
        st = call_ok(fd, "edit", params);
        ck_assert_int_eq(int_member(st, "id"), id);
        ck_assert_str_eq(str_member(st, "state"), "stashed");
        ck_assert_str_eq(str_member(st, "name"), "b");
        ck_assert_str_eq(str_member(st, "command"), "echo new in $(pwd)");
        ck_assert_int_eq(int_member(st, "priority"), 9);
        json_object_put(st);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        json_object_put(call_ok(fd, "enqueue", params));
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        snprintf(params, sizeof(params), "new in %s\n", d.dir);
        log_is(id, params);
}
END_TEST

START_TEST(an_edited_argv_job_takes_argv_and_refuses_command)
{
        char params[256], msg[256];
        json_object *st, *rec;
        int64_t id;

        id = job_submit(fd, "{\"argv\":[\"echo\",\"one\"],\"stashed\":true}");
        snprintf(params, sizeof(params), "{\"id\":%lld,\"command\":\"echo two\"}", (long long)id);
        ck_assert_int_eq(call_error(fd, "edit", params, msg, sizeof(msg)), -32602);
        ck_assert_msg(strstr(msg, "argv"), "%s", msg);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"argv\":[\"echo\",\"t w o\"]}",
                 (long long)id);
        st = call_ok(fd, "edit", params);
        ck_assert_str_eq(str_member(st, "command"), "echo t w o");
        json_object_put(st);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        json_object_put(call_ok(fd, "enqueue", params));
        rec = job_wait(fd, id);
        json_object_put(rec);
        log_is(id, "t w o\n");
}
END_TEST

/* A job waiting for another is edited as it waits, and still waits: then runs the new command. */
START_TEST(an_edited_waiting_job_waits_on_and_runs_the_new_command)
{
        char *gate = fifo_make(d.dir, "gate"), params[PATH_MAX + 128];
        int64_t first, waiting;
        json_object *st, *rec;

        snprintf(params, sizeof(params), "{\"command\":\"cat %s\"}", gate);
        first = job_submit(fd, params);
        job_wait_state(fd, first, "running");
        snprintf(params, sizeof(params), "{\"command\":\"echo old\",\"after\":[%lld]}",
                 (long long)first);
        waiting = job_submit(fd, params);
        ck_assert_str_eq(job_state_of(fd, waiting), "waiting");
        snprintf(params, sizeof(params), "{\"id\":%lld,\"command\":\"echo new\",\"priority\":-5}",
                 (long long)waiting);
        st = call_ok(fd, "edit", params);
        ck_assert_str_eq(str_member(st, "state"), "waiting");
        ck_assert_int_eq(json_object_array_length(json_object_object_get(st, "after")), 1);
        json_object_put(st);
        fifo_release(gate);
        rec = job_wait(fd, waiting);
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        log_is(waiting, "new\n");
        free(gate);
}
END_TEST

/* Bad edits: each gets its error and changes nothing. */
START_TEST(bad_edits_are_refused_and_change_nothing)
{
        char *gate = fifo_make(d.dir, "gate"), params[PATH_MAX + 128], msg[256];
        int64_t running, stashed, done;
        json_object *st;

        snprintf(params, sizeof(params), "{\"command\":\"cat %s\"}", gate);
        running = job_submit(fd, params);
        job_wait_state(fd, running, "running");
        stashed = job_submit(fd, "{\"command\":\"echo a\",\"stashed\":true,\"name\":\"n\"}");
        done = job_submit(fd, "{\"command\":\"true\",\"persist\":true}");
        json_object_put(job_wait(fd, done));

        snprintf(params, sizeof(params), "{\"id\":%lld,\"name\":\"x\"}", (long long)running);
        ck_assert_int_eq(call_error(fd, "edit", params, msg, sizeof(msg)), -32003);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"name\":\"x\"}", (long long)done);
        ck_assert_int_eq(call_error(fd, "edit", params, msg, sizeof(msg)), -32003);
        ck_assert_int_eq(call_error(fd, "edit", "{\"id\":999999,\"name\":\"x\"}", msg, sizeof(msg)),
                         -32001);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"argv\":[\"echo\"]}", (long long)stashed);
        ck_assert_int_eq(call_error(fd, "edit", params, msg, sizeof(msg)), -32602);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"cwd\":\"tmp\"}", (long long)stashed);
        ck_assert_int_eq(call_error(fd, "edit", params, msg, sizeof(msg)), -32602);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"name\":7}", (long long)stashed);
        ck_assert_int_eq(call_error(fd, "edit", params, msg, sizeof(msg)), -32602);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"key\":\"k\"}", (long long)stashed);
        ck_assert_int_eq(call_error(fd, "edit", params, msg, sizeof(msg)), -32602);
        ck_assert_int_eq(call_error(fd, "edit", "{\"name\":\"x\"}", msg, sizeof(msg)), -32602);

        st = job_status(fd, stashed);
        ck_assert_str_eq(str_member(st, "name"), "n");
        ck_assert_str_eq(str_member(st, "command"), "echo a");
        ck_assert_str_eq(str_member(st, "state"), "stashed");
        ck_assert_int_eq(int_member(st, "priority"), 0);
        json_object_put(st);
        fifo_release(gate);
        json_object_put(job_wait(fd, running));
        free(gate);
}
END_TEST

/* Whether the status of the job says a run is to come after the one in progress. */
static bool deferred(int64_t id)
{
        json_object *st = job_status(fd, id), *v = json_object_object_get(st, "deferred");
        bool yes;

        ck_assert(json_object_is_type(v, json_type_boolean));
        yes = json_object_get_boolean(v);
        json_object_put(st);
        return yes;
}

START_TEST(four_submits_of_a_running_key_give_two_runs)
{
        char *gate = fifo_make(d.dir, "gate"), job[PATH_MAX + 128];
        json_object *reply, *rec;
        int64_t id;
        int i;

        /* The first run (the one that makes the folder) waits for the gate; the second not. */
        snprintf(job, sizeof(job),
                 "{\"key\":\"k\",\"command\":\"mkdir %s/first 2>/dev/null && cat %s >/dev/null; "
                 "echo run\"}",
                 d.dir, gate);
        id = job_submit(fd, job);
        job_wait_state(fd, id, "running");
        ck_assert(!deferred(id));
        for (i = 0; i < 3; i++) {
                reply = client_call(fd, "submit", job);
                ck_assert_int_eq(int_member(reply_result(reply), "id"), id);
                ck_assert(json_object_get_boolean(json_object_object_get(
                    reply_result(reply), i == 0 ? "deferred" : "coalesced")));
                json_object_put(reply);
                ck_assert(deferred(id)); /* its status says a run is to come */
        }
        fifo_release(gate);
        rec = job_wait(fd, id);
        ck_assert_int_eq(int_member(rec, "run"), 2);
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        free(gate);
}
END_TEST

START_TEST(a_key_with_other_work_is_a_conflict)
{
        char *gate = fifo_make(d.dir, "gate"), job[PATH_MAX + 64], other[PATH_MAX + 96];
        json_object *rec;
        int64_t id;

        /* Live until the gate opens. */
        snprintf(job, sizeof(job), "{\"key\":\"k\",\"command\":\"cat %s\"}", gate);
        id = job_submit(fd, job);
        ck_assert_int_eq(submit_error("{\"key\":\"k\",\"command\":\"sleep 9\"}"), -32003);
        snprintf(other, sizeof(other),
                 "{\"key\":\"k\",\"command\":\"cat %s\",\"class\":\"very-slow\"}", gate);
        ck_assert_int_eq(submit_error(other), -32003);
        fifo_release(gate);
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        free(gate);
}
END_TEST

START_TEST(very_slow_jobs_are_capped_and_slow_ones_not_starved)
{
        char *gates[3], name[16], job[PATH_MAX + 64];
        int64_t v[3], s;
        json_object *rec, *st;
        int i;

        set("{\"min-threads\":2,\"max-threads\":2}"); /* very slow cap: 1 */
        for (i = 0; i < 3; i++) {
                snprintf(name, sizeof(name), "gate%d", i);
                gates[i] = fifo_make(d.dir, name);
                snprintf(job, sizeof(job), "{\"command\":\"cat %s\",\"class\":\"very-slow\"}",
                         gates[i]);
                v[i] = job_submit(fd, job);
        }
        s = job_submit(fd, "{\"command\":\"true\"}");
        rec = job_wait(fd, s);
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        /* The slow job ran while very slow ones were still waiting their turn. */
        ck_assert_str_ne(job_state_of(fd, v[2]), "idle");
        st = client_call(fd, "stats", NULL);
        ck_assert_int_le(int_member(reply_result(st), "busy_very_slow"), 1);
        json_object_put(st);
        for (i = 0; i < 3; i++) {
                fifo_release(gates[i]);
                json_object_put(job_wait(fd, v[i]));
                free(gates[i]);
        }
}
END_TEST

START_TEST(cancel_of_a_pending_job_records_a_run_that_never_started)
{
        int64_t blocker, id;
        json_object *reply, *rec;

        set("{\"min-threads\":1,\"max-threads\":1}");
        blocker = job_submit(fd, "{\"command\":\"sleep 30\"}");
        id = job_submit(fd, "{\"command\":\"echo should not run\"}");
        job_wait_state(fd, blocker, "running");
        ck_assert_str_eq(job_state_of(fd, id), "pending");
        reply = client_call(fd, "cancel", "{\"id\":2}");
        ck_assert_str_eq(str_member(reply_result(reply), "state"), "idle");
        json_object_put(reply);
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "cancelled");
        ck_assert(json_object_get_double(json_object_object_get(rec, "started")) == 0);
        json_object_put(rec);
        reply = client_call(fd, "cancel", "{\"id\":1}");
        json_object_put(reply);
        rec = job_wait(fd, blocker);
        ck_assert_str_eq(outcome(rec), "cancelled");
        json_object_put(rec);
}
END_TEST

START_TEST(cancel_of_a_running_job_ends_its_whole_process_tree)
{
        int64_t id = job_submit(fd, "{\"command\":\"sleep 60 & echo $!; "
                                    "sh -c 'trap \\\"\\\" TERM; sleep 60' & echo $!; wait\"}");
        pid_t pids[2];
        json_object *reply, *rec;
        char *log;
        int i;

        job_wait_state(fd, id, "running");
        for (i = 0; i < 200; i++) { /* both children are started */
                log = job_log(fd, id);
                if (sscanf(log, "%d\n%d", &pids[0], &pids[1]) == 2)
                        break;
                free(log);
                log = NULL;
                usleep(10000);
        }
        ck_assert_ptr_nonnull(log);
        free(log);
        reply = client_call(fd, "cancel", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "cancelled");
        json_object_put(rec);
        /* One of them ignored SIGTERM: SIGKILL after kill-grace got it. */
        for (i = 0; i < 300 && !(process_gone(pids[0]) && process_gone(pids[1])); i++)
                usleep(10000);
        ck_assert(process_gone(pids[0]));
        ck_assert(process_gone(pids[1]));
}
END_TEST

START_TEST(timeout_stops_the_job_and_says_so)
{
        int64_t id = job_submit(fd, "{\"command\":\"sleep 30\",\"timeout\":600}");
        json_object *rec;
        double took;

        /* Up once the daemon's clock has passed it, not before. */
        job_wait_process(fd, id);
        daemon_advance_clock(&d, 590);
        ck_assert_str_eq(job_state_of(fd, id), "running");
        daemon_advance_clock(&d, 20);
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "timed-out");
        ck_assert_int_eq(int_member(rec, "signal"), SIGTERM);
        took = json_object_get_double(json_object_object_get(rec, "ended")) -
               json_object_get_double(json_object_object_get(rec, "started"));
        ck_assert_msg(took >= 600 && took < 620, "timed out after %g s", took);
        json_object_put(rec);
}
END_TEST

START_TEST(held_job_lives_until_its_connection_closes)
{
        int other = client_connect(d.sock);
        int64_t id = job_submit(other, "{\"command\":\"true\",\"hold\":true}");
        json_object *st, *reply;

        json_object_put(job_wait(other, id));
        st = job_status(fd, id);
        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_int_eq(int_member(st, "handles"), 1);
        json_object_put(st);
        /* Held, it can be enqueued by id again. */
        reply = client_call(fd, "enqueue", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        st = job_wait(fd, id);
        ck_assert_int_eq(int_member(st, "run"), 2);
        json_object_put(st);
        close(other);
        for (int i = 0; i < 400 && live(id); i++)
                usleep(5000);
        ck_assert(!live(id));
        ck_assert_str_eq(job_state_of(fd, id), "idle");
        reply = client_call(fd, "enqueue", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), -32001);
        json_object_put(reply);
}
END_TEST

START_TEST(release_and_persist)
{
        int other = client_connect(d.sock);
        int64_t held = job_submit(fd, "{\"command\":\"true\",\"hold\":true}");
        int64_t kept = job_submit(other, "{\"command\":\"true\",\"persist\":true,"
                                         "\"key\":\"nightly\"}");
        json_object *reply;

        json_object_put(job_wait(fd, held));
        json_object_put(job_wait(fd, kept));
        close(other);
        ck_assert_str_eq(job_state_of(fd, kept), "idle"); /* the daemon holds it */
        ck_assert(live(kept));
        reply = client_call(fd, "enqueue", "{\"key\":\"nightly\"}");
        ck_assert_int_eq(int_member(reply_result(reply), "id"), kept);
        json_object_put(reply);
        json_object_put(job_wait(fd, kept));

        reply = client_call(fd, "release", "{\"id\":1}");
        ck_assert_int_eq(int_member(reply_result(reply), "handles"), 0);
        json_object_put(reply);
        ck_assert(!live(held));
        reply = client_call(fd, "release", "{\"id\":2}");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        ck_assert(!live(kept));
        reply = client_call(fd, "release", "{\"id\":2}");
        ck_assert_int_eq(reply_code(reply), -32001);
        json_object_put(reply);
}
END_TEST

static double timespec_s(struct timespec t)
{
        return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double wall_s(void)
{
        struct timespec t;

        clock_gettime(CLOCK_REALTIME, &t);
        return timespec_s(t);
}

/* A member that is a number (a time), or the test fails. */
static double real_member(json_object *o, const char *name)
{
        json_object *v = json_object_object_get(o, name);

        ck_assert_msg(json_object_is_type(v, json_type_double) || json_object_is_type(v, json_type_int),
                      "%s is not a number in %s", name, json_object_to_json_string(o));
        return json_object_get_double(v);
}

/* While it runs: when its run started, its process, where its output goes. */
START_TEST(status_shows_a_runs_start_its_process_and_its_log)
{
        char *gate = fifo_make(d.dir, "gate"), *said = fifo_make(d.dir, "said"), *pid,
             job[2 * PATH_MAX + 96], want[PATH_MAX + 64];
        double before = wall_s();
        json_object *st, *rec;
        int64_t id;

        snprintf(job, sizeof(job), "{\"command\":\"echo $$ >%s; cat %s\"}", said, gate);
        id = job_submit(fd, job);
        pid = fifo_read_all(said); /* its shell runs */
        /* The runner publishes the process once its start has returned, a moment after. */
        job_wait_process(fd, id);
        st = job_status(fd, id);
        ck_assert_str_eq(str_member(st, "state"), "running");
        ck_assert(real_member(st, "submitted") >= before - 0.01);
        ck_assert(real_member(st, "started") >= real_member(st, "submitted"));
        ck_assert(real_member(st, "started") <= wall_s());
        ck_assert_int_eq(int_member(st, "pid"), atoi(pid));
        snprintf(want, sizeof(want), "%s/logs/%lld.1.log", d.state, (long long)id);
        ck_assert_str_eq(str_member(st, "log"), want);
        fifo_release(gate);
        rec = job_wait(fd, id);
        ck_assert(json_object_get_double(json_object_object_get(rec, "started")) ==
                  real_member(st, "started"));
        json_object_put(rec);
        json_object_put(st);
        free(pid);
        free(said);
        free(gate);
}
END_TEST

START_TEST(delayed_job_waits_its_delay)
{
        int watcher = client_connect(d.sock);
        static const char *const want[] = {"pending", "running", "idle"};
        struct timespec t0;
        int64_t id;
        json_object *rec, *event, *params;
        char *line;
        int i;

        json_object_put(client_call(watcher, "subscribe", NULL));
        clock_gettime(CLOCK_REALTIME, &t0);
        id = job_submit(fd, "{\"command\":\"true\",\"delay\":3600}");
        /* Its status says when it was submitted and when it is to run. */
        params = job_status(fd, id);
        ck_assert(real_member(params, "submitted") >= timespec_s(t0) - 0.01 &&
                  real_member(params, "submitted") <= wall_s());
        ck_assert(real_member(params, "next_run") >= real_member(params, "submitted") + 3600 &&
                  real_member(params, "next_run") <= wall_s() + 3600);
        ck_assert_ptr_null(json_object_object_get(params, "started"));
        json_object_put(params);
        /* Pending first, for all the delay by the daemon's clock: 10 s short of it the run is
         * still held back for it; past it, it runs. */
        for (i = 0; i < 3; i++) {
                if (i == 1) {
                        json_object *st;

                        daemon_advance_clock(&d, 3590);
                        st = call_ok(fd, "stats", NULL);
                        ck_assert_int_eq(int_member(st, "delayed"), 1);
                        json_object_put(st);
                        ck_assert_str_eq(job_state_of(fd, id), "pending");
                        daemon_advance_clock(&d, 20);
                }
                line = client_read_line(watcher);
                ck_assert_ptr_nonnull(line);
                event = json_tokener_parse(line);
                free(line);
                params = json_object_object_get(event, "params");
                ck_assert_int_eq(int_member(params, "id"), id);
                ck_assert_str_eq(str_member(params, "state"), want[i]);
                json_object_put(event);
        }
        close(watcher);
        rec = job_wait(fd, id);
        ck_assert(json_object_get_double(json_object_object_get(rec, "started")) >=
                  (double)t0.tv_sec + t0.tv_nsec / 1e9 + 3600 - 0.01);
        json_object_put(rec);
}
END_TEST

START_TEST(history_answers_after_the_job_is_gone_within_its_limit)
{
        json_object *reply, *rec;
        int64_t ids[3];
        int i;

        set("{\"history-limit\":2}");
        for (i = 0; i < 3; i++)
                json_object_put(job_wait(fd, ids[i] = job_submit(fd, "{\"command\":\"true\"}")));
        rec = job_wait(fd, ids[2]);
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        reply = client_call(fd, "wait", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), -32001);
        json_object_put(reply);
        reply = client_call(fd, "wait", "{\"id\":99}");
        ck_assert_int_eq(reply_code(reply), -32001);
        json_object_put(reply);
}
END_TEST

START_TEST(log_is_cut_at_the_log_limit)
{
        int64_t id;
        char *log;

        set("{\"log-limit\":1024}");
        id = job_submit(fd, "{\"command\":\"head -c 100000 /dev/zero | tr '\\\\0' x\"}");
        json_object_put(job_wait(fd, id));
        log = job_log(fd, id);
        ck_assert_int_le(strlen(log), 1024 + 100);
        ck_assert_int_eq(strspn(log, "x"), 1024);
        ck_assert_ptr_nonnull(strstr(log, "log cut"));
        free(log);
}
END_TEST

/* Runs a job that writes bytes bytes of 'x' and returns its run record. */
static json_object *run_writing(int bytes)
{
        char params[128];

        snprintf(params, sizeof(params), "{\"command\":\"head -c %d /dev/zero | tr '\\\\0' x\"}",
                 bytes);
        return job_wait(fd, job_submit(fd, params));
}

static bool file_exists(const char *path)
{
        return access(path, F_OK) == 0;
}

/* The log of a run by its number: each run's own, while the history keeps it; then -32001. */
START_TEST(log_run_reads_that_runs_log_while_the_history_keeps_it)
{
        char params[PATH_MAX + 256], msg[256];
        json_object *reply;
        int64_t id;

        snprintf(params, sizeof(params),
                 "{\"command\":\"n=$(cat %s/count 2>/dev/null || echo 0); n=$((n+1)); "
                 "echo $n >%s/count; echo run $n\",\"persist\":true}",
                 d.dir, d.dir);
        id = job_submit(fd, params);
        json_object_put(job_wait(fd, id));
        for (int i = 0; i < 2; i++) {
                snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
                json_object_put(call_ok(fd, "enqueue", params));
                json_object_put(job_wait(fd, id));
        }
        for (int run = 1; run <= 3; run++) {
                char want[16];

                snprintf(params, sizeof(params), "{\"id\":%lld,\"run\":%d}", (long long)id, run);
                reply = call_ok(fd, "log", params);
                snprintf(want, sizeof(want), "run %d\n", run);
                ck_assert_str_eq(str_member(reply, "data"), want);
                ck_assert(json_object_get_boolean(json_object_object_get(reply, "eof")));
                json_object_put(reply);
        }
        snprintf(params, sizeof(params), "{\"id\":%lld,\"run\":4}", (long long)id);
        ck_assert_int_eq(call_error(fd, "log", params, msg, sizeof(msg)), -32001);
        ck_assert_msg(strstr(msg, "has no run 4"), "%s", msg);
        /* The history keeps the last two runs from now on: the first one's log is gone. */
        set("{\"history-limit\":2}");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        json_object_put(call_ok(fd, "enqueue", params));
        json_object_put(job_wait(fd, id));
        snprintf(params, sizeof(params), "{\"id\":%lld,\"run\":1}", (long long)id);
        ck_assert_int_eq(call_error(fd, "log", params, msg, sizeof(msg)), -32001);
        ck_assert_msg(strstr(msg, "is gone"), "%s", msg);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"run\":4}", (long long)id);
        reply = call_ok(fd, "log", params);
        ck_assert_str_eq(str_member(reply, "data"), "run 4\n");
        json_object_put(reply);
}
END_TEST

/* A user's run logs stay within max-log-bytes-per-user: the oldest finished ones go, file and
 * path, and a run's own log is cut at the budget. */
START_TEST(a_users_oldest_logs_go_to_keep_within_max_log_bytes_per_user)
{
        char logs[4][PATH_MAX], *log;
        json_object *rec, *reply;
        int64_t ids[4];

        set("{\"max-log-bytes-per-user\":10000}");
        for (int i = 0; i < 4; i++) {
                rec = run_writing(4000);
                ids[i] = int_member(rec, "id");
                snprintf(logs[i], sizeof(logs[i]), "%s", str_member(rec, "log"));
                json_object_put(rec);
        }
        /* 4 x 4000 bytes: the first two went when the third and the fourth ended. */
        ck_assert_msg(!file_exists(logs[0]) && !file_exists(logs[1]),
                      "the oldest logs are still there");
        ck_assert_msg(file_exists(logs[2]) && file_exists(logs[3]), "the newest logs are gone");
        reply = client_call(fd, "log", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), -32001);
        ck_assert_ptr_nonnull(strstr(str_member(json_object_object_get(reply, "error"), "message"),
                                     "max-log-bytes-per-user"));
        json_object_put(reply);
        rec = job_wait(fd, ids[0]); /* from the history: a record without its log */
        ck_assert_ptr_null(json_object_object_get(rec, "log"));
        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        log = job_log(fd, ids[3]);
        ck_assert_int_eq(strlen(log), 4000);
        free(log);

        /* One run that writes more than the whole budget: its log is cut there, and every
         * older one goes. */
        rec = run_writing(50000);
        log = job_log(fd, int_member(rec, "id"));
        ck_assert_int_eq(strspn(log, "x"), 10000);
        ck_assert_ptr_nonnull(strstr(log, "log cut"));
        ck_assert_msg(!file_exists(logs[2]) && !file_exists(logs[3]), "older logs stayed");
        free(log);
        json_object_put(rec);
}
END_TEST

/* The budget counts the logs the history still names: those of runs the history-limit dropped
 * count no more, so they never push out the logs that stay. */
START_TEST(logs_beyond_the_history_limit_leave_the_budget)
{
        char logs[30][PATH_MAX];
        json_object *rec;

        set("{\"max-log-bytes-per-user\":20000,\"history-limit\":10}");
        for (int i = 0; i < 30; i++) {
                rec = run_writing(1500);
                snprintf(logs[i], sizeof(logs[i]), "%s", str_member(rec, "log"));
                json_object_put(rec);
        }
        ck_assert_msg(!file_exists(logs[0]), "a log beyond the history limit stayed");
        /* 9 x 1500 + 6000 fit in 20000: the newest nine 1500-byte logs stay with the big one. */
        rec = run_writing(6000);
        for (int i = 21; i < 30; i++)
                ck_assert_msg(file_exists(logs[i]), "run %d lost its log", i + 1);
        ck_assert(file_exists(str_member(rec, "log")));
        json_object_put(rec);
}
END_TEST

/* A run that writes nothing has no log file; its log reads as empty and ended. */
START_TEST(a_silent_run_makes_no_log_file)
{
        json_object *rec = job_wait(fd, job_submit(fd, "{\"command\":\"true\"}")), *reply;
        char *log;

        ck_assert_str_eq(outcome(rec), "succeeded");
        ck_assert_msg(!file_exists(str_member(rec, "log")), "a silent run made a log file");
        log = job_log(fd, int_member(rec, "id"));
        ck_assert_str_eq(log, "");
        free(log);
        reply = client_call(fd, "log", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), 0);
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "eof")));
        json_object_put(reply);
        json_object_put(rec);
}
END_TEST

START_TEST(bad_input_loses_no_accepted_job)
{
        int64_t ids[20];
        int i, bad;

        for (i = 0; i < 20; i++)
                ids[i] = job_submit(fd, i % 2 ? "{\"command\":\"sleep 0.05\"}"
                                              : "{\"command\":\"true\",\"class\":\"very-slow\"}");
        for (i = 0; i < 50; i++) {
                bad = client_connect(d.sock);
                client_send(bad, i % 2 ? "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\","
                                         "\"params\":{\"command\":"
                                       : "\x01\x02garbage");
                close(bad);
        }
        for (i = 0; i < 20; i++) {
                json_object *rec = job_wait(fd, ids[i]);

                ck_assert_str_eq(outcome(rec), "succeeded");
                json_object_put(rec);
        }
}
END_TEST

START_TEST(subscribers_see_each_state_change)
{
        int watcher = client_connect(d.sock);
        json_object *reply, *event;
        const char *want[] = {"pending", "running", NULL};
        char *line;
        int i;

        reply = client_call(watcher, "subscribe", NULL);
        ck_assert(
            json_object_get_boolean(json_object_object_get(reply_result(reply), "subscribed")));
        json_object_put(reply);
        job_submit(fd, "{\"command\":\"exit 4\"}");
        for (i = 0; i < 3; i++) {
                line = client_read_line(watcher);
                ck_assert_ptr_nonnull(line);
                event = json_tokener_parse(line);
                free(line);
                ck_assert_str_eq(str_member(event, "method"), "event");
                ck_assert_ptr_null(json_object_object_get(event, "id"));
                if (want[i])
                        ck_assert_str_eq(
                            str_member(json_object_object_get(event, "params"), "state"), want[i]);
                else
                        ck_assert_str_eq(
                            str_member(json_object_object_get(event, "params"), "outcome"),
                            "failed");
                json_object_put(event);
        }
        close(watcher);
}
END_TEST

static bool valid_utf8(const unsigned char *s)
{
        while (*s) {
                int n = *s < 0x80             ? 0
                        : (*s & 0xe0) == 0xc0 ? 1
                        : (*s & 0xf0) == 0xe0 ? 2
                        : (*s & 0xf8) == 0xf0 ? 3
                                              : -1;

                if (n < 0)
                        return false;
                for (s++; n > 0; n--, s++)
                        if ((*s & 0xc0) != 0x80)
                                return false;
        }
        return true;
}

START_TEST(replies_stay_utf8_where_text_is_cut)
{
        char params[1024] = "{\"command\":\"echo ", *line, *gate = fifo_make(d.dir, "gate");
        json_object *reply;
        int64_t id;
        int i;

        for (i = 0; i < 100; i++)
                strcat(params, "\u00e9");
        snprintf(params + strlen(params), sizeof(params) - strlen(params), "; cat %s\"}", gate);
        id = job_submit(fd, params);
        job_wait_state(fd, id, "running");
        /* The run queue's descriptions are cut to 63 bytes, maybe inside a character. */
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"stats\"}");
        line = client_read_line(fd);
        ck_assert(valid_utf8((const unsigned char *)line));
        ck_assert_ptr_nonnull(strstr(line, "\xc3\xa9"));
        free(line);
        fifo_release(gate);
        free(gate);
        json_object_put(job_wait(fd, id));
        /* A log read of 1 byte still moves on, by whole characters. */
        reply = client_call(fd, "log", "{\"id\":1,\"offset\":4,\"max\":1}");
        ck_assert_str_eq(str_member(reply_result(reply), "data"), "\xc3\xa9\xc3\xa9");
        ck_assert_int_eq(int_member(reply_result(reply), "offset"), 8);
        json_object_put(reply);
}
END_TEST

START_TEST(a_keyed_resubmit_can_make_the_job_persist)
{
        int other = client_connect(d.sock);
        char *gate = fifo_make(d.dir, "gate"), cmd[2 * PATH_MAX], job[3 * PATH_MAX];
        json_object *reply;
        int64_t id;

        /* The first run (the one that makes the folder) waits for the gate: the job is live
         * until the test opens it. */
        snprintf(cmd, sizeof(cmd), "mkdir %s/first 2>/dev/null && cat %s; true", d.dir, gate);
        snprintf(job, sizeof(job), "{\"key\":\"k\",\"command\":\"%s\"}", cmd);
        id = job_submit(other, job);
        snprintf(job, sizeof(job), "{\"key\":\"k\",\"command\":\"%s\",\"persist\":true}", cmd);
        reply = client_call(other, "submit", job);
        ck_assert_int_eq(int_member(reply_result(reply), "id"), id);
        json_object_put(reply);
        close(other);
        fifo_release(gate);
        json_object_put(job_wait(fd, id));
        ck_assert(live(id));
        reply = client_call(fd, "enqueue", "{\"key\":\"k\"}");
        ck_assert_int_eq(int_member(reply_result(reply), "id"), id);
        json_object_put(reply);
        json_object_put(job_wait(fd, id));
        free(gate);
}
END_TEST

static json_object *read_reply(int c)
{
        char *line = client_read_line(c);
        json_object *reply;

        ck_assert_ptr_nonnull(line);
        reply = json_tokener_parse(line);
        free(line);
        return reply;
}

START_TEST(a_wait_behind_an_enqueue_waits_for_the_new_run)
{
        static const char batch[] =
            "{\"jsonrpc\":\"2.0\",\"id\":101,\"method\":\"wait\",\"params\":{\"id\":1}}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":102,\"method\":\"enqueue\",\"params\":{\"id\":1}}\n"
            "{\"jsonrpc\":\"2.0\",\"id\":103,\"method\":\"wait\",\"params\":{\"id\":1}}\n";
        char *gate = fifo_make(d.dir, "gate"), job[PATH_MAX + 64];
        json_object *first, *enqueued, *second;
        int64_t id;

        snprintf(job, sizeof(job), "{\"command\":\"cat %s\",\"hold\":true}", gate);
        id = job_submit(fd, job);
        job_wait_state(fd, id, "running");
        /* In one write while the first run waits for the gate: the second wait is for the run
         * the enqueue asks for. */
        client_write(fd, batch, sizeof(batch) - 1);
        fifo_release(gate);
        first = read_reply(fd);
        enqueued = read_reply(fd);
        fifo_release(gate); /* the first run is over: this is the second's */
        second = read_reply(fd);
        free(gate);
        ck_assert_int_eq(int_member(reply_result(first), "run"), 1);
        ck_assert_int_eq(reply_code(enqueued), 0);
        ck_assert_int_eq(int_member(reply_result(second), "run"), 2);
        json_object_put(first);
        json_object_put(enqueued);
        json_object_put(second);
}
END_TEST

START_TEST(what_a_job_leaves_running_is_stopped_when_it_ends)
{
        int64_t id = job_submit(fd, "{\"command\":\"sleep 300 & echo $!\"}");
        json_object *rec = job_wait(fd, id);
        char *log = job_log(fd, id);
        pid_t pid = (pid_t)atoi(log);
        int i;

        ck_assert_str_eq(outcome(rec), "succeeded");
        json_object_put(rec);
        free(log);
        ck_assert_int_gt(pid, 0);
        for (i = 0; i < 300 && !process_gone(pid); i++)
                usleep(10000);
        ck_assert(process_gone(pid));
}
END_TEST

START_TEST(a_waiter_on_a_cancelled_queued_job_gets_the_cancelled_record)
{
        json_object *reply, *rec;
        char params[64], request[160];
        int64_t id;
        int i, other;

        set("{\"min-threads\":1,\"max-threads\":1}");
        job_wait_state(fd, job_submit(fd, "{\"command\":\"sleep 30\"}"), "running");
        for (i = 0; i < 10; i++) {
                id = job_submit(fd, "{\"command\":\"true\"}");
                snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
                snprintf(request, sizeof(request),
                         "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"wait\",\"params\":%s}",
                         params);
                other = client_connect(d.sock);
                client_send(other, request);
                reply = client_call(fd, "cancel", params);
                ck_assert_int_eq(reply_code(reply), 0);
                json_object_put(reply);
                rec = read_reply(other);
                ck_assert_str_eq(outcome(reply_result(rec)), "cancelled");
                json_object_put(rec);
                close(other);
        }
        json_object_put(client_call(fd, "cancel", "{\"id\":1}"));
}
END_TEST

START_TEST(the_log_of_a_queued_job_is_empty_and_still_to_come)
{
        int64_t id = job_submit(fd, "{\"command\":\"echo later\",\"delay\":60}");
        json_object *reply = client_call(fd, "log", "{\"id\":1}"), *result;

        ck_assert_int_eq(id, 1);
        ck_assert_int_eq(reply_code(reply), 0);
        result = reply_result(reply);
        ck_assert_str_eq(str_member(result, "data"), "");
        ck_assert(!json_object_get_boolean(json_object_object_get(result, "eof")));
        ck_assert_ptr_null(json_object_object_get(result, "log"));
        json_object_put(reply);
        /* A job that never was is said so, as status says it. */
        reply = client_call(fd, "log", "{\"id\":2}");
        ck_assert_int_eq(reply_code(reply), -32001);
        ck_assert_str_eq(str_member(json_object_object_get(reply, "error"), "message"),
                         "no job 2");
        json_object_put(reply);
}
END_TEST

START_TEST(enqueue_of_a_job_being_cancelled_is_busy)
{
        char *gate = fifo_make(d.dir, "gate"), *term = fifo_make(d.dir, "term"), *said, *line;
        char job[3 * PATH_MAX];
        int canceller = client_connect(d.sock);
        json_object *reply, *error, *rec;
        int64_t id;

        set("{\"kill-grace\":60}"); /* no SIGKILL: the cancel lasts until the gate opens */
        /* Says when SIGTERM comes, and waits for a reader of the gate that ignores SIGTERM.
         * That reader says "ready" once it ignores SIGTERM (the shell's trap is set before it is
         * forked), so that no SIGTERM can end it, nor find the shell between two readers (a
         * shell runs its trap only once its child is done). */
        snprintf(job, sizeof(job),
                 "{\"command\":\"trap 'echo term >%s' TERM; "
                 "(trap '' TERM; echo ready >%s; exec cat %s) & until wait; do :; done\"}",
                 term, term, gate);
        id = job_submit(fd, job);
        said = fifo_read_all(term); /* "running" comes before the shell has set its trap */
        ck_assert_str_eq(said, "ready\n");
        free(said);
        client_send(canceller, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"cancel\","
                               "\"params\":{\"id\":1}}");
        said = fifo_read_all(term); /* the cancel is under way */
        ck_assert_str_eq(said, "term\n");
        free(said);
        reply = client_call(fd, "enqueue", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), -32004);
        error = json_object_object_get(reply, "error");
        ck_assert_str_eq(str_member(error, "data"), "EBUSY");
        ck_assert_str_eq(str_member(error, "message"), "job 1 is being cancelled");
        json_object_put(reply);

        fifo_release(gate);
        line = client_read_line(canceller);
        ck_assert_ptr_nonnull(line);
        reply = json_tokener_parse(line);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        free(line);
        rec = job_wait(fd, id);
        ck_assert_str_eq(outcome(rec), "cancelled");
        ck_assert_int_eq(int_member(rec, "run"), 1); /* the refused enqueue queued nothing */
        json_object_put(rec);
        close(canceller);
        free(gate);
        free(term);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("jobs");
        TCase *tc = tcase_create("shell");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, command_runs_and_wait_gives_its_exit_code);
        tcase_add_test(tc, log_run_reads_that_runs_log_while_the_history_keeps_it);
        tcase_add_test(tc, argv_runs_without_a_shell_with_cwd_env_and_no_stdin);
        tcase_add_test(tc, a_plain_command_starts_as_the_shell_would_start_it);
        tcase_add_test(tc, status_shows_the_name_key_and_command_given);
        tcase_add_test(tc, env_set_is_the_environment_of_the_connections_later_submits);
        tcase_add_test(tc, bad_env_set_params_are_invalid_params_and_change_nothing);
        tcase_add_test(tc, a_job_inherits_no_descriptor_but_its_three);
        tcase_add_test(tc, bad_submits_are_invalid_params_and_queue_nothing);
        tcase_add_test(tc, four_submits_of_a_running_key_give_two_runs);
        tcase_add_test(tc, a_stashed_job_runs_only_once_enqueued);
        tcase_add_test(tc, a_cancelled_stashed_job_is_gone_without_a_run);
        tcase_add_test(tc, a_stashed_job_counts_as_a_users_queued_job);
        tcase_add_test(tc, a_stashed_job_takes_no_flow_and_a_bad_stashed_is_refused);
        tcase_add_test(tc, an_edited_stashed_job_runs_the_new_command_in_the_new_folder);
        tcase_add_test(tc, an_edited_argv_job_takes_argv_and_refuses_command);
        tcase_add_test(tc, bad_edits_are_refused_and_change_nothing);
        tcase_add_test(tc, an_edited_waiting_job_waits_on_and_runs_the_new_command);
        tcase_add_test(tc, a_key_with_other_work_is_a_conflict);
        tcase_add_test(tc, very_slow_jobs_are_capped_and_slow_ones_not_starved);
        tcase_add_test(tc, cancel_of_a_pending_job_records_a_run_that_never_started);
        tcase_add_test(tc, cancel_of_a_running_job_ends_its_whole_process_tree);
        tcase_add_test(tc, timeout_stops_the_job_and_says_so);
        tcase_add_test(tc, held_job_lives_until_its_connection_closes);
        tcase_add_test(tc, release_and_persist);
        tcase_add_test(tc, delayed_job_waits_its_delay);
        tcase_add_test(tc, status_shows_a_runs_start_its_process_and_its_log);
        tcase_add_test(tc, history_answers_after_the_job_is_gone_within_its_limit);
        tcase_add_test(tc, log_is_cut_at_the_log_limit);
        tcase_add_test(tc, a_users_oldest_logs_go_to_keep_within_max_log_bytes_per_user);
        tcase_add_test(tc, logs_beyond_the_history_limit_leave_the_budget);
        tcase_add_test(tc, a_silent_run_makes_no_log_file);
        tcase_add_test(tc, bad_input_loses_no_accepted_job);
        tcase_add_test(tc, subscribers_see_each_state_change);
        tcase_add_test(tc, replies_stay_utf8_where_text_is_cut);
        tcase_add_test(tc, a_keyed_resubmit_can_make_the_job_persist);
        tcase_add_test(tc, a_wait_behind_an_enqueue_waits_for_the_new_run);
        tcase_add_test(tc, what_a_job_leaves_running_is_stopped_when_it_ends);
        tcase_add_test(tc, a_waiter_on_a_cancelled_queued_job_gets_the_cancelled_record);
        tcase_add_test(tc, the_log_of_a_queued_job_is_empty_and_still_to_come);
        tcase_add_test(tc, enqueue_of_a_job_being_cancelled_is_busy);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
