/* SPDX-License-Identifier: MIT */
/* Three slowworkd nodes on one PostgreSQL schema: every job once, node names, the nodes' leases,
 * a node killed or stopped with runs in flight, PostgreSQL restarted under load. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster-helpers.h"
#include "run-suite.h"

#ifndef SLOWCTL
#error "SLOWCTL must name the slowctl binary under test"
#endif

static struct cluster c;

static void teardown(void)
{
        cluster_free(&c);
}

/* The params of a submit of the command (the caller frees them). */
static char *command_params(const char *fmt, ...)
{
        json_object *o = json_object_new_object();
        va_list ap;
        char *command, *params;

        va_start(ap, fmt);
        ck_assert_int_ge(vasprintf(&command, fmt, ap), 0);
        va_end(ap);
        json_object_object_add(o, "command", json_object_new_string(command));
        params = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        ck_assert_ptr_nonnull(params);
        json_object_put(o);
        free(command);
        return params;
}

/* A job that appends its token tK to the file tokens. */
static char *token_job(int k)
{
        return command_params("echo t%d >>%s/tokens", k, c.dir);
}

/*
 * Job j of the runs in flight: it takes a flock on a file of its own, notes in the file events
 * when it fails to get it ("lockfail J"), its start with its shell's pid, its sleep's pid and the
 * time ("start J PID PID TIME"), and its end ("end J TIME"). It sleeps 60 s, or 0.05 s once the
 * file quick exists.
 */
static char *flock_job(int j)
{
        return command_params("exec 9>>%1$s/lock.%2$d; flock -n 9 || echo lockfail %2$d "
                              ">>%1$s/events; t=60; [ -e %1$s/quick ] && t=0.05; sleep $t & "
                              "echo start %2$d $$ $! $(date +%%s.%%N) >>%1$s/events; wait; "
                              "echo end %2$d $(date +%%s.%%N) >>%1$s/events",
                              c.dir, j);
}

enum { MAX_STARTS = 4 };

/* What the events file says of one flock_job. */
struct runs {
        int starts, ends, lockfails;
        int pid[MAX_STARTS][2]; /* of each start: its shell, its sleep */
        double started[MAX_STARTS];
};

static void read_events(struct runs *runs, int n)
{
        char *path = cluster_path(&c, "events"), **lines = read_lines(path);

        memset(runs, 0, sizeof(*runs) * (size_t)n);
        for (char **l = lines; *l; l++) {
                struct runs *r;
                int j, pid, child, end = 0;
                double t;

                if (sscanf(*l, "start %d %d %d %lf%n", &j, &pid, &child, &t, &end) == 4 &&
                    !(*l)[end]) {
                        ck_assert(j >= 0 && j < n);
                        r = &runs[j];
                        ck_assert_msg(r->starts < MAX_STARTS, "job %d started %d times", j,
                                      r->starts + 1);
                        r->pid[r->starts][0] = pid;
                        r->pid[r->starts][1] = child;
                        r->started[r->starts++] = t;
                } else if (sscanf(*l, "end %d %lf%n", &j, &t, &end) == 2 && !(*l)[end]) {
                        ck_assert(j >= 0 && j < n);
                        runs[j].ends++;
                } else {
                        ck_assert_msg(sscanf(*l, "lockfail %d%n", &j, &end) == 1 && !(*l)[end] &&
                                          j >= 0 && j < n,
                                      "%s: a line \"%s\"", path, *l);
                        runs[j].lockfails++;
                }
        }
        strv_free(lines);
        free(path);
}

static bool all_started(int n, int times)
{
        struct runs runs[16];

        read_events(runs, n);
        for (int j = 0; j < n; j++)
                if (runs[j].starts < times)
                        return false;
        return true;
}

static bool all_ended(int n)
{
        struct runs runs[16];

        read_events(runs, n);
        for (int j = 0; j < n; j++)
                if (runs[j].ends < 1)
                        return false;
        return true;
}

