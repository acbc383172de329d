/* SPDX-License-Identifier: MIT */
/*
 * Per-user limits over the socket, in a user instance (every job is the test's uid):
 * max-queued-per-user refuses submits, max-running-per-user holds runs back. The same limits
 * between users of the system instance are in test-system.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;

static double double_member(json_object *o, const char *name)
{
        return json_object_get_double(json_object_object_get(o, name));
}

static void set_setting(int fd, const char *name, int64_t value)
{
        char params[128];

        snprintf(params, sizeof(params), "{\"%s\":%lld}", name, (long long)value);
        json_object_put(call_ok(fd, "settings.set", params));
}

static int64_t stat_of(int fd, const char *name)
{
        json_object *st = call_ok(fd, "stats", NULL);
        int64_t v = int_member(st, name);

        json_object_put(st);
        return v;
}

/* Waits (20 s at most) for stats to show n runs held back by max-running-per-user. */
static void wait_held(int fd, int64_t n)
{
        int64_t now = -1;

        for (int i = 0; i < 2000 && (now = stat_of(fd, "waiting_for_turn")) != n; i++)
                usleep(10 * 1000);
        ck_assert_msg(now == n, "%lld runs held back, not %lld", (long long)now, (long long)n);
}

/* A job still pending that never started a run. */
static void assert_not_started(int fd, int64_t id)
{
        json_object *st = job_status(fd, id);

        ck_assert_str_eq(str_member(st, "state"), "pending");
        ck_assert_int_eq(int_member(st, "runs"), 0);
        json_object_put(st);
}

/* A job that runs until its gate (*ret_gate, a FIFO named name in the daemon's folder) is
 * released. */
static int64_t submit_gated(int fd, const char *name, char **ret_gate)
{
        char params[PATH_MAX + 64];

        *ret_gate = fifo_make(d.dir, name);
        snprintf(params, sizeof(params), "{\"command\":\"cat %s\"}", *ret_gate);
        return job_submit(fd, params);
}

static int64_t runs_of(int fd, int64_t id)
{
        json_object *st = job_status(fd, id);
        int64_t runs = int_member(st, "runs");

        json_object_put(st);
        return runs;
}

static void assert_outcome(int fd, int64_t id, const char *outcome)
{
        json_object *rec = job_wait(fd, id);

        ck_assert_str_eq(str_member(rec, "outcome"), outcome);
        json_object_put(rec);
}

/*
 * The queued limit counts the jobs pending (queued, delayed, held back) or waiting for others:
 * one more is refused busy, naming the limit and the count, without using up an id; a keyed
 * resubmit that coalesces is taken; once jobs have run, submits are taken again.
 */
