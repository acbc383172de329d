/* SPDX-License-Identifier: MIT */
/* One queue across the nodes of a PostgreSQL schema: a node with free threads claims the jobs
 * that another node queued beyond its own, each runs once, and what waits for them follows. */
#define _GNU_SOURCE
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
                ck_assert_msg(ran_on[k] > 0, "node n%d ran none of the %d jobs (n1 %d, n2 %d, "
                              "n3 %d)", k, BURST, ran_on[1], ran_on[2], ran_on[3]);
        /* More at once than the two threads of the node they were submitted to. */
        ck_assert_int_gt(most_at_once(recs, BURST), 2);
        for (int i = 0; i < BURST; i++)
                json_object_put(recs[i]);
        free(counts);
        free(tokens);
}
END_TEST

static int run(void)
{
        Suite *s = suite_create("cluster-queue");
        TCase *tc = tcase_create("cluster-queue");

        tcase_set_timeout(tc, 120);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, a_burst_on_one_node_runs_on_every_node_once_each);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

int main(int argc, char **argv)
{
        (void)argc;
        return cluster_suite_main(argv, run, false);
}
