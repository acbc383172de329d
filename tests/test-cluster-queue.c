/* SPDX-License-Identifier: MIT */
/* One queue across the nodes of a PostgreSQL schema: a node with free threads claims the jobs
 * that another node queued beyond its own, each runs once, and what waits for them follows. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <unistd.h>

#include "cluster-helpers.h"
#include "pg-proxy.h"
#include "run-suite.h"

static struct cluster c;

static void teardown(void)
{
        cluster_free(&c);
}

static double started(json_object *rec)
{
        return json_object_get_double(json_object_object_get(rec, "started"));
}

static double ended(json_object *rec)
{
        return json_object_get_double(json_object_object_get(rec, "ended"));
}

static int node_index(const char *name)
{
        for (int k = 1; k <= c.n; k++)
                if (strcmp(c.name[k - 1], name) == 0)
                        return k;
        ck_abort_msg("no node is named \"%s\"", name);
        return 0;
}

/* The most runs of the records that were under way at one time. */
static int most_at_once(json_object **recs, int n)
{
        int most = 0;

        for (int i = 0; i < n; i++) {
                double t = started(recs[i]);
                int at = 0;

                for (int j = 0; j < n; j++)
                        at += started(recs[j]) <= t && t < ended(recs[j]);
                if (at > most)
                        most = at;
        }
        return most;
}

enum { BURST = 24 };

/* 24 one-second jobs submitted to one node of three (two threads each): the others claim what it
 * cannot start, so all three run a share at once; every job runs once, and a wait on the node
 * it was submitted to hears how it ended wherever it ran. */
START_TEST(a_burst_on_one_node_runs_on_every_node_once_each)
{
        json_object *recs[BURST];
        int64_t ids[BURST];
        int ran_on[4] = {0}, *counts;
        char params[512], *tokens;

        cluster_init(&c, 3);
        for (int k = 0; k < 3; k++)
                c.max_threads[k] = 2;
        cluster_start(&c);
        tokens = cluster_path(&c, "tokens");
        for (int i = 0; i < BURST; i++) {
                snprintf(params, sizeof(params), "{\"command\":\"sleep 1; echo t%d >>%s\"}", i,
                         tokens);
                ids[i] = cluster_submit(&c, 1, params);
        }
        for (int i = 0; i < BURST; i++) {
                snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)ids[i]);
                recs[i] = cluster_call_ok(&c, 1, "wait", params);
                ck_assert_str_eq(str_member(recs[i], "outcome"), "succeeded");
                ran_on[node_index(str_member(recs[i], "node"))]++;
        }
        counts = count_tokens(tokens, BURST);
        for (int i = 0; i < BURST; i++)
                ck_assert_msg(counts[i] == 1, "job %d ran %d times", i, counts[i]);
        for (int k = 1; k <= 3; k++)
                ck_assert_msg(ran_on[k] > 0,
                              "node n%d ran none of the %d jobs (n1 %d, n2 %d, "
                              "n3 %d)",
                              k, BURST, ran_on[1], ran_on[2], ran_on[3]);
        /* More at once than the two threads of the node they were submitted to. */
        ck_assert_int_gt(most_at_once(recs, BURST), 2);
        for (int i = 0; i < BURST; i++)
                json_object_put(recs[i]);
        free(counts);
        free(tokens);
}
END_TEST

/* Waits for the job on node k and returns its record (the caller puts it). */
static json_object *waited(int k, int64_t id)
{
        char params[64];

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        return cluster_call_ok(&c, k, "wait", params);
}

/* A job submitted to node k that runs true, with more params (",..."): its id. */
static int64_t submit_true(int k, const char *more)
{
        char params[256];

        snprintf(params, sizeof(params), "{\"command\":\"true\"%s}", more);
        return cluster_submit(&c, k, params);
}

/* Node k's status of the job (the caller puts it). */
static json_object *status_of(int k, int64_t id)
{
        char params[64];

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        return cluster_call_ok(&c, k, "status", params);
}

/* submit's node: the job runs there alone, whichever node took the submit; a name no node has
 * had is refused. */
