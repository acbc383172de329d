/* SPDX-License-Identifier: MIT */
/*
 * Job flow over the socket: after and after_any, retries with back-off, recurring jobs (every,
 * cron), and what a restart does to each. The daemon runs with the test clock: back-offs, ticks
 * and timeouts come when the test moves its clocks (daemon_advance_clock), not by waiting; times
 * of the real clock are checked as lower bounds, or with a wide margin: the machines are shared.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;
static int fd;

static void setup(void)
{
        daemon_start_clocked(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
}

static void teardown(void)
{
        close(fd);
        daemon_stop(&d);
}

static double num_member(json_object *o, const char *name)
{
        json_object *v = json_object_object_get(o, name);

        ck_assert_msg(v && (json_object_is_type(v, json_type_double) ||
                            json_object_is_type(v, json_type_int)),
                      "no number \"%s\" in %s", name, json_object_to_json_string(o));
        return json_object_get_double(v);
}

static double now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Runs the pool holds back for their delay (stats): a run queued now would not be one. */
static int64_t delayed_runs(void)
{
        json_object *st = call_ok(fd, "stats", NULL);
        int64_t n = int_member(st, "delayed");

        json_object_put(st);
        return n;
}

/* Waits until n runs are held back for their delay (a retry is queued once the pool has let go
 * of the run before it). */
static void wait_delayed_runs(int64_t n)
{
        for (int i = 0; delayed_runs() != n; i++) {
                ck_assert_msg(i < 1000, "never %lld delayed runs", (long long)n);
                usleep(20 * 1000);
        }
}

/* submit with params made by a format: the new job's id. */
static int64_t submitf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int64_t submitf(const char *fmt, ...)
{
        char params[4096];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(params, sizeof(params), fmt, ap);
        va_end(ap);
        return job_submit(fd, params);
}

/* A submit that must fail: its error code, and the message must name `field`. */
static int submit_error(const char *params, const char *field)
{
        json_object *reply = client_call(fd, "submit", params), *err;
        int code = reply_code(reply);

        ck_assert_msg(code != 0, "submit %s succeeded", params);
        err = json_object_object_get(reply, "error");
        ck_assert_msg(strstr(str_member(err, "message"), field), "%s: \"%s\" does not name %s",
                      params, str_member(err, "message"), field);
        json_object_put(reply);
        return code;
}

/* The runs of job id in the history, oldest first (the caller puts the array). */
static json_object *runs_of(int64_t id)
{
        json_object *reply = client_call(fd, "history", "{\"limit\":1000}");
        json_object *runs = json_object_object_get(reply_result(reply), "runs");
        json_object *mine = json_object_new_array();

        for (size_t i = json_object_array_length(runs); i-- > 0;) {
                json_object *rec = json_object_array_get_idx(runs, i);

                if (int_member(rec, "id") == id)
                        json_object_array_add(mine, json_object_get(rec));
        }
        json_object_put(reply);
        return mine;
}

static void expect_outcome(int64_t id, const char *outcome)
{
        json_object *rec = job_wait(fd, id);

        ck_assert_msg(strcmp(str_member(rec, "outcome"), outcome) == 0, "job %lld: %s, not %s",
                      (long long)id, str_member(rec, "outcome"), outcome);
        json_object_put(rec);
}

START_TEST(a_chain_of_three_after_jobs_runs_in_order)
{
        char *gate = fifo_make(d.dir, "gate");
        int64_t a, b, c;
        json_object *ra, *rb, *rc;
        char *log;

        a = submitf("{\"command\":\"cat %s; echo a\"}", gate);
        b = submitf("{\"command\":\"echo b\",\"after\":[%lld]}", (long long)a);
        c = submitf("{\"command\":\"echo c\",\"after\":[%lld]}", (long long)b);
        /* Four threads are free, yet they wait. */
        ck_assert_str_eq(job_state_of(fd, b), "waiting");
        ck_assert_str_eq(job_state_of(fd, c), "waiting");
        fifo_release(gate);
        rc = job_wait(fd, c);
        ra = job_wait(fd, a);
        rb = job_wait(fd, b);
        ck_assert_str_eq(str_member(rc, "outcome"), "succeeded");
        ck_assert(num_member(rb, "started") >= num_member(ra, "ended"));
        ck_assert(num_member(rc, "started") >= num_member(rb, "ended"));
        log = job_log(fd, c);
        ck_assert_str_eq(log, "c\n");
        free(log);
        json_object_put(ra);
        json_object_put(rb);
        json_object_put(rc);
        free(gate);
}
END_TEST

