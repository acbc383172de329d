/* SPDX-License-Identifier: MIT */
/*
 * The metrics method and the metrics file over the socket: the counters follow the jobs run, the
 * gauges the jobs and threads there are, every family has its HELP and TYPE, and the file is
 * replaced whole, never written through a link, and stopped by "".
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;
static int fd;

static void setup(void)
{
        daemon_start_clocked(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
}

static void teardown(void)
{
        close(fd);
        daemon_stop(&d);
}

/* The metrics method's text (the caller frees it). */
static char *metrics(void)
{
        json_object *reply = client_call(fd, "metrics", NULL);
        char *text;

        ck_assert_int_eq(reply_code(reply), 0);
        text = strdup(str_member(reply_result(reply), "text"));
        json_object_put(reply);
        return text;
}

/* The value of the sample whose name and labels are `series`, exactly; fails when there is none. */
static double sample(const char *text, const char *series)
{
        size_t len = strlen(series);

        for (const char *line = text; *line; line = strchr(line, '\n') + 1) {
                if (strncmp(line, series, len) == 0 && line[len] == ' ')
                        return strtod(line + len + 1, NULL);
                if (!strchr(line, '\n'))
                        break;
        }
        ck_abort_msg("no sample %s in:\n%s", series, text);
        return 0;
}

static double samplef(const char *text, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static double samplef(const char *text, const char *fmt, ...)
{
        char series[512];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(series, sizeof(series), fmt, ap);
        va_end(ap);
        return sample(text, series);
}

static double runs(const char *text, const char *class, const char *outcome)
{
        return samplef(text, "slowwork_runs_total{queue=\"default\",class=\"%s\",outcome=\"%s\"}",
                       class, outcome);
}

static double jobs(const char *text, const char *class, const char *state)
{
        return samplef(text, "slowwork_jobs{queue=\"default\",class=\"%s\",state=\"%s\"}", class,
                       state);
}

static void call_done(const char *method, const char *params)
{
        json_object_put(call_ok(fd, method, params));
}

/* A settings.set that must be refused with invalid params naming `field`. */
static void set_refused(const char *params, const char *field)
{
        json_object *reply = client_call(fd, "settings.set", params);

        ck_assert_int_eq(reply_code(reply), -32602);
        ck_assert_msg(strstr(str_member(json_object_object_get(reply, "error"), "message"), field),
                      "%s: %s", params, json_object_to_json_string(reply));
        json_object_put(reply);
}

START_TEST(runs_are_counted_by_class_and_outcome_with_their_times)
{
        char go[PATH_MAX], params[PATH_MAX + 64 + sizeof(WAIT_FOR_FILE)];
        int64_t ids[7];
        char *text;
        int i = 0;

        ids[i++] = job_submit(fd, "{\"command\":\"true\"}");
        ids[i++] = job_submit(fd, "{\"command\":\"true\"}");
        ids[i++] = job_submit(fd, "{\"command\":\"true\",\"class\":\"very-slow\"}");
        ids[i++] = job_submit(fd, "{\"command\":\"exit 3\"}");
        ids[i++] = job_submit(fd, "{\"command\":\"kill -9 $$\"}");
        ids[i++] = job_submit(fd, "{\"command\":\"sleep 3000\",\"timeout\":600}");
        /* It runs until the file go is there. */
        snprintf(go, sizeof(go), "%s/go", d.dir);
        snprintf(params, sizeof(params), "{\"command\":\"" WAIT_FOR_FILE " %s\"}", go);
        ids[i++] = job_submit(fd, params);
        /* Both run 601 s of the daemon's clock: one is timed out, then the other ends. */
        job_wait_process(fd, ids[5]);
        job_wait_process(fd, ids[6]);
        daemon_advance_clock(&d, 601);
        json_object_put(job_wait(fd, ids[5]));
        ck_assert_int_eq(close(open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)), 0);
        for (i = 0; i < 7; i++)
                json_object_put(job_wait(fd, ids[i]));
        text = metrics();
        ck_assert(sample(text, "slowwork_submits_total") == 7);
        ck_assert(runs(text, "slow", "succeeded") == 3);
        ck_assert(runs(text, "very-slow", "succeeded") == 1);
        ck_assert(runs(text, "slow", "failed") == 1);
        ck_assert(runs(text, "slow", "killed") == 1);
        ck_assert(runs(text, "slow", "timed-out") == 1);
        ck_assert(runs(text, "slow", "cancelled") == 0);
        ck_assert(sample(text, "slowwork_run_seconds_count{queue=\"default\",class=\"slow\"}") ==
                  6);
        ck_assert(
            sample(text, "slowwork_run_seconds_count{queue=\"default\",class=\"very-slow\"}") == 1);
        /* The two runs of 601 s are over 0.1 s, the others are not. */
        ck_assert(sample(text, "slowwork_run_seconds_bucket{queue=\"default\",class=\"slow\","
                               "le=\"0.1\"}") <= 4);
        ck_assert(sample(text, "slowwork_run_seconds_bucket{queue=\"default\",class=\"slow\","
                               "le=\"+Inf\"}") == 6);
        ck_assert(sample(text, "slowwork_run_seconds_sum{queue=\"default\",class=\"slow\"}") >=
                  1202);
        ck_assert(
            sample(text, "slowwork_start_delay_seconds_count{queue=\"default\",class=\"slow\"}") ==
            6);
        ck_assert(sample(text, "slowwork_start_delay_seconds_count{queue=\"default\","
                               "class=\"very-slow\"}") == 1);
        free(text);
}
END_TEST

