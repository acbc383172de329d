/* SPDX-License-Identifier: MIT */
/* A client of any node sees every node's jobs: status, wait, cancel, release, log (and slowctl
 * log -f) of a job another node holds are asked of that node and answered as there; a finished
 * run's record and log come from the database. */
#define _GNU_SOURCE
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
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

/* The params of a submit of the shell command, persisting or not (the caller frees them). */
static char *command(bool persist, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static char *command(bool persist, const char *fmt, ...)
{
        json_object *o = json_object_new_object();
        char *cmd, *params;
        va_list ap;

        va_start(ap, fmt);
        ck_assert_int_ge(vasprintf(&cmd, fmt, ap), 0);
        va_end(ap);
        json_object_object_add(o, "command", json_object_new_string(cmd));
        if (persist)
                json_object_object_add(o, "persist", json_object_new_boolean(1));
        params = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        ck_assert_ptr_nonnull(params);
        json_object_put(o);
        free(cmd);
        return params;
}

static char *id_params(int64_t id)
{
        char *params;

        ck_assert_int_ge(asprintf(&params, "{\"id\":%lld}", (long long)id), 0);
        return params;
}

/* Node k's status of the job once it is in the state (the caller puts it). */
static json_object *status_once(int k, int64_t id, const char *state)
{
        char *p = id_params(id);
        double end = mono_now() + scaled(10);
        json_object *st;

        while (strcmp(str_member(st = cluster_call_ok(&c, k, "status", p), "state"), state) != 0) {
                ck_assert_msg(mono_now() < end, "job %lld: %s", (long long)id,
                              json_object_to_json_string(st));
                json_object_put(st);
                short_pause();
        }
        free(p);
        return st;
}

START_TEST(status_wait_log_and_cancel_of_another_nodes_jobs_are_answered_by_it)
{
        char *gated, *sleeper, *p;
        json_object *st, *rec, *log;
        int64_t id, other;

        cluster_init(&c, 2);
        cluster_start(&c);
        gated = command(false, "echo hello; " WAIT_FOR_FILE " %s/go", c.dir);
        sleeper = command(false, "sleep 60");
        id = cluster_submit(&c, 1, gated);
        other = cluster_submit(&c, 1, sleeper);

        p = id_params(id);
        st = status_once(2, id, "running");
        ck_assert_str_eq(str_member(st, "node"), "n1");
        ck_assert_int_eq(int_member(st, "id"), id);
        json_object_put(st);
        ck_assert_int_eq(cluster_live_items(&c, 2), 0); /* list is the node's own */

        /* A wait asked of n2 comes back when the run on n1 ends. */
        cluster_touch(&c, "go");
        rec = cluster_call_ok(&c, 2, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), "n1");
        log = cluster_call_ok(&c, 2, "log", p);
        ck_assert_str_eq(str_member(log, "data"), "hello\n");
        json_object_put(rec);
        json_object_put(log);
        free(p);

        p = id_params(other);
        json_object_put(cluster_call_ok(&c, 2, "cancel", p));
        rec = cluster_call_ok(&c, 1, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);
        free(p);
        free(gated);
        free(sleeper);
}
END_TEST

/* restart asked of another node: the node that ran the job (and keeps its spec) makes the new
 * job; signal of a job of another node reaches it there. */
START_TEST(restart_and_signal_of_another_nodes_job_are_done_by_its_node)
{
        char *job, *p, *gated;
        json_object *r, *st, *rec;
        int64_t id, again, live;
        double end;

        cluster_init(&c, 2);
        cluster_start(&c);
        job = command(false, "echo ran >> %s/runs", c.dir);
        id = cluster_submit(&c, 1, job);
        p = id_params(id);
        json_object_put(cluster_call_ok(&c, 1, "wait", p));
        end = mono_now() + scaled(10);
        while (json_object_get_boolean(
            json_object_object_get(st = cluster_call_ok(&c, 1, "status", p), "live"))) {
                ck_assert_msg(mono_now() < end, "job %lld still live", (long long)id);
                json_object_put(st);
                short_pause();
        }
        json_object_put(st);
        r = cluster_call_ok(&c, 2, "restart", p);
        again = int_member(r, "id");
        json_object_put(r);
        free(p);
        p = id_params(again);
        rec = cluster_call_ok(&c, 2, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), "n1");
        json_object_put(rec);
        free(p);

        /* A trap that ends the job once USR1 came, asked of n2. */
        gated = command(false, "trap 'exit 7' USR1; touch %s/trapped; while :; do sleep 0.02; done",
                        c.dir);
        live = cluster_submit(&c, 1, gated);
        p = cluster_path(&c, "trapped");
        end = mono_now() + scaled(10);
        while (access(p, F_OK) != 0) {
                ck_assert_msg(mono_now() < end, "job %lld set no trap", (long long)live);
                short_pause();
        }
        free(p);
        ck_assert_int_ge(asprintf(&p, "{\"id\":%lld,\"signal\":\"USR1\"}", (long long)live), 0);
        json_object_put(cluster_call_ok(&c, 2, "signal", p));
        free(p);
        p = id_params(live);
        rec = cluster_call_ok(&c, 2, "wait", p);
        ck_assert_int_eq(int_member(rec, "exit_code"), 7);
        json_object_put(rec);
        free(p);
        free(gated);
        free(job);
}
END_TEST

