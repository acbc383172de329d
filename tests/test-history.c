/* SPDX-License-Identifier: MIT */
/* The history method over the socket: finished runs newest first, pages, filters, bad params. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;
static int fd;

static void setup(void)
{
        daemon_start(&d, "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
}

static void teardown(void)
{
        close(fd);
        daemon_stop(&d);
}

/* Submits, waits, and returns the run record (which the caller puts). */
static json_object *run(const char *params)
{
        return job_wait(fd, job_submit(fd, params));
}

static int64_t run_id(const char *params)
{
        json_object *rec = run(params);
        int64_t id = int_member(rec, "id");

        json_object_put(rec);
        return id;
}

static json_object *history(const char *params)
{
        json_object *reply = client_call(fd, "history", params), *result;

        ck_assert_msg(reply_code(reply) == 0, "history %s: %s", params ? params : "",
                      json_object_to_json_string(reply));
        result = json_object_get(reply_result(reply));
        json_object_put(reply);
        return result;
}

static bool more(json_object *result)
{
        json_object *v = json_object_object_get(result, "more");

        ck_assert(json_object_is_type(v, json_type_boolean));
        return json_object_get_boolean(v);
}

/* The ids of a result's runs, newest first, as "5 3 1". */
static char *ids_of(json_object *result)
{
        json_object *runs = json_object_object_get(result, "runs");
        char *ids = calloc(1, 1024);
        size_t i, len = 0;

        ck_assert(json_object_is_type(runs, json_type_array));
        for (i = 0; i < json_object_array_length(runs); i++)
                len += (size_t)snprintf(
                    ids + len, 1024 - len, "%s%lld", i ? " " : "",
                    (long long)int_member(json_object_array_get_idx(runs, i), "id"));
        return ids;
}

static void expect_ids(const char *params, const char *want, bool want_more)
{
        json_object *result = history(params);
        char *ids = ids_of(result);

        ck_assert_msg(strcmp(ids, want) == 0, "history %s: \"%s\", not \"%s\"",
                      params ? params : "", ids, want);
        ck_assert_int_eq(more(result), want_more);
        free(ids);
        json_object_put(result);
}

static void expect_code(const char *params, int code)
{
        json_object *reply = client_call(fd, "history", params);

        ck_assert_msg(reply_code(reply) == code, "history %s: %s, not %d", params,
                      json_object_to_json_string(reply), code);
        json_object_put(reply);
}

START_TEST(history_gives_the_records_wait_gave_newest_first)
{
        json_object *first = run("{\"argv\":[\"true\"]}");
        json_object *second = run("{\"command\":\"exit 3\"}");
        json_object *result = history(NULL), *runs;

        runs = json_object_object_get(result, "runs");
        ck_assert_uint_eq(json_object_array_length(runs), 2);
        ck_assert(json_object_equal(json_object_array_get_idx(runs, 0), second));
        ck_assert(json_object_equal(json_object_array_get_idx(runs, 1), first));
        ck_assert(!more(result));
        json_object_put(result);
        json_object_put(first);
        json_object_put(second);
}
END_TEST

START_TEST(history_of_a_new_daemon_is_empty)
{
        expect_ids(NULL, "", false);
        expect_ids("{\"limit\":1}", "", false);
}
END_TEST

START_TEST(history_pages_with_before_until_there_are_no_more)
{
        int64_t id[5];
        char want[64], params[96];
        int i;

        for (i = 0; i < 5; i++)
                id[i] = run_id("{\"argv\":[\"true\"]}");
        snprintf(want, sizeof(want), "%lld %lld", (long long)id[4], (long long)id[3]);
        expect_ids("{\"limit\":2}", want, true);
        snprintf(params, sizeof(params), "{\"limit\":2,\"before\":{\"id\":%lld,\"run\":1}}",
                 (long long)id[3]);
        snprintf(want, sizeof(want), "%lld %lld", (long long)id[2], (long long)id[1]);
        expect_ids(params, want, true);
        snprintf(params, sizeof(params), "{\"limit\":2,\"before\":{\"id\":%lld,\"run\":1}}",
                 (long long)id[1]);
        snprintf(want, sizeof(want), "%lld", (long long)id[0]);
        expect_ids(params, want, false);
        snprintf(params, sizeof(params), "{\"before\":{\"id\":%lld,\"run\":1}}", (long long)id[0]);
        expect_ids(params, "", false);
        /* Exactly as many as asked for, and none left: no more. */
        snprintf(params, sizeof(params), "{\"limit\":2,\"before\":{\"id\":%lld,\"run\":1}}",
                 (long long)id[2]);
        snprintf(want, sizeof(want), "%lld %lld", (long long)id[1], (long long)id[0]);
        expect_ids(params, want, false);
}
END_TEST

