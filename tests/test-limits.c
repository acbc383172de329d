/* SPDX-License-Identifier: MIT */
/*
 * A job's limits: resource limits and niceness everywhere, memory, tasks and CPU weight through
 * the run's cgroup where the controller is there, refused at submit where it is not; defaults
 * from the default-* settings, kept with the job across a restart.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;
static int fd;

static void setup(void)
{
        struct rlimit nofile;

        /* The usual soft limit, below what the daemon raises its own to: its runs must get
         * back what it was started with. */
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &nofile), 0);
        nofile.rlim_cur = nofile.rlim_max < 1024 ? nofile.rlim_max : 1024;
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &nofile), 0);
        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_ge(fd, 0);
}

static void teardown(void)
{
        close(fd);
        daemon_stop(&d);
}

/* The log of a job that ran to success. */
static char *run_ok(const char *params)
{
        int64_t id = job_submit(fd, params);
        json_object *rec = job_wait(fd, id);

        ck_assert_msg(strcmp(str_member(rec, "outcome"), "succeeded") == 0, "run: %s",
                      json_object_to_json_string(rec));
        json_object_put(rec);
        return job_log(fd, id);
}

static void set(const char *settings)
{
        json_object *reply = client_call(fd, "settings.set", settings);

        ck_assert_msg(reply_code(reply) == 0, "settings.set %s: %s", settings,
                      json_object_to_json_string(reply));
        json_object_put(reply);
}

/* A submit that must be refused with code, its message containing each of the words. */
static void refused(const char *params, int code, const char *word1, const char *word2)
{
        json_object *reply = client_call(fd, "submit", params), *list;
        const char *message;

        ck_assert_msg(reply_code(reply) == code, "submit %s: %s", params,
                      json_object_to_json_string(reply));
        message = str_member(json_object_object_get(reply, "error"), "message");
        ck_assert_msg(strstr(message, word1) && (!word2 || strstr(message, word2)),
                      "submit %s: %s", params, message);
        json_object_put(reply);
        /* Nothing was queued. */
        list = client_call(fd, "list", NULL);
        ck_assert_int_eq(
            json_object_array_length(json_object_object_get(reply_result(list), "items")), 0);
        json_object_put(list);
}

START_TEST(resource_limits_and_nice_come_from_the_submit_over_the_defaults)
{
        struct rlimit nofile;
        char want[128], *log;

        set("{\"default-open-files\":200,\"default-nice\":2}");
        log = run_ok("{\"command\":\"ulimit -n; ulimit -t; nice\","
                     "\"limits\":{\"open_files\":100,\"cpu_time\":7,\"nice\":3}}");
        ck_assert_str_eq(log, "100\n7\n3\n");
        free(log);
        log = run_ok("{\"command\":\"ulimit -n; ulimit -t; nice\"}");
        ck_assert_str_eq(log, "200\nunlimited\n2\n");
        free(log);
        /* 0: no limit of ours, what the daemon was started with (from this test's setup). */
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &nofile), 0);
        log = run_ok("{\"command\":\"ulimit -n; nice\",\"limits\":{\"open_files\":0,\"nice\":0}}");
        snprintf(want, sizeof(want), "%llu\n0\n", (unsigned long long)nofile.rlim_cur);
        ck_assert_str_eq(log, want);
        free(log);
        /* Below 0 for an admin (root is one) of a daemon privileged to. */
        log = run_ok("{\"command\":\"nice\",\"limits\":{\"nice\":-5}}");
        ck_assert_str_eq(log, "-5\n");
        free(log);
}
END_TEST

START_TEST(cpu_time_stops_a_process_that_spins)
{
        int64_t id = job_submit(fd, "{\"command\":\"while :; do :; done\",\"timeout\":60,"
                                    "\"limits\":{\"cpu_time\":1}}");
        json_object *rec = job_wait(fd, id);

        ck_assert_msg(strcmp(str_member(rec, "outcome"), "killed") == 0 &&
                          int_member(rec, "signal") == SIGXCPU,
                      "run: %s", json_object_to_json_string(rec));
        json_object_put(rec);
}
END_TEST