START_TEST(a_job_no_node_knows_is_not_found_and_a_held_one_is_released_from_another_node)
{
        char *held, *p, msg[256];
        json_object *st;
        int64_t id;
        int fd;

        cluster_init(&c, 2);
        cluster_start(&c);
        fd = cluster_connect(&c, 2);
        ck_assert_int_eq(call_error(fd, "status", "{\"id\":987654321}", msg, sizeof(msg)), -32001);
        close(fd);

        /* Kept by persist on n1 once it ran, until a release, here from n2. */
        held = command(true, "true");
        id = cluster_submit(&c, 1, held);
        p = id_params(id);
        st = status_once(2, id, "idle");
        ck_assert(json_object_get_boolean(json_object_object_get(st, "live")));
        json_object_put(st);
        json_object_put(cluster_call_ok(&c, 2, "release", p));
        wait_for(cluster_live_items(&c, 1) == 0, 10, "job %lld stays after its release",
                 (long long)id);
        free(p);
        free(held);
}
END_TEST

START_TEST(slowctl_log_follow_on_another_node_prints_the_run_as_it_goes)
{
        char *job, *go, *cmd, out[4096];
        FILE *f;
        size_t n;
        int64_t id;

        cluster_init(&c, 2);
        cluster_start(&c);
        job = command(false, "echo one; " WAIT_FOR_FILE " %s/go; echo two", c.dir);
        id = cluster_submit(&c, 1, job);
        go = cluster_path(&c, "go");
        ck_assert_int_ge(asprintf(&cmd, "(sleep 1; touch %s) & exec %s --socket %s log -f %lld",
                                  go, SLOWCTL, cluster_node(&c, 2)->sock, (long long)id),
                         0);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        n = fread(out, 1, sizeof(out) - 1, f);
        out[n] = '\0';
        ck_assert_int_eq(pclose(f), 0);
        ck_assert_str_eq(out, "one\ntwo\n");
        free(cmd);
        free(go);
        free(job);
}
END_TEST

START_TEST(list_on_any_node_pages_through_every_nodes_live_jobs_by_id)
{
        char *sleeper, *page;
        json_object *result, *items;
        int64_t ids[6], after = 0;
        int seen = 0;

        cluster_init(&c, 2);
        cluster_start(&c);
        sleeper = command(false, "sleep 60");
        for (int i = 0; i < 6; i++)
                ids[i] = cluster_submit(&c, i % 2 + 1, sleeper);
        /* Pages of 4 from n2, then the rest: the six jobs once each, by id, each naming its
         * node. */
        for (int k = 0; k < 2; k++) {
                ck_assert_int_ge(asprintf(&page, "{\"limit\":4,\"after_id\":%lld}",
                                          (long long)after),
                                 0);
                result = cluster_call_ok(&c, 2, "list", page);
                items = json_object_object_get(result, "items");
                ck_assert_int_eq(int_member(result, "more"), k == 0 ? 2 : 0);
                for (size_t i = 0; i < json_object_array_length(items); i++) {
                        json_object *item = json_object_array_get_idx(items, i);
                        int64_t id = int_member(item, "id");
                        int j;

                        ck_assert_int_gt(id, after);
                        after = id;
                        for (j = 0; j < 6 && ids[j] != id; j++)
                                ;
                        ck_assert_msg(j < 6, "list gave job %lld, which no test made",
                                      (long long)id);
                        ck_assert_str_eq(str_member(item, "node"), c.name[j % 2]);
                        ck_assert_str_eq(str_member(item, "command"), "sleep 60");
                        seen++;
                }
                json_object_put(result);
                free(page);
        }
        ck_assert_int_eq(seen, 6);
        result = cluster_call_ok(&c, 1, "list", "{\"owner\":12345}");
        ck_assert_int_eq(json_object_array_length(json_object_object_get(result, "items")), 0);
        json_object_put(result);
        free(sleeper);
}
END_TEST

/* Until n1 serves a request passed to it: its session for it is a connection of its own. */
static void wait_passed_to_n1(void)
{
        int fd = cluster_connect(&c, 1);
        double until = mono_now() + scaled(10);
        json_object *st;
        int64_t n;

        do {
                st = call_ok(fd, "status", NULL);
                n = int_member(st, "connections");
                json_object_put(st);
                if (n < 2)
                        usleep(20000);
        } while (n < 2 && mono_now() < until);
        ck_assert_msg(n >= 2, "the wait was not passed to n1");
        close(fd);
}

START_TEST(a_request_passed_to_a_node_that_starts_again_or_dies_gets_an_error)
{
        char *gated, request[128], *line;
        json_object *reply;
        int64_t id;
        int fd;

        cluster_init(&c, 2);
        cluster_start(&c);
        gated = command(false, WAIT_FOR_FILE " %s/go", c.dir);
        for (int round = 0; round < 2; round++) {
                id = cluster_submit(&c, 1, gated);
                fd = cluster_connect(&c, 2);
                snprintf(request, sizeof(request),
                         "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"wait\",\"params\":"
                         "{\"id\":%lld}}",
                         (long long)id);
                client_send(fd, request);
                wait_passed_to_n1();
                cluster_kill(&c, 1);
                if (round == 0)
                        cluster_start_node(&c, 1); /* the same name: a new epoch */
                line = client_read_line(fd);
                reply = json_tokener_parse(line);
                /* Started again after a lease, n1 may have been gone a moment. */
                ck_assert_msg(reply_code(reply) == -32603 &&
                                  (strstr(line, "n1, which holds the job, is gone") ||
                                   (round == 0 && strstr(line, "n1, which holds the job, started "
                                                               "again"))),
                              "round %d: %s", round, line);
                json_object_put(reply);
                free(line);
                close(fd);
        }
        free(gated);
}
END_TEST