START_TEST(history_before_tells_runs_of_one_job_apart)
{
        int64_t id = job_submit(fd, "{\"argv\":[\"true\"],\"hold\":true}");
        json_object *reply, *runs;
        char params[128];

        json_object_put(job_wait(fd, id));
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        reply = client_call(fd, "enqueue", params);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        json_object_put(job_wait(fd, id));

        snprintf(params, sizeof(params), "{\"before\":{\"id\":%lld,\"run\":2}}", (long long)id);
        reply = history(params);
        runs = json_object_object_get(reply, "runs");
        ck_assert_uint_eq(json_object_array_length(runs), 1);
        ck_assert_int_eq(int_member(json_object_array_get_idx(runs, 0), "run"), 1);
        json_object_put(reply);
        /* A run that is not in the history: not found, not an empty page. */
        snprintf(params, sizeof(params), "{\"before\":{\"id\":%lld,\"run\":3}}", (long long)id);
        expect_code(params, -32001);
}
END_TEST

START_TEST(history_filters_by_outcome)
{
        int64_t ok = run_id("{\"argv\":[\"true\"]}");
        int64_t failed = run_id("{\"argv\":[\"false\"]}");
        int64_t killed = run_id("{\"command\":\"kill -9 $$\"}");
        int64_t timed_out = run_id("{\"argv\":[\"sleep\",\"30\"],\"timeout\":0.05}");
        char want[96];

        snprintf(want, sizeof(want), "%lld", (long long)failed);
        expect_ids("{\"outcome\":\"failed\"}", want, false);
        snprintf(want, sizeof(want), "%lld", (long long)ok);
        expect_ids("{\"outcome\":\"succeeded\"}", want, false);
        snprintf(want, sizeof(want), "%lld %lld %lld", (long long)timed_out, (long long)killed,
                 (long long)failed);
        expect_ids("{\"outcome\":[\"failed\",\"killed\",\"timed-out\"]}", want, false);
        snprintf(want, sizeof(want), "%lld", (long long)timed_out);
        expect_ids("{\"outcome\":[\"failed\",\"killed\",\"timed-out\"],\"limit\":1}", want, true);
        expect_ids("{\"outcome\":\"cancelled\"}", "", false);
}
END_TEST

START_TEST(history_filters_by_since_the_end_of_a_run)
{
        json_object *first = run("{\"argv\":[\"true\"]}");
        json_object *second = run("{\"argv\":[\"true\"]}");
        char params[96], want[64];

        snprintf(params, sizeof(params), "{\"since\":%.17g}",
                 json_object_get_double(json_object_object_get(second, "ended")));
        snprintf(want, sizeof(want), "%lld", (long long)int_member(second, "id"));
        expect_ids(params, want, false);
        snprintf(params, sizeof(params), "{\"since\":%.17g}",
                 json_object_get_double(json_object_object_get(first, "ended")));
        snprintf(want, sizeof(want), "%lld %lld", (long long)int_member(second, "id"),
                 (long long)int_member(first, "id"));
        expect_ids(params, want, false);
        expect_ids("{\"since\":4102444800}", "", false); /* 2100 */
        json_object_put(first);
        json_object_put(second);
}
END_TEST

START_TEST(history_filters_by_owner)
{
        int64_t id = run_id("{\"argv\":[\"true\"]}");
        char params[64], want[32];

        /* The user instance's client is its daemon's user, an admin: any owner may be asked for. */
        snprintf(params, sizeof(params), "{\"owner\":%u}", (unsigned)getuid());
        snprintf(want, sizeof(want), "%lld", (long long)id);
        expect_ids(params, want, false);
        snprintf(params, sizeof(params), "{\"owner\":%u}", (unsigned)getuid() + 1);
        expect_ids(params, "", false);
}
END_TEST

START_TEST(history_limit_defaults_to_100_and_goes_up_to_10000)
{
        char line[128];
        int i;

        /* 101 runs of true, pipelined, then a wait for each. */
        for (i = 0; i < 101; i++) {
                snprintf(line, sizeof(line),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"submit\","
                         "\"params\":{\"argv\":[\"true\"]}}",
                         i + 1);
                client_send(fd, line);
        }
        for (i = 0; i < 101; i++)
                free(client_read_line(fd));
        for (i = 0; i < 101; i++)
                json_object_put(job_wait(fd, i + 1));
        {
                json_object *result = history(NULL);

                ck_assert_uint_eq(json_object_array_length(json_object_object_get(result, "runs")),
                                  100);
                ck_assert(more(result));
                json_object_put(result);
                result = history("{\"limit\":10000}");
                ck_assert_uint_eq(json_object_array_length(json_object_object_get(result, "runs")),
                                  101);
                ck_assert(!more(result));
                json_object_put(result);
        }
}
END_TEST

/* A call whose reply may be megabytes: read in large pieces (client_call reads a byte at a time).
 * One request at a time, on a connection without events, so the reply is all there is to read. */
static json_object *big_call(int conn, const char *method, const char *params)
{
        size_t len = 0, size = 1 << 16, n = strlen(method) + strlen(params) + 64;
        char *request = malloc(n), *line = malloc(size);
        json_object *reply;
        ssize_t got;

        ck_assert(request && line);
        snprintf(request, n, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\",\"params\":%s}",
                 method, params);
        client_send(conn, request);
        free(request);
        do {
                if (size - len < (1 << 16)) {
                        size *= 2;
                        line = realloc(line, size);
                        ck_assert_ptr_nonnull(line);
                }
                got = read(conn, line + len, size - len - 1);
                ck_assert_int_gt(got, 0);
                len += (size_t)got;
        } while (line[len - 1] != '\n');
        line[len] = '\0';
        reply = json_tokener_parse(line);
        ck_assert_msg(reply && reply_code(reply) == 0, "%s: %.200s", method, line);
        free(line);
        return reply;
}