START_TEST(a_waiting_jobs_status_lists_what_it_still_waits_for)
{
        char *g1 = fifo_make(d.dir, "g1"), *g2 = fifo_make(d.dir, "g2");
        int64_t a = submitf("{\"command\":\"cat %s\"}", g1);
        int64_t b = submitf("{\"command\":\"cat %s; exit 4\"}", g2);
        int64_t c = submitf("{\"command\":\"true\",\"after\":[%lld],\"after_any\":[%lld]}",
                            (long long)a, (long long)b);
        json_object *st = job_status(fd, c);

        ck_assert_str_eq(str_member(st, "state"), "waiting");
        ck_assert_str_eq(json_object_to_json_string(json_object_object_get(st, "after")), "[ 1 ]");
        ck_assert_str_eq(json_object_to_json_string(json_object_object_get(st, "after_any")),
                         "[ 2 ]");
        json_object_put(st);
        fifo_release(g1);
        expect_outcome(a, "succeeded");
        st = job_status(fd, c);
        ck_assert_str_eq(str_member(st, "state"), "waiting");
        ck_assert_str_eq(json_object_to_json_string(json_object_object_get(st, "after")), "[ ]");
        json_object_put(st);
        /* after_any: any outcome will do. */
        fifo_release(g2);
        expect_outcome(b, "failed");
        expect_outcome(c, "succeeded");
        free(g1);
        free(g2);
}
END_TEST

START_TEST(a_failed_dependency_ends_the_rest_as_dependency_failed_transitively)
{
        char *gate = fifo_make(d.dir, "gate");
        int64_t a = submitf("{\"command\":\"cat %s; exit 1\"}", gate);
        int64_t b = submitf("{\"command\":\"touch %s/b-ran\",\"after\":[%lld]}", d.dir, (long long)a);
        int64_t c = submitf("{\"command\":\"touch %s/c-ran\",\"after\":[%lld]}", d.dir, (long long)b);
        int64_t e = submitf("{\"command\":\"true\",\"after_any\":[%lld]}", (long long)c);
        json_object *rec;
        char path[PATH_MAX];

        fifo_release(gate);
        expect_outcome(a, "failed");
        rec = job_wait(fd, c);
        ck_assert_str_eq(str_member(rec, "outcome"), "dependency-failed");
        ck_assert(num_member(rec, "started") == 0); /* it never started */
        ck_assert(json_object_get_type(json_object_object_get(rec, "log")) == json_type_null);
        json_object_put(rec);
        expect_outcome(b, "dependency-failed");
        expect_outcome(e, "succeeded");
        snprintf(path, sizeof(path), "%s/b-ran", d.dir);
        ck_assert_int_ne(access(path, F_OK), 0);
        snprintf(path, sizeof(path), "%s/c-ran", d.dir);
        ck_assert_int_ne(access(path, F_OK), 0);
        free(gate);
}
END_TEST

START_TEST(a_dependency_that_already_ended_counts_by_its_recorded_outcome)
{
        int64_t ok = submitf("{\"command\":\"true\"}"), bad = submitf("{\"command\":\"false\"}");
        int64_t x, y;

        expect_outcome(ok, "succeeded");
        expect_outcome(bad, "failed");
        /* Both have left the tables: their records are in the history. */
        x = submitf("{\"command\":\"true\",\"after\":[%lld]}", (long long)ok);
        expect_outcome(x, "succeeded");
        y = submitf("{\"command\":\"true\",\"after\":[%lld,%lld]}", (long long)ok, (long long)bad);
        expect_outcome(y, "dependency-failed");
        y = submitf("{\"command\":\"true\",\"after_any\":[%lld]}", (long long)bad);
        expect_outcome(y, "succeeded");
}
END_TEST

START_TEST(an_unknown_id_and_a_cycle_are_refused_and_create_nothing)
{
        char *gate = fifo_make(d.dir, "gate");
        int64_t g = submitf("{\"command\":\"cat %s\"}", gate), a, b, next;
        json_object *st;

        ck_assert_int_eq(submit_error("{\"command\":\"true\",\"after\":[999]}", "after"), -32001);
        ck_assert_int_eq(submit_error("{\"command\":\"true\",\"after_any\":[1,999]}", "after_any"),
                         -32001);
        /* A waits for the gate, B for A; A may not then wait for B, nor for itself. */
        a = submitf("{\"command\":\"true\",\"key\":\"a\",\"after\":[%lld]}", (long long)g);
        b = submitf("{\"command\":\"true\",\"after\":[%lld]}", (long long)a);
        {
                char params[128];

                snprintf(params, sizeof(params),
                         "{\"command\":\"true\",\"key\":\"a\",\"after\":[%lld]}", (long long)b);
                ck_assert_int_eq(submit_error(params, "after"), -32602);
                snprintf(params, sizeof(params),
                         "{\"command\":\"true\",\"key\":\"a\",\"after_any\":[%lld]}", (long long)a);
                ck_assert_int_eq(submit_error(params, "after_any"), -32602);
        }
        st = job_status(fd, a);
        ck_assert_str_eq(json_object_to_json_string(json_object_object_get(st, "after")), "[ 1 ]");
        json_object_put(st);
        /* Nothing was made: ids go on from b. */
        next = submitf("{\"command\":\"true\"}");
        ck_assert_int_eq(next, b + 1);
        fifo_release(gate);
        expect_outcome(b, "succeeded");
        free(gate);
}
END_TEST

