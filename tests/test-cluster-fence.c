/* SPDX-License-Identifier: MIT */
/*
 * Two nodes on one PostgreSQL schema; every slowworkd process of node 1 killed (the daemon and its
 * supervisor, in either order or at once): none of its runs outlives it, so node 2, which takes
 * its jobs once its lease runs out, never runs one beside its old run. Each job's run holds a
 * flock on a file of its own in a child that left the run's session (setsid), or without cgroups
 * in its process group: a run that finds the lock taken says OVERLAP.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cluster-helpers.h"
#include "run-suite.h"

static struct cluster c;

enum { JOBS = 3, FENCES_MAX = 16 };

static void teardown(void)
{
        cluster_free(&c);
}

/*
 * Job j: its probe takes a flock on lock.J, says OVERLAP J when it cannot, and its start with its
 * own pid and its sleep's ("start J PID PID"), then its end ("end J"). It sleeps 60 s, or 0.05 s
 * once the file quick exists. The probe is a child that left the run's session (setsid), or with
 * in_group the run's first process itself.
 */
static char *probe_job(int j, bool in_group)
{
        json_object *o = json_object_new_object();
        char *probe, *command, *params;

        ck_assert_int_ge(asprintf(&probe,
                                  "exec 9>>%1$s/lock.%2$d; flock -n 9 || echo OVERLAP %2$d "
                                  ">>%1$s/events; t=60; [ -e %1$s/quick ] && t=0.05; sleep $t & "
                                  "echo start %2$d $$ $! >>%1$s/events; wait; echo end %2$d "
                                  ">>%1$s/events",
                                  c.dir, j),
                         0);
        if (in_group)
                command = probe;
        else
                ck_assert_int_ge(asprintf(&command, "setsid -w sh -c '%s' & wait", probe), 0);
        json_object_object_add(o, "command", json_object_new_string(command));
        params = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        ck_assert_ptr_nonnull(params);
        json_object_put(o);
        if (command != probe)
                free(command);
        free(probe);
        return params;
}

/* What the events file says of each job. */
struct runs {
        int starts, ends, overlaps;
        pid_t first[2]; /* the first run's probe and its sleep */
};

static void read_events(struct runs *runs)
{
        char *path = cluster_path(&c, "events"), **lines = read_lines(path);

        memset(runs, 0, sizeof(*runs) * JOBS);
        for (char **l = lines; *l; l++) {
                int j, pid, child, end = 0;

                if (sscanf(*l, "start %d %d %d%n", &j, &pid, &child, &end) == 3 && !(*l)[end]) {
                        ck_assert(j >= 0 && j < JOBS);
                        if (runs[j].starts++ == 0) {
                                runs[j].first[0] = pid;
                                runs[j].first[1] = child;
                        }
                } else if (sscanf(*l, "end %d%n", &j, &end) == 1 && !(*l)[end]) {
                        ck_assert(j >= 0 && j < JOBS);
                        runs[j].ends++;
                } else {
                        ck_assert_msg(sscanf(*l, "OVERLAP %d%n", &j, &end) == 1 && !(*l)[end] &&
                                          j >= 0 && j < JOBS,
                                      "%s: a line \"%s\"", path, *l);
                        runs[j].overlaps++;
                }
        }
        strv_free(lines);
        free(path);
}

static bool all_started(void)
{
        struct runs runs[JOBS];

        read_events(runs);
        for (int j = 0; j < JOBS; j++)
                if (runs[j].starts < 1)
                        return false;
        return true;
}

static bool all_ended(void)
{
        struct runs runs[JOBS];

        read_events(runs);
        for (int j = 0; j < JOBS; j++)
                if (runs[j].ends < 1)
                        return false;
        return true;
}

static bool all_gone(const pid_t *pids, int n)
{
        for (int i = 0; i < n; i++)
                if (!process_gone(pids[i]))
                        return false;
        return true;
}

/* The children of ppid named comm (its threads' children: /proc/PID/task/TID/children), at most
 * max of them in pids: how many. */
static int children_named(pid_t ppid, const char *comm, pid_t *pids, int max)
{
        char path[64];
        struct dirent *e;
        DIR *tasks;
        int n = 0;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)ppid);
        tasks = opendir(path);
        ck_assert_ptr_nonnull(tasks);
        while ((e = readdir(tasks))) {
                char file[sizeof(e->d_name) + 96];
                int pid;
                FILE *f;

                if (e->d_name[0] == '.')
                        continue;
                snprintf(file, sizeof(file), "%s/%s/children", path, e->d_name);
                f = fopen(file, "re");
                if (!f)
                        continue;
                while (fscanf(f, "%d", &pid) == 1) {
                        char name[64] = "";
                        FILE *cf;

                        snprintf(file, sizeof(file), "/proc/%d/comm", pid);
                        cf = fopen(file, "re");
                        if (cf) {
                                if (fgets(name, sizeof(name), cf))
                                        name[strcspn(name, "\n")] = '\0';
                                fclose(cf);
                        }
                        if (strcmp(name, comm) == 0 && n < max)
                                pids[n++] = pid;
                }
                fclose(f);
        }
        closedir(tasks);
        return n;
}

static pid_t supervisor_of(pid_t daemon)
{
        pid_t pid = 0;

        wait_for(children_named(daemon, "slowworkd-super", &pid, 1) == 1, 5,
                 "slowworkd %d has no supervisor", (int)daemon);
        return pid;
}