START_TEST(a_pending_job_cancelled_counts_as_cancelled_without_a_run_time)
{
        int64_t id;
        char params[64], *text;

        call_done("pause", NULL);
        id = job_submit(fd, "{\"command\":\"true\"}");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        call_done("cancel", params);
        json_object_put(job_wait(fd, id));
        text = metrics();
        ck_assert(runs(text, "slow", "cancelled") == 1);
        ck_assert(sample(text, "slowwork_run_seconds_count{queue=\"default\",class=\"slow\"}") ==
                  0);
        ck_assert(
            sample(text, "slowwork_start_delay_seconds_count{queue=\"default\",class=\"slow\"}") ==
            0);
        free(text);
}
END_TEST

/* The start delay of a run held back by a pause counts from its submit, not from the resume. */
START_TEST(a_run_held_by_a_pause_keeps_its_first_queueing_time)
{
        int64_t id;
        char *text;

        call_done("pause", NULL);
        id = job_submit(fd, "{\"command\":\"true\"}");
        /* Held past the 1 s bucket's bound, by the daemon's clock. */
        daemon_advance_clock(&d, 1.5);
        call_done("resume", NULL);
        json_object_put(job_wait(fd, id));
        text = metrics();
        ck_assert(
            sample(text, "slowwork_start_delay_seconds_count{queue=\"default\",class=\"slow\"}") ==
            1);
        ck_assert(sample(text, "slowwork_start_delay_seconds_bucket{queue=\"default\","
                               "class=\"slow\",le=\"1\"}") == 0);
        ck_assert(
            sample(text, "slowwork_start_delay_seconds_sum{queue=\"default\",class=\"slow\"}") >=
            1.2);
        free(text);
}
END_TEST

