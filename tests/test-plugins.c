/* SPDX-License-Identifier: MIT */
/* Plugin jobs through a real slowworkd: runs, logs, keys, cancel, timeout, and what is refused. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

#if !defined(PLUGINS_BUILT) || !defined(TEST_PLUGINS_BUILT)
#error "PLUGINS_BUILT and TEST_PLUGINS_BUILT must name the folders the plugins were built in"
#endif

static struct daemon d;
static int fd;
static char dir[64]; /* a private folder: the plugin folder is dir/plugins */
static char plugins[128];

static void link_plugin(const char *built, const char *file)
{
        char from[512], to[256];

        snprintf(from, sizeof(from), "%s/%s", built, file);
        snprintf(to, sizeof(to), "%s/%s", plugins, file);
        ck_assert_int_eq(symlink(from, to), 0);
}

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
}

/* The plugin folder, and next to it things a name must not reach. */
static void make_plugin_dir(void)
{
        char path[256];

        snprintf(dir, sizeof(dir), "/tmp/swplug-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(plugins, sizeof(plugins), "%s/plugins", dir);
        ck_assert_int_eq(mkdir(plugins, 0700), 0);
        link_plugin(PLUGINS_BUILT, "hello.so");
        link_plugin(PLUGINS_BUILT, "checksum.so");
        link_plugin(TEST_PLUGINS_BUILT, "other-abi.so");
        link_plugin(TEST_PLUGINS_BUILT, "no-abi.so");
        snprintf(path, sizeof(path), "%s/garbage.so", plugins);
        write_file(path, "not an ELF file\n");
        snprintf(path, sizeof(path), "%s/sub", plugins);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        snprintf(path, sizeof(path), "%s/sub/hello.so", plugins);
        ck_assert_int_eq(symlink(PLUGINS_BUILT "/hello.so", path), 0);
        snprintf(path, sizeof(path), "%s/.hello.so", plugins);
        ck_assert_int_eq(symlink(PLUGINS_BUILT "/hello.so", path), 0);
        snprintf(path, sizeof(path), "%s/outside.so", dir);
        ck_assert_int_eq(symlink(PLUGINS_BUILT "/hello.so", path), 0);
}

static void setup(void)
{
        make_plugin_dir();
        /* Its clocks move forward when the test says (daemon_advance_clock), and with time. */
        daemon_start_clocked(&d, "--max-threads", "4", "--plugin-dir", plugins, "--kill-grace", "1",
                             NULL);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
}

static void teardown(void)
{
        char cmd[128];

        close(fd);
        daemon_stop(&d);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
}

static json_object *wait_record(int64_t id)
{
        return job_wait(fd, id);
}

/* The error a submit gets; its message must name what is wrong. */
static void submit_refused(const char *params, int code, const char *message_part)
{
        json_object *reply = client_call(fd, "submit", params), *error;

        ck_assert_int_eq(reply_code(reply), code);
        error = json_object_object_get(reply, "error");
        ck_assert_msg(strstr(str_member(error, "message"), message_part),
                      "\"%s\" does not say \"%s\"", str_member(error, "message"), message_part);
        json_object_put(reply);
}

/* Whether the daemon has the plugin file mapped. */
static bool loaded(const char *file)
{
        char path[64], line[1024];
        bool found = false;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int)d.pid);
        f = fopen(path, "r");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, file))
                        found = true;
        fclose(f);
        return found;
}

START_TEST(an_entry_point_runs_logs_and_gets_its_arg)
{
        int64_t id = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"hello\","
                                    "\"arg\":{\"x\":[1,2],\"s\":\"a/b\"},\"class\":\"very-slow\"}");
        json_object *rec = wait_record(id);
        char *log = job_log(fd, id), want[128];

        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "exit_code"), 0);
        ck_assert_str_eq(str_member(rec, "class"), "very-slow");
        ck_assert_str_eq(str_member(rec, "command"), "hello:hello {\"x\":[1,2],\"s\":\"a/b\"}");
        snprintf(want, sizeof(want),
                 "hello from job %lld run 1 (very-slow), arg {\"x\":[1,2],\"s\":\"a/b\"}\n",
                 (long long)id);
        ck_assert_str_eq(log, want);
        free(log);
        json_object_put(rec);
}
END_TEST