START_TEST(bad_flow_params_are_refused_naming_the_field)
{
        static const struct {
                const char *params, *field;
        } bad[] = {
            {"{\"command\":\"true\",\"after\":\"1\"}", "after"},
            {"{\"command\":\"true\",\"after\":[0]}", "after"},
            {"{\"command\":\"true\",\"after\":[-3]}", "after"},
            {"{\"command\":\"true\",\"after\":[1.5]}", "after"},
            {"{\"command\":\"true\",\"after\":[\"1\"]}", "after"},
            {"{\"command\":\"true\",\"after_any\":{}}", "after_any"},
            {"{\"command\":\"true\",\"retries\":1001}", "retries"},
            {"{\"command\":\"true\",\"retries\":-1}", "retries"},
            {"{\"command\":\"true\",\"retries\":\"2\"}", "retries"},
            {"{\"command\":\"true\",\"retry_delay\":-1}", "retry_delay"},
            {"{\"command\":\"true\",\"every\":0}", "every"},
            {"{\"command\":\"true\",\"every\":-5}", "every"},
            {"{\"command\":\"true\",\"cron\":\"* * * *\"}", "cron"},
            {"{\"command\":\"true\",\"cron\":\"60 * * * *\"}", "minute"},
            {"{\"command\":\"true\",\"cron\":\"* 24 * * *\"}", "hour"},
            {"{\"command\":\"true\",\"cron\":\"* * 32 * *\"}", "day-of-month"},
            {"{\"command\":\"true\",\"cron\":\"* * 0 * *\"}", "day-of-month"},
            {"{\"command\":\"true\",\"cron\":\"* * * 13 *\"}", "month"},
            {"{\"command\":\"true\",\"cron\":\"* * * * 8\"}", "day-of-week"},
            {"{\"command\":\"true\",\"cron\":\"*/0 * * * *\"}", "minute"},
            {"{\"command\":\"true\",\"cron\":\"1,,2 * * * *\"}", "minute"},
            {"{\"command\":\"true\",\"every\":5,\"cron\":\"* * * * *\"}", "cron"},
            {"{\"command\":\"true\",\"every\":5,\"after\":[1]}", "after"},
        };
        int64_t before = submitf("{\"command\":\"true\"}");

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_int_eq(submit_error(bad[i].params, bad[i].field), -32602);
        ck_assert_int_eq(submitf("{\"command\":\"true\"}"), before + 1);
}
END_TEST

/* A command that fails until its nth run (counted in a file of the daemon's folder). */
static int64_t submit_failing_until(int n, const char *extra)
{
        return submitf("{\"command\":\"n=$(cat %s/count 2>/dev/null || echo 0); n=$((n+1)); "
                       "echo $n >%s/count; [ $n -ge %d ]\"%s}",
                       d.dir, d.dir, n, extra);
}

static json_object *status_in_back_off(int64_t id, int64_t runs);

START_TEST(retries_run_a_failing_job_again_with_a_doubling_back_off)
{
        int64_t id = submit_failing_until(3, ",\"retries\":5,\"retry_delay\":600");
        json_object *rec, *runs;

        /* Each retry waits for its back-off by the daemon's clock, 600 s then 1200 s: not run
         * 10 s before, run once it has passed. */
        for (int run = 1; run <= 2; run++) {
                double back_off = run == 1 ? 600 : 1200;

                json_object_put(status_in_back_off(id, run));
                wait_delayed_runs(1);
                daemon_advance_clock(&d, back_off - 10);
                ck_assert_int_eq(delayed_runs(), 1);
                ck_assert_str_eq(job_state_of(fd, id), "pending");
                daemon_advance_clock(&d, 20);
                ck_assert_int_eq(delayed_runs(), 0);
        }
        rec = job_wait(fd, id);

        /* wait gives the last attempt. */
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "attempt"), 3);
        json_object_put(rec);
        runs = runs_of(id);
        ck_assert_uint_eq(json_object_array_length(runs), 3);
        for (int i = 0; i < 3; i++)
                ck_assert_int_eq(int_member(json_object_array_get_idx(runs, i), "attempt"), i + 1);
        ck_assert_str_eq(str_member(json_object_array_get_idx(runs, 0), "outcome"), "failed");
        ck_assert_str_eq(str_member(json_object_array_get_idx(runs, 1), "outcome"), "failed");
        /* 600 s, then 1200 s, by the daemon's clock. */
        ck_assert(num_member(json_object_array_get_idx(runs, 1), "started") -
                      num_member(json_object_array_get_idx(runs, 0), "ended") >=
                  599.9);
        ck_assert(num_member(json_object_array_get_idx(runs, 2), "started") -
                      num_member(json_object_array_get_idx(runs, 1), "ended") >=
                  1199.9);
        json_object_put(runs);
}
END_TEST