START_TEST(a_job_placed_on_a_node_runs_there_alone)
{
        int64_t ids[6];
        json_object *rec;
        char msg[256];
        int fd;

        cluster_init(&c, 3);
        cluster_start(&c);
        for (int i = 0; i < 6; i++)
                ids[i] = submit_true(i % 2 + 1, ",\"node\":\"n3\"");
        for (int i = 0; i < 6; i++) {
                rec = waited(i % 2 + 1, ids[i]);
                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                ck_assert_str_eq(str_member(rec, "node"), "n3");
                json_object_put(rec);
        }
        rec = waited(3, submit_true(3, ",\"node\":\"n1\""));
        ck_assert_str_eq(str_member(rec, "node"), "n1");
        json_object_put(rec);
        fd = cluster_connect(&c, 2);
        ck_assert_int_eq(
            call_error(fd, "submit", "{\"command\":\"true\",\"node\":\"n9\"}", msg, sizeof(msg)),
            -32602);
        ck_assert_str_eq(msg, "parameter \"node\": no node is named n9");
        close(fd);
}
END_TEST

/* node-queues: a node runs the jobs of the queues it serves alone; a job of a queue that no
 * live node serves stays queued, and its status says why, until a node serves it. */
START_TEST(node_queues_choose_the_nodes_that_run_a_queue)
{
        json_object *rec, *st;
        int64_t ids[4], id;

        cluster_init(&c, 3);
        cluster_start(&c);
        json_object_put(cluster_call_ok(&c, 1, "queue.add", "{\"name\":\"gpu\"}"));
        json_object_put(cluster_call_ok(&c, 1, "settings.set", "{\"node-queues\":\"default\"}"));
        json_object_put(cluster_call_ok(&c, 2, "settings.set", "{\"node-queues\":\"gpu\"}"));
        json_object_put(cluster_call_ok(&c, 3, "settings.set", "{\"node-queues\":\"default,q2\"}"));
        st = cluster_call_ok(&c, 1, "settings.get", NULL);
        ck_assert_str_eq(str_member(st, "node-queues"), "default");
        json_object_put(st);
        for (int i = 0; i < 4; i++)
                ids[i] = submit_true(1, ",\"queue\":\"gpu\"");
        for (int i = 0; i < 4; i++) {
                rec = waited(1, ids[i]);
                ck_assert_str_eq(str_member(rec, "node"), "n2");
                json_object_put(rec);
        }
        /* n2 leaves gpu too: none serves it. */
        json_object_put(cluster_call_ok(&c, 2, "settings.set", "{\"node-queues\":\"default\"}"));
        id = submit_true(1, ",\"queue\":\"gpu\"");
        cluster_wait_renewals(&c, 0, 2);
        st = status_of(1, id);
        ck_assert_str_eq(str_member(st, "state"), "pending");
        ck_assert_str_eq(str_member(st, "why"), "queue gpu is served by no live node "
                                                "(node-queues)");
        json_object_put(st);
        json_object_put(cluster_call_ok(&c, 3, "settings.set", "{\"node-queues\":\"*\"}"));
        rec = waited(1, id);
        ck_assert_str_eq(str_member(rec, "node"), "n3");
        json_object_put(rec);
        /* Not a list of queue names: refused, nothing changed. */
        st = cluster_call(&c, 3, "settings.set", "{\"node-queues\":\"a,,b\"}");
        ck_assert_int_eq(int_member(json_object_object_get(st, "error"), "code"), -32602);
        json_object_put(st);
}
END_TEST

/* Whether node k's status of the job says the state. */
static bool in_state(int k, int64_t id, const char *state)
{
        json_object *st = status_of(k, id);
        bool yes = strcmp(str_member(st, "state"), state) == 0;

        json_object_put(st);
        return yes;
}

/* Node k's `nodes` item of the node named name (the caller puts it). */
static json_object *node_item(int k, const char *name)
{
        json_object *result = cluster_nodes(&c, k),
                    *nodes = json_object_object_get(result, "nodes");
        json_object *item = NULL;

        for (size_t i = 0; i < json_object_array_length(nodes); i++) {
                json_object *node = json_object_array_get_idx(nodes, i);

                if (strcmp(str_member(node, "name"), name) == 0)
                        item = json_object_get(node);
        }
        json_object_put(result);
        ck_assert_msg(item != NULL, "node n%d does not list %s", k, name);
        return item;
}