/* Submits every params to node k through one connection, pipelined: the ids, in order. */
static void submit_pipelined(int k, char *const *params, int n, int64_t *ids)
{
        json_object **replies = calloc((size_t)n, sizeof(*replies));
        int fd = cluster_connect(&c, k);

        ck_assert_ptr_nonnull(replies);
        ck_assert_int_eq(pipeline(fd, "submit", params, n, replies, 20), n);
        for (int i = 0; i < n; i++) {
                ids[i] = int_member(reply_result(replies[i]), "id");
                json_object_put(replies[i]);
        }
        close(fd);
        free(replies);
}

static int node_index(const char *name)
{
        for (int k = 1; k <= c.n; k++)
                if (strcmp(c.name[k - 1], name) == 0)
                        return k;
        ck_abort_msg("no node is named \"%s\"", name);
        return 0;
}

enum { JOBS = 600, NODES = 3, PER_NODE = JOBS / NODES };

/* One node's share of the 600 jobs: submitted, then waited for, on one connection each. */
struct share {
        int node;
        char *params[PER_NODE];
        int64_t ids[PER_NODE];
        json_object *records[PER_NODE];
};

static void *submit_share(void *arg)
{
        struct share *s = arg;

        submit_pipelined(s->node, s->params, PER_NODE, s->ids);
        return NULL;
}

static void *wait_share(void *arg)
{
        struct share *s = arg;
        json_object *waits[PER_NODE];
        int fd = cluster_connect(&c, s->node);

        for (int i = 0; i < PER_NODE; i++) {
                free(s->params[i]);
                ck_assert_int_ge(asprintf(&s->params[i], "{\"id\":%lld}", (long long)s->ids[i]), 0);
        }
        ck_assert_int_eq(pipeline(fd, "wait", s->params, PER_NODE, waits, 60), PER_NODE);
        for (int i = 0; i < PER_NODE; i++) {
                s->records[i] = json_object_get(reply_result(waits[i]));
                json_object_put(waits[i]);
                free(s->params[i]);
        }
        close(fd);
        return NULL;
}

/* Runs fn on every share at once, a thread each. */
static void each_share(struct share *shares, void *(*fn)(void *))
{
        pthread_t threads[NODES];

        for (int k = 0; k < NODES; k++)
                ck_assert_int_eq(pthread_create(&threads[k], NULL, fn, &shares[k]), 0);
        for (int k = 0; k < NODES; k++)
                ck_assert_int_eq(pthread_join(threads[k], NULL), 0);
}

START_TEST(six_hundred_jobs_submitted_round_robin_run_once_each_on_every_node)
{
        static struct share shares[NODES];
        int ran_on[NODES + 1] = {0}, *counts;
        char *tokens;

        cluster_init(&c, NODES);
        cluster_start(&c);
        tokens = cluster_path(&c, "tokens");
        for (int i = 0; i < JOBS; i++) {
                shares[i % NODES].node = i % NODES + 1;
                shares[i % NODES].params[i / NODES] = token_job(i);
        }
        each_share(shares, submit_share);
        each_share(shares, wait_share);
        for (int k = 0; k < NODES; k++)
                for (int i = 0; i < PER_NODE; i++) {
                        json_object *rec = shares[k].records[i];

                        ck_assert_msg(strcmp(str_member(rec, "outcome"), "succeeded") == 0,
                                      "job %lld: %s", (long long)shares[k].ids[i],
                                      json_object_to_json_string(rec));
                        ran_on[node_index(str_member(rec, "node"))]++;
                        json_object_put(rec);
                }
        counts = count_tokens(tokens, JOBS);
        for (int i = 0; i < JOBS; i++)
                ck_assert_msg(counts[i] == 1, "token t%d is in %s %d times", i, tokens, counts[i]);
        for (int k = 1; k <= NODES; k++)
                ck_assert_msg(ran_on[k] > 0, "node %s ran none of the %d jobs", c.name[k - 1],
                              JOBS);
        free(counts);
        free(tokens);
}
END_TEST