START_TEST(retries_end_when_spent_and_wait_gives_the_last_attempt)
{
        int64_t id = submitf("{\"command\":\"exit 3\",\"retries\":2,\"retry_delay\":0.05}");
        json_object *rec = job_wait(fd, id), *runs;

        ck_assert_str_eq(str_member(rec, "outcome"), "failed");
        ck_assert_int_eq(int_member(rec, "attempt"), 3);
        ck_assert_int_eq(int_member(rec, "run"), 3);
        json_object_put(rec);
        runs = runs_of(id);
        ck_assert_uint_eq(json_object_array_length(runs), 3);
        json_object_put(runs);
        /* A success is not retried. */
        id = submitf("{\"command\":\"true\",\"retries\":2}");
        expect_outcome(id, "succeeded");
        runs = runs_of(id);
        ck_assert_uint_eq(json_object_array_length(runs), 1);
        json_object_put(runs);
}
END_TEST

START_TEST(a_timed_out_run_is_retried_and_a_cancelled_one_is_not)
{
        int64_t id = submitf("{\"command\":\"sleep 30\",\"timeout\":600,\"retries\":1,"
                             "\"retry_delay\":0.05}");
        json_object *rec, *runs, *reply;

        /* Its timeout is up once the daemon's clock has passed it; its retry times out too. */
        job_wait_process(fd, id);
        daemon_advance_clock(&d, 601);
        for (int i = 0; int_member(rec = job_status(fd, id), "runs") < 2 ||
                        strcmp(str_member(rec, "state"), "running") != 0;
             i++) {
                ck_assert_msg(i < 1000, "no retry running after a timeout");
                json_object_put(rec);
                usleep(20 * 1000);
        }
        json_object_put(rec);
        daemon_advance_clock(&d, 601);
        rec = job_wait(fd, id);

        ck_assert_str_eq(str_member(rec, "outcome"), "timed-out");
        ck_assert_int_eq(int_member(rec, "attempt"), 2);
        json_object_put(rec);
        id = submitf("{\"command\":\"sleep 30\",\"retries\":5,\"retry_delay\":0.05,\"hold\":true}");
        job_wait_state(fd, id, "running");
        {
                char params[64];

                snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
                reply = client_call(fd, "cancel", params);
                ck_assert_int_eq(reply_code(reply), 0);
                json_object_put(reply);
        }
        expect_outcome(id, "cancelled");
        /* No retry comes: a planned one would be queued by the time the clock's move is
         * answered, and the job not idle. */
        daemon_advance_clock(&d, 3600);
        ck_assert_str_eq(job_state_of(fd, id), "idle");
        runs = runs_of(id);
        ck_assert_uint_eq(json_object_array_length(runs), 1);
        json_object_put(runs);
}
END_TEST

/* Polls the job's status until its attempt number runs has failed and a retry waits: the
 * status. */
static json_object *status_in_back_off(int64_t id, int64_t runs)
{
        for (int i = 0; i < 200; i++) {
                json_object *st = job_status(fd, id);

                if (int_member(st, "runs") == runs &&
                    strcmp(str_member(st, "state"), "pending") == 0)
                        return st;
                json_object_put(st);
                usleep(50 * 1000);
        }
        ck_abort_msg("job %lld never waited for a retry", (long long)id);
        return NULL;
}