START_TEST(submits_beyond_max_queued_per_user_are_refused_busy)
{
        char params[128], msg[256], want[256];
        json_object *r;
        int64_t gate_id, keyed, last;
        char *gate;
        int fd;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", "--max-queued-per-user", "3",
                     NULL);
        fd = client_connect(d.sock);
        /* Running: not queued. */
        gate_id = submit_gated(fd, "gate", &gate);
        job_wait_state(fd, gate_id, "running");
        keyed = job_submit(fd, "{\"command\":\"true\",\"key\":\"k\"}");
        snprintf(params, sizeof(params), "{\"command\":\"true\",\"after\":[%lld]}",
                 (long long)gate_id);
        job_submit(fd, params); /* waiting */
        last = job_submit(fd, "{\"command\":\"true\",\"delay\":0.2}");

        snprintf(want, sizeof(want), "user %u has 3 jobs queued: max-queued-per-user is 3",
                 (unsigned)getuid());
        ck_assert_int_eq(call_error(fd, "submit", "{\"command\":\"true\"}", msg, sizeof(msg)),
                         -32004);
        ck_assert_str_eq(msg, want);
        ck_assert_int_eq(
            call_error(fd, "submit", "{\"command\":\"true\",\"key\":\"new\"}", msg, sizeof(msg)),
            -32004);
        ck_assert_str_eq(msg, want);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)last + 1);
        ck_assert_int_eq(call_error(fd, "status", params, msg, sizeof(msg)), -32001);
        /* Coalesced: nothing more is queued. */
        r = call_ok(fd, "submit", "{\"command\":\"true\",\"key\":\"k\"}");
        ck_assert_int_eq(int_member(r, "id"), keyed);
        ck_assert(json_object_get_boolean(json_object_object_get(r, "coalesced")));
        json_object_put(r);

        fifo_release(gate);
        assert_outcome(fd, last, "succeeded");
        /* The id the refusals did not use. */
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\"}"), last + 1);
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* An idle job kept by a handle adds one queued when it is queued again: refused at the limit. */
START_TEST(queuing_an_idle_job_again_counts_against_the_limit)
{
        char params[128], msg[256];
        int64_t kept, gate_id;
        char *gate;
        int fd;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        kept = job_submit(fd, "{\"command\":\"true\",\"key\":\"kept\",\"persist\":true}");
        assert_outcome(fd, kept, "succeeded");
        gate_id = submit_gated(fd, "gate", &gate);
        job_wait_state(fd, gate_id, "running");
        job_submit(fd, "{\"command\":\"true\"}");
        set_setting(fd, "max-queued-per-user", 1);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)kept);
        ck_assert_int_eq(call_error(fd, "enqueue", params, msg, sizeof(msg)), -32004);
        ck_assert_int_eq(
            call_error(fd, "submit", "{\"command\":\"true\",\"key\":\"kept\"}", msg, sizeof(msg)),
            -32004);
        ck_assert_str_eq(job_state_of(fd, kept), "idle");
        /* 0: no limit. */
        set_setting(fd, "max-queued-per-user", 0);
        json_object_put(call_ok(fd, "enqueue", params));
        fifo_release(gate);
        json_object_put(job_wait(fd, kept));
        ck_assert_int_eq(runs_of(fd, kept), 2);
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Lines "s" and "e" the jobs appended as they started and ended: the most at once. */
static int most_at_once(const char *path)
{
        FILE *f = fopen(path, "r");
        int now = 0, most = 0, c;

        ck_assert_ptr_nonnull(f);
        while ((c = fgetc(f)) != EOF) {
                if (c == 's' && ++now > most)
                        most = now;
                else if (c == 'e')
                        now--;
        }
        fclose(f);
        ck_assert_int_eq(now, 0);
        return most;
}

/* The runs that have started so far (their "s" lines). */
static int starts(const char *path)
{
        FILE *f = fopen(path, "r");
        int n = 0, c;

        while (f && (c = fgetc(f)) != EOF)
                n += c == 's';
        if (f)
                fclose(f);
        return n;
}