/* The pid that node k's `nodes` gives the node named name, 0 when it does not list it. */
static int listed_pid(int k, const char *name)
{
        json_object *result = cluster_nodes(&c, k),
                    *nodes = json_object_object_get(result, "nodes");
        int pid = 0;

        for (size_t i = 0; i < json_object_array_length(nodes); i++) {
                json_object *node = json_object_array_get_idx(nodes, i);

                if (strcmp(str_member(node, "name"), name) == 0)
                        pid = (int)int_member(node, "pid");
        }
        json_object_put(result);
        return pid;
}

START_TEST(a_node_name_is_refused_while_its_node_lives_and_free_once_its_lease_ran_out)
{
        char *err;
        int status;

        cluster_init(&c, 2);
        cluster_start(&c);
        status = cluster_run_stderr(&c, "n1", &err);
        ck_assert_msg(status != 0, "a second live node n1 started (it exited with 0)");
        ck_assert_msg(strstr(err, "Another live slowworkd node is named n1"),
                      "the second n1 said: %s", err);
        free(err);
        ck_assert(cluster_answers(&c, 1));
        ck_assert_int_eq(listed_pid(2, "n1"), cluster_node(&c, 1)->pid);

        cluster_kill(&c, 1);
        wait_for(!cluster_lists(&c, 2, "n1"), c.lease_time + 10, "the dead n1 is still listed");
        cluster_start_node(&c, 1);
        /* A node's list is as of its last renewal. */
        wait_for(listed_pid(2, "n1") == cluster_node(&c, 1)->pid, c.lease_renew + 5,
                 "n2 does not list the new n1");
        ck_assert_int_eq(listed_pid(1, "n1"), cluster_node(&c, 1)->pid);
}
END_TEST

/* How many nodes node k's `nodes` lists. */
static int listed_count(int k)
{
        json_object *result = cluster_nodes(&c, k);
        int n = (int)json_object_array_length(json_object_object_get(result, "nodes"));

        json_object_put(result);
        return n;
}

/* Node k's `running` in node from's `nodes`. */
static int64_t listed_running(int from, int k)
{
        json_object *result = cluster_nodes(&c, from),
                    *nodes = json_object_object_get(result, "nodes");
        int64_t running = -1;

        for (size_t i = 0; i < json_object_array_length(nodes); i++) {
                json_object *node = json_object_array_get_idx(nodes, i);

                if (strcmp(str_member(node, "name"), c.name[k - 1]) == 0)
                        running = int_member(node, "running");
        }
        json_object_put(result);
        return running;
}

/* Node k's `nodes`: every node of the cluster, by name, each with its fields; running[i] for node
 * i + 1's runs. */
static void check_nodes(int k, const int *running)
{
        json_object *result = cluster_nodes(&c, k),
                    *nodes = json_object_object_get(result, "nodes");
        char host[256];

        ck_assert_int_eq(gethostname(host, sizeof(host)), 0);
        ck_assert_msg(json_object_is_type(nodes, json_type_array) &&
                          json_object_array_length(nodes) == (size_t)c.n,
                      "node %s listed %s", c.name[k - 1], json_object_to_json_string(result));
        for (int i = 0; i < c.n; i++) {
                json_object *node = json_object_array_get_idx(nodes, (size_t)i);
                json_object *age = json_object_object_get(node, "lease_age");
                json_object *self = json_object_object_get(node, "self");

                ck_assert_msg(strcmp(str_member(node, "name"), c.name[i]) == 0 &&
                                  strcmp(str_member(node, "host"), host) == 0 &&
                                  int_member(node, "pid") == cluster_node(&c, i + 1)->pid &&
                                  int_member(node, "running") == running[i] &&
                                  int_member(node, "min_threads") == 1 &&
                                  int_member(node, "max_threads") == c.max_threads[i],
                              "%s lists %s (host %s, pid %d, running %d, threads 1 to %d)",
                              c.name[k - 1], json_object_to_json_string(node), host,
                              (int)cluster_node(&c, i + 1)->pid, running[i], c.max_threads[i]);
                ck_assert_msg(age &&
                                  (json_object_is_type(age, json_type_double) ||
                                   json_object_is_type(age, json_type_int)) &&
                                  json_object_get_double(age) >= 0 &&
                                  json_object_get_double(age) < c.lease_time,
                              "%s lists %s, the lease being %g s", c.name[k - 1],
                              json_object_to_json_string(node), c.lease_time);
                ck_assert_msg(self && json_object_is_type(self, json_type_boolean) &&
                                  json_object_get_boolean(self) == (i + 1 == k),
                              "self in %s's line for %s: %s", c.name[k - 1], c.name[i],
                              json_object_to_json_string(node));
        }
        json_object_put(result);
}