static bool listed_paused(int k, const char *name)
{
        json_object *item = node_item(k, name);
        bool paused = json_object_get_boolean(json_object_object_get(item, "paused"));

        json_object_put(item);
        return paused;
}

/* A node's own pause, asked on another node: it starts nothing and its queued jobs run on the
 * others; it outlasts the node's restart; resumed, it runs jobs again. A node that is not live
 * has its pause kept for its next start; a name no node has is refused. */
START_TEST(a_node_paused_alone_sends_its_jobs_to_the_others_and_stays_paused_after_a_restart)
{
        json_object *result, *rec;
        char msg[256], out[256];
        int64_t ids[4];
        int fd;

        cluster_init(&c, 3);
        cluster_start(&c);
        ck_assert_int_eq(cluster_slowctl(&c, 2, out, sizeof(out), "pause --node n1"), 0);
        ck_assert_str_eq(out, "node n1 paused; 0 jobs running\n");
        ck_assert(listed_paused(3, "n1"));
        ck_assert(!listed_paused(3, "n2"));
        for (int i = 0; i < 4; i++)
                ids[i] = submit_true(1, "");
        for (int i = 0; i < 4; i++) {
                rec = waited(1, ids[i]);
                ck_assert_str_ne(str_member(rec, "node"), "n1");
                json_object_put(rec);
        }
        /* Stopped and started again: still paused, as its row keeps it. */
        daemon_stop_clean(cluster_node(&c, 1));
        cluster_start_node(&c, 1);
        ck_assert(listed_paused(1, "n1"));
        rec = waited(1, submit_true(1, ""));
        ck_assert_str_ne(str_member(rec, "node"), "n1");
        json_object_put(rec);
        json_object_put(cluster_call_ok(&c, 3, "resume", "{\"node\":\"n1\"}"));
        ck_assert(!listed_paused(2, "n1"));
        rec = waited(2, submit_true(2, ",\"node\":\"n1\""));
        ck_assert_str_eq(str_member(rec, "node"), "n1");
        json_object_put(rec);
        ck_assert_int_eq(cluster_slowctl(&c, 2, out, sizeof(out),
                                         "submit --node n1 --wait -- "
                                         "'exit 3'"),
                         3);
        /* Not live: its row keeps the pause for its next start. */
        cluster_kill(&c, 3);
        wait_for(!cluster_lists(&c, 1, "n3"), 30, "n3 is still live after its lease");
        result = cluster_call_ok(&c, 1, "pause", "{\"node\":\"n3\"}");
        ck_assert(json_object_get_boolean(json_object_object_get(result, "paused")));
        json_object_put(result);
        ck_assert(listed_paused(1, "n3"));
        fd = cluster_connect(&c, 1);
        ck_assert_int_eq(call_error(fd, "pause", "{\"node\":\"n9\"}", msg, sizeof(msg)), -32602);
        ck_assert_str_eq(msg, "parameter \"node\": no node is named n9");
        close(fd);
}
END_TEST

/* pause with node and drain is answered once the node's runs have ended. */
START_TEST(a_node_paused_with_drain_answers_once_its_runs_end)
{
        char *gate, params[512 + sizeof(WAIT_FOR_FILE)], line[256], *got;
        struct pollfd p;
        json_object *reply, *rec;
        int64_t id;
        int fd;

        cluster_init(&c, 2);
        cluster_start(&c);
        gate = cluster_path(&c, "gate");
        unlink(gate);
        snprintf(params, sizeof(params), "{\"command\":\"" WAIT_FOR_FILE " %s\",\"node\":\"n1\"}",
                 gate);
        id = cluster_submit(&c, 1, params);
        wait_for(in_state(1, id, "running"), 20, "job %lld did not start", (long long)id);
        fd = cluster_connect(&c, 2);
        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"pause\","
                 "\"params\":{\"node\":\"n1\",\"drain\":true}}\n");
        ck_assert_int_eq(write(fd, line, strlen(line)), (ssize_t)strlen(line));
        p = (struct pollfd){.fd = fd, .events = POLLIN};
        ck_assert_int_eq(poll(&p, 1, 300), 0); /* its run goes on: no answer yet */
        cluster_touch(&c, "gate");
        got = client_read_line(fd);
        ck_assert_ptr_nonnull(got);
        reply = json_tokener_parse(got);
        ck_assert_int_eq(int_member(reply_result(reply), "running"), 0);
        json_object_put(reply);
        free(got);
        rec = waited(1, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        close(fd);
        free(gate);
}
END_TEST