START_TEST(bad_limits_are_refused_and_queue_nothing)
{
        refused("{\"command\":\"true\",\"limits\":[1]}", -32602, "\"limits\"", "object");
        refused("{\"command\":\"true\",\"limits\":{\"memory\":1}}", -32602, "limits.memory",
                "unknown");
        refused("{\"command\":\"true\",\"limits\":{\"open_files\":\"many\"}}", -32602,
                "limits.open_files", "integer");
        refused("{\"command\":\"true\",\"limits\":{\"open_files\":1.5}}", -32602,
                "limits.open_files", "integer");
        refused("{\"command\":\"true\",\"limits\":{\"cpu_weight\":10001}}", -32602,
                "limits.cpu_weight", "between");
        refused("{\"command\":\"true\",\"limits\":{\"nice\":-21}}", -32602, "limits.nice",
                "between");
        refused("{\"command\":\"true\",\"limits\":{\"tasks_max\":-1}}", -32602, "limits.tasks_max",
                "between");
        refused("{\"plugin\":\"hello\",\"entry\":\"hello\",\"limits\":{\"nice\":1}}", -32602,
                "\"limits\"", NULL);
}
END_TEST

/* The subtree a refusal names, as "... subtree PATH". */
static void assert_not_enabled(const char *message, const char *controller)
{
        const char *path = strstr(message, "subtree ");
        char file[1200], line[512] = "";
        FILE *f;

        ck_assert_msg(path, "%s", message);
        snprintf(file, sizeof(file), "%s/cgroup.subtree_control", path + 8);
        f = fopen(file, "re");
        ck_assert_msg(f, "%s: cannot open %s", message, file);
        ck_assert_ptr_nonnull(fgets(line, sizeof(line), f) ? line : line);
        fclose(f);
        ck_assert_msg(!strstr(line, controller), "%s is enabled in %s: %s", controller, file, line);
}

/* Each cgroup limit: in the run's cgroup where its controller is enabled, else refused, naming
 * the limit, the controller and the subtree, and queueing nothing. */
START_TEST(cgroup_limits_are_enforced_or_refused)
{
        static const struct {
                const char *limit, *value, *controller, *file;
        } cases[] = {
            {"memory_max", "67108864", "memory", "memory.max"},
            {"tasks_max", "17", "pids", "pids.max"},
            {"cpu_weight", "42", "cpu", "cpu.weight"},
        };
        char mount[512], params[2048];

        if (!has_cgroups())
                return;
        cgroup2_mount(mount, sizeof(mount));
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                json_object *reply;

                snprintf(params, sizeof(params),
                         "{\"command\":\"cat %s$(sed -n 's/^0:://p' /proc/self/cgroup)/%s\","
                         "\"limits\":{\"%s\":%s}}",
                         mount, cases[i].file, cases[i].limit, cases[i].value);
                reply = client_call(fd, "submit", params);
                if (reply_code(reply) == 0) {
                        int64_t id = int_member(reply_result(reply), "id");
                        json_object *rec = job_wait(fd, id);
                        char *log = job_log(fd, id), want[64];

                        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                        snprintf(want, sizeof(want), "%s\n", cases[i].value);
                        ck_assert_str_eq(log, want);
                        free(log);
                        json_object_put(rec);
                } else {
                        const char *message =
                            str_member(json_object_object_get(reply, "error"), "message");
                        char limit[64];

                        ck_assert_int_eq(reply_code(reply), -32602);
                        snprintf(limit, sizeof(limit), "limits.%s", cases[i].limit);
                        ck_assert_msg(strstr(message, limit) && strstr(message, cases[i].controller),
                                      "%s", message);
                        assert_not_enabled(message, cases[i].controller);
                        fprintf(stderr, "%s: refused here, as it must be: %s\n", limit, message);
                }
                json_object_put(reply);
        }
}
END_TEST