START_TEST(a_job_in_back_off_shows_its_attempt_and_next_run_and_a_keyed_resubmit_coalesces)
{
        int64_t id = submitf("{\"command\":\"false\",\"key\":\"k\",\"retries\":3,"
                             "\"retry_delay\":60}");
        json_object *st = status_in_back_off(id, 1), *reply;
        double next = num_member(st, "next_run"), ended;

        ended = num_member(json_object_object_get(st, "last"), "ended");
        ck_assert_int_eq(int_member(st, "attempt"), 2);
        ck_assert(next >= ended + 59.9 && next <= ended + 60.5);
        json_object_put(st);
        reply = client_call(fd, "submit", "{\"command\":\"false\",\"key\":\"k\"}");
        ck_assert_int_eq(reply_code(reply), 0);
        ck_assert_int_eq(int_member(reply_result(reply), "id"), id);
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "coalesced")));
        json_object_put(reply);
        st = job_status(fd, id);
        ck_assert_int_eq(int_member(st, "runs"), 1);
        ck_assert_int_eq(int_member(st, "attempt"), 2);
        ck_assert(num_member(st, "next_run") == next);
        json_object_put(st);
        /* A cancel ends the back-off: no more attempts. */
        {
                char params[64];

                snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
                reply = client_call(fd, "cancel", params);
                ck_assert_int_eq(reply_code(reply), 0);
                ck_assert_str_eq(str_member(reply_result(reply), "state"), "idle");
                json_object_put(reply);
        }
        expect_outcome(id, "cancelled");
}
END_TEST

static int64_t runs_count(int64_t id)
{
        json_object *st = job_status(fd, id);
        int64_t n = int_member(st, "runs");

        json_object_put(st);
        return n;
}

static void crash_and_restart(void)
{
        int status;

        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
}