START_TEST(a_connections_env_set_is_not_a_plugin_jobs)
{
        json_object *rec;
        int64_t id;

        json_object_put(call_ok(fd, "env.set", "{\"env\":{\"A\":\"b\"}}"));
        id = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"hello\"}");
        rec = wait_record(id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        /* A plugin job's own env is still refused. */
        submit_refused("{\"plugin\":\"hello\",\"entry\":\"hello\",\"env\":{\"A\":\"b\"}}", -32602,
                       "a plugin job takes no");
}
END_TEST

START_TEST(the_return_value_is_the_exit_code_and_no_arg_is_null)
{
        int64_t failed = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"exit_with\",\"arg\":7}");
        int64_t quiet = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"hello\"}");
        json_object *rec = wait_record(failed);
        char *log, want[96];

        ck_assert_str_eq(str_member(rec, "outcome"), "failed");
        ck_assert_int_eq(int_member(rec, "exit_code"), 7);
        json_object_put(rec);
        rec = wait_record(quiet);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        log = job_log(fd, quiet);
        snprintf(want, sizeof(want), "hello from job %lld run 1 (slow), arg null\n",
                 (long long)quiet);
        ck_assert_str_eq(log, want);
        free(log);
        /* A run that wrote nothing has an empty log, not an error. */
        log = job_log(fd, failed);
        ck_assert_str_eq(log, "");
        free(log);
}
END_TEST

START_TEST(a_key_coalesces_plugin_runs_and_refuses_another_arg)
{
        const char *busy = "{\"plugin\":\"hello\",\"entry\":\"busy\",\"arg\":0.5,\"key\":\"k\"}";
        json_object *reply, *rec;
        int64_t id = job_submit(fd, busy);

        job_wait_state(fd, id, "running");
        reply = client_call(fd, "submit", busy);
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "deferred")));
        json_object_put(reply);
        reply = client_call(fd, "submit", busy);
        ck_assert(
            json_object_get_boolean(json_object_object_get(reply_result(reply), "coalesced")));
        ck_assert_int_eq(int_member(reply_result(reply), "id"), id);
        json_object_put(reply);
        submit_refused("{\"plugin\":\"hello\",\"entry\":\"busy\",\"arg\":0.25,\"key\":\"k\"}",
                       -32003, "runs something else");
        submit_refused("{\"command\":\"true\",\"key\":\"k\"}", -32003, "runs something else");
        rec = wait_record(id);
        ck_assert_int_eq(int_member(rec, "run"), 2);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
}
END_TEST

START_TEST(cancel_is_seen_by_the_plugin_and_recorded)
{
        int64_t id = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"until_stopped\"}");
        json_object *reply, *rec;
        char *log;

        job_wait_started(fd, id); /* a cancel before its start would not reach the plugin */
        reply = client_call(fd, "cancel", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        rec = wait_record(id);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        ck_assert_int_eq(int_member(rec, "exit_code"), 3);
        json_object_put(rec);
        log = job_log(fd, id);
        ck_assert_str_eq(log, "waiting\nstopping: cancelled\n");
        free(log);
}
END_TEST

static double mono_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A request on a fresh connection answers in under a second. */
static void answers_at_once(const char *method, const char *params)
{
        double t0 = mono_now();
        int other = client_connect(d.sock);
        json_object *reply;

        ck_assert_int_ge(other, 0);
        reply = client_call(other, method, params);
        ck_assert_msg(reply_code(reply) == 0, "%s: %s", method, json_object_to_json_string(reply));
        ck_assert_msg(mono_now() - t0 < 1.0, "%s took %.2f s", method, mono_now() - t0);
        json_object_put(reply);
        close(other);
}