/* A cancel asked of the node that offered a job takes it back first: cancelled there while no
 * node claimed it, and passed to the node that did once one has. */
START_TEST(a_cancel_of_an_offered_job_takes_it_back_or_follows_it)
{
        char *gate, params[512 + sizeof(WAIT_FOR_FILE)];
        json_object *rec;
        int64_t x, y;

        cluster_init(&c, 2);
        c.max_threads[0] = 1;
        cluster_start(&c);
        json_object_put(cluster_call_ok(&c, 1, "pause", "{\"node\":\"n2\"}"));
        gate = cluster_path(&c, "gate");
        unlink(gate);
        snprintf(params, sizeof(params), "{\"command\":\"" WAIT_FOR_FILE " %s\"}", gate);
        cluster_submit(&c, 1, params); /* n1's one thread, busy */
        x = submit_true(1, "");
        y = cluster_submit(&c, 1, params);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)x);
        json_object_put(cluster_call_ok(&c, 1, "cancel", params));
        rec = waited(1, x);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);
        /* n2 claims y and runs it; its cancel, asked of n1, goes there. */
        json_object_put(cluster_call_ok(&c, 1, "resume", "{\"node\":\"n2\"}"));
        wait_for(in_state(2, y, "running"), 20, "job %lld did not start on n2", (long long)y);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)y);
        json_object_put(cluster_call_ok(&c, 1, "cancel", params));
        rec = waited(1, y);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        ck_assert_str_eq(str_member(rec, "node"), "n2");
        json_object_put(rec);
        cluster_touch(&c, "gate");
        free(gate);
}
END_TEST

/* A job submitted to node k that waits for the file gate of the test's folder (",..." more
 * params): its id. */
static int64_t submit_gated(int k, const char *gate, const char *more)
{
        char params[512 + sizeof(WAIT_FOR_FILE)], *path = cluster_path(&c, gate);

        unlink(path);
        snprintf(params, sizeof(params), "{\"command\":\"" WAIT_FOR_FILE " %s\"%s}", path, more);
        free(path);
        return cluster_submit(&c, k, params);
}

/* A run that falls due on a busy node (a delay, a retry's back-off) is offered as a run queued
 * now is: the other node runs it. n1 has one thread, kept busy by a job placed on it. */
START_TEST(a_delayed_run_and_a_retry_falling_due_on_a_busy_node_run_on_another)
{
        char params[512 + sizeof(WAIT_FOR_FILE)], *flag, *g1;
        json_object *rec;
        int64_t r, d;

        cluster_init(&c, 2);
        c.max_threads[0] = 1;
        cluster_start(&c);
        flag = cluster_path(&c, "flag");
        unlink(flag);
        g1 = cluster_path(&c, "g1");
        unlink(g1);
        /* Its first attempt fails on n1, once g1 exists; the second succeeds. */
        snprintf(params, sizeof(params),
                 "{\"command\":\"" WAIT_FOR_FILE " %s; [ -e %s ] || "
                 "{ touch %s; exit 1; }\",\"retries\":1,\"retry_delay\":0.3}",
                 g1, flag, flag);
        r = cluster_submit(&c, 1, params);
        wait_for(in_state(1, r, "running"), 20, "job %lld did not start on n1", (long long)r);
        /* Queued behind it on n1: it takes n1's thread when the first attempt ends. */
        submit_gated(1, "g2", ",\"node\":\"n1\"");
        d = submit_true(1, ",\"delay\":0.3");
        cluster_touch(&c, "g1");
        rec = waited(1, d);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), "n2");
        json_object_put(rec);
        rec = waited(1, r);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "attempt"), 2);
        ck_assert_str_eq(str_member(rec, "node"), "n2");
        json_object_put(rec);
        cluster_touch(&c, "g2");
        free(flag);
        free(g1);
}
END_TEST

/* An enqueue of a job while it runs on a busy node: its run to come is offered once the pool
 * queues it (after the run), and another node runs it. */