START_TEST(the_jobs_gauge_follows_pending_running_and_idle_jobs)
{
        char *gate = fifo_make(d.dir, "gate"), cmd[512], *text;
        int64_t running, held, pending;

        snprintf(cmd, sizeof(cmd), "{\"command\":\"cat %s\",\"class\":\"very-slow\"}", gate);
        running = job_submit(fd, cmd);
        job_wait_state(fd, running, "running");
        held = job_submit(fd, "{\"command\":\"true\",\"hold\":true}");
        json_object_put(job_wait(fd, held));
        call_done("pause", NULL);
        pending = job_submit(fd, "{\"command\":\"true\"}");
        text = metrics();
        ck_assert(jobs(text, "very-slow", "running") == 1);
        ck_assert(jobs(text, "slow", "idle") == 1);
        ck_assert(jobs(text, "slow", "pending") == 1);
        ck_assert(jobs(text, "slow", "running") == 0);
        ck_assert(jobs(text, "slow", "waiting") == 0);
        ck_assert(sample(text, "slowwork_threads{queue=\"default\",state=\"busy_very_slow\"}") ==
                  1);
        ck_assert(sample(text, "slowwork_threads{queue=\"default\",state=\"busy_slow\"}") == 0);
        free(text);
        call_done("resume", NULL);
        fifo_release(gate);
        json_object_put(job_wait(fd, running));
        json_object_put(job_wait(fd, pending));
        text = metrics();
        ck_assert(jobs(text, "very-slow", "running") == 0);
        ck_assert(jobs(text, "slow", "pending") == 0);
        ck_assert(jobs(text, "slow", "idle") == 1); /* the held one */
        free(text);
        free(gate);
}
END_TEST

/* Where the jobs gauge, kept as jobs change, and list differ: "" when they agree. */
static void jobs_gauge_differs_from_list(char *diff, size_t len)
{
        static const char *const classes[] = {"slow", "very-slow"};
        static const char *const states[] = {"pending", "running", "waiting", "idle"};
        json_object *reply = client_call(fd, "list", NULL);
        json_object *items = json_object_object_get(reply_result(reply), "items");
        char *text = metrics();

        diff[0] = '\0';
        for (int c = 0; c < 2; c++)
                for (int s = 0; s < 4; s++) {
                        double gauge = jobs(text, classes[c], states[s]);
                        int listed = 0;

                        for (size_t i = 0; i < json_object_array_length(items); i++) {
                                json_object *it = json_object_array_get_idx(items, i);

                                listed += strcmp(str_member(it, "class"), classes[c]) == 0 &&
                                          strcmp(str_member(it, "state"), states[s]) == 0;
                        }
                        if (gauge != listed)
                                snprintf(diff + strlen(diff), len - strlen(diff),
                                         "%s %s: the gauge says %g, list %d; ", classes[c],
                                         states[s], gauge, listed);
                }
        free(text);
        json_object_put(reply);
}

/* A run the pool has taken is running for list before the loop hears of it: they may differ
 * for a moment, not for a second. */
static void jobs_gauge_matches_list(void)
{
        char diff[1024];

        for (int i = 0; i < 100; i++) {
                jobs_gauge_differs_from_list(diff, sizeof(diff));
                if (!diff[0])
                        return;
                usleep(10000);
        }
        ck_abort_msg("%s", diff);
}

START_TEST(the_jobs_gauge_agrees_with_list_through_every_kind_of_change)
{
        char *gate = fifo_make(d.dir, "gate"), cmd[512], params[128];
        int64_t running, after, failing, delayed, cancelled, dep_failed, retrying;

        snprintf(cmd, sizeof(cmd), "{\"command\":\"cat %s\"}", gate);
        running = job_submit(fd, cmd);
        job_wait_state(fd, running, "running");
        snprintf(params, sizeof(params), "{\"command\":\"true\",\"after\":[%lld]}",
                 (long long)running);
        after = job_submit(fd, params);
        failing = job_submit(fd, "{\"command\":\"false\",\"hold\":true}");
        json_object_put(job_wait(fd, failing));
        snprintf(params, sizeof(params), "{\"command\":\"true\",\"after\":[%lld],\"hold\":true}",
                 (long long)failing);
        dep_failed = job_submit(fd, params);
        retrying = job_submit(fd, "{\"command\":\"false\",\"retries\":1,\"retry_delay\":3600}");
        delayed = job_submit(fd, "{\"command\":\"true\",\"delay\":3600,\"class\":\"very-slow\"}");
        call_done("pause", NULL);
        cancelled = job_submit(fd, "{\"command\":\"true\",\"hold\":true}");
        job_submit(fd, "{\"command\":\"true\",\"class\":\"very-slow\"}");
        ck_assert_str_eq(job_state_of(fd, after), "waiting");
        ck_assert_str_eq(job_state_of(fd, dep_failed), "idle");
        jobs_gauge_matches_list();
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)cancelled);
        call_done("cancel", params);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)delayed);
        call_done("cancel", params);
        jobs_gauge_matches_list();
        call_done("resume", NULL);
        fifo_release(gate);
        json_object_put(job_wait(fd, running));
        json_object_put(job_wait(fd, after));
        while (strcmp(job_state_of(fd, retrying), "pending") != 0)
                usleep(10000);
        jobs_gauge_matches_list();
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)retrying);
        call_done("cancel", params);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)failing);
        call_done("release", params);
        jobs_gauge_matches_list();
        free(gate);
}
END_TEST