/* `slowctl nodes` on node k: its header line, then one line per node, its name first. */
static void check_slowctl_nodes(int k)
{
        char *cmd, line[512];
        int n = -1;
        FILE *f;

        ck_assert_int_ge(asprintf(&cmd, SLOWCTL " --socket %s nodes", cluster_node(&c, k)->sock), 0);
        f = popen(cmd, "re");
        free(cmd);
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f)) {
                size_t len;

                if (n++ < 0) {
                        ck_assert_msg(strncmp(line, "NODE ", 5) == 0, "slowctl nodes' header is %s",
                                      line);
                        continue;
                }
                ck_assert_msg(n <= c.n, "slowctl nodes printed more than %d nodes: %s", c.n, line);
                len = strlen(c.name[n - 1]);
                ck_assert_msg(strncmp(line, c.name[n - 1], len) == 0 && line[len] &&
                                  strchr(" \t\n", line[len]),
                              "line %d of slowctl nodes is not %s's: %s", n, c.name[n - 1], line);
        }
        ck_assert_int_eq(pclose(f), 0);
        ck_assert_int_eq(n, c.n);
}

START_TEST(nodes_lists_the_live_nodes_with_their_threads_runs_and_lease_age)
{
        static const int running[] = {0, 1, 0};
        double end, killed, dropped;
        int64_t id;
        int fd;

        cluster_init(&c, 3);
        c.max_threads[0] = 2; /* each its own */
        c.max_threads[1] = 3;
        cluster_start(&c);
        id = cluster_submit(&c, 2, "{\"command\":\"sleep 60\"}");
        fd = cluster_connect(&c, 2);
        job_wait_state(fd, id, "running");
        close(fd);
        /* A node's list is as of its last renewal. */
        for (int k = 1; k <= 3; k++)
                wait_for(listed_running(k, 2) == 1, c.lease_renew + 5,
                         "%s does not list n2 with its run", c.name[k - 1]);
        /* Over more than a lease: the renewals keep every age below it. */
        end = mono_now() + c.lease_time * 1.5;
        do {
                for (int k = 1; k <= 3; k++)
                        check_nodes(k, running);
                short_pause();
        } while (mono_now() < end);
        check_slowctl_nodes(1);

        killed = mono_now();
        cluster_kill(&c, 3);
        wait_for(!cluster_lists(&c, 1, "n3"), c.lease_time + 10,
                 "n3 is still listed %.1f s after its kill", mono_now() - killed);
        dropped = mono_now() - killed;
        ck_assert_msg(dropped >= c.lease_time / 2,
                      "n3 dropped out %.2f s after its kill, its lease being %g s", dropped,
                      c.lease_time);
        wait_for(!cluster_lists(&c, 2, "n3"), c.lease_renew + 5, "n2 still lists n3");
        ck_assert(cluster_lists(&c, 1, "n1") && cluster_lists(&c, 1, "n2") &&
                  cluster_lists(&c, 2, "n1") && cluster_lists(&c, 2, "n2"));
}
END_TEST

/* The runs' records in the histories of the running nodes: node k's record of run `run` of the
 * job, with the outcome; fails when none has it. */
