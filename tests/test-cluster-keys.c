/* SPDX-License-Identifier: MIT */
/* Keys across the nodes of one PostgreSQL schema: a submit on one node coalesces into, or asks
 * for one more run of, the key's job on another; a key never runs twice at once. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster-helpers.h"
#include "run-suite.h"

static struct cluster c;

static void teardown(void)
{
        cluster_free(&c);
}

/* The params of a submit of the command, under key k if keyed, with more members (",..." or
 * ""; the caller frees them). */
static char *job_params(bool keyed, const char *more, const char *fmt, ...)
{
        json_object *o = json_object_new_object();
        va_list ap;
        char *command, *params;

        va_start(ap, fmt);
        ck_assert_int_ge(vasprintf(&command, fmt, ap), 0);
        va_end(ap);
        json_object_object_add(o, "command", json_object_new_string(command));
        if (keyed)
                json_object_object_add(o, "key", json_object_new_string("k"));
        params = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        ck_assert_ptr_nonnull(params);
        if (*more) {
                char *with;

                params[strlen(params) - 1] = '\0';
                ck_assert_int_ge(asprintf(&with, "%s%s}", params, more), 0);
                free(params);
                params = with;
        }
        json_object_put(o);
        free(command);
        return params;
}

#define GATED "echo start >>%1$s/runs; " WAIT_FOR_FILE " %1$s/go"

/* A keyed job that notes its start in the file runs, and ends once the file go exists. */
static char *gated_job(const char *more)
{
        return job_params(true, more, GATED, c.dir);
}

static int runs_noted(void)
{
        char *path = cluster_path(&c, "runs");
        int n = count_line(path, "start");

        free(path);
        return n;
}

/* A call to node k that must fail: its code, its message in msg. */
static int call_fails(int k, const char *method, const char *params, char *msg, size_t len)
{
        int fd = cluster_connect(&c, k), code = call_error(fd, method, params, msg, len);

        close(fd);
        return code;
}

/* Node k's run records of job id, once it has ended: the last one's outcome must be ok. */
static void wait_job(int k, int64_t id)
{
        int fd = cluster_connect(&c, k);
        json_object *rec = job_wait(fd, id);

        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), c.name[k - 1]);
        json_object_put(rec);
        close(fd);
}

/* Until every node has renewed its lease (and so looked for asks) a few times. */
static void settle(void)
{
        cluster_wait_renewals(&c, 0, 3);
}

START_TEST(a_key_submitted_on_another_node_coalesces_into_its_pending_job)
{
        char *params;
        json_object *first, *second;

        cluster_init(&c, 2);
        cluster_start(&c);
        cluster_touch(&c, "go");
        json_object_put(cluster_call_ok(&c, 1, "pause", NULL));
        params = gated_job("");
        first = cluster_call_ok(&c, 1, "submit", params);
        ck_assert_str_eq(str_member(first, "state"), "pending");
        second = cluster_call_ok(&c, 2, "submit", params);
        ck_assert_int_eq(int_member(second, "id"), int_member(first, "id"));
        ck_assert_str_eq(str_member(second, "node"), "n1");
        ck_assert_str_eq(str_member(second, "state"), "pending");
        ck_assert(json_object_get_boolean(json_object_object_get(second, "coalesced")));
        ck_assert_int_eq(cluster_live_items(&c, 2), 0);

        json_object_put(cluster_call_ok(&c, 1, "resume", NULL));
        wait_job(1, int_member(first, "id"));
        settle();
        ck_assert_int_eq(runs_noted(), 1);
        ck_assert_int_eq(cluster_live_items(&c, 1), 0);
        json_object_put(first);
        json_object_put(second);
        free(params);
}
END_TEST

START_TEST(a_key_submitted_on_another_node_while_its_job_runs_there_runs_it_once_more_after)
{
        json_object *first, *again;
        char *params;
        int64_t id;

        cluster_init(&c, 2);
        cluster_start(&c);
        params = gated_job("");
        first = cluster_call_ok(&c, 1, "submit", params);
        id = int_member(first, "id");
        wait_for(runs_noted() == 1, 10, "job %lld did not start", (long long)id);
        for (int i = 0; i < 2; i++) {
                again = cluster_call_ok(&c, 2, "submit", params);
                ck_assert_int_eq(int_member(again, "id"), id);
                ck_assert_str_eq(str_member(again, "node"), "n1");
                ck_assert_str_eq(str_member(again, "state"), "running");
                ck_assert(json_object_get_boolean(json_object_object_get(again, "deferred")));
                json_object_put(again);
        }
        ck_assert_int_eq(runs_noted(), 1);
        cluster_touch(&c, "go");
        wait_job(1, id);
        settle();
        /* Twice asked while it ran: once more, on the node that holds it. */
        ck_assert_int_eq(runs_noted(), 2);
        ck_assert_int_eq(cluster_live_items(&c, 1) + cluster_live_items(&c, 2), 0);
        json_object_put(first);
        free(params);
}
END_TEST