START_TEST(a_run_deferred_on_a_busy_node_runs_on_another)
{
        char params[512 + sizeof(WAIT_FOR_FILE)], *g1, *runs;
        json_object *rec, *reply;
        int64_t k;

        cluster_init(&c, 2);
        c.max_threads[0] = 1;
        cluster_start(&c);
        g1 = cluster_path(&c, "g1");
        unlink(g1);
        runs = cluster_path(&c, "runs");
        /* Its first run waits for g1; the next does not. */
        snprintf(params, sizeof(params), "{\"command\":\"echo run >>%s; " WAIT_FOR_FILE " %s\"}",
                 runs, g1);
        k = cluster_submit(&c, 1, params);
        wait_for(in_state(1, k, "running"), 20, "job %lld did not start on n1", (long long)k);
        submit_gated(1, "g2", ",\"node\":\"n1\"");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)k);
        reply = cluster_call_ok(&c, 1, "enqueue", params);
        ck_assert(json_object_get_boolean(json_object_object_get(reply, "deferred")));
        json_object_put(reply);
        cluster_touch(&c, "g1");
        rec = waited(1, k);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "run"), 2);
        ck_assert_str_eq(str_member(rec, "node"), "n2");
        json_object_put(rec);
        ck_assert_int_eq(count_line(runs, "run"), 2);
        cluster_touch(&c, "g2");
        free(g1);
        free(runs);
}
END_TEST

enum { KILL_HALF = 12 };

/* Sends KILL_HALF submits of gated token jobs (tokens from *next on) on fd, pipelined. */
static void send_token_jobs(int fd, int *next)
{
        for (int i = 0; i < KILL_HALF; i++, (*next)++) {
                char request[768];

                snprintf(request, sizeof(request),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"submit\",\"params\":"
                         "{\"command\":\"echo start >>%s/events; until [ -e %s/go ]; do sleep "
                         "0.02; done; echo t%d >>%s/tokens\"}}",
                         *next, c.dir, c.dir, *next, c.dir);
                client_send(fd, request);
        }
}

/* Reads KILL_HALF replies on fd: each must be an acknowledged submit. */
static void read_acks(int fd)
{
        for (int i = 0; i < KILL_HALF; i++) {
                char *line = client_read_line(fd);
                json_object *reply = line ? json_tokener_parse(line) : NULL;

                ck_assert_msg(reply && reply_code(reply) == 0, "submit %d: %s", i,
                              line ? line : "(closed)");
                json_object_put(reply);
                free(line);
        }
}

/* The pid of job id's run in progress on node k, once status shows it. */
static pid_t pid_of(int k, int64_t id)
{
        double end = mono_now() + scaled(10);
        json_object *st;
        pid_t pid;

        while (!json_object_object_get_ex((st = status_of(k, id)), "pid", NULL)) {
                json_object_put(st);
                ck_assert_msg(mono_now() < end, "running job %lld has no pid", (long long)id);
                short_pause();
        }
        pid = (pid_t)int_member(st, "pid");
        json_object_put(st);
        return pid;
}

/* The pids of node k's runs in progress (list tells every node's). */
static int running_pids(int k, pid_t *pids, int most)
{
        json_object *list = cluster_call_ok(&c, k, "list", NULL);
        json_object *items = json_object_object_get(list, "items");
        int n = 0;

        for (size_t i = 0; i < json_object_array_length(items) && n < most; i++) {
                json_object *item = json_object_array_get_idx(items, i);

                if (strcmp(str_member(item, "state"), "running") == 0 &&
                    strcmp(str_member(item, "node"), c.name[k - 1]) == 0)
                        pids[n++] = pid_of(k, int_member(item, "id"));
        }
        json_object_put(list);
        return n;
}

static int lines_in(const char *path)
{
        char **lines = read_lines(path);
        int n = 0;

        while (lines[n])
                n++;
        strv_free(lines);
        return n;
}

/* kill -9 of a node that runs jobs it claimed from the others, while submits stream into them:
 * every acknowledged job runs to its end exactly once (its token written once), the killed
 * node's runs are stopped with it and run again on the others. */