static void check_record(int64_t id, int run, const char *outcome, const char *node)
{
        char params[96];

        snprintf(params, sizeof(params), "{\"outcome\":\"%s\",\"limit\":1000}", outcome);
        for (int k = 1; k <= c.n; k++) {
                json_object *reply, *runs;

                if (!c.running[k - 1])
                        continue;
                reply = cluster_call(&c, k, "history", params);
                ck_assert_ptr_nonnull(reply);
                runs = json_object_object_get(reply_result(reply), "runs");
                for (size_t i = 0; i < json_object_array_length(runs); i++) {
                        json_object *rec = json_object_array_get_idx(runs, i);

                        if (int_member(rec, "id") == id && int_member(rec, "run") == run) {
                                ck_assert_msg(strcmp(str_member(rec, "node"), node) == 0,
                                              "job %lld run %d: %s", (long long)id, run,
                                              json_object_to_json_string(rec));
                                json_object_put(reply);
                                return;
                        }
                }
                json_object_put(reply);
        }
        ck_abort_msg("no node's history has run %d of job %lld %s on %s", run, (long long)id,
                     outcome, node);
}

/* The job's last run, as the node that holds it (or its history) says: it succeeded, as run
 * `runs`, not on node `not_on`. */
static void check_ran_elsewhere(int64_t id, int runs, int not_on)
{
        int k = cluster_holder(&c, id);
        json_object *st, *last;
        int fd;

        ck_assert_msg(k > 0, "no running node knows job %lld", (long long)id);
        ck_assert_int_ne(k, not_on);
        fd = cluster_connect(&c, k);
        st = job_status(fd, id);
        close(fd);
        last = json_object_object_get(st, "last");
        ck_assert_msg(last && int_member(st, "runs") == runs &&
                          strcmp(str_member(last, "outcome"), "succeeded") == 0 &&
                          strcmp(str_member(last, "node"), c.name[not_on - 1]) != 0,
                      "job %lld: %s", (long long)id, json_object_to_json_string(st));
        json_object_put(st);
}

enum { IN_FLIGHT = 3, QUEUED = 2, FLOCK_JOBS = IN_FLIGHT + QUEUED };

/* Node 3 (three threads) runs IN_FLIGHT flock jobs, with QUEUED more queued behind them (ids in
 * ids[]); the file quick is there, so that the next runs are short. */
static void node3_busy(int64_t *ids)
{
        c.max_threads[2] = IN_FLIGHT;
        cluster_start(&c);
        for (int j = 0; j < FLOCK_JOBS; j++) {
                char *params = flock_job(j);

                if (j == IN_FLIGHT)
                        wait_for(all_started(IN_FLIGHT, 1), 10, "n3's runs did not start");
                ids[j] = cluster_submit(&c, 3, params);
                free(params);
        }
        cluster_touch(&c, "quick");
}

/* No run of the flock jobs failed to get its lock; the ones in flight ran twice, once on n3,
 * interrupted, once elsewhere; the queued ones once, elsewhere. */
static void check_ran_again_once(const int64_t *ids, const struct runs *runs)
{
        for (int j = 0; j < FLOCK_JOBS; j++) {
                const struct runs *r = &runs[j];
                int times = j < IN_FLIGHT ? 2 : 1;

                ck_assert_msg(r->lockfails == 0,
                              "job %lld found its lock taken: two of its runs at once",
                              (long long)ids[j]);
                ck_assert_msg(r->starts == times && r->ends == 1,
                              "job %lld started %d times and ended %d, not %d and 1",
                              (long long)ids[j], r->starts, r->ends, times);
                check_ran_elsewhere(ids[j], times, 3);
                if (j < IN_FLIGHT)
                        check_record(ids[j], 1, "interrupted", "n3");
        }
}

static bool pids_gone(const struct runs *runs, int n)
{
        for (int j = 0; j < n; j++)
                if (!process_gone(runs[j].pid[0][0]) || !process_gone(runs[j].pid[0][1]))
                        return false;
        return true;
}