START_TEST(history_pages_stop_near_4_mib_whatever_the_limit)
{
        size_t len = 65000, pages = 0, total = 0, n;
        char *params = malloc(len + 64), before[96] = "";
        json_object *reply, *result, *runs, *last;
        bool left;
        int i;

        /* 70 runs of a 65 kB command, about 4.4 MiB of records: sent at once (their writes
         * share commits), then waited for. */
        ck_assert_ptr_nonnull(params);
        for (i = 0; i < 70; i++) {
                int at = snprintf(params, len,
                                  "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"submit\","
                                  "\"params\":{\"command\":\"true ",
                                  i + 1);

                memset(params + at, 'x', len - (size_t)at);
                strcpy(params + len, "\"}}");
                client_send(fd, params);
        }
        for (i = 0; i < 70; i++)
                free(client_read_line(fd));
        for (i = 0; i < 70; i++) {
                char wait_params[64];

                snprintf(wait_params, sizeof(wait_params), "{\"id\":%d}", i + 1);
                json_object_put(big_call(fd, "wait", wait_params));
        }
        do {
                snprintf(params, len, "{\"limit\":10000%s}", before);
                reply = big_call(fd, "history", params);
                result = json_object_get(reply_result(reply));
                json_object_put(reply);
                runs = json_object_object_get(result, "runs");
                n = json_object_array_length(runs);
                ck_assert_uint_gt(n, 0);
                total += n;
                pages++;
                last = json_object_array_get_idx(runs, n - 1);
                snprintf(before, sizeof(before), ",\"before\":{\"id\":%lld,\"run\":1}",
                         (long long)int_member(last, "id"));
                left = more(result);
                json_object_put(result);
        } while (left && pages < 10);
        ck_assert_uint_eq(total, 70);
        ck_assert_uint_eq(pages, 2);
        free(params);
}
END_TEST

START_TEST(history_is_the_same_after_a_restart)
{
        json_object *before, *after;
        int status;

        json_object_put(run("{\"argv\":[\"true\"]}"));
        json_object_put(run("{\"argv\":[\"false\"]}"));
        json_object_put(run("{\"command\":\"exit 7\"}"));
        before = history(NULL);
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        daemon_start_again(&d, "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
        after = history(NULL);
        ck_assert_msg(json_object_equal(before, after), "%s\nafter a restart:\n%s",
                      json_object_to_json_string(before), json_object_to_json_string(after));
        json_object_put(before);
        json_object_put(after);
}
END_TEST

START_TEST(history_bad_params_are_invalid_and_change_nothing)
{
        static const char *const bad[] = {
            "{\"limit\":0}",
            "{\"limit\":10001}",
            "{\"limit\":-1}",
            "{\"limit\":\"5\"}",
            "{\"limit\":1.5}",
            "{\"before\":5}",
            "{\"before\":{}}",
            "{\"before\":{\"id\":1}}",
            "{\"before\":{\"id\":1,\"run\":1,\"x\":1}}",
            "{\"before\":{\"id\":0,\"run\":1}}",
            "{\"outcome\":\"ok\"}",
            "{\"outcome\":[]}",
            "{\"outcome\":[\"failed\",7]}",
            "{\"since\":-1}",
            "{\"since\":\"2h\"}",
            "{\"owner\":-1}",
            "{\"owner\":\"root\"}",
            "{\"who\":1}",
        };
        json_object *before, *after;
        size_t i;

        json_object_put(run("{\"argv\":[\"true\"]}"));
        before = history(NULL);
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                expect_code(bad[i], -32602);
        after = history(NULL);
        ck_assert(json_object_equal(before, after));
        json_object_put(before);
        json_object_put(after);
        expect_ids("{\"limit\":1,\"since\":0,\"outcome\":\"succeeded\"}", "1", false);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("history");
        TCase *tc = tcase_create("history");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, history_gives_the_records_wait_gave_newest_first);
        tcase_add_test(tc, history_of_a_new_daemon_is_empty);
        tcase_add_test(tc, history_pages_with_before_until_there_are_no_more);
        tcase_add_test(tc, history_before_tells_runs_of_one_job_apart);
        tcase_add_test(tc, history_filters_by_outcome);
        tcase_add_test(tc, history_filters_by_since_the_end_of_a_run);
        tcase_add_test(tc, history_filters_by_owner);
        tcase_add_test(tc, history_limit_defaults_to_100_and_goes_up_to_10000);
        tcase_add_test(tc, history_pages_stop_near_4_mib_whatever_the_limit);
        tcase_add_test(tc, history_is_the_same_after_a_restart);
        tcase_add_test(tc, history_bad_params_are_invalid_and_change_nothing);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