START_TEST(a_node_killed_under_a_submit_load_to_the_others_loses_and_doubles_no_job)
{
        int next = 0, fd2, fd3, *counts, n;
        char *events, *tokens;
        pid_t pids[8];

        cluster_init(&c, 3);
        c.max_threads[1] = c.max_threads[2] = 2;
        cluster_start(&c);
        events = cluster_path(&c, "events");
        tokens = cluster_path(&c, "tokens");
        fd2 = cluster_connect(&c, 2);
        fd3 = cluster_connect(&c, 3);
        send_token_jobs(fd2, &next);
        send_token_jobs(fd3, &next);
        read_acks(fd2);
        read_acks(fd3);
        /* Two runs on n2, two on n3, and n1's four threads busy with jobs claimed from them. */
        wait_for(count_line(events, "start") == 8, 20, "%d runs started, not 8",
                 count_line(events, "start"));
        n = running_pids(1, pids, 8);
        ck_assert_int_eq(n, 4);
        send_token_jobs(fd2, &next);
        send_token_jobs(fd3, &next);
        cluster_kill(&c, 1);
        read_acks(fd2);
        read_acks(fd3);
        for (int i = 0; i < n; i++)
                wait_for(process_gone(pids[i]), 5, "run %d of the killed n1 still runs", pids[i]);
        cluster_touch(&c, "go");
        /* n1's jobs too: the others take them once its lease ran out. */
        wait_for(lines_in(tokens) >= next, c.lease_time + 60, "%d of %d jobs ran", lines_in(tokens),
                 next);
        wait_for(cluster_live_items_left(&c) == 0, 30, "jobs are still live");
        cluster_wait_renewals(&c, 0, 3);
        counts = count_tokens(tokens, next);
        for (int i = 0; i < next; i++)
                ck_assert_msg(counts[i] == 1, "token t%d is in %s %d times", i, tokens, counts[i]);
        close(fd2);
        close(fd3);
        free(counts);
        free(events);
        free(tokens);
}
END_TEST

/* The call on fd must fail within store-timeout and more, as one that could not reach the job
 * database and says which nodes it could not ask. */
static void fails_unreached(int fd, const char *method, const char *params)
{
        char msg[256];

        ck_assert_int_eq(call_error(fd, method, params, msg, sizeof(msg)), -32603);
        ck_assert_msg(strstr(msg, "cannot reach the job database") &&
                          strstr(msg, "node n1 could not ask the others (n2)"),
                      "%s: %s", method, msg);
}

/* Whether the status of job id is answered on fd; else it fails as unreached (each request is
 * answered once: client_call checks the reply's id). */
static bool status_answered(int fd, const char *params, int64_t id)
{
        json_object *reply = client_call(fd, "status", params);
        json_object *result = json_object_object_get(reply, "result");
        bool answered = result != NULL;

        if (answered)
                ck_assert_int_eq(int_member(result, "id"), id);
        else
                ck_assert_msg(strstr(json_object_to_json_string(reply),
                                     "node n1 could not ask the others (n2)"),
                              "status after the heal: %s", json_object_to_json_string(reply));
        json_object_put(reply);
        return answered;
}

/* A cut shorter than the lease: reads answered at store-timeout, and what the database answers
 * after the heal goes nowhere (the connection's next reply is the next request's). */
START_TEST(reads_cut_from_the_database_are_answered_in_time_and_not_again_later)
{
        struct pg_proxy proxy;
        char params[64];
        int64_t other;
        int fd;

        cluster_init(&c, 2);
        c.lease_time = scaled(20);
        pg_proxy_start(&proxy, &c.pg);
        snprintf(c.store[0], sizeof(c.store[0]), "%s", proxy.conninfo);
        cluster_start(&c);
        json_object_put(cluster_call_ok(&c, 1, "settings.set", "{\"store-timeout\":0.3}"));
        other = submit_true(2, "");
        fd = cluster_connect(&c, 1);
        pg_proxy_cut(&proxy, true);
        fails_unreached(fd, "list", NULL);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)other);
        fails_unreached(fd, "status", params);
        fails_unreached(fd, "history", NULL);
        pg_proxy_cut(&proxy, false);
        json_object_put(call_ok(fd, "ping", NULL));
        /* n1's store reaches the database again at its next retry, which backs off up to 5 s
         * after failures: until then a read still fails, at store-timeout. */
        wait_for(status_answered(fd, params, other), 20,
                 "n1 did not answer the status of job %lld after the heal", (long long)other);
        close(fd);
        pg_proxy_stop(&proxy);
}
END_TEST