/* A default this daemon cannot enforce is refused as well, naming the setting. */
START_TEST(a_default_limit_that_cannot_be_enforced_names_its_setting)
{
        json_object *reply;

        if (!has_cgroups())
                return;
        set("{\"default-tasks-max\":50}");
        reply = client_call(fd, "submit", "{\"command\":\"cat /proc/self/cgroup\"}");
        if (reply_code(reply) == 0) {
                json_object *rec = job_wait(fd, int_member(reply_result(reply), "id"));

                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                json_object_put(rec);
        } else {
                const char *message = str_member(json_object_object_get(reply, "error"), "message");

                ck_assert_int_eq(reply_code(reply), -32602);
                ck_assert_msg(strstr(message, "limits.tasks_max (from default-tasks-max)"), "%s",
                              message);
                assert_not_enabled(message, "pids");
        }
        json_object_put(reply);
        /* An explicit 0 asks for no limit, so no controller is needed. */
        free(run_ok("{\"command\":\"true\",\"limits\":{\"tasks_max\":0}}"));
}
END_TEST

/* The OOM killer, where the memory controller is there: recorded as killed by 9, oom. */
START_TEST(an_oom_kill_is_recorded_as_such)
{
        json_object *reply, *rec;

        if (!has_cgroups())
                return;
        reply = client_call(fd, "submit",
                            "{\"command\":\"dd if=/dev/zero of=/dev/null bs=256M count=1\","
                            "\"limits\":{\"memory_max\":33554432}}");
        if (reply_code(reply) != 0) {
                ck_assert_int_eq(reply_code(reply), -32602);
                fprintf(stderr, "skipped: no memory controller for runs here (%s)\n",
                        str_member(json_object_object_get(reply, "error"), "message"));
                json_object_put(reply);
                return;
        }
        rec = job_wait(fd, int_member(reply_result(reply), "id"));
        ck_assert_msg(strcmp(str_member(rec, "outcome"), "killed") == 0 &&
                          int_member(rec, "signal") == SIGKILL &&
                          json_object_get_boolean(json_object_object_get(rec, "oom")),
                      "run: %s", json_object_to_json_string(rec));
        json_object_put(rec);
        json_object_put(reply);
}
END_TEST

/* The limits a job got at submit, defaults included, are its own: a restart and new defaults
 * leave them as they were. */
START_TEST(a_job_keeps_its_limits_across_a_restart)
{
        json_object *status, *limits;
        int64_t id;

        set("{\"default-open-files\":150}");
        id = job_submit(fd, "{\"command\":\"ulimit -n\",\"delay\":3600,\"limits\":{\"nice\":4}}");
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, NULL, 0), d.pid);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        set("{\"default-open-files\":300,\"default-nice\":1}");
        status = job_status(fd, id);
        limits = json_object_object_get(status, "limits");
        ck_assert_msg(int_member(limits, "open_files") == 150 && int_member(limits, "nice") == 4,
                      "status: %s", json_object_to_json_string(status));
        json_object_put(status);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("limits");
        TCase *tc = tcase_create("limits");

        tcase_set_timeout(tc, 60);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, resource_limits_and_nice_come_from_the_submit_over_the_defaults);
        tcase_add_test(tc, cpu_time_stops_a_process_that_spins);
        tcase_add_test(tc, bad_limits_are_refused_and_queue_nothing);
        tcase_add_test(tc, cgroup_limits_are_enforced_or_refused);
        tcase_add_test(tc, a_default_limit_that_cannot_be_enforced_names_its_setting);
        tcase_add_test(tc, an_oom_kill_is_recorded_as_such);
        tcase_add_test(tc, a_job_keeps_its_limits_across_a_restart);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