/* Each sample's family has a HELP and a TYPE line before it. */
START_TEST(every_family_has_help_and_type_and_settings_are_gauges)
{
        char *text, *copy, *line, *save = NULL, host[256] = "";
        int samples = 0;

        call_done("settings.set", "{\"max-threads\":6,\"kill-grace\":1.5}");
        text = metrics();
        copy = strdup(text);
        for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char family[256], help[300], type[300];
                size_t n = strcspn(line, "{ ");
                const char *suffixes[] = {"_bucket", "_sum", "_count"};

                if (line[0] == '#')
                        continue;
                ck_assert_uint_lt(n, sizeof(family));
                memcpy(family, line, n);
                family[n] = '\0';
                snprintf(type, sizeof(type), "# TYPE %s ", family);
                for (size_t i = 0; i < 3 && !strstr(text, type); i++) {
                        size_t sl = strlen(suffixes[i]);

                        if (n > sl && strcmp(family + n - sl, suffixes[i]) == 0) {
                                family[n - sl] = '\0';
                                snprintf(type, sizeof(type), "# TYPE %s histogram", family);
                        }
                }
                snprintf(help, sizeof(help), "# HELP %s ", family);
                ck_assert_msg(strstr(text, type) && strstr(text, help), "no HELP or TYPE for %s",
                              line);
                samples++;
        }
        ck_assert_int_gt(samples, 50);
        ck_assert(sample(text, "slowwork_setting_max_threads{queue=\"default\"}") == 6);
        ck_assert(sample(text, "slowwork_setting_min_threads{queue=\"default\"}") == 2);
        ck_assert(sample(text, "slowwork_setting_kill_grace_seconds") == 1.5);
        ck_assert(sample(text, "slowwork_setting_history_limit") == 10000);
        ck_assert(sample(text, "slowwork_setting_metrics_interval_seconds") == 15);
        ck_assert_ptr_nonnull(strstr(text, "# TYPE slowwork_setting_max_threads gauge\n"));
        ck_assert_ptr_nonnull(strstr(text, "# TYPE slowwork_runs_total counter\n"));
        ck_assert_ptr_nonnull(strstr(text, "# TYPE slowwork_run_seconds histogram\n"));
        ck_assert_ptr_null(strstr(text, "metrics_file"));
        ck_assert(sample(text, "slowwork_connections") == 1);
        ck_assert(sample(text, "slowwork_database_errors_total") == 0);
        ck_assert_int_eq(gethostname(host, sizeof(host) - 1), 0);
        ck_assert(samplef(text, "slowwork_node_info{node=\"%s\"}", host) == 1);
        ck_assert(sample(text, "slowwork_node_fenced") == 0);
        ck_assert(sample(text, "slowwork_nodes") == 1);
        ck_assert(sample(text, "process_resident_memory_bytes") > 1e6);
        ck_assert(sample(text, "process_open_fds") > 3);
        ck_assert(sample(text, "process_start_time_seconds") > (double)time(NULL) - 600);
        ck_assert(sample(text, "process_start_time_seconds") <= (double)time(NULL));
        free(copy);
        free(text);
}
END_TEST