/* A partition longer than the lease: the cut node answers a submit within store-timeout, and
 * reads that need the database (list, nodes, status of a job it does not hold) too, saying which
 * node it could not ask; its run is stopped before the other node runs its job (a flock probe:
 * no overlap); healed, it is live again and takes work, and no late answer of what was answered
 * reaches the client. */
START_TEST(a_partitioned_node_answers_stops_its_runs_in_time_and_rejoins)
{
        char *events, *lock, params[1024], msg[256];
        struct pg_proxy proxy;
        json_object *rec;
        int64_t id, other;
        int fd;

        cluster_init(&c, 2);
        pg_proxy_start(&proxy, &c.pg);
        snprintf(c.store[0], sizeof(c.store[0]), "%s", proxy.conninfo);
        cluster_start(&c);
        json_object_put(cluster_call_ok(&c, 1, "settings.set", "{\"store-timeout\":1}"));
        events = cluster_path(&c, "events");
        lock = cluster_path(&c, "lock");
        /* Its run on n1: each start takes the lock, in a session of its own, or notes that it
         * could not (a run of the other node's overlapping it). */
        snprintf(params, sizeof(params),
                 "{\"command\":\"setsid sh -c 'exec 9>>%s; flock -n 9 || echo overlap >>%s; "
                 "echo start >>%s; exec sleep 600' </dev/null\"}",
                 lock, events, events);
        id = cluster_submit(&c, 1, params);
        wait_for(count_line(events, "start") == 1, 20, "job %lld did not start on n1",
                 (long long)id);
        other = submit_true(2, "");
        pg_proxy_cut(&proxy, true);
        fd = cluster_connect(&c, 1);
        ck_assert_int_eq(call_error(fd, "submit", "{\"command\":\"true\"}", msg, sizeof(msg)),
                         -32603);
        ck_assert_ptr_nonnull(strstr(msg, "cannot reach the job database"));
        fails_unreached(fd, "list", NULL);
        fails_unreached(fd, "nodes", NULL);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)other);
        fails_unreached(fd, "status", params);
        close(fd);
        /* n2 takes n1's jobs once its lease ran out, and runs this one again: n1 stopped its
         * run before (the probe took the lock). */
        wait_for(count_line(events, "start") == 2, 30, "job %lld did not run again on n2",
                 (long long)id);
        ck_assert_int_eq(count_line(events, "overlap"), 0);
        pg_proxy_cut(&proxy, false);
        wait_for(cluster_lists(&c, 2, "n1"), 30, "n1 did not join again after the heal");
        rec = waited(2, submit_true(2, ",\"node\":\"n1\""));
        ck_assert_str_eq(str_member(rec, "node"), "n1");
        json_object_put(rec);
        pg_proxy_stop(&proxy);
        free(events);
        free(lock);
}
END_TEST

static int run(void)
{
        Suite *s = suite_create("cluster-queue");
        TCase *tc = tcase_create("cluster-queue");

        tcase_set_timeout(tc, 120);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, a_burst_on_one_node_runs_on_every_node_once_each);
        tcase_add_test(tc, a_job_placed_on_a_node_runs_there_alone);
        tcase_add_test(tc, node_queues_choose_the_nodes_that_run_a_queue);
        tcase_add_test(
            tc, a_node_paused_alone_sends_its_jobs_to_the_others_and_stays_paused_after_a_restart);
        tcase_add_test(tc, a_node_paused_with_drain_answers_once_its_runs_end);
        tcase_add_test(tc, a_cancel_of_an_offered_job_takes_it_back_or_follows_it);
        tcase_add_test(tc, a_delayed_run_and_a_retry_falling_due_on_a_busy_node_run_on_another);
        tcase_add_test(tc, a_run_deferred_on_a_busy_node_runs_on_another);
        tcase_add_test(tc,
                       a_node_killed_under_a_submit_load_to_the_others_loses_and_doubles_no_job);
        tcase_add_test(tc, reads_cut_from_the_database_are_answered_in_time_and_not_again_later);
        tcase_add_test(tc, a_partitioned_node_answers_stops_its_runs_in_time_and_rejoins);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

int main(int argc, char **argv)
{
        (void)argc;
        return cluster_suite_main(argv, run, false);
}