START_TEST(a_killed_nodes_jobs_run_again_once_elsewhere_after_its_lease)
{
        enum { BATCH = 200, ACKED = 50 };
        struct runs runs[FLOCK_JOBS];
        char *tokens, *line;
        int64_t ids[FLOCK_JOBS];
        double killed;
        int *counts, fd;

        cluster_init(&c, 3);
        tokens = cluster_path(&c, "tokens");
        node3_busy(ids);
        /* Submits pipelined to n3 when it dies: the first ACKED acknowledged. */
        fd = cluster_connect(&c, 3);
        for (int i = 0; i < BATCH; i++) {
                char *params = token_job(i), *request;

                ck_assert_int_ge(asprintf(&request,
                                          "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"submit\","
                                          "\"params\":%s}",
                                          i, params),
                                 0);
                client_send(fd, request);
                free(request);
                free(params);
        }
        for (int i = 0; i < ACKED; i++) {
                json_object *reply;

                line = client_read_line(fd);
                ck_assert_ptr_nonnull(line);
                reply = json_tokener_parse(line);
                ck_assert_msg(reply && reply_code(reply) == 0 &&
                                  json_object_get_int(json_object_object_get(reply, "id")) == i,
                              "reply %d: %s", i, line);
                json_object_put(reply);
                free(line);
        }
        read_events(runs, FLOCK_JOBS);
        killed = wall_now();
        cluster_kill(&c, 3);
        close(fd);
        wait_for(pids_gone(runs, IN_FLIGHT), 2, "the runs of the killed n3 still run");

        wait_for(all_ended(FLOCK_JOBS), c.lease_time + 20, "n3's jobs did not run again elsewhere");
        wait_for(cluster_live_items_left(&c) == 0, 30, "jobs taken from n3 are still live");
        read_events(runs, FLOCK_JOBS);
        check_ran_again_once(ids, runs);
        for (int j = 0; j < IN_FLIGHT; j++)
                ck_assert_msg(runs[j].started[1] >= killed + c.lease_time / 2,
                              "job %lld ran again %.2f s after its node died, its lease being %g s",
                              (long long)ids[j], runs[j].started[1] - killed, c.lease_time);
        counts = count_tokens(tokens, BATCH);
        for (int i = 0; i < BATCH; i++)
                ck_assert_msg(counts[i] == 1 || (i >= ACKED && counts[i] == 0),
                              "token t%d (%s) is in %s %d times", i,
                              i < ACKED ? "acknowledged" : "not acknowledged", tokens, counts[i]);
        free(counts);
        free(tokens);
}
END_TEST

/* Whether node k answers, without a live item. */
static bool holds_nothing(int k)
{
        json_object *reply = cluster_call(&c, k, "list", NULL);
        bool none =
            reply && reply_code(reply) == 0 &&
            json_object_array_length(json_object_object_get(reply_result(reply), "items")) == 0;

        json_object_put(reply);
        return none;
}

/* Whether a session of node name (its store's or its mailbox's) is in the state that where says. */
static bool backend_is(const char *name, const char *where)
{
        char sql[512], *out;
        bool is;

        snprintf(sql, sizeof(sql),
                 "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'slowworkd %s'"
                 " AND %s",
                 name, where);
        ck_assert_int_eq(pg_query(&c.pg, sql, &out), 0);
        is = atoi(out) > 0;
        free(out);
        return is;
}

/* Stops node name (pid) inside a transaction of its own that holds its lease's row, as a machine
 * frozen at the wrong moment: its renewal waits for a lock the test holds on that row, the node
 * is stopped while it waits, and the lock is let go, so that the renewal's update goes through
 * and its transaction stays open. */
static void stop_in_its_renewal(pid_t pid, const char *name)
{
        struct pg_session lock;
        char sql[160];

        pg_session_start(&c.pg, &lock);
        snprintf(sql, sizeof(sql), "BEGIN; SELECT FROM %s.nodes WHERE name = '%s' FOR UPDATE;",
                 c.schema, name);
        pg_session_send(&lock, sql);
        wait_for(backend_is(name, "wait_event_type = 'Lock' AND query LIKE 'UPDATE nodes%'"),
                 c.lease_time + 10, "the node's renewal did not wait for its row");
        ck_assert_int_eq(kill(pid, SIGSTOP), 0);
        pg_session_send(&lock, "COMMIT;");
        ck_assert_int_eq(pg_session_end(&lock), 0);
        /* Its update goes through: its session is idle in its transaction, until the server
         * ends it a lease later (which a slow poll may see first). */
        wait_for(!backend_is(name, "wait_event_type = 'Lock'"), 10,
                 "the stopped node's renewal still waits for its row");
}