START_TEST(the_connections_gauge_counts_clients)
{
        int more = client_connect(d.sock);
        char *text;

        call_done("ping", NULL);
        json_object_put(client_call(more, "ping", NULL));
        text = metrics();
        ck_assert(sample(text, "slowwork_connections") == 2);
        free(text);
        close(more);
}
END_TEST

START_TEST(bad_metrics_settings_are_refused_naming_the_field_and_change_nothing)
{
        json_object *reply;

        set_refused("{\"metrics-file\":\"relative/m.prom\"}", "metrics-file");
        set_refused("{\"metrics-file\":7}", "metrics-file");
        set_refused("{\"metrics-interval\":0}", "metrics-interval");
        set_refused("{\"metrics-interval\":86401}", "metrics-interval");
        set_refused("{\"metrics-interval\":\"5\"}", "metrics-interval");
        set_refused("{\"metrics-interval\":5,\"metrics-file\":\"x\"}", "metrics-file");
        reply = client_call(fd, "settings.get", NULL);
        ck_assert_str_eq(str_member(reply_result(reply), "metrics-file"), "");
        ck_assert(json_object_get_double(
                      json_object_object_get(reply_result(reply), "metrics-interval")) == 15);
        json_object_put(reply);
}
END_TEST

/* Waits up to 10 s for path to exist with an inode other than `not` (0: any); its inode. */
static ino_t wait_for_file(const char *path, ino_t not )
{
        struct stat st;

        for (int i = 0; i < 1000; i++) {
                if (stat(path, &st) == 0 && st.st_ino != not )
                        return st.st_ino;
                usleep(10000);
        }
        ck_abort_msg("%s was not written (again)", path);
        return 0;
}

static char *read_file(const char *path)
{
        FILE *f = fopen(path, "re");
        char *text = NULL;
        size_t size = 0;

        ck_assert_ptr_nonnull(f);
        ck_assert_int_gt(getdelim(&text, &size, '\0', f), 0);
        fclose(f);
        return text;
}

START_TEST(the_metrics_file_is_replaced_whole_every_interval_and_stops_with_an_empty_path)
{
        char path[PATH_MAX], params[PATH_MAX + 64], tmp[PATH_MAX + 32], *text;
        struct stat st;
        json_object *reply;
        ino_t first, second;

        snprintf(path, sizeof(path), "%s/slowwork.prom", d.dir);
        snprintf(params, sizeof(params), "{\"metrics-file\":\"%s\",\"metrics-interval\":1}", path);
        call_done("settings.set", params);
        first = wait_for_file(path, 0);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0644);
        text = read_file(path);
        ck_assert_ptr_nonnull(strstr(text, "# TYPE slowwork_submits_total counter\n"));
        /* node_exporter, which reads the file, has its own process_* series and refuses a file
         * with them; the metrics method keeps them. */
        ck_assert_ptr_null(strstr(text, "process_"));
        free(text);
        reply = client_call(fd, "metrics", NULL);
        ck_assert_ptr_nonnull(
            strstr(str_member(reply_result(reply), "text"), "\nprocess_start_time_seconds "));
        json_object_put(reply);
        json_object_put(job_wait(fd, job_submit(fd, "{\"command\":\"true\"}")));
        /* A rename puts a new file in its place: a reader never sees half of one. */
        second = wait_for_file(path, first);
        second = wait_for_file(path, second);
        text = read_file(path);
        ck_assert(sample(text, "slowwork_submits_total") == 1);
        free(text);
        snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)d.pid);
        ck_assert_int_eq(stat(tmp, &st), -1);
        /* Metrics no longer written would read as current: the file goes at once. */
        call_done("settings.set", "{\"metrics-file\":\"\"}");
        ck_assert_int_eq(stat(path, &st), -1);
        ck_assert_int_eq(errno, ENOENT);
}
END_TEST

