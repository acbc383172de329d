/* SPDX-License-Identifier: MIT */
/* What the nodes of one database share beside the jobs: the daemon's pause, the queues with
 * their settings and pauses, and a pause with drain, which waits for every node's runs. */
#define _GNU_SOURCE
#include <poll.h>
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

/* Node k's stats (of the queue, NULL: the daemon's): whether it is paused. */
static bool paused_on(int k, const char *queue)
{
        char params[96];
        json_object *st;
        bool paused;

        snprintf(params, sizeof(params), "{\"queue\":\"%s\"}", queue ? queue : "");
        st = cluster_call_ok(&c, k, "stats", queue ? params : NULL);
        paused = json_object_get_boolean(json_object_object_get(st, "paused"));
        json_object_put(st);
        return paused;
}

/* How many items node k's pool has taken (a run held by a pause counts). */
static int64_t items_run_on(int k)
{
        json_object *st = cluster_call_ok(&c, k, "stats", NULL);
        int64_t n = int_member(st, "items_run");

        json_object_put(st);
        return n;
}

/* Node k's queue.list entry of the queue (the caller puts it), or NULL. */
static json_object *queue_on(int k, const char *name)
{
        int fd = cluster_connect(&c, k);
        json_object *q = queue_entry(fd, name);

        close(fd);
        return q;
}

static bool has_queue(int k, const char *name)
{
        json_object *q = queue_on(k, name);

        json_object_put(q);
        return q != NULL;
}

/* The queue's max-threads on node k (-1: no such queue). */
static int64_t max_threads_on(int k, const char *name)
{
        json_object *q = queue_on(k, name);
        int64_t n = q ? int_member(q, "max-threads") : -1;

        json_object_put(q);
        return n;
}

/* The job's state on node k. */
static bool in_state(int k, int64_t id, const char *state)
{
        char params[64];
        json_object *st;
        bool yes;

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        st = cluster_call_ok(&c, k, "status", params);
        yes = strcmp(str_member(st, "state"), state) == 0;
        json_object_put(st);
        return yes;
}

/* A job on node k that runs until the file named exists (queue NULL: the default). */
static int64_t gated_job(int k, const char *queue, const char *file)
{
        char *params;
        int64_t id;

        ck_assert_int_ge(asprintf(&params,
                                  "{\"command\":\"" WAIT_FOR_FILE " %s/%s\""
                                  "%s%s%s}",
                                  c.dir, file, queue ? ",\"queue\":\"" : "", queue ? queue : "",
                                  queue ? "\"" : ""),
                         0);
        id = cluster_submit(&c, k, params);
        free(params);
        return id;
}

/* Whether a line comes on fd within ms milliseconds. */
static bool readable_within(int fd, int ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};

        return poll(&p, 1, ms) > 0;
}

/* Node k's error reply to the call (which must fail): its code, the message in msg. */
static int error_of(int k, const char *method, const char *params, char *msg, size_t len)
{
        json_object *reply = cluster_call(&c, k, method, params), *err;
        int code;

        ck_assert_ptr_nonnull(reply);
        ck_assert_msg(json_object_object_get_ex(reply, "error", &err), "%s succeeded: %s", method,
                      json_object_to_json_string(reply));
        code = reply_code(reply);
        snprintf(msg, len, "%s", str_member(err, "message"));
        json_object_put(reply);
        return code;
}

/* Node k's wait for the job: its outcome (a static buffer). */
static const char *outcome_of(int k, int64_t id)
{
        static char outcome[32];
        char params[64];
        json_object *rec;

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        rec = cluster_call_ok(&c, k, "wait", params);
        snprintf(outcome, sizeof(outcome), "%s", str_member(rec, "outcome"));
        json_object_put(rec);
        return outcome;
}

/* Whether node k's queue.remove of the queue succeeds. */
static bool removes(int k, const char *name)
{
        char params[96];
        json_object *reply;
        bool ok;

        snprintf(params, sizeof(params), "{\"name\":\"%s\"}", name);
        reply = cluster_call(&c, k, "queue.remove", params);
        ok = reply && reply_code(reply) == 0;
        json_object_put(reply);
        return ok;
}

