/* SPDX-License-Identifier: MIT */
/* A cluster of slowworkd nodes on one schema of the suite's throwaway PostgreSQL, for a test. */
#ifndef SLOWWORK_TESTS_CLUSTER_HELPERS_H
#define SLOWWORK_TESTS_CLUSTER_HELPERS_H

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon-helpers.h"
#include "pg-helpers.h"

enum { CLUSTER_MAX = 4 };

struct cluster {
        struct pg_server pg;
        char schema[32];
        char dir[64]; /* the test's own files (tokens, events), removed at the end */
        int n;        /* nodes 1..n */
        int max_threads[CLUSTER_MAX]; /* --max-threads of node k at index k - 1 (default 4) */
        char name[CLUSTER_MAX][8];    /* n1, n2, ... */
        /* --lease-time and --lease-renew of every node, in seconds: 1 and 0.2, longer under a
         * CK_TIMEOUT_MULTIPLIER (3 and 0.6 at most) */
        double lease_time, lease_renew;
        bool running[CLUSTER_MAX]; /* started, and not killed since (a stopped one counts) */
        /* The --store of node k at index k - 1 when not the suite's (a proxy's, pg-proxy.h);
         * "": the suite's. */
        char store[CLUSTER_MAX][PATH_MAX + 64];
        struct daemon node[CLUSTER_MAX];
};

/*
 * A main() that runs the suite under `pg-server run` (one throwaway PostgreSQL for every case):
 * when the suite is not running under one yet, it starts itself again under it; without
 * PostgreSQL's server, or while slowworkd has no --node-name, it says why and exits 77 (skipped).
 * Under make check (SLOWWORK_TEST_PG_OWNER names the make), the suite gets a database of its own
 * on the PostgreSQL that the run's suites share (`pg-server shared`), unless own_server: a suite
 * that stops or restarts PostgreSQL has its own.
 */
int cluster_suite_main(char **argv, int (*run)(void), bool own_server);

/* seconds times CK_TIMEOUT_MULTIPLIER (1 when unset): a deadline that slow builds also meet. */
double scaled(double seconds);
double mono_now(void);  /* seconds, CLOCK_MONOTONIC */
double wall_now(void);  /* seconds, CLOCK_REALTIME: what `date +%s.%N` in a job says */
void short_pause(void); /* one poll's pause: 10 ms */

/* Polls cond every 10 ms until it holds; fails the test with the message after scaled(seconds). */
#define wait_for(cond, seconds, ...)                                                               \
        do {                                                                                       \
                double wait_for_end_ = mono_now() + scaled(seconds);                               \
                while (!(cond)) {                                                                  \
                        ck_assert_msg(mono_now() < wait_for_end_, __VA_ARGS__);                    \
                        short_pause();                                                             \
                }                                                                                  \
        } while (0)

/* n nodes named n1..nn on a new schema of the suite's PostgreSQL, each with its own socket and
 * state folder, none started yet; kills at the test's exit whichever of them still runs. */
void cluster_init(struct cluster *c, int n);
/* Starts node k (1..n), or starts it again on its socket and state folder: --node-name nk, the
 * lease, --min-threads 1, --max-threads max_threads[k - 1]; returns once it answers. */
void cluster_start_node(struct cluster *c, int k);
/* Every node, and waits until each lists them all. */
void cluster_start(struct cluster *c);
/* SIGKILL to node k, which is waited for (its folders stay, for a start again). */
void cluster_kill(struct cluster *c, int k);
/* Runs a slowworkd like a node named name, on a socket and state folder of its own in c->dir,
 * for a start that must fail: its exit status, and what it wrote to stderr in *ret_err (the
 * caller frees it). One still running after scaled(10) s is killed, and the test fails. */
int cluster_run_stderr(struct cluster *c, const char *name, char **ret_err);
/* Stops the nodes still running (SIGTERM, then SIGKILL after a few seconds) and removes the
 * folders. The schema stays, with the throwaway PostgreSQL. */
void cluster_free(struct cluster *c);

struct daemon *cluster_node(struct cluster *c, int k);
/* A connection to node k, which must answer. */
int cluster_connect(struct cluster *c, int k);
/* Whether node k answers a ping on a connection of its own. */
bool cluster_answers(struct cluster *c, int k);
/* A submit to node k that must succeed: the job's id. */
int64_t cluster_submit(struct cluster *c, int k, const char *params);
/* A call to node k that must succeed: its result (the caller puts it). */
json_object *cluster_call_ok(struct cluster *c, int k, const char *method, const char *params);
/* The file name in the test's own folder (the caller frees it); the file made empty. */
char *cluster_path(struct cluster *c, const char *name);
void cluster_touch(struct cluster *c, const char *name);
/* The call's reply on a connection of its own (the caller puts it), NULL when node k does not
 * answer. */
json_object *cluster_call(struct cluster *c, int k, const char *method, const char *params);
/* The node (1..n) whose `status` knows the job, among the running ones; 0 when none does. */
int cluster_holder(struct cluster *c, int64_t id);
/* slowctl --socket (node k's) ARGS, its output and errors in out: its exit status. */
int cluster_slowctl(struct cluster *c, int k, char *out, size_t len, const char *args);
/* Node k's `nodes` result, which must succeed (the caller puts it). On a shared database each
 * is a read of it, a transaction: cluster_nodes_asked counts them (cluster_wait_renewals() and
 * cluster_lists() ask too). */
json_object *cluster_nodes(struct cluster *c, int k);
extern long cluster_nodes_asked;
/* Whether node k's `nodes` lists the node named name live. */
bool cluster_lists(struct cluster *c, int k, const char *name);
/* How many of the live items node k's `list` has are node k's. */
int cluster_live_items(struct cluster *c, int k);
/* The same summed over the running nodes. */
int cluster_live_items_left(struct cluster *c);
/* Node k's own lease age, in its `nodes`: it drops at each renewal of node k's lease. */
double cluster_lease_age(struct cluster *c, int k);
/* Until node k (0: each running node) has renewed its lease n times more: what a node does at a
 * renewal (adopt, read other nodes' ends, take asks) it has then done since the call. */
void cluster_wait_renewals(struct cluster *c, int k, int n);

/*
 * Pipelined calls on one connection: every request sent before the first reply is read (with
 * ids 1..n, params[i] for the i-th, NULL for none), replies read as they come. replies[i] is the
 * i-th reply (the caller puts it), or NULL when the connection closed before it; fails the test
 * when a reply takes more than scaled(seconds). Returns the number of replies read.
 */
int pipeline(int fd, const char *method, char *const *params, int n, json_object **replies,
             double seconds);

/* The lines of a file (none when it does not exist); the caller frees them with strv_free. */
char **read_lines(const char *path);
void strv_free(char **lines);
/* How many lines of the file are exactly line. */
int count_line(const char *path, const char *line);
/* The count of each token tK (0 <= K < n) in the file of lines "tK" (calloc'd, the caller frees
 * it); fails the test on any other line. */
int *count_tokens(const char *path, int n);

#endif