START_TEST(a_subscriber_on_any_node_hears_of_every_nodes_jobs)
{
        char *job, *line;
        json_object *reply;
        int64_t id;
        int fd;

        cluster_init(&c, 2);
        cluster_start(&c);
        fd = cluster_connect(&c, 2);
        reply = client_call(fd, "subscribe", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        job = command(false, "sleep 0.5");
        id = cluster_submit(&c, 1, job);
        /* n1's events of its job come to n2's subscriber, up to the run's end. */
        for (;;) {
                json_object *ev, *params;

                line = client_read_line(fd);
                ev = json_tokener_parse(line);
                params = json_object_object_get(ev, "params");
                ck_assert_msg(params, "not an event: %s", line);
                free(line);
                if (int_member(params, "id") == id &&
                    json_object_object_get(params, "outcome")) {
                        ck_assert_str_eq(str_member(params, "outcome"), "succeeded");
                        json_object_put(ev);
                        break;
                }
                json_object_put(ev);
        }
        close(fd);
        free(job);
}
END_TEST

/* Node k's status of the job once it answers with a record of the job's run (a finished job's:
 * not live). */
static json_object *finished_status(int k, int64_t id)
{
        char *p = id_params(id);
        double end = mono_now() + scaled(10);
        json_object *st;

        for (;;) {
                json_object *reply = cluster_call(&c, k, "status", p);

                st = reply && reply_code(reply) == 0 ? json_object_get(reply_result(reply)) : NULL;
                json_object_put(reply);
                if (st && !json_object_get_boolean(json_object_object_get(st, "live")))
                        break;
                ck_assert_msg(mono_now() < end, "job %lld: %s", (long long)id,
                              st ? json_object_to_json_string(st) : "no status");
                json_object_put(st);
                short_pause();
        }
        free(p);
        return st;
}

/* The job's whole log as node k gives it, in pieces of at most max bytes. */
static char *log_in_pieces(int k, int64_t id, int max)
{
        char *text = strdup(""), *p;
        int64_t offset = 0;

        for (int pieces = 0;; pieces++) {
                json_object *piece;
                char *more;

                ck_assert_int_lt(pieces, 1000);
                ck_assert_int_ge(asprintf(&p, "{\"id\":%lld,\"offset\":%lld,\"max\":%d}",
                                          (long long)id, (long long)offset, max),
                                 0);
                piece = cluster_call_ok(&c, k, "log", p);
                free(p);
                ck_assert_int_ge(asprintf(&more, "%s%s", text, str_member(piece, "data")), 0);
                free(text);
                text = more;
                ck_assert_int_gt(int_member(piece, "offset"), offset - 1);
                offset = int_member(piece, "offset");
                if (json_object_get_boolean(json_object_object_get(piece, "eof"))) {
                        json_object_put(piece);
                        return text;
                }
                json_object_put(piece);
        }
}

/*
 * A finished run's record and log are in the database: a node that did not run it shows both,
 * also once the node that ran it is gone and its log file with it. Each node prunes only its own
 * runs (here n2, at history-limit 1), and removes only its own logs (also for a user's budget).
 */
START_TEST(a_finished_runs_record_and_log_come_from_the_database_once_its_node_is_gone)
{
        char *job, *p, *log_path, *text, want[16384];
        json_object *st, *rec;
        int64_t id;
        int len = 0;

        cluster_init(&c, 2);
        cluster_start(&c);
        /* A character across byte 1,000 (where the first piece ends), 1,000 numbered lines, and
         * a byte that is not UTF-8. */
        job = command(false, "printf %%0999d 0 | tr 0 a; printf '\\303\\251\\n'; seq 1 1000; "
                             "printf 'last\\377\\n'");
        id = cluster_submit(&c, 1, job);
        p = id_params(id);
        rec = cluster_call_ok(&c, 1, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        log_path = strdup(str_member(rec, "log"));
        json_object_put(rec);
        memset(want, 'a', 999);
        len = 999;
        len += snprintf(want + len, sizeof(want) - (size_t)len, "\xc3\xa9\n");
        for (int i = 1; i <= 1000; i++)
                len += snprintf(want + len, sizeof(want) - (size_t)len, "%d\n", i);
        snprintf(want + len, sizeof(want) - (size_t)len, "last\xef\xbf\xbd\n");

        /* n2 started before the run, and n1 no longer holds the job: the record comes from
         * the database. */
        st = finished_status(2, id);
        ck_assert_str_eq(str_member(st, "node"), "n1");
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "succeeded");
        json_object_put(st);

        /* Started again, n2 has n1's run in its history. It keeps one run of its own, and
         * 1 KiB of each user's logs: its prunes and its budget leave n1's run and log alone. */
        cluster_kill(&c, 2);
        cluster_start_node(&c, 2);
        json_object_put(cluster_call_ok(&c, 2, "settings.set",
                                        "{\"history-limit\":1,\"max-log-bytes-per-user\":1024}"));
        for (int i = 0; i < 3; i++) {
                char *mine = id_params(cluster_submit(&c, 2, job));

                json_object_put(cluster_call_ok(&c, 2, "wait", mine));
                free(mine);
        }
        ck_assert_int_eq(access(log_path, F_OK), 0);

        cluster_kill(&c, 1);
        ck_assert_int_eq(unlink(log_path), 0);
        rec = cluster_call_ok(&c, 2, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), "n1");
        ck_assert_int_eq(int_member(rec, "exit_code"), 0);
        json_object_put(rec);
        text = log_in_pieces(2, id, 1000);
        ck_assert_str_eq(text, want);
        free(text);
        text = log_in_pieces(2, id, 65536);
        ck_assert_str_eq(text, want);
        free(text);
        /* Past its end: nothing, and the end. */
        ck_assert_int_ge(asprintf(&text, "{\"id\":%lld,\"offset\":1000000}", (long long)id), 0);
        rec = cluster_call_ok(&c, 2, "log", text);
        ck_assert_str_eq(str_member(rec, "data"), "");
        ck_assert(json_object_get_boolean(json_object_object_get(rec, "eof")));
        json_object_put(rec);
        free(text);
        free(log_path);
        free(p);
        free(job);
}
END_TEST