START_TEST(a_pause_and_a_resume_on_one_node_hold_on_every_node_and_on_one_started_later)
{
        int64_t id;

        cluster_init(&c, 3);
        cluster_start_node(&c, 1);
        cluster_start_node(&c, 2);
        wait_for(cluster_lists(&c, 1, "n2") && cluster_lists(&c, 2, "n1"), 10, "nodes unseen");

        json_object_put(cluster_call_ok(&c, 1, "pause", NULL));
        ck_assert(paused_on(1, NULL));
        wait_for(paused_on(2, NULL), 10, "n2 is not paused");
        /* n2's pool takes the job and holds it. That it starts nothing while paused is an
         * absence, which no event shows: by the clock. */
        id = cluster_submit(&c, 2, "{\"command\":\"true\"}");
        wait_for(items_run_on(2) >= 1, 10, "n2's pool did not take job %lld", (long long)id);
        usleep(200 * 1000);
        ck_assert(in_state(2, id, "pending"));

        /* A node that starts later is paused too. */
        cluster_start_node(&c, 3);
        ck_assert(paused_on(3, NULL));

        /* A resume on n3 lets the job on n2 go, and resumes n1. */
        json_object_put(cluster_call_ok(&c, 3, "resume", NULL));
        ck_assert(!paused_on(3, NULL));
        wait_for(!paused_on(1, NULL) && !paused_on(2, NULL), 10, "still paused");
        ck_assert_str_eq(outcome_of(2, id), "succeeded");
}
END_TEST

START_TEST(a_queue_added_set_paused_or_removed_on_one_node_is_so_on_every_node)
{
        char msg[256];
        int64_t id;

        cluster_init(&c, 2);
        cluster_start(&c);

        json_object_put(cluster_call_ok(&c, 1, "queue.add", "{\"name\":\"gpu\",\"max-threads\":2}"));
        wait_for(max_threads_on(2, "gpu") == 2, 10, "n2 has no queue gpu of 2 threads");
        json_object_put(
            cluster_call_ok(&c, 2, "settings.set", "{\"queue\":\"gpu\",\"max-threads\":3}"));
        wait_for(max_threads_on(1, "gpu") == 3, 10, "n1's gpu queue is not set to 3 threads");
        /* A runtime change is the node's own. */
        json_object_put(cluster_call_ok(&c, 2, "settings.set",
                                        "{\"queue\":\"gpu\",\"max-threads\":5,\"runtime\":true}"));
        ck_assert_int_eq(max_threads_on(2, "gpu"), 5);

        json_object_put(cluster_call_ok(&c, 2, "pause", "{\"queue\":\"gpu\"}"));
        wait_for(paused_on(1, "gpu"), 10, "n1's gpu queue is not paused");
        /* Not spread to n1: a node reads the shared settings whole, so the one that brought it
         * the pause made after the runtime change would have brought that as well. */
        ck_assert_int_eq(max_threads_on(1, "gpu"), 3);
        ck_assert(!paused_on(1, NULL));
        json_object_put(cluster_call_ok(&c, 1, "resume", "{\"queue\":\"gpu\"}"));
        wait_for(!paused_on(2, "gpu"), 10, "n2's gpu queue is still paused");
        /* n2 applied both, and its runtime change stayed. */
        ck_assert_int_eq(max_threads_on(2, "gpu"), 5);

        /* A queue that a job of any node is in stays. */
        id = gated_job(2, "gpu", "go");
        wait_for(in_state(2, id, "running"), 10, "job %lld does not run", (long long)id);
        ck_assert_int_eq(error_of(1, "queue.remove", "{\"name\":\"gpu\"}", msg, sizeof(msg)),
                         -32004);
        ck_assert_str_eq(msg, "queue gpu holds 1 job of other nodes: it cannot be removed");
        ck_assert_int_eq(error_of(2, "queue.remove", "{\"name\":\"gpu\"}", msg, sizeof(msg)),
                         -32004);
        ck_assert(has_queue(1, "gpu") && has_queue(2, "gpu"));
        cluster_touch(&c, "go");
        ck_assert_str_eq(outcome_of(2, id), "succeeded");
        /* Its row goes with the batch after its run's. */
        wait_for(removes(1, "gpu"), 10, "n1 does not remove queue gpu");
        ck_assert(!has_queue(1, "gpu"));
        wait_for(!has_queue(2, "gpu"), 10, "n2 still has queue gpu");

        /* A node that was away finds the queues as they are now. */
        json_object_put(cluster_call_ok(&c, 2, "queue.add", "{\"name\":\"gpu\"}"));
        wait_for(has_queue(1, "gpu"), 10, "n1 has no queue gpu");
        cluster_kill(&c, 1);
        json_object_put(cluster_call_ok(&c, 2, "queue.remove", "{\"name\":\"gpu\"}"));
        json_object_put(cluster_call_ok(&c, 2, "queue.add", "{\"name\":\"cpu\",\"max-threads\":1}"));
        json_object_put(cluster_call_ok(&c, 2, "pause", "{\"queue\":\"cpu\"}"));
        cluster_start_node(&c, 1);
        ck_assert(!has_queue(1, "gpu"));
        ck_assert_int_eq(max_threads_on(1, "cpu"), 1);
        ck_assert(paused_on(1, "cpu"));
}
END_TEST