START_TEST(a_persisted_idle_job_runs_again_when_its_key_is_submitted_on_another_node)
{
        json_object *first, *second;
        char *persist, *plain;

        cluster_init(&c, 2);
        cluster_start(&c);
        persist = gated_job(",\"persist\":true");
        plain = gated_job("");
        cluster_touch(&c, "go");
        first = cluster_call_ok(&c, 1, "submit", persist);
        wait_job(1, int_member(first, "id"));
        ck_assert_int_eq(runs_noted(), 1);

        second = cluster_call_ok(&c, 2, "submit", plain);
        ck_assert_int_eq(int_member(second, "id"), int_member(first, "id"));
        ck_assert_str_eq(str_member(second, "node"), "n1");
        ck_assert(json_object_get_boolean(json_object_object_get(second, "coalesced")));
        /* An idle job's node finds the ask when it renews its lease. */
        wait_for(runs_noted() == 2, 5 * c.lease_renew + 5, "job %lld did not run again",
                 (long long)int_member(first, "id"));
        settle();
        ck_assert_int_eq(runs_noted(), 2);
        ck_assert_int_eq(cluster_live_items(&c, 2), 0);
        json_object_put(first);
        json_object_put(second);
        free(persist);
        free(plain);
}
END_TEST

START_TEST(a_key_of_another_nodes_job_is_refused_for_other_work_or_what_only_its_node_does)
{
        char *params, *other, *held, msg[256];
        json_object *first;

        cluster_init(&c, 2);
        cluster_start(&c);
        params = gated_job("");
        other = job_params(true, "", "true");
        held = gated_job(",\"hold\":true");
        cluster_touch(&c, "go");
        json_object_put(cluster_call_ok(&c, 1, "pause", NULL));
        first = cluster_call_ok(&c, 1, "submit", params);

        ck_assert_int_eq(call_fails(2, "submit", other, msg, sizeof(msg)), -32003);
        ck_assert_msg(strstr(msg, "on node n1, which runs something else"), "%s", msg);
        ck_assert_int_eq(call_fails(2, "submit", held, msg, sizeof(msg)), -32003);
        ck_assert_msg(strstr(msg, "apply only to a live job of the node asked"), "%s", msg);
        ck_assert_int_eq(cluster_live_items(&c, 2), 0);

        /* Neither asked for another run. */
        json_object_put(cluster_call_ok(&c, 1, "resume", NULL));
        wait_job(1, int_member(first, "id"));
        settle();
        ck_assert_int_eq(runs_noted(), 1);
        json_object_put(first);
        free(params);
        free(other);
        free(held);
}
END_TEST

START_TEST(a_keyed_job_held_by_its_owners_limit_coalesces_a_submit_from_another_node)
{
        json_object *blocker, *first, *second;
        char *unkeyed, *held, *runs;
        int64_t id;

        cluster_init(&c, 2);
        cluster_start(&c);
        json_object_put(cluster_call_ok(&c, 1, "settings.set", "{\"max-running-per-user\":1}"));
        unkeyed = job_params(false, "", GATED, c.dir);
        blocker = cluster_call_ok(&c, 1, "submit", unkeyed);
        wait_for(runs_noted() == 1, 10, "the job that takes the owner's one run did not start");
        held = job_params(true, "", "echo run >>%s/held", c.dir);
        first = cluster_call_ok(&c, 1, "submit", held);
        id = int_member(first, "id");
        ck_assert_str_eq(str_member(first, "state"), "pending");
        /* Its run, held back by the limit, has not started: the ask coalesces. */
        second = cluster_call_ok(&c, 2, "submit", held);
        ck_assert_int_eq(int_member(second, "id"), id);
        ck_assert_str_eq(str_member(second, "state"), "pending");
        ck_assert(json_object_get_boolean(json_object_object_get(second, "coalesced")));

        cluster_touch(&c, "go");
        wait_job(1, id);
        settle();
        runs = cluster_path(&c, "held");
        ck_assert_int_eq(count_line(runs, "run"), 1);
        ck_assert_int_eq(cluster_live_items(&c, 1) + cluster_live_items(&c, 2), 0);
        json_object_put(blocker);
        json_object_put(first);
        json_object_put(second);
        free(unkeyed);
        free(held);
        free(runs);
}
END_TEST

/* The submit, to n1 and to n2, is answered with the job id in that state, taken so (flag). */
static void submitted_to_both(const char *params, int64_t id, const char *state, const char *flag)
{
        for (int k = 1; k <= 2; k++) {
                json_object *again = cluster_call_ok(&c, k, "submit", params);

                ck_assert_int_eq(int_member(again, "id"), id);
                ck_assert_str_eq(str_member(again, "state"), state);
                ck_assert(json_object_get_boolean(json_object_object_get(again, flag)));
                json_object_put(again);
        }
}

/* A key submitted to the node that accepted its job, once another node claimed the job: while
 * offered it coalesces, whichever node is asked; once running on the node that claimed it, it
 * asks for one more run there, after this one. */