/* The ids of a history page's runs, newest first, as "ID@NODE ..." (the caller frees it). */
static char *page_runs(json_object *page)
{
        json_object *runs = json_object_object_get(page, "runs");
        char *text = strdup(""), *more;

        ck_assert_msg(json_object_is_type(runs, json_type_array), "history: %s",
                      json_object_to_json_string(page));
        for (size_t i = 0; i < json_object_array_length(runs); i++) {
                json_object *rec = json_object_array_get_idx(runs, i);

                ck_assert_int_ge(asprintf(&more, "%s%s%lld@%s", text, i ? " " : "",
                                          (long long)int_member(rec, "id"),
                                          str_member(rec, "node")),
                                 0);
                free(text);
                text = more;
        }
        return text;
}

static void assert_history(int k, const char *params, const char *want, bool more)
{
        json_object *page = cluster_call_ok(&c, k, "history", params);
        char *got = page_runs(page);

        ck_assert_msg(strcmp(got, want) == 0, "history %s on n%d: %s, not %s", params, k, got,
                      want);
        ck_assert_int_eq(json_object_get_boolean(json_object_object_get(page, "more")), more);
        free(got);
        json_object_put(page);
}

/* history on any node pages through every node's runs, newest first, with its filters. */
START_TEST(history_on_any_node_pages_through_every_nodes_runs)
{
        const char *commands[] = {"exit 0", "exit 3", "exit 3", "true"};
        char want[256], params[256], msg[256], out[4096], *cmd;
        int64_t ids[4];
        size_t n;
        FILE *f;
        int fd, found = 0;

        cluster_init(&c, 2);
        cluster_start(&c);
        for (int i = 0; i < 4; i++) {
                char *job = command(false, "%s", commands[i]), *p;

                ids[i] = cluster_submit(&c, 1 + i % 2, job);
                p = id_params(ids[i]);
                json_object_put(cluster_call_ok(&c, 1 + i % 2, "wait", p));
                free(p);
                free(job);
        }
        snprintf(want, sizeof(want), "%lld@n2 %lld@n1 %lld@n2 %lld@n1", (long long)ids[3],
                 (long long)ids[2], (long long)ids[1], (long long)ids[0]);
        assert_history(1, NULL, want, false);
        assert_history(2, NULL, want, false);

        snprintf(want, sizeof(want), "%lld@n2 %lld@n1", (long long)ids[3], (long long)ids[2]);
        assert_history(1, "{\"limit\":2}", want, true);
        snprintf(params, sizeof(params), "{\"limit\":2,\"before\":{\"id\":%lld,\"run\":1}}",
                 (long long)ids[2]);
        snprintf(want, sizeof(want), "%lld@n2 %lld@n1", (long long)ids[1], (long long)ids[0]);
        assert_history(1, params, want, false);
        snprintf(want, sizeof(want), "%lld@n1 %lld@n2", (long long)ids[2], (long long)ids[1]);
        assert_history(2, "{\"outcome\":\"failed\"}", want, false);
        assert_history(2, "{\"owner\":4242}", "", false);

        /* slowctl history says where each ran. */
        ck_assert_int_ge(asprintf(&cmd, "%s --socket %s history", SLOWCTL,
                                  cluster_node(&c, 2)->sock),
                         0);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        n = fread(out, 1, sizeof(out) - 1, f);
        out[n] = '\0';
        ck_assert_int_eq(pclose(f), 0);
        ck_assert_msg(strstr(out, "DURATION  NODE  COMMAND\n"), "%s", out);
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
                long long id = 0;

                if (sscanf(line, "%lld", &id) == 1 && id == ids[2]) {
                        ck_assert_msg(strstr(line, " n1 ") && strstr(line, " exit 3"), "%s",
                                      line);
                        found++;
                }
        }
        ck_assert_int_eq(found, 1);
        free(cmd);

        fd = cluster_connect(&c, 2);
        ck_assert_int_eq(call_error(fd, "history", "{\"before\":{\"id\":987654,\"run\":1}}", msg,
                                    sizeof(msg)),
                         -32001);
        ck_assert_str_eq(msg, "run 987654/1 is not in the history");
        close(fd);
}
END_TEST

/* How many live jobs node k lists, every node's. */
static size_t listed_jobs(int k)
{
        json_object *result = cluster_call_ok(&c, k, "list", NULL);
        size_t n = json_object_array_length(json_object_object_get(result, "items"));

        json_object_put(result);
        return n;
}

/* A finished job of n1 (its command), once n1 holds it no more. */
static int64_t finished_on_n1(const char *cmd)
{
        char *job = command(false, "%s", cmd), *p;
        int64_t id = cluster_submit(&c, 1, job);

        p = id_params(id);
        json_object_put(cluster_call_ok(&c, 1, "wait", p));
        wait_for(listed_jobs(2) == 0, 10, "job %lld stays live", (long long)id);
        free(p);
        free(job);
        return id;
}