/* A cancel of a run that ignores it is answered when the run ends, and blocks nothing meanwhile:
 * not the log reads, nor status, nor new clients. */
START_TEST(cancels_of_plugins_that_ignore_them_park_no_thread)
{
        int64_t logged = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"hello\",\"arg\":\"x\"}");
        int64_t deaf[5];
        int cancels[5], i;
        char params[64], request[128];
        json_object *reply;

        json_object_put(wait_record(logged));
        json_object_put(client_call(fd, "settings.set", "{\"max-threads\":6,\"runtime\":true}"));
        for (i = 0; i < 5; i++)
                deaf[i] = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"busy\",\"arg\":3}");
        /* Started: a cancel that comes before a run starts keeps it from starting. */
        for (i = 0; i < 5; i++)
                job_wait_started(fd, deaf[i]);
        for (i = 0; i < 5; i++) {
                cancels[i] = client_connect(d.sock);
                ck_assert_int_ge(cancels[i], 0);
                snprintf(request, sizeof(request),
                         "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"cancel\","
                         "\"params\":{\"id\":%lld}}",
                         (long long)deaf[i]);
                client_send(cancels[i], request);
        }
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)logged);
        answers_at_once("log", params);
        answers_at_once("log", params);
        answers_at_once("status", params);
        answers_at_once("ping", NULL);
        for (i = 0; i < 5; i++)
                ck_assert_str_eq(job_state_of(fd, deaf[i]), "running");

        /* Each cancel is answered once its run has returned, which records it cancelled. */
        for (i = 0; i < 5; i++) {
                char *line = client_read_line(cancels[i]);
                json_object *rec;

                ck_assert_ptr_nonnull(line);
                reply = json_tokener_parse(line);
                ck_assert_msg(reply_code(reply) == 0, "%s", line);
                ck_assert_str_eq(str_member(reply_result(reply), "state"), "idle");
                json_object_put(reply);
                free(line);
                close(cancels[i]);
                rec = wait_record(deaf[i]);
                ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
                json_object_put(rec);
        }
}
END_TEST

START_TEST(a_timeout_is_seen_or_recorded_when_the_plugin_returns)
{
        int64_t asks = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"until_stopped\","
                                      "\"timeout\":600}");
        /* Busy for 0.4 s of the clock, deaf to its timeout of 0.1 s: what is looked at is that
         * its record says it ended when it returned, a span of the clock. */
        int64_t deaf = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"busy\",\"arg\":0.4,"
                                      "\"timeout\":0.1}");
        json_object *rec;
        char *log;

        /* Its timeout is up once the test clock passed it. */
        job_wait_started(fd, asks);
        daemon_advance_clock(&d, 601);
        rec = wait_record(asks);

        ck_assert_str_eq(str_member(rec, "outcome"), "timed-out");
        json_object_put(rec);
        log = job_log(fd, asks);
        ck_assert_str_eq(log, "waiting\nstopping: timed-out\n");
        free(log);
        rec = wait_record(deaf);
        ck_assert_str_eq(str_member(rec, "outcome"), "timed-out");
        ck_assert_double_ge(json_object_get_double(json_object_object_get(rec, "ended")) -
                                json_object_get_double(json_object_object_get(rec, "started")),
                            0.39);
        json_object_put(rec);
}
END_TEST