START_TEST(a_node_stopped_past_its_lease_fences_when_it_continues)
{
        struct runs runs[FLOCK_JOBS];
        int64_t ids[FLOCK_JOBS], id;
        json_object *rec;
        pid_t pid;
        int fd;

        cluster_init(&c, 3);
        node3_busy(ids);
        read_events(runs, FLOCK_JOBS);
        pid = cluster_node(&c, 3)->pid;
        /* Stopped at the worst moment: its transaction holds its row, which no other node can
         * take while it does. */
        stop_in_its_renewal(pid, "n3");
        wait_for(!cluster_lists(&c, 1, "n3"), c.lease_time + 10, "the stopped n3 is still listed");
        wait_for(all_ended(FLOCK_JOBS), 20, "the stopped n3's jobs did not run again elsewhere");
        ck_assert_int_eq(kill(pid, SIGCONT), 0);
        /* Its first look at its lease finds it lost: it kills its runs, then starts again. */
        wait_for(pids_gone(runs, IN_FLIGHT), 5, "n3's old runs still run after it continued");
        wait_for(holds_nothing(3), 20,
                 "n3 does not answer without its old jobs after it continued");
        ck_assert_int_eq(listed_pid(3, "n3"), pid);
        /* It runs jobs again, and nothing it had. */
        id = cluster_submit(&c, 3, "{\"command\":\"true\"}");
        fd = cluster_connect(&c, 3);
        rec = job_wait(fd, id);
        close(fd);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), "n3");
        json_object_put(rec);
        wait_for(cluster_live_items_left(&c) == 0, 30, "jobs are still live");
        read_events(runs, FLOCK_JOBS);
        check_ran_again_once(ids, runs);
}
END_TEST

/* Submits pipelined to one node, 10 at a time with a short pause between (some hundreds a second:
 * load, without thousands of jobs to run afterwards), until told to stop, on a thread of their own. */
struct load {
        int node;
        atomic_bool stop;
        atomic_int acked;
        int sent;
        int errors;         /* error replies, all -32603 */
        int other_error;    /* the code of another one, or 0 */
        char *acked_tokens; /* 1 for each token acknowledged */
};

enum { LOAD_MAX = 200000, LOAD_BATCH = 10 };

static void *load_run(void *arg)
{
        struct load *l = arg;

        while (!atomic_load(&l->stop) && l->sent + LOAD_BATCH <= LOAD_MAX) {
                json_object *replies[LOAD_BATCH];
                char *params[LOAD_BATCH];
                int fd = client_connect(cluster_node(&c, l->node)->sock);

                if (fd < 0) {
                        short_pause();
                        continue;
                }
                for (int i = 0; i < LOAD_BATCH; i++)
                        params[i] = token_job(l->sent + i);
                pipeline(fd, "submit", params, LOAD_BATCH, replies, 30);
                close(fd);
                for (int i = 0; i < LOAD_BATCH; i++) {
                        int code = replies[i] ? reply_code(replies[i]) : 0;

                        if (replies[i] && !code) {
                                l->acked_tokens[l->sent + i] = 1;
                                atomic_fetch_add(&l->acked, 1);
                        } else if (code == -32603) {
                                l->errors++;
                        } else if (code) {
                                l->other_error = code;
                        }
                        json_object_put(replies[i]);
                        free(params[i]);
                }
                l->sent += LOAD_BATCH;
                short_pause();
        }
        return NULL;
}

static bool takes_submits(int k)
{
        json_object *reply = cluster_call(&c, k, "submit", "{\"command\":\"true\"}");
        bool ok = reply && reply_code(reply) == 0;

        json_object_put(reply);
        return ok;
}