/* Twelve jobs on four threads with max-running-per-user 2: never more than two run at once. */
START_TEST(max_running_per_user_caps_a_users_runs_at_once)
{
        char path[PATH_MAX], go[PATH_MAX], params[3 * PATH_MAX + 128];
        int64_t ids[12];
        int fd;

        daemon_start(&d, "--min-threads", "4", "--max-threads", "4", "--max-running-per-user", "2",
                     NULL);
        fd = client_connect(d.sock);
        snprintf(path, sizeof(path), "%s/runs", d.dir);
        /* They run until the file go is there: two run, the ten others are held back. */
        snprintf(go, sizeof(go), "%s/go", d.dir);
        snprintf(params, sizeof(params),
                 "{\"command\":\"echo s >>%s; while [ ! -e %s ]; do sleep 0.01; done; "
                 "echo e >>%s\"}",
                 path, go, path);
        for (int i = 0; i < 12; i++)
                ids[i] = job_submit(fd, params);
        wait_held(fd, 10);
        /* The two that took a slot have started (a slot is taken a moment before the run). */
        for (int i = 0; starts(path) < 2; i++) {
                ck_assert_msg(i < 4000, "the two runs did not start in 20 s");
                usleep(5000);
        }
        ck_assert_int_eq(close(open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)), 0);
        for (int i = 0; i < 12; i++)
                assert_outcome(fd, ids[i], "succeeded");
        ck_assert_int_eq(most_at_once(path), 2);
        ck_assert_int_eq(stat_of(fd, "waiting_for_turn"), 0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Raised, the limit lets held runs start, oldest first; 0 lets them all; lowered, no run of the
 * user starts until fewer than it run. */
START_TEST(the_running_limit_changes_at_run_time)
{
        char *gates[3], name[16];
        int64_t ids[3], late;
        int fd;

        daemon_start(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        set_setting(fd, "max-running-per-user", 1);
        for (int i = 0; i < 3; i++) {
                snprintf(name, sizeof(name), "gate%d", i);
                ids[i] = submit_gated(fd, name, &gates[i]);
        }
        job_wait_state(fd, ids[0], "running");
        wait_held(fd, 2);
        assert_not_started(fd, ids[1]);
        assert_not_started(fd, ids[2]);

        set_setting(fd, "max-running-per-user", 2);
        job_wait_state(fd, ids[1], "running");
        wait_held(fd, 1);
        assert_not_started(fd, ids[2]);
        set_setting(fd, "max-running-per-user", 0);
        job_wait_state(fd, ids[2], "running");
        wait_held(fd, 0);

        set_setting(fd, "max-running-per-user", 1);
        late = job_submit(fd, "{\"command\":\"true\"}");
        wait_held(fd, 1);
        fifo_release(gates[0]);
        assert_outcome(fd, ids[0], "succeeded");
        fifo_release(gates[1]);
        assert_outcome(fd, ids[1], "succeeded");
        /* One runs, as many as the limit: late does not start, an absence, which no event
         * shows, so by the clock. */
        usleep(300 * 1000);
        assert_not_started(fd, late);
        fifo_release(gates[2]);
        assert_outcome(fd, late, "succeeded");
        for (int i = 0; i < 3; i++)
                free(gates[i]);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* A held run is pending: a cancel answers at once, a restart queues it again (the kept limit
 * holds it back again), and it runs when its turn comes. */
/* Which of the two runs: a, or b (waiting 20 s at most for one to). */
static int64_t running_first(int fd, int64_t a, int64_t b)
{
        for (int i = 0; i < 2000; i++) {
                if (strcmp(job_state_of(fd, a), "running") == 0)
                        return a;
                if (strcmp(job_state_of(fd, b), "running") == 0)
                        return b;
                usleep(10 * 1000);
        }
        ck_abort_msg("neither job %lld nor %lld runs", (long long)a, (long long)b);
        return -1;
}

START_TEST(held_runs_cancel_at_once_and_survive_a_restart)
{
        json_object *r, *rec;
        int64_t gate_id, kept, cancelled;
        char params[64];
        char *gate, *kept_gate;
        bool gate_first;
        int fd;

        daemon_start(&d, "--min-threads", "4", "--max-threads", "4", "--stop-timeout", "0.2", NULL);
        fd = client_connect(d.sock);
        set_setting(fd, "max-running-per-user", 1);
        gate_id = submit_gated(fd, "gate", &gate);
        job_wait_state(fd, gate_id, "running");
        kept = submit_gated(fd, "kept", &kept_gate);
        cancelled = job_submit(fd, "{\"command\":\"true\"}");
        wait_held(fd, 2);

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)cancelled);
        r = call_ok(fd, "cancel", params);
        ck_assert_int_eq(int_member(r, "id"), cancelled);
        ck_assert_str_eq(str_member(r, "state"), "idle");
        json_object_put(r);
        rec = job_wait(fd, cancelled);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        ck_assert(double_member(rec, "started") == 0);
        json_object_put(rec);
        wait_held(fd, 1);
        close(fd);

        daemon_stop_clean(&d);
        daemon_start_again(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        /* Both are queued again: one runs first (either: two threads may take them at once),
         * the other is held until it ends. */
        wait_held(fd, 1);
        gate_first = running_first(fd, gate_id, kept) == gate_id;
        fifo_release(gate_first ? gate : kept_gate);
        fifo_release(gate_first ? kept_gate : gate);
        assert_outcome(fd, gate_id, "succeeded");
        rec = job_wait(fd, kept);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "run"), 1);
        json_object_put(rec);
        free(gate);
        free(kept_gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Coalescing and a pause work with held runs: a keyed resubmit of a held run coalesces; paused,
 * a run given its turn waits for the resume. */
START_TEST(a_held_run_coalesces_and_waits_for_a_resume)
{
        json_object *r;
        int64_t gate_id, keyed;
        char *gate;
        int fd;

        daemon_start(&d, "--min-threads", "4", "--max-threads", "4", "--max-running-per-user", "1",
                     NULL);
        fd = client_connect(d.sock);
        gate_id = submit_gated(fd, "gate", &gate);
        job_wait_state(fd, gate_id, "running");
        keyed = job_submit(fd, "{\"command\":\"true\",\"key\":\"k\"}");
        wait_held(fd, 1);
        r = call_ok(fd, "submit", "{\"command\":\"true\",\"key\":\"k\"}");
        ck_assert_int_eq(int_member(r, "id"), keyed);
        ck_assert(json_object_get_boolean(json_object_object_get(r, "coalesced")));
        json_object_put(r);

        json_object_put(call_ok(fd, "pause", NULL));
        fifo_release(gate);
        assert_outcome(fd, gate_id, "succeeded");
        /* Paused, keyed does not start once its turn came: an absence, which no event shows, so
         * by the clock. */
        usleep(300 * 1000);
        assert_not_started(fd, keyed);
        json_object_put(call_ok(fd, "resume", NULL));
        assert_outcome(fd, keyed, "succeeded");
        ck_assert_int_eq(runs_of(fd, keyed), 1);
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* A user's runs held back by max-running-per-user go highest priority first, then oldest. */
START_TEST(held_runs_go_by_priority_then_age)
{
        const int prio[] = {0, 5, -1, 5};
        char params[PATH_MAX + 128], order[PATH_MAX], got[8] = "", line[8];
        int64_t gate_id, ids[4];
        size_t n = 0;
        char *gate;
        FILE *f;
        int fd;

        daemon_start(&d, "--min-threads", "4", "--max-threads", "4", "--max-running-per-user", "1",
                     NULL);
        fd = client_connect(d.sock);
        snprintf(order, sizeof(order), "%s/order", d.dir);
        gate_id = submit_gated(fd, "gate", &gate);
        job_wait_state(fd, gate_id, "running");
        for (int i = 0; i < 4; i++) {
                snprintf(params, sizeof(params), "{\"command\":\"echo %c >> %s\",\"priority\":%d}",
                         'A' + i, order, prio[i]);
                ids[i] = job_submit(fd, params);
        }
        wait_held(fd, 4);
        fifo_release(gate);
        for (int i = 0; i < 4; i++)
                assert_outcome(fd, ids[i], "succeeded");
        f = fopen(order, "r");
        ck_assert_ptr_nonnull(f);
        while (n + 1 < sizeof(got) && fgets(line, sizeof(line), f))
                got[n++] = line[0];
        fclose(f);
        ck_assert_str_eq(got, "BDAC");
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("user-limits");
        TCase *tc = tcase_create("user-limits");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, submits_beyond_max_queued_per_user_are_refused_busy);
        tcase_add_test(tc, queuing_an_idle_job_again_counts_against_the_limit);
        tcase_add_test(tc, max_running_per_user_caps_a_users_runs_at_once);
        tcase_add_test(tc, the_running_limit_changes_at_run_time);
        tcase_add_test(tc, held_runs_cancel_at_once_and_survive_a_restart);
        tcase_add_test(tc, a_held_run_coalesces_and_waits_for_a_resume);
        tcase_add_test(tc, held_runs_go_by_priority_then_age);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