/* The run record of the job a submit to node k with the params made, once it ended. */
static json_object *submit_and_wait(int k, const char *params)
{
        char *p = id_params(cluster_submit(&c, k, params));
        json_object *rec = cluster_call_ok(&c, k, "wait", p);

        free(p);
        return rec;
}

/*
 * A submit that waits for another node's live job is made on that node, with the environment
 * the client set on its connection; one that waits for finished jobs of another node is made on
 * the node asked, which reads how they ended from the database.
 */
START_TEST(a_submit_after_another_nodes_job_goes_to_its_node)
{
        char *gated, *params, *p, *out, **lines;
        json_object *st, *rec;
        int64_t a, b, f, ok1, ok2;
        int fd;

        cluster_init(&c, 2);
        cluster_start(&c);
        gated = command(false, WAIT_FOR_FILE " %s/go", c.dir);
        a = cluster_submit(&c, 1, gated);
        out = cluster_path(&c, "out");
        fd = cluster_connect(&c, 2);
        json_object_put(call_ok(fd, "env.set", "{\"env\":{\"GREETING\":\"hello from n2\"}}"));
        ck_assert_int_ge(asprintf(&params,
                                  "{\"command\":\"echo \\\"$GREETING\\\" >%s\",\"after\":[%lld]}",
                                  out, (long long)a),
                         0);
        b = job_submit(fd, params);
        close(fd);
        free(params);
        st = status_once(1, b, "waiting");
        ck_assert_str_eq(str_member(st, "node"), "n1");
        json_object_put(st);
        cluster_touch(&c, "go");
        p = id_params(b);
        rec = cluster_call_ok(&c, 2, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), "n1");
        json_object_put(rec);
        free(p);
        lines = read_lines(out);
        ck_assert_msg(lines[0] && strcmp(lines[0], "hello from n2") == 0, "%s", lines[0]);
        strv_free(lines);

        /* Two finished jobs of n1, both looked up; one failed. */
        ok1 = finished_on_n1("true");
        ok2 = finished_on_n1("true");
        f = finished_on_n1("exit 3");
        ck_assert_int_ge(asprintf(&params, "{\"command\":\"true\",\"after\":[%lld,%lld]}",
                                  (long long)ok1, (long long)ok2),
                         0);
        rec = submit_and_wait(2, params);
        free(params);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), "n2");
        json_object_put(rec);
        ck_assert_int_ge(asprintf(&params,
                                  "{\"command\":\"true\",\"after\":[%lld],\"after_any\":[%lld]}",
                                  (long long)ok1, (long long)f),
                         0);
        rec = submit_and_wait(2, params);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        free(params);
        ck_assert_int_ge(asprintf(&params, "{\"command\":\"true\",\"after\":[%lld,%lld]}",
                                  (long long)ok2, (long long)f),
                         0);
        rec = submit_and_wait(2, params);
        ck_assert_str_eq(str_member(rec, "outcome"), "dependency-failed");
        ck_assert_str_eq(str_member(rec, "node"), "n2");
        json_object_put(rec);
        free(params);
        free(out);
        free(gated);
}
END_TEST

/*
 * A submit on n2 that waits for live jobs of n1 and of n3 is made on n1 (the first's node), and
 * waits there for n3's job too, whose end n1 reads from the database; an `after` job of n3 that
 * fails fails it. A keyed submit whose key is n2's idle job, after a live job of n1, adds it to
 * what that job waits for, on n2.
 */
START_TEST(a_submit_after_live_jobs_of_two_other_nodes_waits_for_both)
{
        char *gate1, *gate3, *params, *p;
        json_object *st, *rec;
        int64_t a, b, job, failing;

        cluster_init(&c, 3);
        cluster_start(&c);
        gate1 = command(false, WAIT_FOR_FILE " %s/go1", c.dir);
        /* Kept after its run: it ends idle, and n3 still holds it. */
        gate3 = command(true, WAIT_FOR_FILE " %s/go3", c.dir);
        a = cluster_submit(&c, 1, gate1);
        b = cluster_submit(&c, 3, gate3);
        ck_assert_int_ge(asprintf(&params, "{\"command\":\"true\",\"after\":[%lld,%lld]}",
                                  (long long)a, (long long)b),
                         0);
        job = cluster_submit(&c, 2, params);
        free(params);
        st = status_once(2, job, "waiting");
        ck_assert_str_eq(str_member(st, "node"), "n1");
        json_object_put(st);

        /* n1's job ends: it waits on for n3's. */
        cluster_touch(&c, "go1");
        p = id_params(a);
        json_object_put(cluster_call_ok(&c, 1, "wait", p));
        free(p);
        /* n1 reads the ends of other nodes' jobs at its renewals: it has, and waits on. */
        cluster_wait_renewals(&c, 1, 2);
        json_object_put(status_once(1, job, "waiting"));
        cluster_touch(&c, "go3");
        p = id_params(job);
        rec = cluster_call_ok(&c, 3, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_str_eq(str_member(rec, "node"), "n1");
        json_object_put(rec);
        free(p);

        /* An `after` job of n3 that fails, while n1's still runs. */
        free(gate1);
        gate1 = command(false, WAIT_FOR_FILE " %s/go1b", c.dir);
        a = cluster_submit(&c, 1, gate1);
        failing = cluster_submit(&c, 3, "{\"command\":\"sleep 1; exit 4\"}");
        ck_assert_int_ge(asprintf(&params, "{\"command\":\"true\",\"after\":[%lld,%lld]}",
                                  (long long)a, (long long)failing),
                         0);
        job = cluster_submit(&c, 2, params);
        free(params);
        p = id_params(job);
        rec = cluster_call_ok(&c, 1, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "dependency-failed");
        json_object_put(rec);
        free(p);
        cluster_touch(&c, "go1b");

        job = cluster_submit(&c, 2, "{\"command\":\"true\",\"key\":\"k\",\"persist\":true}");
        p = id_params(job);
        json_object_put(cluster_call_ok(&c, 2, "wait", p));
        free(gate1);
        gate1 = command(false, WAIT_FOR_FILE " %s/go1c", c.dir);
        a = cluster_submit(&c, 1, gate1);
        ck_assert_int_ge(asprintf(&params,
                                  "{\"command\":\"true\",\"key\":\"k\",\"after\":[%lld]}",
                                  (long long)a),
                         0);
        ck_assert_int_eq(cluster_submit(&c, 2, params), job);
        free(params);
        st = status_once(2, job, "waiting");
        ck_assert_str_eq(str_member(st, "node"), "n2");
        json_object_put(st);
        cluster_touch(&c, "go1c");
        json_object_put(status_once(2, job, "idle"));
        rec = cluster_call_ok(&c, 2, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "run"), 2);
        json_object_put(rec);
        free(p);
        free(gate1);
        free(gate3);
}
END_TEST