START_TEST(a_pause_with_drain_waits_for_the_runs_of_every_node)
{
        json_object *reply;
        int64_t id, later;
        char *line;
        int fd;

        cluster_init(&c, 2);
        cluster_start(&c);
        id = gated_job(2, NULL, "go");
        wait_for(in_state(2, id, "running"), 10, "job %lld does not run", (long long)id);

        fd = cluster_connect(&c, 1);
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pause\","
                        "\"params\":{\"drain\":true}}");
        /* Nothing runs on n1: the answer waits for n2's run, and n2 starts nothing new. */
        ck_assert(!readable_within(fd, 500));
        later = cluster_submit(&c, 2, "{\"command\":\"true\"}");
        cluster_touch(&c, "go");
        line = client_read_line(fd);
        ck_assert_ptr_nonnull(line);
        reply = json_tokener_parse(line);
        ck_assert_msg(reply_code(reply) == 0, "%s", line);
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "paused")));
        ck_assert_int_eq(int_member(reply_result(reply), "running"), 0);
        ck_assert(!in_state(2, id, "running"));
        ck_assert(in_state(2, later, "pending"));
        json_object_put(reply);
        free(line);

        /* A drain waiting for a node that dies is answered once its lease has run out. */
        json_object_put(cluster_call_ok(&c, 1, "resume", NULL));
        wait_for(!paused_on(2, NULL), 10, "n2 is still paused");
        ck_assert_str_eq(outcome_of(2, later), "succeeded");
        id = gated_job(2, NULL, "go2");
        wait_for(in_state(2, id, "running"), 10, "job %lld does not run", (long long)id);
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"pause\","
                        "\"params\":{\"drain\":true}}");
        ck_assert(!readable_within(fd, 300));
        cluster_kill(&c, 2);
        ck_assert(readable_within(fd, (int)(scaled(15) * 1000)));
        line = client_read_line(fd);
        reply = json_tokener_parse(line);
        ck_assert_msg(reply_code(reply) == 0, "%s", line);
        json_object_put(reply);
        free(line);
        close(fd);
}
END_TEST

static int run(void)
{
        Suite *s = suite_create("cluster-settings");
        TCase *tc = tcase_create("cluster-settings");

        tcase_set_timeout(tc, 120);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc,
                       a_pause_and_a_resume_on_one_node_hold_on_every_node_and_on_one_started_later);
        tcase_add_test(tc, a_queue_added_set_paused_or_removed_on_one_node_is_so_on_every_node);
        tcase_add_test(tc, a_pause_with_drain_waits_for_the_runs_of_every_node);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

int main(int argc, char **argv)
{
        (void)argc;
        return cluster_suite_main(argv, run, false);
}