START_TEST(bad_plugins_and_names_are_refused_at_submit_and_queue_nothing)
{
        json_object *reply;

        submit_refused("{\"plugin\":\"nothere\",\"entry\":\"run\"}", -32001,
                       "no plugin \"nothere\"");
        submit_refused("{\"plugin\":\"hello\",\"entry\":\"nothere\"}", -32001,
                       "has no entry point \"nothere\"");
        /* What dlsym() finds that is no entry point: data, and its libraries' functions. */
        submit_refused("{\"plugin\":\"hello\",\"entry\":\"slowwork_plugin_abi\"}", -32001,
                       "has no entry point \"slowwork_plugin_abi\"");
        submit_refused("{\"plugin\":\"hello\",\"entry\":\"abort\"}", -32001,
                       "has no entry point \"abort\"");
        submit_refused("{\"plugin\":\"other-abi\",\"entry\":\"run\"}", -32602,
                       "was built for plugin ABI 2, this slowworkd has ABI 1");
        submit_refused("{\"plugin\":\"no-abi\",\"entry\":\"run\"}", -32602,
                       "does not export slowwork_plugin_abi");
        submit_refused("{\"plugin\":\"garbage\",\"entry\":\"run\"}", -32602,
                       "cannot load plugin \"garbage\"");
        submit_refused("{\"plugin\":\"../outside\",\"entry\":\"hello\"}", -32602, "no \"..\"");
        submit_refused("{\"plugin\":\"sub/hello\",\"entry\":\"hello\"}", -32602, "no \"/\"");
        submit_refused("{\"plugin\":\".hello\",\"entry\":\"hello\"}", -32602, "leading");
        submit_refused("{\"plugin\":\"\",\"entry\":\"hello\"}", -32602, "plugin's name");
        submit_refused("{\"plugin\":\"/tmp/x\",\"entry\":\"hello\"}", -32602, "no \"/\"");
        submit_refused("{\"plugin\":\"hello\"}", -32602, "both \"plugin\" and \"entry\"");
        submit_refused("{\"entry\":\"hello\",\"arg\":1}", -32602, "both \"plugin\" and \"entry\"");
        submit_refused("{\"plugin\":\"hello\",\"entry\":\"hello\",\"command\":\"true\"}", -32602,
                       "takes no \"command\"");
        submit_refused("{\"plugin\":\"hello\",\"entry\":\"hello\",\"cwd\":\"/\"}", -32602,
                       "takes no");
        reply = client_call(fd, "list", NULL);
        ck_assert_int_eq(
            json_object_array_length(json_object_object_get(reply_result(reply), "items")), 0);
        json_object_put(reply);
        /* Nothing refused stayed loaded. */
        ck_assert(!loaded("other-abi.so"));
        ck_assert(!loaded("no-abi.so"));
        ck_assert(!loaded("hello.so"));
}
END_TEST

START_TEST(a_plugin_stays_loaded_while_a_job_refers_to_it)
{
        int64_t id = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"hello\",\"hold\":true}");
        json_object *rec = wait_record(id), *reply;

        json_object_put(rec);
        ck_assert(loaded("hello.so"));
        reply = client_call(fd, "enqueue", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        rec = wait_record(id);
        ck_assert_int_eq(int_member(rec, "run"), 2);
        json_object_put(rec);
        reply = client_call(fd, "release", "{\"id\":1}");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        for (int i = 0; i < 400 && loaded("hello.so"); i++)
                usleep(5000);
        ck_assert(!loaded("hello.so"));
        /* And loads again for the next submit. */
        rec = wait_record(job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"noop\"}"));
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
}
END_TEST