static bool all_acked_ran(const char *tokens, const struct load *l)
{
        int *counts = count_tokens(tokens, LOAD_MAX);
        bool all = true;

        for (int i = 0; i < l->sent && all; i++)
                all = !l->acked_tokens[i] || counts[i] > 0;
        free(counts);
        return all;
}

START_TEST(a_postgresql_restart_under_load_loses_no_acknowledged_job)
{
        struct load l = {.node = 1};
        struct pg_restart restart;
        pthread_t thread;
        char *tokens;
        double back;
        int *counts, before;

        l.acked_tokens = calloc(LOAD_MAX, 1);
        ck_assert_ptr_nonnull(l.acked_tokens);
        cluster_init(&c, 3);
        /* The default lease, which outlasts the restart: no run is cut, and every job runs once
         * (a lease that runs out is the killed and stopped nodes' cases). */
        c.lease_time = 10;
        c.lease_renew = 2;
        tokens = cluster_path(&c, "tokens");
        cluster_start(&c);
        pg_restart_ready(&c.pg, &restart);
        ck_assert_int_eq(pthread_create(&thread, NULL, load_run, &l), 0);
        wait_for(atomic_load(&l.acked) >= 50, 20, "n1 acknowledged %d submits",
                 atomic_load(&l.acked));
        pg_restart_go(&restart);
        back = mono_now();
        before = atomic_load(&l.acked);
        wait_for(atomic_load(&l.acked) >= before + 50, 20,
                 "n1 took no submits again after PostgreSQL restarted");
        fprintf(stderr, "after PostgreSQL restarted, n1 took 50 submits again in %.2f s\n",
                mono_now() - back);
        atomic_store(&l.stop, true);
        ck_assert_int_eq(pthread_join(thread, NULL), 0);
        ck_assert_msg(l.other_error == 0, "a submit failed with %d", l.other_error);
        for (int k = 1; k <= 3; k++) {
                wait_for(takes_submits(k), 10, "%s takes no submits after PostgreSQL restarted",
                         c.name[k - 1]);
                wait_for(listed_count(k) == 3, 10, "%s does not list the three nodes again",
                         c.name[k - 1]);
        }

        wait_for(all_acked_ran(tokens, &l), 30, "acknowledged jobs did not run");
        wait_for(cluster_live_items_left(&c) == 0, 30, "jobs are still live");
        counts = count_tokens(tokens, LOAD_MAX);
        for (int i = 0; i < l.sent; i++)
                ck_assert_msg(counts[i] == 1 || (!l.acked_tokens[i] && counts[i] == 0),
                              "token t%d (%s) is in %s %d times", i,
                              l.acked_tokens[i] ? "acknowledged" : "not acknowledged", tokens,
                              counts[i]);
        fprintf(stderr, "%d submits, %d acknowledged, %d refused (-32603)\n", l.sent,
                atomic_load(&l.acked), l.errors);
        free(counts);
        free(l.acked_tokens);
        free(tokens);
}
END_TEST

static int run(void)
{
        Suite *s = suite_create("cluster");
        TCase *tc = tcase_create("cluster");

        tcase_set_timeout(tc, 120);
        tcase_add_test_alone(tc, a_postgresql_restart_under_load_loses_no_acknowledged_job);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, six_hundred_jobs_submitted_round_robin_run_once_each_on_every_node);
        tcase_add_test(tc,
                       a_node_name_is_refused_while_its_node_lives_and_free_once_its_lease_ran_out);
        tcase_add_test(tc, nodes_lists_the_live_nodes_with_their_threads_runs_and_lease_age);
        tcase_add_test(tc, a_killed_nodes_jobs_run_again_once_elsewhere_after_its_lease);
        tcase_add_test(tc, a_node_stopped_past_its_lease_fences_when_it_continues);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

int main(int argc, char **argv)
{
        (void)argc;
        return cluster_suite_main(argv, run, true); /* it restarts PostgreSQL */
}