/* The transactions of the suite's database so far, as PostgreSQL counts them (each backend tells
 * its counts within a second or so of its last transaction). */
static long long transactions(void)
{
        char *out = NULL;
        long long n;

        ck_assert_int_eq(pg_query(&c.pg,
                                  "SELECT xact_commit + xact_rollback FROM pg_stat_database "
                                  "WHERE datname = current_database()",
                                  &out),
                         0);
        n = atoll(out);
        free(out);
        return n;
}

/*
 * A job that waits for live jobs of two other nodes has their ends read once a renewal of its
 * node's lease, not once a commit (each read's own commit started the next: thousands of
 * transactions a second). In three renewals (a second apart) of each node, the three nodes renew
 * (a transaction a renewal) and the waiting job's node reads the ends thrice, and each psql
 * counts twice: about 17, fewer than 30 (the `nodes` that the test asks to see the renewals
 * read the database, a transaction each: not counted). A backend idle since the submits may tell PostgreSQL its
 * counts up to 10 s late, into a span: spans follow each other until one is under 30, five at
 * most.
 */
START_TEST(a_job_waiting_for_two_other_nodes_costs_a_read_a_renewal)
{
        char *gate[3], *params, *p;
        int64_t dep[3], job;
        long long before, spent, least = LLONG_MAX;
        json_object *rec;

        cluster_init(&c, 3);
        c.lease_time = 5;
        c.lease_renew = 1;
        cluster_start(&c);
        for (int k = 1; k <= 3; k++) {
                char name[8];

                snprintf(name, sizeof(name), "go%d", k);
                gate[k - 1] = command(false, WAIT_FOR_FILE " %s/%s", c.dir,
                                      name);
                dep[k - 1] = cluster_submit(&c, k, gate[k - 1]);
        }
        ck_assert_int_ge(asprintf(&params, "{\"command\":\"true\",\"after\":[%lld,%lld,%lld]}",
                                  (long long)dep[0], (long long)dep[1], (long long)dep[2]),
                         0);
        job = cluster_submit(&c, 1, params);
        free(params);
        json_object_put(status_once(1, job, "waiting"));
        for (int span = 0; span < 5 && least >= 30; span++) {
                long asked = cluster_nodes_asked;

                before = transactions();
                cluster_wait_renewals(&c, 1, 3);
                /* Less the test's own reads: each `nodes` it asked to see the renewals. */
                spent = transactions() - before - (cluster_nodes_asked - asked);
                if (spent < least)
                        least = spent;
        }
        ck_assert_msg(least < 30, "%lld transactions in three renewals (the fewest of spans) "
                      "while a job waits", least);
        printf("a job waiting for jobs of two other nodes: %lld transactions of its database in "
               "three renewals of 1 s (3 nodes)\n",
               least);

        cluster_touch(&c, "go1");
        cluster_touch(&c, "go2");
        cluster_touch(&c, "go3");
        p = id_params(job);
        rec = cluster_call_ok(&c, 1, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        free(p);
        for (int k = 0; k < 3; k++)
                free(gate[k]);
}
END_TEST

/* A batch sent to n2 about a job of n1: each request is passed to n1 as it would be alone, and
 * the replies come back in one array, once n1's wait has ended; "id": null passed to n1 comes
 * back to id null. */
START_TEST(a_batch_and_an_id_null_about_another_nodes_job_are_answered_by_it)
{
        char *gated, request[512], *line;
        json_object *st, *replies, *r;
        int64_t id;
        int fd;

        cluster_init(&c, 2);
        cluster_start(&c);
        gated = command(false, WAIT_FOR_FILE " %s/go", c.dir);
        id = cluster_submit(&c, 1, gated);
        json_object_put(status_once(2, id, "running"));
        fd = cluster_connect(&c, 2);

        snprintf(request, sizeof(request),
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"status\",\"params\":{\"id\":%lld}}",
                 (long long)id);
        client_send(fd, request);
        /* A request, not a notification: the ping after it waits for its reply from n1. */
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}");
        line = client_read_line(fd);
        st = json_tokener_parse(line);
        ck_assert_msg(json_object_is_type(json_object_object_get(st, "id"), json_type_null) &&
                          json_object_object_get_ex(st, "id", NULL),
                      "%s", line);
        ck_assert_str_eq(str_member(reply_result(st), "node"), "n1");
        json_object_put(st);
        free(line);
        line = client_read_line(fd);
        st = json_tokener_parse(line);
        ck_assert_int_eq(int_member(st, "id"), 9);
        json_object_put(st);
        free(line);

        snprintf(request, sizeof(request),
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"status\",\"params\":{\"id\":%lld}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"wait\",\"params\":{\"id\":%lld}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]",
                 (long long)id, (long long)id);
        client_send(fd, request);
        cluster_touch(&c, "go");
        line = client_read_line(fd);
        replies = json_tokener_parse(line);
        ck_assert_msg(json_object_is_type(replies, json_type_array) &&
                          json_object_array_length(replies) == 3,
                      "%s", line);
        r = json_object_array_get_idx(replies, 0);
        ck_assert_int_eq(int_member(r, "id"), 1);
        ck_assert_str_eq(str_member(reply_result(r), "node"), "n1");
        r = json_object_array_get_idx(replies, 1);
        ck_assert_int_eq(int_member(r, "id"), 2);
        ck_assert_str_eq(str_member(reply_result(r), "outcome"), "succeeded");
        r = json_object_array_get_idx(replies, 2);
        ck_assert_int_eq(int_member(r, "id"), 3);
        ck_assert_int_eq(reply_code(r), 0);
        json_object_put(replies);
        free(line);
        close(fd);
        free(gated);
}
END_TEST