/* Whether node 2's history has run `run` of job id with the outcome, on the node named node. */
static bool in_history(int64_t id, int run, const char *outcome, const char *node)
{
        char params[96];
        json_object *reply, *runs;
        bool found = false;

        snprintf(params, sizeof(params), "{\"outcome\":\"%s\",\"limit\":1000}", outcome);
        reply = cluster_call(&c, 2, "history", params);
        ck_assert_ptr_nonnull(reply);
        runs = json_object_object_get(reply_result(reply), "runs");
        for (size_t i = 0; i < json_object_array_length(runs); i++) {
                json_object *rec = json_object_array_get_idx(runs, i);

                found = found || (int_member(rec, "id") == id && int_member(rec, "run") == run &&
                                  strcmp(str_member(rec, "node"), node) == 0);
        }
        json_object_put(reply);
        return found;
}

enum how { SUPERVISOR_FIRST, DAEMON_FIRST, BOTH_AT_ONCE };

/* Node 1 runs the JOBS probe jobs (in their process groups with in_group, else in setsid
 * children), each run with its fence; every slowworkd process of node 1 is killed as `how` says.
 * Its runs are gone, their fences too; node 2 runs each job once, after node 1's lease ran out,
 * without an overlap. */
static void kill_node(enum how how, bool in_group)
{
        pid_t daemon, super, gone[2 * JOBS + FENCES_MAX];
        struct runs runs[JOBS];
        int64_t ids[JOBS];
        int fences;
        double killed;

        if (!has_cgroups())
                return; /* a process out of its run's session is found by its cgroup only */
        if (in_group)
                daemons_without_cgroups();
        cluster_init(&c, 2);
        cluster_start(&c);
        daemon = cluster_node(&c, 1)->pid;
        super = supervisor_of(daemon);
        for (int j = 0; j < JOBS; j++) {
                char *params = probe_job(j, in_group);

                ids[j] = cluster_submit(&c, 1, params);
                free(params);
        }
        wait_for(all_started(), 10, "node 1's runs did not start");
        cluster_touch(&c, "quick");
        /* A run's fence starts before its first process, or just after it without cgroups. */
        wait_for((fences = children_named(daemon, "slowwork-fence", gone + 2 * JOBS, FENCES_MAX)) ==
                     JOBS,
                 5, "node 1 has %d fences for its %d runs", fences, JOBS);
        read_events(runs);
        for (int j = 0; j < JOBS; j++) {
                gone[2 * j] = runs[j].first[0];
                gone[2 * j + 1] = runs[j].first[1];
        }

        killed = mono_now();
        switch (how) {
        case SUPERVISOR_FIRST:
                /* The daemon may start another supervisor meanwhile, or not. */
                ck_assert_int_eq(kill(super, SIGKILL), 0);
                cluster_kill(&c, 1);
                break;
        case DAEMON_FIRST:
                /* The supervisor may be stopping the runs at its kill. */
                cluster_kill(&c, 1);
                ck_assert_int_eq(kill(super, SIGKILL), 0);
                break;
        case BOTH_AT_ONCE:
                /* Stopped first, neither runs between the two kills. */
                ck_assert_int_eq(kill(super, SIGSTOP), 0);
                ck_assert_int_eq(kill(daemon, SIGSTOP), 0);
                ck_assert_int_eq(kill(daemon, SIGKILL), 0);
                ck_assert_int_eq(kill(super, SIGKILL), 0);
                cluster_kill(&c, 1);
                break;
        }
        wait_for(all_gone(gone, 2 * JOBS + fences), c.lease_time,
                 "node 1's runs or their fences outlived it by its lease");
        fprintf(stderr, "node 1's runs and fences were gone %.3f s after its end\n",
                mono_now() - killed);

        wait_for(all_ended(), c.lease_time + 20, "node 1's jobs did not run again on node 2");
        wait_for(cluster_live_items_left(&c) == 0, 30, "jobs taken from node 1 are still live");
        read_events(runs);
        for (int j = 0; j < JOBS; j++) {
                ck_assert_msg(runs[j].overlaps == 0, "job %lld ran beside its run on node 1",
                              (long long)ids[j]);
                ck_assert_msg(runs[j].starts == 2 && runs[j].ends == 1,
                              "job %lld started %d times and ended %d, not 2 and 1",
                              (long long)ids[j], runs[j].starts, runs[j].ends);
                ck_assert_msg(in_history(ids[j], 1, "interrupted", "n1") &&
                                  in_history(ids[j], 2, "succeeded", "n2"),
                              "job %lld did not run again once, on n2", (long long)ids[j]);
        }
}

START_TEST(no_run_outlives_a_node_killed_supervisor_first)
{
        kill_node(SUPERVISOR_FIRST, false);
}
END_TEST

START_TEST(no_run_outlives_a_node_killed_daemon_first)
{
        kill_node(DAEMON_FIRST, false);
}
END_TEST

START_TEST(no_run_outlives_a_node_killed_all_at_once)
{
        kill_node(BOTH_AT_ONCE, false);
}
END_TEST

/* Without cgroups a fence kills its run's process group. */
START_TEST(no_process_group_outlives_a_node_without_cgroups_killed_at_once)
{
        kill_node(BOTH_AT_ONCE, true);
}
END_TEST

static int run(void)
{
        Suite *s = suite_create("cluster-fence");
        TCase *tc = tcase_create("cluster-fence");

        tcase_set_timeout(tc, 120);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, no_run_outlives_a_node_killed_supervisor_first);
        tcase_add_test(tc, no_run_outlives_a_node_killed_daemon_first);
        tcase_add_test(tc, no_run_outlives_a_node_killed_all_at_once);
        tcase_add_test(tc, no_process_group_outlives_a_node_without_cgroups_killed_at_once);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

int main(int argc, char **argv)
{
        (void)argc;
        return cluster_suite_main(argv, run, false);
}