START_TEST(a_crash_keeps_a_waiting_dependency_a_retry_count_and_a_schedule)
{
        char *gate = fifo_make(d.dir, "gate");
        int64_t g = submitf("{\"command\":\"cat %s\"}", gate);
        int64_t w = submitf("{\"command\":\"true\",\"after\":[%lld]}", (long long)g);
        int64_t r = submitf("{\"command\":\"false\",\"retries\":3,\"retry_delay\":60}");
        int64_t s = submitf("{\"command\":\"true\",\"every\":3600}");
        int64_t p = submitf("{\"command\":\"true\",\"every\":2}"), p_runs;
        json_object *st = status_in_back_off(r, 1);
        double r_next = num_member(st, "next_run"), s_next, p_next;

        json_object_put(st);
        st = job_status(fd, s);
        s_next = num_member(st, "next_run");
        json_object_put(st);
        job_wait_state(fd, g, "running");
        while (runs_count(p) < 1)
                usleep(50 * 1000);
        /* Its first run has ended and that is on disk (as is all written before: r's retry). A
         * run whose start the crash kept from the disk would be run again under its number. */
        json_object_put(job_wait(fd, p));
        p_runs = runs_count(p);
        st = job_status(fd, p);
        p_next = num_member(st, "next_run");
        json_object_put(st);
        crash_and_restart();
        /* p misses two ticks (its next one and the one after), and the restart comes well before
         * the third (1.8 s later): the wall clock, which no event of a daemon that is down can
         * tell. */
        while (now() < p_next + 2 + 0.2)
                usleep(20 * 1000);
        daemon_start_again(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        fd = client_connect(d.sock);

        /* p runs once for all the ticks it missed. */
        for (int i = 0; i < 100 && runs_count(p) == p_runs; i++)
                usleep(20 * 1000);
        ck_assert_int_eq(runs_count(p), p_runs + 1);
        /* And no second one for the same ticks: an absence, by the clock. */
        usleep(300 * 1000);
        ck_assert_int_eq(runs_count(p), p_runs + 1);
        /* The retry keeps its attempt and its time; the schedule its next tick. */
        st = job_status(fd, r);
        ck_assert_str_eq(str_member(st, "state"), "pending");
        ck_assert_int_eq(int_member(st, "attempt"), 2);
        ck_assert(num_member(st, "next_run") == r_next);
        json_object_put(st);
        st = job_status(fd, s);
        ck_assert(num_member(st, "next_run") == s_next);
        ck_assert_int_eq(int_member(st, "handles"), 1);
        json_object_put(st);
        /* w still waits for g, whose cut run is queued again. */
        st = job_status(fd, w);
        ck_assert_str_eq(str_member(st, "state"), "waiting");
        json_object_put(st);
        fifo_release(gate);
        expect_outcome(g, "succeeded");
        expect_outcome(w, "succeeded");
        free(gate);
}
END_TEST

START_TEST(a_recurring_job_runs_at_each_tick_and_stops_when_released)
{
        int64_t id = submitf("{\"command\":\"true\",\"every\":60}");
        json_object *st = job_status(fd, id), *runs;
        double next = num_member(st, "next_run");
        char params[64];
        size_t n;

        /* Not run at submit: at its first tick, a period from now; kept like persist. */
        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_int_eq(int_member(st, "handles"), 1);
        ck_assert(next > now() && next < now() + 60.5);
        json_object_put(st);
        /* Its first two ticks: each run starts at its tick, never before it (the clock moved
         * short of it runs nothing). */
        for (int tick = 0; tick < 2; tick++) {
                daemon_advance_clock(&d, tick == 0 ? 59 : 55);
                ck_assert_str_eq(job_state_of(fd, id), "idle");
                daemon_advance_clock(&d, tick == 0 ? 1.5 : 5.5);
                json_object_put(job_wait(fd, id));
                runs = runs_of(id);
                ck_assert_uint_eq(json_object_array_length(runs), (size_t)tick + 1);
                ck_assert(num_member(json_object_array_get_idx(runs, tick), "started") >=
                          next + 60 * tick);
                json_object_put(runs);
        }
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        st = client_call(fd, "release", params);
        ck_assert_int_eq(reply_code(st), 0);
        json_object_put(st);
        /* Two periods later no tick has queued a run: one would be by the time the clock's move is
         * answered. */
        daemon_advance_clock(&d, 120);
        st = job_status(fd, id);
        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_int_eq(int_member(st, "runs"), 2);
        json_object_put(st);
        runs = runs_of(id);
        n = json_object_array_length(runs);
        ck_assert_uint_eq(n, 2);
        json_object_put(runs);
}
END_TEST

START_TEST(a_tick_while_the_job_runs_makes_one_more_run_after_never_a_pile)
{
        char *gate = fifo_make(d.dir, "gate");
        int64_t id = submitf("{\"command\":\"cat %s\",\"every\":60}", gate);
        json_object *runs, *reply;
        char params[64];
        size_t n;

        /* Its first tick starts a run that lasts until the gate opens; three more ticks come
         * while it runs. */
        daemon_advance_clock(&d, 60.5);
        job_wait_state(fd, id, "running");
        for (int i = 0; i < 3; i++)
                daemon_advance_clock(&d, 60);
        /* The run ends; the one more run after it starts, and ends. */
        fifo_release(gate);
        for (int i = 0; json_object_array_length(runs = runs_of(id)) < 1; i++) {
                ck_assert_msg(i < 1000, "the first run never ended");
                json_object_put(runs);
                usleep(20 * 1000);
        }
        json_object_put(runs);
        fifo_release(gate);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        reply = client_call(fd, "release", params);
        json_object_put(reply);
        json_object_put(job_wait(fd, id));
        runs = runs_of(id);
        n = json_object_array_length(runs);
        /* Runs back to back, never two at once, never queued up (a third would wait at the gate,
         * and the wait with it). */
        ck_assert_msg(n == 2, "%zu runs", n);
        for (size_t i = 1; i < n; i++)
                ck_assert(num_member(json_object_array_get_idx(runs, i), "started") >=
                          num_member(json_object_array_get_idx(runs, i - 1), "ended"));
        json_object_put(runs);
        free(gate);
}
END_TEST

START_TEST(a_cron_job_is_kept_and_ticks_at_its_next_match)
{
        int64_t id = submitf("{\"command\":\"true\",\"cron\":\"*/5 * * * *\"}");
        json_object *st = job_status(fd, id);
        double next = num_member(st, "next_run");

        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_int_eq(int_member(st, "handles"), 1);
        ck_assert_str_eq(str_member(st, "cron"), "*/5 * * * *");
        /* The next minute that is a multiple of 5 (zones are whole quarter hours here). */
        ck_assert(next > now() && next <= now() + 300);
        ck_assert_int_eq((long long)next % 300, 0);
        json_object_put(st);
}
END_TEST

/* The first local midnight after `after` in the zone the test and its daemon share, on a day
 * that `day` takes (found by walking the days, apart from the daemon's cron code). */
static double next_local_midnight(double after, bool (*day)(const struct tm *tm))
{
        time_t t = (time_t)after, m;
        struct tm tm;

        ck_assert_ptr_nonnull(localtime_r(&t, &tm));
        for (int i = 0; i < 800; i++, tm.tm_mday++) {
                tm.tm_hour = tm.tm_min = tm.tm_sec = 0;
                tm.tm_isdst = -1;
                m = mktime(&tm);
                if ((double)m > after && (!day || day(&tm)))
                        return (double)m;
        }
        ck_abort_msg("no midnight in 800 days");
        return 0;
}

static bool weekday_in_january(const struct tm *tm)
{
        return tm->tm_mon == 0 && tm->tm_wday >= 1 && tm->tm_wday <= 5;
}

/* next_run of a cron job submitted between t0 and t1: the expected time after t0, or after t1
 * when a match passed in between. */
static void next_run_is(int64_t id, double t0, double t1, bool (*day)(const struct tm *tm))
{
        json_object *st = job_status(fd, id);
        double next = num_member(st, "next_run");

        ck_assert_msg(next == next_local_midnight(t0, day) || next == next_local_midnight(t1, day),
                      "job %lld: next_run %.3f", (long long)id, next);
        json_object_put(st);
}

/* The @ forms and names of Vixie cron, in a zone with daylight saving time: accepted, kept as
 * written (also over a restart), with next_run the next match; @reboot and an unknown name are
 * refused with -32602 saying why, and make nothing. */
START_TEST(cron_takes_at_forms_and_names_and_refuses_reboot)
{
        const char *old_tz = getenv("TZ");
        char *saved = old_tz ? strdup(old_tz) : NULL;
        int64_t daily, january, after;
        double t0, t1;
        json_object *st;

        close(fd);
        daemon_stop(&d);
        ck_assert_int_eq(setenv("TZ", "America/New_York", 1), 0);
        tzset();
        daemon_start_clocked(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        t0 = now();
        daily = submitf("{\"command\":\"true\",\"cron\":\"@daily\"}");
        january = submitf("{\"command\":\"true\",\"cron\":\"0 0 * jan mon-fri\"}");
        t1 = now();
        next_run_is(daily, t0, t1, NULL);
        next_run_is(january, t0, t1, weekday_in_january);
        ck_assert_int_eq(submit_error("{\"command\":\"true\",\"cron\":\"@reboot\"}",
                                      "\"cron\": @reboot is not supported"),
                         -32602);
        ck_assert_int_eq(submit_error("{\"command\":\"true\",\"cron\":\"0 0 * * funday\"}",
                                      "\"cron\": day-of-week: unknown name \"funday\" (sun-sat)"),
                         -32602);
        ck_assert_int_eq(submit_error("{\"command\":\"true\",\"cron\":\"0 0 * * mon-\"}",
                                      "\"cron\": day-of-week: bad range \"mon-\""),
                         -32602);
        after = submitf("{\"command\":\"true\"}");
        ck_assert_int_eq(after, january + 1);
        /* Kept as written, and read again at start after a crash. */
        close(fd);
        daemon_kill_hard(&d);
        daemon_start_again(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        st = job_status(fd, daily);
        ck_assert_str_eq(str_member(st, "cron"), "@daily");
        json_object_put(st);
        st = job_status(fd, january);
        ck_assert_str_eq(str_member(st, "cron"), "0 0 * jan mon-fri");
        json_object_put(st);
        next_run_is(daily, t0, now(), NULL);
        next_run_is(january, t0, now(), weekday_in_january);
        if (saved)
                setenv("TZ", saved, 1);
        else
                unsetenv("TZ");
        tzset();
        free(saved);
}
END_TEST

START_TEST(a_stop_keeps_a_retry_planned_during_it_and_a_job_waiting_for_a_cut_run)
{
        int64_t b, w, r;
        json_object *st;
        char *gate;
        int status;

        close(fd);
        daemon_stop(&d);
        daemon_start(&d, "--stop-timeout", "2", NULL);
        fd = client_connect(d.sock);
        gate = fifo_make(d.dir, "gate");
        b = submitf("{\"command\":\"sleep 30\"}");
        w = submitf("{\"command\":\"true\",\"after_any\":[%lld]}", (long long)b);
        r = submitf("{\"command\":\"cat %s; exit 1\",\"retries\":3,\"retry_delay\":60}", gate);
        job_wait_state(fd, r, "running");
        /* r fails while the daemon stops (waiting for b up to stop-timeout, the real clock's,
         * then cutting it). */
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        fifo_release(gate);
        free(gate);
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "slowworkd ended with %#x",
                      status);
        daemon_start_again(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        st = job_status(fd, r);
        ck_assert_str_eq(str_member(st, "state"), "pending");
        ck_assert_int_eq(int_member(st, "attempt"), 2);
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "failed");
        json_object_put(st);
        /* b's cut run is no end: w waits for its run again. */
        st = job_status(fd, w);
        ck_assert_str_eq(str_member(st, "state"), "waiting");
        json_object_put(st);
        {
                char params[64];

                snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)b);
                json_object_put(client_call(fd, "cancel", params));
        }
        expect_outcome(w, "succeeded");
}
END_TEST