START_TEST(the_metrics_file_is_not_written_through_a_link_at_its_temporary_name)
{
        char path[PATH_MAX], params[PATH_MAX + 64], tmp[PATH_MAX + 32], victim[PATH_MAX], *text;
        struct stat st;
        FILE *f;

        snprintf(path, sizeof(path), "%s/m.prom", d.dir);
        snprintf(victim, sizeof(victim), "%s/victim", d.dir);
        snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)d.pid);
        f = fopen(victim, "we");
        ck_assert_ptr_nonnull(f);
        fputs("precious\n", f);
        fclose(f);
        ck_assert_int_eq(symlink(victim, tmp), 0);
        snprintf(params, sizeof(params), "{\"metrics-file\":\"%s\"}", path);
        call_done("settings.set", params);
        wait_for_file(path, 0);
        ck_assert_int_eq(lstat(tmp, &st), -1); /* the link went, and the file was made anew */
        text = read_file(victim);
        ck_assert_str_eq(text, "precious\n");
        free(text);
}
END_TEST

START_TEST(a_kept_metrics_file_is_written_again_after_a_restart)
{
        char path[PATH_MAX], params[PATH_MAX + 64];
        json_object *reply;
        int status;

        snprintf(path, sizeof(path), "%s/kept.prom", d.dir);
        snprintf(params, sizeof(params), "{\"metrics-file\":\"%s\",\"metrics-interval\":2.5}",
                 path);
        call_done("settings.set", params);
        wait_for_file(path, 0);
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        ck_assert_int_eq(unlink(path), 0);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        reply = client_call(fd, "settings.get", NULL);
        ck_assert_str_eq(str_member(reply_result(reply), "metrics-file"), path);
        ck_assert(json_object_get_double(
                      json_object_object_get(reply_result(reply), "metrics-interval")) == 2.5);
        json_object_put(reply);
        wait_for_file(path, 0);
}
END_TEST

START_TEST(the_metrics_file_setting_comes_from_flags_too)
{
        char path[PATH_MAX];
        json_object *reply;

        close(fd);
        daemon_stop(&d);
        snprintf(path, sizeof(path), "/tmp/slowwork-metrics-%d.prom", (int)getpid());
        daemon_start(&d, "--metrics-file", path, "--metrics-interval", "1", NULL);
        fd = client_connect(d.sock);
        wait_for_file(path, 0);
        reply = client_call(fd, "settings.get", NULL);
        ck_assert_str_eq(str_member(reply_result(reply), "metrics-file"), path);
        json_object_put(reply);
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(daemon_run_status("--metrics-file", "relative.prom", NULL), 2);
        ck_assert_int_eq(daemon_run_status("--metrics-interval", "0", NULL), 2);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("metrics");
        TCase *tc = tcase_create("metrics");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, runs_are_counted_by_class_and_outcome_with_their_times);
        tcase_add_test(tc, a_pending_job_cancelled_counts_as_cancelled_without_a_run_time);
        tcase_add_test(tc, a_run_held_by_a_pause_keeps_its_first_queueing_time);
        tcase_add_test(tc, the_jobs_gauge_follows_pending_running_and_idle_jobs);
        tcase_add_test(tc, the_jobs_gauge_agrees_with_list_through_every_kind_of_change);
        tcase_add_test(tc, every_family_has_help_and_type_and_settings_are_gauges);
        tcase_add_test(tc, the_connections_gauge_counts_clients);
        tcase_add_test(tc, bad_metrics_settings_are_refused_naming_the_field_and_change_nothing);
        tcase_add_test(
            tc, the_metrics_file_is_replaced_whole_every_interval_and_stops_with_an_empty_path);
        tcase_add_test(tc, the_metrics_file_is_not_written_through_a_link_at_its_temporary_name);
        tcase_add_test(tc, a_kept_metrics_file_is_written_again_after_a_restart);
        tcase_add_test(tc, the_metrics_file_setting_comes_from_flags_too);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