START_TEST(a_key_follows_its_job_to_the_node_that_claimed_it)
{
        char *params, *busy;
        json_object *first, *rec;
        int64_t id;
        int fd;

        cluster_init(&c, 2);
        c.max_threads[0] = 1;
        cluster_start(&c);
        json_object_put(cluster_call_ok(&c, 1, "pause", "{\"node\":\"n2\"}"));
        /* n1's one thread, busy with a job placed on it. */
        busy = job_params(false, ",\"node\":\"n1\"",
                          WAIT_FOR_FILE " %s/free", c.dir);
        json_object_put(cluster_call_ok(&c, 1, "submit", busy));
        params = gated_job("");
        first = cluster_call_ok(&c, 1, "submit", params);
        id = int_member(first, "id");
        ck_assert_str_eq(str_member(first, "state"), "pending");
        submitted_to_both(params, id, "pending", "coalesced");
        json_object_put(cluster_call_ok(&c, 1, "resume", "{\"node\":\"n2\"}"));
        wait_for(runs_noted() == 1, 20, "job %lld did not start on n2", (long long)id);
        submitted_to_both(params, id, "running", "deferred");
        ck_assert_int_eq(runs_noted(), 1);
        cluster_touch(&c, "go");
        /* A wait asked of n1 follows it. */
        fd = cluster_connect(&c, 1);
        rec = job_wait(fd, id);
        close(fd);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "run"), 2);
        ck_assert_str_eq(str_member(rec, "node"), "n2");
        json_object_put(rec);
        settle();
        ck_assert_int_eq(runs_noted(), 2);
        cluster_touch(&c, "free");
        json_object_put(first);
        free(params);
        free(busy);
}
END_TEST

enum { HAMMER = 200, NODES = 3 };

static char *hammer_params;
static atomic_int hammer_next, hammer_failed;

/* Submits the flock job to node k (in arg) until 200 submits were made among the threads. */
static void *hammer(void *arg)
{
        int k = (int)(intptr_t)arg, fd = cluster_connect(&c, k);

        while (atomic_fetch_add(&hammer_next, 1) < HAMMER) {
                json_object *reply = client_call(fd, "submit", hammer_params);

                if (reply_code(reply) != 0) {
                        fprintf(stderr, "n%d: %s\n", k, json_object_to_json_string(reply));
                        atomic_fetch_add(&hammer_failed, 1);
                }
                json_object_put(reply);
        }
        close(fd);
        return NULL;
}

START_TEST(a_key_submitted_200_times_from_every_node_at_once_never_runs_twice_at_once)
{
        pthread_t threads[NODES];
        char *events;
        int runs;

        cluster_init(&c, NODES);
        cluster_start(&c);
        events = cluster_path(&c, "events");
        hammer_params = job_params(true, "",
                              "exec 9>>%1$s/lock; flock -n 9 || echo lockfail >>%1$s/events; "
                              "echo run >>%1$s/events; sleep 0.01",
                              c.dir);
        for (int k = 0; k < NODES; k++)
                ck_assert_int_eq(
                    pthread_create(&threads[k], NULL, hammer, (void *)(intptr_t)(k + 1)), 0);
        for (int k = 0; k < NODES; k++)
                ck_assert_int_eq(pthread_join(threads[k], NULL), 0);
        ck_assert_int_eq(atomic_load(&hammer_failed), 0);

        /* Quiet twice, a few renewals apart: no ask is left over. */
        do {
                wait_for(cluster_live_items_left(&c) == 0, 30, "the key's job is still live");
                settle();
        } while (cluster_live_items_left(&c) != 0);
        runs = count_line(events, "run");
        fprintf(stderr, "%d submits from %d nodes: %d runs\n", HAMMER, NODES, runs);
        ck_assert_int_eq(count_line(events, "lockfail"), 0);
        ck_assert_int_ge(runs, 1);
        ck_assert_int_le(runs, HAMMER);
        free(hammer_params);
        free(events);
}
END_TEST

static int run(void)
{
        Suite *s = suite_create("cluster-keys");
        TCase *tc = tcase_create("cluster-keys");

        tcase_set_timeout(tc, 120);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, a_key_submitted_on_another_node_coalesces_into_its_pending_job);
        tcase_add_test(
            tc, a_key_submitted_on_another_node_while_its_job_runs_there_runs_it_once_more_after);
        tcase_add_test(tc,
                       a_persisted_idle_job_runs_again_when_its_key_is_submitted_on_another_node);
        tcase_add_test(tc, a_key_follows_its_job_to_the_node_that_claimed_it);
        tcase_add_test(
            tc, a_key_of_another_nodes_job_is_refused_for_other_work_or_what_only_its_node_does);
        tcase_add_test(tc,
                       a_keyed_job_held_by_its_owners_limit_coalesces_a_submit_from_another_node);
        tcase_add_test(tc,
                       a_key_submitted_200_times_from_every_node_at_once_never_runs_twice_at_once);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

int main(int argc, char **argv)
{
        (void)argc;
        return cluster_suite_main(argv, run, false);
}