START_TEST(a_recurring_jobs_retry_keeps_its_ticks)
{
        int64_t id = submitf("{\"command\":\"false\",\"every\":60,\"retries\":1,"
                             "\"retry_delay\":30}");
        json_object *st = job_status(fd, id);
        double first = num_member(st, "next_run");

        json_object_put(st);
        daemon_advance_clock(&d, 60.5);
        st = status_in_back_off(id, 1);
        /* next_run is still the next tick, on the grid of every 60 s. */
        ck_assert_int_eq(int_member(st, "attempt"), 2);
        ck_assert(num_member(st, "next_run") == first + 60);
        json_object_put(st);
}
END_TEST

START_TEST(a_recurring_job_released_before_its_first_tick_ends_the_jobs_waiting_for_it)
{
        int64_t rec = submitf("{\"command\":\"true\",\"every\":3600}");
        int64_t w = submitf("{\"command\":\"true\",\"after\":[%lld]}", (long long)rec);
        int64_t any = submitf("{\"command\":\"true\",\"after_any\":[%lld]}", (long long)rec);
        char params[64];
        json_object *reply;

        ck_assert_str_eq(job_state_of(fd, w), "waiting");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)rec);
        reply = client_call(fd, "release", params);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        expect_outcome(w, "dependency-failed");
        expect_outcome(any, "succeeded");
}
END_TEST