START_TEST(the_checksum_plugin_sums_a_folder)
{
        char sub[160], file[200], params[512], *log;
        json_object *rec;
        int64_t id;

        snprintf(sub, sizeof(sub), "%s/data", dir);
        ck_assert_int_eq(mkdir(sub, 0700), 0);
        snprintf(file, sizeof(file), "%s/a", sub);
        write_file(file, "123456789"); /* the CRC-32 check value: cbf43926 */
        snprintf(file, sizeof(file), "%s/b", sub);
        write_file(file, "");
        snprintf(params, sizeof(params),
                 "{\"plugin\":\"checksum\",\"entry\":\"checksum_dir\",\"arg\":{\"dir\":\"%s\"}}",
                 sub);
        id = job_submit(fd, params);
        rec = wait_record(id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        log = job_log(fd, id);
        snprintf(params, sizeof(params),
                 "cbf43926 9 %s/a\n00000000 0 %s/b\n2 files, 9 bytes, 0 errors\n", sub, sub);
        ck_assert_str_eq(log, params);
        free(log);
}
END_TEST

START_TEST(four_hundred_pipelined_plugin_runs)
{
        enum { N = 400 };
        json_object *reply;
        int i;

        /* Pipelined: every submit is written before the first reply is read. */
        for (i = 0; i < N; i++)
                client_send(fd, i % 2 ? "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\","
                                        "\"params\":{\"plugin\":\"hello\",\"entry\":\"noop\"}}"
                                      : "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\","
                                        "\"params\":{\"plugin\":\"hello\",\"entry\":\"hello\","
                                        "\"arg\":[1]}}");
        for (i = 0; i < N; i++) {
                char *line = client_read_line(fd);

                ck_assert_ptr_nonnull(strstr(line, "\"result\""));
                free(line);
        }
        for (i = 1; i <= N; i++) {
                json_object *rec = wait_record(i);

                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                json_object_put(rec);
        }
        reply = client_call(fd, "stats", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        /* teardown's daemon_stop checks the exit status, which LeakSanitizer makes nonzero. */
}
END_TEST

START_TEST(shutdown_does_not_wait_for_ever_for_a_plugin_that_never_returns)
{
        struct daemon slow;
        int status, other, watcher;
        bool running = false;
        time_t start;

        daemon_start(&slow, "--plugin-dir", plugins, "--stop-timeout", "0.2", "--kill-grace", "0.2",
                     NULL);
        other = client_connect(slow.sock);
        ck_assert_int_ge(other, 0);
        watcher = client_connect(slow.sock);
        ck_assert_int_ge(watcher, 0);
        json_object_put(client_call(watcher, "subscribe", NULL));
        job_submit(other, "{\"plugin\":\"hello\",\"entry\":\"busy\",\"arg\":60}");
        /* Its entry point called, not just queued: a SIGTERM before that would only record
         * the run interrupted, and the daemon would exit 0 at once. */
        while (!running) {
                char *line = client_read_line(watcher);
                json_object *event;

                ck_assert_ptr_nonnull(line);
                event = json_tokener_parse(line);
                free(line);
                running = strcmp(str_member(json_object_object_get(event, "params"), "state"),
                                 "running") == 0;
                json_object_put(event);
        }
        close(watcher);
        close(other);
        start = time(NULL);
        ck_assert_int_eq(kill(slow.pid, SIGTERM), 0);
        status = daemon_reap(&slow);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 1);
        ck_assert_int_lt(time(NULL) - start, 10);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("plugins");
        TCase *tc = tcase_create("plugins");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, an_entry_point_runs_logs_and_gets_its_arg);
        tcase_add_test(tc, cancels_of_plugins_that_ignore_them_park_no_thread);
        tcase_add_test(tc, the_return_value_is_the_exit_code_and_no_arg_is_null);
        tcase_add_test(tc, a_connections_env_set_is_not_a_plugin_jobs);
        tcase_add_test(tc, a_key_coalesces_plugin_runs_and_refuses_another_arg);
        tcase_add_test(tc, cancel_is_seen_by_the_plugin_and_recorded);
        tcase_add_test(tc, a_timeout_is_seen_or_recorded_when_the_plugin_returns);
        tcase_add_test(tc, bad_plugins_and_names_are_refused_at_submit_and_queue_nothing);
        tcase_add_test(tc, a_plugin_stays_loaded_while_a_job_refers_to_it);
        tcase_add_test(tc, the_checksum_plugin_sums_a_folder);
        tcase_add_test(tc, four_hundred_pipelined_plugin_runs);
        tcase_add_test(tc, shutdown_does_not_wait_for_ever_for_a_plugin_that_never_returns);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