/* The state node k's `nodes` gives the node named name ("" when it does not list it), in buf. */
static const char *node_state(int k, const char *name, char *buf, size_t len)
{
        json_object *result = cluster_nodes(&c, k),
                    *nodes = json_object_object_get(result, "nodes");

        snprintf(buf, len, "%s", "");
        for (size_t i = 0; i < json_object_array_length(nodes); i++) {
                json_object *node = json_object_array_get_idx(nodes, i);

                if (strcmp(str_member(node, "name"), name) == 0)
                        snprintf(buf, len, "%s", str_member(node, "state"));
        }
        json_object_put(result);
        return buf;
}

static bool state_is(int k, const char *name, const char *want)
{
        char buf[32];

        return strcmp(node_state(k, name, buf, sizeof(buf)), want) == 0;
}

/* slowctl's output (stdout and stderr) and exit status for the arguments, on node k. */
/* Whether the line of slowctl nodes on node k for the node named name has that state. */
static bool slowctl_shows(int k, const char *name, const char *state)
{
        size_t len = strlen(name);
        char out[4096];

        ck_assert_int_eq(cluster_slowctl(&c, k, out, sizeof(out), "nodes"), 0);
        ck_assert_msg(strncmp(out, "NODE ", 5) == 0 && strstr(out, " STATE "),
                      "slowctl nodes printed %s", out);
        for (char *line = strtok(out, "\n"); line; line = strtok(NULL, "\n"))
                if (strncmp(line, name, len) == 0 && line[len] == ' ')
                        return strstr(line, state) != NULL;
        return false;
}

START_TEST(nodes_lists_every_node_from_the_database_live_or_expired_until_forgotten)
{
        char buf[32], msg[256], out[4096];
        json_object *result, *nodes;
        int64_t id;
        int fd;

        cluster_init(&c, 3);
        for (int k = 1; k <= 3; k++)
                cluster_start_node(&c, k);
        /* No wait for a renewal: the first node lists the three as the database has them. */
        result = cluster_nodes(&c, 1);
        nodes = json_object_object_get(result, "nodes");
        ck_assert_msg(json_object_array_length(nodes) == 3, "n1 lists %s",
                      json_object_to_json_string(result));
        for (int i = 0; i < 3; i++) {
                json_object *node = json_object_array_get_idx(nodes, (size_t)i);

                ck_assert_str_eq(str_member(node, "name"), c.name[i]);
                ck_assert_str_eq(str_member(node, "state"), "live");
                ck_assert_int_eq(int_member(node, "pid"), cluster_node(&c, i + 1)->pid);
                ck_assert(json_object_get_boolean(json_object_object_get(node, "self")) ==
                          (i == 0));
        }
        json_object_put(result);
        ck_assert(slowctl_shows(1, "n3", "live"));

        /* A job of n3's, which another node takes once n3 is dead. */
        id = cluster_submit(&c, 3, "{\"command\":\"sleep 600\"}");
        fd = cluster_connect(&c, 3);
        job_wait_state(fd, id, "running");
        close(fd);
        cluster_kill(&c, 3);
        wait_for(state_is(1, "n3", "expired"), c.lease_time + 10, "n1 lists n3 as %s",
                 node_state(1, "n3", buf, sizeof(buf)));
        wait_for(cluster_holder(&c, id) != 0, c.lease_time + 10, "no node took n3's job");
        cluster_wait_renewals(&c, 0, 2);
        for (int k = 1; k <= 2; k++)
                ck_assert_msg(state_is(k, "n3", "expired"), "%s lists n3 as '%s' once its job "
                              "was taken", c.name[k - 1], node_state(k, "n3", buf, sizeof(buf)));
        ck_assert(slowctl_shows(2, "n3", "expired"));

        /* It starts again: its row is its own again, live; then it dies again. */
        cluster_start_node(&c, 3);
        ck_assert(state_is(1, "n3", "live"));
        cluster_kill(&c, 3);
        wait_for(state_is(2, "n3", "expired"), c.lease_time + 10, "n2 lists n3 as %s",
                 node_state(2, "n3", buf, sizeof(buf)));

        /* nodes.forget: bad params, a live node, a name the schema does not know. */
        fd = cluster_connect(&c, 1);
        ck_assert_int_eq(call_error(fd, "nodes.forget", "{\"name\":3}", msg, sizeof(msg)),
                         -32602);
        ck_assert_int_eq(call_error(fd, "nodes.forget", NULL, msg, sizeof(msg)), -32602);
        ck_assert_int_eq(call_error(fd, "nodes.forget", "{\"name\":\"n2\"}", msg, sizeof(msg)),
                         -32003);
        ck_assert_msg(strstr(msg, "n2 is live"), "forget of live n2: %s", msg);
        ck_assert_int_eq(call_error(fd, "nodes.forget", "{\"name\":\"n9\"}", msg, sizeof(msg)),
                         -32001);
        close(fd);
        ck_assert(state_is(1, "n2", "live") && state_is(1, "n3", "expired"));
        ck_assert_int_eq(cluster_slowctl(&c, 1, out, sizeof(out), "nodes forget n1"), 1);
        ck_assert_msg(strstr(out, "n1 is live"), "slowctl nodes forget n1: %s", out);

        /* Once its job is another's, the expired n3 is forgotten, through slowctl. */
        wait_for(cluster_holder(&c, id) != 0, c.lease_time + 10, "no node holds n3's job");
        cluster_wait_renewals(&c, 0, 1);
        ck_assert_msg(cluster_slowctl(&c, 1, out, sizeof(out), "nodes forget n3") == 0,
                      "slowctl nodes forget n3: %s", out);
        ck_assert_str_eq(out, "node n3 forgotten\n");
        for (int k = 1; k <= 2; k++)
                ck_assert_msg(state_is(k, "n3", ""), "%s still lists n3 (%s)", c.name[k - 1],
                              node_state(k, "n3", buf, sizeof(buf)));
        fd = cluster_connect(&c, 2);
        ck_assert_int_eq(call_error(fd, "nodes.forget", "{\"name\":\"n3\"}", msg, sizeof(msg)),
                         -32001);
        close(fd);
        /* The job n3 had runs on. */
        ck_assert_int_ne(cluster_holder(&c, id), 0);
}
END_TEST