/* The test hook on the clocks answers only an advance, and no job sees it. */
START_TEST(the_test_clock_answers_an_advance_only_and_stays_out_of_the_jobs)
{
        static const char *const wrong[] = {"advance -1", "advance x", "advance 1 2", "back 5", ""};
        int64_t id;
        char *line;

        for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
                client_send(d.clock_fd, wrong[i]);
                line = client_read_line(d.clock_fd);
                ck_assert_msg(line && strcmp(line, "unknown") == 0, "\"%s\": %s", wrong[i],
                              line ? line : "no answer");
                free(line);
        }
        daemon_advance_clock(&d, 0);
        id = submitf("{\"command\":\"echo ${SLOWWORKD_TEST_CLOCK_FD-none}; "
                     "ls -l /proc/$$/fd | grep -c socket; true\"}");
        expect_outcome(id, "succeeded");
        line = job_log(fd, id);
        ck_assert_str_eq(line, "none\n0\n");
        free(line);
}
END_TEST

/* What the variable names must be an open socket, or the daemon does not start. */
START_TEST(a_test_clock_that_is_not_a_socket_is_refused)
{
        static const char *const wrong[] = {"1", "x", "999", ""};
        char sock[PATH_MAX + 8];
        char *err;

        snprintf(sock, sizeof(sock), "%s/other", d.dir);
        for (size_t i = 0; i < sizeof(wrong) / sizeof(wrong[0]); i++) {
                ck_assert_int_eq(setenv("SLOWWORKD_TEST_CLOCK_FD", wrong[i], 1), 0);
                ck_assert_int_eq(
                    daemon_run_stderr(&err, "--socket", sock, "--state-dir", d.dir, NULL), 2);
                unsetenv("SLOWWORKD_TEST_CLOCK_FD");
                ck_assert_msg(strstr(err, "SLOWWORKD_TEST_CLOCK_FD"), "%s", err);
                free(err);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("flow");
        TCase *tc = tcase_create("flow");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, a_chain_of_three_after_jobs_runs_in_order);
        tcase_add_test(tc, a_waiting_jobs_status_lists_what_it_still_waits_for);
        tcase_add_test(tc, a_failed_dependency_ends_the_rest_as_dependency_failed_transitively);
        tcase_add_test(tc, a_dependency_that_already_ended_counts_by_its_recorded_outcome);
        tcase_add_test(tc, an_unknown_id_and_a_cycle_are_refused_and_create_nothing);
        tcase_add_test(tc, bad_flow_params_are_refused_naming_the_field);
        tcase_add_test(tc, retries_run_a_failing_job_again_with_a_doubling_back_off);
        tcase_add_test(tc, retries_end_when_spent_and_wait_gives_the_last_attempt);
        tcase_add_test(tc, a_timed_out_run_is_retried_and_a_cancelled_one_is_not);
        tcase_add_test(tc, a_job_in_back_off_shows_its_attempt_and_next_run_and_a_keyed_resubmit_coalesces);
        tcase_add_test(tc, a_recurring_job_runs_at_each_tick_and_stops_when_released);
        tcase_add_test(tc, a_tick_while_the_job_runs_makes_one_more_run_after_never_a_pile);
        tcase_add_test(tc, a_cron_job_is_kept_and_ticks_at_its_next_match);
        tcase_add_test(tc, cron_takes_at_forms_and_names_and_refuses_reboot);
        tcase_add_test(tc, a_crash_keeps_a_waiting_dependency_a_retry_count_and_a_schedule);
        tcase_add_test(tc, a_stop_keeps_a_retry_planned_during_it_and_a_job_waiting_for_a_cut_run);
        tcase_add_test(tc, a_recurring_jobs_retry_keeps_its_ticks);
        tcase_add_test(tc, a_recurring_job_released_before_its_first_tick_ends_the_jobs_waiting_for_it);
        tcase_add_test(tc, the_test_clock_answers_an_advance_only_and_stays_out_of_the_jobs);
        tcase_add_test(tc, a_test_clock_that_is_not_a_socket_is_refused);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