/* A node that just started holds a job; the first node, whose renewals (every 30 s here) have
 * not seen it yet, passes a request about that job to it rather than call it not live. */
START_TEST(a_request_about_a_job_of_a_node_that_just_started_goes_to_it)
{
        json_object *st, *rec;
        char *p;
        int64_t id;
        int fd;

        cluster_init(&c, 2);
        c.lease_time = 90;
        c.lease_renew = 30;
        cluster_start_node(&c, 1);
        cluster_start_node(&c, 2);
        /* n1 renewed once, at its start, when n2 had not joined. */
        ck_assert(cluster_lists(&c, 1, "n2"));
        id = cluster_submit(&c, 2, "{\"command\":\"sleep 600\"}");
        p = id_params(id);
        fd = cluster_connect(&c, 1);
        st = call_ok(fd, "status", p);
        ck_assert_int_eq(int_member(st, "id"), id);
        json_object_put(st);
        /* Cancelled through n1 too: its wait, pending there, answered by n2. */
        json_object_put(call_ok(fd, "cancel", p));
        rec = call_ok(fd, "wait", p);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);
        /* All the while n1's renewals saw itself alone. */
        rec = call_ok(fd, "metrics", NULL);
        ck_assert_msg(strstr(str_member(rec, "text"), "\nslowwork_nodes 1\n"),
                      "n1 has renewed since n2 started: the test is void");
        json_object_put(rec);
        close(fd);
        free(p);
}
END_TEST

static int run(void)
{
        Suite *s = suite_create("cluster-views");
        TCase *tc = tcase_create("cluster-views");

        tcase_set_timeout(tc, 120);
        /* Alone: it counts the transactions of the suite's database. */
        tcase_add_test_alone(tc, a_job_waiting_for_two_other_nodes_costs_a_read_a_renewal);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, status_wait_log_and_cancel_of_another_nodes_jobs_are_answered_by_it);
        tcase_add_test(tc, restart_and_signal_of_another_nodes_job_are_done_by_its_node);
        tcase_add_test(tc,
                       a_job_no_node_knows_is_not_found_and_a_held_one_is_released_from_another_node);
        tcase_add_test(tc, slowctl_log_follow_on_another_node_prints_the_run_as_it_goes);
        tcase_add_test(tc, list_on_any_node_pages_through_every_nodes_live_jobs_by_id);
        tcase_add_test(tc, a_request_passed_to_a_node_that_starts_again_or_dies_gets_an_error);
        tcase_add_test(tc, a_subscriber_on_any_node_hears_of_every_nodes_jobs);
        tcase_add_test(tc,
                       a_finished_runs_record_and_log_come_from_the_database_once_its_node_is_gone);
        tcase_add_test(tc, history_on_any_node_pages_through_every_nodes_runs);
        tcase_add_test(tc, a_submit_after_another_nodes_job_goes_to_its_node);
        tcase_add_test(tc, a_submit_after_live_jobs_of_two_other_nodes_waits_for_both);
        tcase_add_test(tc, a_batch_and_an_id_null_about_another_nodes_job_are_answered_by_it);
        tcase_add_test(tc, nodes_lists_every_node_from_the_database_live_or_expired_until_forgotten);
        tcase_add_test(tc, a_request_about_a_job_of_a_node_that_just_started_goes_to_it);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

int main(int argc, char **argv)
{
        (void)argc;
        return cluster_suite_main(argv, run, false);
}
