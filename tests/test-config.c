/* SPDX-License-Identifier: MIT */
/* The configuration file: its parser alone, then slowworkd reading it at start, on SIGHUP
 * and by the reload method. */
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

#include "util/config-file.h"
#include "daemon-helpers.h"
#include "run-suite.h"

static char dir[64], conf[PATH_MAX], notify_path[PATH_MAX], err_path[PATH_MAX];
static char out_path[PATH_MAX], home[PATH_MAX];

static void setup(void)
{
        snprintf(dir, sizeof(dir), "/tmp/slowwork-config-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(conf, sizeof(conf), "%s/slowworkd.conf", dir);
        snprintf(notify_path, sizeof(notify_path), "%s/notify", dir);
        snprintf(err_path, sizeof(err_path), "%s/stderr", dir);
        snprintf(out_path, sizeof(out_path), "%s/stdout", dir);
        snprintf(home, sizeof(home), "%s/home", dir);
}

static void teardown(void)
{
        unlink(conf);
        unlink(notify_path);
        unlink(err_path);
        unlink(out_path);
        rmdir(home);
        rmdir(dir);
}

/* Whole, by rename: a reload never reads half a file. */
static void write_conf(const char *text)
{
        char tmp[PATH_MAX + 8];
        FILE *f;

        snprintf(tmp, sizeof(tmp), "%s.tmp", conf);
        f = fopen(tmp, "w");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(rename(tmp, conf), 0);
}

static void defaults(struct config_file *cf)
{
        memset(cf, 0, sizeof(*cf));
        cf->settings = (struct sw_settings){.min_threads = 2,
                                            .max_threads = 4,
                                            .vslow_percentage = 50,
                                            .idle_timeout = 5.0,
                                            .history_limit = 10000,
                                            .log_limit = 16777216,
                                            .kill_grace = 5.0,
                                            .stop_timeout = 30.0,
                                            .max_connections_per_user = 64,
                                            .max_log_bytes_per_user = 1073741824,
                                            .min_free_space = 5,
                                            .limits = {0}};
}

static int parse(const char *text, struct config_file *cf, char *err, size_t errlen)
{
        FILE *f = fmemopen((void *)text, strlen(text), "r");
        int r;

        ck_assert_ptr_nonnull(f);
        r = config_file_parse(f, "test.conf", cf, NULL, err, errlen);
        fclose(f);
        return r;
}

static const char every_key[] = "# every key, and some space\n"
                                "min-threads = 3\n"
                                "\n"
                                "  max-threads=9\t\n"
                                "vslow-percentage =  25 # a comment after the value\n"
                                "\tidle-timeout = 0.5\n"
                                "history-limit = 77\n"
                                "log-limit = 4096\n"
                                "kill-grace = 1.25\n"
                                "stop-timeout = 12\n"
                                "admin-group = root\n"
                                "socket-group = root\n"
                                "default-memory-max = 1073741824\n"
                                "default-tasks-max = 64\n"
                                "default-cpu-weight = 50\n"
                                "default-nice = -2\n"
                                "default-open-files = 256\n"
                                "default-cpu-time = 60\n"
                                "max-connections-per-user = 5\n"
                                "max-log-bytes-per-user = 65536\n"
                                "min-free-space = 7\n"
                                "max-queued-per-user = 100\n"
                                "max-running-per-user = 2\n"
                                "max-job-memory = 2147483648\n"
                                "max-job-tasks = 128\n"
                                "max-job-open-files = 512\n"
                                "max-job-cpu-time = 3600\n"
                                "fair-share = yes\n"
                                "max-jobs-per-user = 300\n"
                                "max-job-bytes-per-user = 1048576\n";

START_TEST(parse_reads_every_key)
{
        struct config_file cf;
        char err[256];

        defaults(&cf);
        ck_assert_int_eq(parse(every_key, &cf, err, sizeof(err)), 0);
        ck_assert_int_eq(cf.settings.min_threads, 3);
        ck_assert_int_eq(cf.settings.max_threads, 9);
        ck_assert_int_eq(cf.settings.vslow_percentage, 25);
        ck_assert_double_eq(cf.settings.idle_timeout, 0.5);
        ck_assert_int_eq(cf.settings.history_limit, 77);
        ck_assert_int_eq(cf.settings.log_limit, 4096);
        ck_assert_double_eq(cf.settings.kill_grace, 1.25);
        ck_assert_double_eq(cf.settings.stop_timeout, 12.0);
        ck_assert_int_eq(cf.settings.max_connections_per_user, 5);
        ck_assert_int_eq(cf.settings.max_log_bytes_per_user, 65536);
        ck_assert_int_eq(cf.settings.min_free_space, 7);
        ck_assert_int_eq(cf.settings.max_queued_per_user, 100);
        ck_assert_int_eq(cf.settings.max_running_per_user, 2);
        ck_assert(cf.settings.fair_share);
        ck_assert_int_eq(cf.settings.max_jobs_per_user, 300);
        ck_assert_int_eq(cf.settings.max_job_bytes_per_user, 1048576);
        ck_assert_uint_eq(cf.admin_gid, 0);
        ck_assert_uint_eq(cf.socket_gid, 0);
        ck_assert_uint_eq(config_file_line(&cf, "min-threads"), 2);
        ck_assert_uint_eq(config_file_line(&cf, "max-threads"), 4);
        ck_assert_uint_eq(config_file_line(&cf, "socket-group"), 12);
        ck_assert(cf.settings.limits.memory_max == 1073741824 && cf.settings.limits.tasks_max == 64 &&
                  cf.settings.limits.cpu_weight == 50 && cf.settings.limits.nice == -2 &&
                  cf.settings.limits.open_files == 256 && cf.settings.limits.cpu_time == 60);
        ck_assert_uint_eq(config_file_line(&cf, "default-cpu-time"), 18);
        ck_assert(cf.settings.ceilings.memory_max == 2147483648 &&
                  cf.settings.ceilings.tasks_max == 128 && cf.settings.ceilings.open_files == 512 &&
                  cf.settings.ceilings.cpu_time == 3600);
}
END_TEST

START_TEST(parse_takes_a_path_as_it_is)
{
        struct config_file cf;
        char err[256];

        defaults(&cf);
        ck_assert_int_eq(parse("metrics-file = /var/lib/node exporter/slowwork.prom\n"
                               "metrics-interval = 30\n",
                               &cf, err, sizeof(err)),
                         0);
        ck_assert_str_eq(cf.settings.metrics_file, "/var/lib/node exporter/slowwork.prom");
        ck_assert_double_eq(cf.settings.metrics_interval, 30.0);
        ck_assert_int_eq(parse("metrics-file =  \"\"\n", &cf, err, sizeof(err)), -EINVAL);
        ck_assert_str_eq(cf.settings.metrics_file, "/var/lib/node exporter/slowwork.prom");
}
END_TEST

START_TEST(parse_leaves_unset_keys_alone)
{
        struct config_file cf;
        char err[256];

        defaults(&cf);
        ck_assert_int_eq(parse("# nothing but a comment\n\n   \n", &cf, err, sizeof(err)), 0);
        ck_assert_int_eq(cf.settings.min_threads, 2);
        ck_assert_int_eq(cf.settings.max_threads, 4);
        ck_assert_double_eq(cf.settings.stop_timeout, 30.0);
        ck_assert_uint_eq(cf.admin_gid, (gid_t)-1);
        ck_assert_uint_eq(cf.socket_gid, (gid_t)-1);
        ck_assert_uint_eq(config_file_line(&cf, "min-threads"), 0);
}
END_TEST

START_TEST(parse_reads_the_store_and_its_schema)
{
        struct config_file cf;
        char err[256];

        defaults(&cf);
        ck_assert_int_eq(parse("store = postgresql:///slowwork?host=/run/postgresql&user=jobs\n"
                               "store-schema = _jobs_2\n",
                               &cf, err, sizeof(err)),
                         0);
        ck_assert_str_eq(cf.store, "postgresql:///slowwork?host=/run/postgresql&user=jobs");
        ck_assert_str_eq(cf.store_schema, "_jobs_2");
        ck_assert_uint_eq(config_file_line(&cf, "store-schema"), 2);
        /* 63 characters is the most PostgreSQL keeps of a name. */
        ck_assert_int_eq(parse("store = host=db dbname=slowwork\nstore-schema = "
                               "a23456789012345678901234567890123456789012345678901234567890123\n",
                               &cf, err, sizeof(err)),
                         0);
        ck_assert_str_eq(cf.store, "host=db dbname=slowwork");
        config_file_clear(&cf);
        ck_assert_ptr_null(cf.store);
}
END_TEST

START_TEST(parse_reads_the_node_and_its_lease)
{
        struct config_file cf;
        char err[256];

        defaults(&cf);
        ck_assert_int_eq(parse("node-name = rack-2.node_7\nlease-renew = 0.5\nlease-time = 3\n",
                               &cf, err, sizeof(err)),
                         0);
        ck_assert_str_eq(cf.node_name, "rack-2.node_7");
        ck_assert_double_eq(cf.lease_renew, 0.5);
        ck_assert_double_eq(cf.lease_time, 3);
        ck_assert_uint_eq(config_file_line(&cf, "lease-time"), 3);
        config_file_clear(&cf);
        ck_assert_ptr_null(cf.node_name);
}
END_TEST

/* Each bad line comes after two good ones, so that its number is 3. */
static const struct {
        const char *line, *message;
} bad_lines[] = {
    {"bogus = 1", "unknown key \"bogus\""},
    {"runtime = true", "unknown key \"runtime\""},
    {"max-threads 6", "expected \"key = value\""},
    {"= 6", "no key before \"=\""},
    {"max-threads =", "no value for max-threads"},
    {"min-threads = 1", "min-threads is already set on line 1"},
    {"max-threads = 0", "parameter \"max-threads\" must be between 1 and 255"},
    {"max-threads = 256", "parameter \"max-threads\" must be between 1 and 255"},
    {"max-threads = 2.5", "parameter \"max-threads\" must be an integer"},
    {"max-threads = \"6\"", "max-threads must be a number, not \"\"6\"\""},
    {"max-threads = 6 threads", "max-threads must be a number, not \"6 threads\""},
    {"idle-timeout = soon", "idle-timeout must be a number, not \"soon\""},
    {"fair-share = 1", "fair-share must be yes or no, not \"1\""},
    {"idle-timeout = -1", "parameter \"idle-timeout\" must be between"},
    {"vslow-percentage = 100", "parameter \"vslow-percentage\" must be between 1 and 99"},
    {"log-limit = 10", "parameter \"log-limit\" must be between 1024"},
    {"default-nice = 20", "parameter \"default-nice\" must be between -20 and 19"},
    {"default-open-files = 1.5", "parameter \"default-open-files\" must be an integer"},
    {"admin-group = no-such-group-slowwork", "admin-group: no group \"no-such-group-slowwork\""},
    {"socket-group = no-such-group-slowwork", "socket-group: no group"},
    {"metrics-file = slowwork.prom", "parameter \"metrics-file\" must be an absolute path"},
    {"metrics-interval = 0", "parameter \"metrics-interval\" must be between 1 and 86400"},
    {"store-schema = Slowwork", "store-schema \"Slowwork\" is not a plain identifier"},
    {"store-schema = 9lives", "store-schema \"9lives\" is not a plain identifier"},
    {"store-schema = slow-work", "store-schema \"slow-work\" is not a plain identifier"},
    {"store-schema = \"slowwork\"", "store-schema \"\"slowwork\"\" is not a plain identifier"},
    {"store-schema = a234567890123456789012345678901234567890123456789012345678901234",
     "store-schema \"a234567890123456789012345678901234567890123456789012345678901234\" is not"},
    {"store =", "no value for store"},
    {"node-name = a/b", "node-name \"a/b\" must be 1 to 63 letters, digits, '.', '_' or '-'"},
    {"node-name = a234567890123456789012345678901234567890123456789012345678901234",
     "node-name \"a234567890123456789012345678901234567890123456789012345678901234\" must be"},
    {"lease-renew = 0", "lease-renew must be a number of seconds from 0.05 to 3600, not \"0\""},
    {"lease-time = soon", "lease-time must be a number of seconds from 0.05 to 3600"},
    {"lease-time = 3601", "lease-time must be a number of seconds from 0.05 to 3600"},
};

static void bad_text(char *buf, size_t len, const char *line)
{
        snprintf(buf, len, "min-threads = 1\n# a comment\n%s\nmax-threads = 8\n", line);
}

START_TEST(parse_rejects_a_bad_line_with_its_number)
{
        struct config_file cf, before;
        char text[256], err[256], want[256];

        defaults(&cf);
        before = cf;
        bad_text(text, sizeof(text), bad_lines[_i].line);
        ck_assert_int_eq(parse(text, &cf, err, sizeof(err)), -EINVAL);
        snprintf(want, sizeof(want), "test.conf:3: %s", bad_lines[_i].message);
        ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "\"%s\": got \"%s\", want \"%s\"",
                      bad_lines[_i].line, err, want);
        /* Nothing of the good lines before it applies. */
        ck_assert_int_eq(cf.settings.min_threads, before.settings.min_threads);
        ck_assert_int_eq(cf.settings.max_threads, before.settings.max_threads);
        ck_assert_uint_eq(cf.admin_gid, before.admin_gid);
        ck_assert_uint_eq(config_file_line(&cf, "min-threads"), 0);
}
END_TEST

static int64_t get_int(int fd, const char *name)
{
        json_object *reply = client_call(fd, "settings.get", NULL);
        int64_t v = int_member(reply_result(reply), name);

        json_object_put(reply);
        return v;
}

static double get_double(int fd, const char *name)
{
        json_object *reply = client_call(fd, "settings.get", NULL);
        json_object *v = json_object_object_get(reply_result(reply), name);
        double d;

        ck_assert_ptr_nonnull(v);
        d = json_object_get_double(v);
        json_object_put(reply);
        return d;
}

START_TEST(every_key_reaches_settings_get)
{
        struct daemon d;
        json_object *reply;
        int fd;

        write_conf(every_key);
        daemon_start(&d, "--config", conf, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(get_int(fd, "min-threads"), 3);
        ck_assert_int_eq(get_int(fd, "max-threads"), 9);
        ck_assert_int_eq(get_int(fd, "vslow-percentage"), 25);
        ck_assert_double_eq(get_double(fd, "idle-timeout"), 0.5);
        ck_assert_int_eq(get_int(fd, "history-limit"), 77);
        ck_assert_int_eq(get_int(fd, "log-limit"), 4096);
        ck_assert_double_eq(get_double(fd, "kill-grace"), 1.25);
        ck_assert_double_eq(get_double(fd, "stop-timeout"), 12.0);
        ck_assert_int_eq(get_int(fd, "max-connections-per-user"), 5);
        ck_assert_int_eq(get_int(fd, "max-log-bytes-per-user"), 65536);
        ck_assert_int_eq(get_int(fd, "min-free-space"), 7);
        ck_assert_int_eq(get_int(fd, "max-queued-per-user"), 100);
        ck_assert_int_eq(get_int(fd, "max-running-per-user"), 2);
        ck_assert_int_eq(get_int(fd, "max-job-memory"), 2147483648);
        ck_assert_int_eq(get_int(fd, "max-job-tasks"), 128);
        ck_assert_int_eq(get_int(fd, "max-job-open-files"), 512);
        ck_assert_int_eq(get_int(fd, "max-job-cpu-time"), 3600);
        reply = client_call(fd, "settings.get", NULL);
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "fair-share")));
        json_object_put(reply);
        ck_assert_int_eq(get_int(fd, "max-jobs-per-user"), 300);
        ck_assert_int_eq(get_int(fd, "max-job-bytes-per-user"), 1048576);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_bad_line_stops_the_start_with_its_number)
{
        char text[256], want[PATH_MAX + 256], *err;

        bad_text(text, sizeof(text), bad_lines[_i].line);
        write_conf(text);
        ck_assert_int_eq(
            daemon_run_stderr(&err, "--config", conf, "--socket", "/nonexistent/s", NULL), 2);
        snprintf(want, sizeof(want), "slowworkd: %s:3: %s", conf, bad_lines[_i].message);
        ck_assert_msg(strstr(err, want), "stderr \"%s\", want \"%s\"", err, want);
        free(err);
}
END_TEST

START_TEST(threads_out_of_order_name_the_line)
{
        char want[PATH_MAX + 128], *err;

        write_conf("max-threads = 3\nmin-threads = 5\n");
        ck_assert_int_eq(
            daemon_run_stderr(&err, "--config", conf, "--socket", "/nonexistent/s", NULL), 2);
        snprintf(want, sizeof(want), "slowworkd: %s:2: min-threads (5) must not exceed", conf);
        ck_assert_msg(strstr(err, want), "stderr \"%s\"", err);
        free(err);
        /* A flag that puts it right wins; one that gets it wrong is named. */
        ck_assert_int_eq(daemon_run_stderr(&err, "--config", conf, "--min-threads", "2",
                                           "--max-threads", "1", "--socket", "/nonexistent/s",
                                           NULL),
                         2);
        ck_assert_msg(strstr(err, "--min-threads (2) must not exceed --max-threads (1)"),
                      "stderr \"%s\"", err);
        free(err);
}
END_TEST

START_TEST(flags_win_over_the_file)
{
        struct daemon d;
        int fd;

        write_conf("min-threads = 3\nmax-threads = 9\nkill-grace = 2\n");
        daemon_start(&d, "--max-threads", "6", "--config", conf, "--kill-grace", "0.5", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(get_int(fd, "min-threads"), 3);
        ck_assert_int_eq(get_int(fd, "max-threads"), 6);
        ck_assert_double_eq(get_double(fd, "kill-grace"), 0.5);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_bad_store_schema_flag_stops_the_start)
{
        char *err;

        ck_assert_int_eq(
            daemon_run_stderr(&err, "--store-schema", "Jobs", "--socket", "/nonexistent/s", NULL),
            2);
        ck_assert_msg(strstr(err, "slowworkd: --store-schema: store-schema \"Jobs\" is not a plain "
                                  "identifier"),
                      "stderr \"%s\"", err);
        free(err);
}
END_TEST

START_TEST(bad_node_flags_stop_the_start)
{
        char *err;

        ck_assert_int_eq(daemon_run_stderr(&err, "--node-name", "a b", "--socket",
                                           "/nonexistent/s", NULL),
                         2);
        ck_assert_msg(strstr(err, "slowworkd: --node-name: node-name \"a b\" must be"),
                      "stderr \"%s\"", err);
        free(err);
        ck_assert_int_eq(daemon_run_stderr(&err, "--lease-renew", "5", "--lease-time", "6",
                                           "--socket", "/nonexistent/s", NULL),
                         2);
        ck_assert_msg(strstr(err, "--lease-time (6) must be at least twice --lease-renew (5)"),
                      "stderr \"%s\"", err);
        free(err);
}
END_TEST

/* A state folder of the test's own, gone with what the daemon left in it. */
static void state_dir(char *buf, size_t len)
{
        snprintf(buf, len, "%s/state", dir);
}

static void remove_state_dir(void)
{
        char cmd[PATH_MAX + 16];

        snprintf(cmd, sizeof(cmd), "rm -rf %s/state", dir);
        ck_assert_int_eq(system(cmd), 0);
}

START_TEST(a_job_database_out_of_reach_stops_the_start)
{
        char state[PATH_MAX], key[PATH_MAX + 8], text[PATH_MAX + 96], *err;

        state_dir(state, sizeof(state));
        /* Without the cluster key, a PostgreSQL store is refused before it is reached. */
        write_conf("store = host=/nonexistent/slowwork dbname=slowwork\n");
        ck_assert_int_eq(daemon_run_stderr(&err, "--config", conf, "--state-dir", state, "--socket",
                                           "/nonexistent/s", NULL),
                         2);
        ck_assert_msg(strstr(err, "cluster-key-file"), "stderr \"%s\"", err);
        free(err);
        snprintf(key, sizeof(key), "%s/cluster.key", dir);
        unlink(key);
        ck_assert_int_eq(daemon_run_stderr(&err, "--make-cluster-key", key, NULL), 0);
        free(err);
        snprintf(text, sizeof(text),
                 "store = host=/nonexistent/slowwork dbname=slowwork\ncluster-key-file = %s\n", key);
        write_conf(text);
        ck_assert_int_eq(daemon_run_stderr(&err, "--config", conf, "--state-dir", state, "--socket",
                                           "/nonexistent/s", NULL),
                         1);
        ck_assert_msg(strstr(err, "Cannot reach the job database: "), "stderr \"%s\"", err);
        ck_assert_msg(strstr(err, "/nonexistent/slowwork"), "stderr \"%s\"", err);
        free(err);
        /* The flag wins over the file. */
        ck_assert_int_eq(daemon_run_stderr(&err, "--config", conf, "--store",
                                           "postgresql:///slowwork?host=/nonexistent/flag",
                                           "--state-dir", state, "--socket", "/nonexistent/s",
                                           NULL),
                         1);
        ck_assert_msg(strstr(err, "Cannot reach the job database: "), "stderr \"%s\"", err);
        ck_assert_msg(strstr(err, "/nonexistent/flag"), "stderr \"%s\"", err);
        free(err);
        remove_state_dir();
}
END_TEST

START_TEST(an_empty_store_flag_keeps_the_jobs_in_sqlite)
{
        char db[PATH_MAX + 16];
        struct daemon d;
        int fd;

        write_conf("store = host=/nonexistent/slowwork dbname=slowwork\n");
        daemon_start(&d, "--config", conf, "--store", "", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\",\"delay\":3600}"), 1);
        snprintf(db, sizeof(db), "%s/slowworkd.db", d.state);
        ck_assert_int_eq(access(db, F_OK), 0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Whether the process maps a library whose file name starts with name. */
static bool maps_library(pid_t pid, const char *name)
{
        char path[64], line[PATH_MAX + 128];
        bool found = false;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
        f = fopen(path, "r");
        ck_assert_msg(f, "%s: %s", path, strerror(errno));
        while (!found && fgets(line, sizeof(line), f)) {
                const char *file = strrchr(line, '/');

                found = file && strncmp(file + 1, name, strlen(name)) == 0;
        }
        fclose(f);
        return found;
}

START_TEST(a_sqlite_daemon_never_loads_libpq)
{
        struct daemon d;
        int fd;

        SKIP_UNLESS_SQLITE("it is about a daemon that keeps its jobs in SQLite");
        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\",\"delay\":3600}"), 1);
        ck_assert(maps_library(d.pid, "libsqlite3.so"));
        ck_assert(!maps_library(d.pid, "libpq.so"));
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* libpq is loaded when the store is opened: a file of its name that is no library stops the
 * start, with the loader's reason. */
START_TEST(a_postgresql_store_without_libpq_stops_the_start_naming_it)
{
        char state[PATH_MAX], key[PATH_MAX + 8], lib[PATH_MAX + 8], fake[PATH_MAX + 24], *err;
        int fd;

        state_dir(state, sizeof(state));
        snprintf(key, sizeof(key), "%s/cluster.key", dir);
        unlink(key);
        ck_assert_int_eq(daemon_run_stderr(&err, "--make-cluster-key", key, NULL), 0);
        free(err);
        snprintf(lib, sizeof(lib), "%s/lib", dir);
        ck_assert_int_eq(mkdir(lib, 0700), 0);
        snprintf(fake, sizeof(fake), "%s/libpq.so.5", lib);
        fd = open(fake, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        close(fd);
        setenv("LD_LIBRARY_PATH", lib, 1);
        ck_assert_int_eq(daemon_run_stderr(&err, "--store",
                                           "host=/nonexistent/slowwork dbname=slowwork",
                                           "--cluster-key-file", key, "--state-dir", state,
                                           "--socket", "/nonexistent/s", NULL),
                         1);
        unsetenv("LD_LIBRARY_PATH");
        ck_assert_msg(strstr(err, "Cannot load libpq.so.5, PostgreSQL's client library, which a "
                                  "PostgreSQL store needs: "),
                      "stderr \"%s\"", err);
        ck_assert_msg(strstr(err, fake), "stderr \"%s\"", err);
        ck_assert_msg(!strstr(err, "Cannot reach"), "stderr \"%s\"", err);
        free(err);
        unlink(fake);
        rmdir(lib);
        unlink(key);
        remove_state_dir();
}
END_TEST

START_TEST(a_missing_config_file_is_an_error)
{
        char want[PATH_MAX + 64], *err;

        ck_assert_int_eq(
            daemon_run_stderr(&err, "--config", conf, "--socket", "/nonexistent/s", NULL), 2);
        snprintf(want, sizeof(want), "slowworkd: cannot open %s: No such file", conf);
        ck_assert_msg(strstr(err, want), "stderr \"%s\"", err);
        free(err);
}
END_TEST

START_TEST(an_empty_file_means_the_defaults)
{
        struct daemon d;
        int fd;

        write_conf("");
        daemon_start(&d, "--config", conf, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(get_int(fd, "min-threads"), 2);
        ck_assert_int_eq(get_int(fd, "max-threads"), 4);
        ck_assert_int_eq(get_int(fd, "history-limit"), 10000);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_missing_default_file_means_the_defaults)
{
        struct daemon d;
        int fd;

        if (access(CONFIG_FILE_DEFAULT, F_OK) == 0) {
                fprintf(stderr, "skipped: %s exists on this machine\n", CONFIG_FILE_DEFAULT);
                return;
        }
        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(get_int(fd, "min-threads"), 2);
        ck_assert_int_eq(get_int(fd, "max-threads"), 4);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Polls settings.get until name has value; the daemon reloads on its own time. */
static void wait_for_int(int fd, const char *name, int64_t value)
{
        struct timespec pause = {0, 5000000};
        int i;

        for (i = 0; i < 4000; i++) {
                if (get_int(fd, name) == value)
                        return;
                nanosleep(&pause, NULL);
        }
        ck_abort_msg("%s never became %lld", name, (long long)value);
}

START_TEST(sighup_applies_a_change_and_flags_keep_winning)
{
        struct daemon d;
        int fd;

        write_conf("min-threads = 3\nmax-threads = 9\nhistory-limit = 50\n");
        daemon_start(&d, "--config", conf, "--max-threads", "6", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(get_int(fd, "min-threads"), 3);

        /* A key taken out of the file goes back to its default. */
        write_conf("min-threads = 5\nmax-threads = 10\nstop-timeout = 7\n");
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        wait_for_int(fd, "min-threads", 5);
        ck_assert_int_eq(get_int(fd, "max-threads"), 6);
        ck_assert_int_eq(get_int(fd, "history-limit"), 10000);
        ck_assert_double_eq(get_double(fd, "stop-timeout"), 7.0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Starts the daemon with its stderr in err_path and NOTIFY_SOCKET at notify_path: the READY=1
 * after a RELOADING=1 says that a reload is over, whatever came of it. */
static int start_observed(struct daemon *d, const char *arg)
{
        int saved = dup(STDERR_FILENO), out, notify_fd = notify_listen(notify_path);

        out = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(out, 0);
        ck_assert_int_ge(saved, 0);
        ck_assert_int_eq(setenv("NOTIFY_SOCKET", notify_path, 1), 0);
        fflush(stderr);
        dup2(out, STDERR_FILENO);
        daemon_start(d, "--config", conf, arg, NULL);
        dup2(saved, STDERR_FILENO);
        close(saved);
        close(out);
        unsetenv("NOTIFY_SOCKET");
        free(notify_wait(notify_fd, "READY=1"));
        return notify_fd;
}

static void reload(struct daemon *d, int notify_fd)
{
        ck_assert_int_eq(kill(d->pid, SIGHUP), 0);
        free(notify_wait(notify_fd, "RELOADING=1"));
        free(notify_wait(notify_fd, "READY=1"));
}

START_TEST(sighup_with_a_bad_file_keeps_the_running_config)
{
        char want[PATH_MAX + 64], *err;
        struct daemon d;
        int fd, notify_fd;

        write_conf("min-threads = 3\n");
        notify_fd = start_observed(&d, "--kill-grace=1");
        fd = client_connect(d.sock);

        write_conf("min-threads = 4\nmax-threads = 1000\n");
        reload(&d, notify_fd);
        ck_assert_int_eq(get_int(fd, "min-threads"), 3);
        ck_assert_int_eq(get_int(fd, "max-threads"), 4);
        ck_assert(daemon_alive(&d));
        err = file_text(err_path);
        snprintf(want, sizeof(want), "%s:2: parameter \"max-threads\" must be between", conf);
        ck_assert_msg(strstr(err, want), "stderr \"%s\"", err);
        free(err);

        /* It still reloads a good one. */
        write_conf("min-threads = 4\n");
        reload(&d, notify_fd);
        ck_assert_int_eq(get_int(fd, "min-threads"), 4);
        close(fd);
        close(notify_fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(reload_answers_once_the_file_is_applied)
{
        json_object *reply;
        struct daemon d;
        int fd, notify_fd;

        write_conf("min-threads = 3\nmax-threads = 9\n");
        notify_fd = start_observed(&d, "--stop-timeout=7");
        fd = client_connect(d.sock);

        write_conf("min-threads = 5\nmax-threads = 10\nstop-timeout = 9\nhistory-limit = 50\n");
        reply = client_call(fd, "reload", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        ck_assert_ptr_nonnull(reply_result(reply));
        json_object_put(reply);
        /* No waiting: the reply came after the settings were in force. */
        ck_assert_int_eq(get_int(fd, "min-threads"), 5);
        ck_assert_int_eq(get_int(fd, "max-threads"), 10);
        ck_assert_int_eq(get_int(fd, "history-limit"), 50);
        ck_assert_double_eq(get_double(fd, "stop-timeout"), 7.0);
        /* systemd hears of it as of a SIGHUP's. */
        free(notify_wait(notify_fd, "RELOADING=1"));
        free(notify_wait(notify_fd, "READY=1"));
        close(fd);
        close(notify_fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(reload_of_a_bad_file_answers_its_error_and_changes_nothing)
{
        char want[PATH_MAX + 160];
        json_object *reply;
        const char *message;
        struct daemon d;
        int fd, notify_fd;

        write_conf("min-threads = 3\n");
        notify_fd = start_observed(&d, "--kill-grace=1");
        fd = client_connect(d.sock);

        write_conf("min-threads = 4\nmax-threads = 1000\n");
        reply = client_call(fd, "reload", NULL);
        ck_assert_int_eq(reply_code(reply), -32602);
        message = json_object_get_string(
            json_object_object_get(json_object_object_get(reply, "error"), "message"));
        snprintf(want, sizeof(want),
                 "cannot reload the configuration, keeping the one in use: %s:2: parameter "
                 "\"max-threads\" must be between",
                 conf);
        ck_assert_msg(strncmp(message, want, strlen(want)) == 0, "message \"%s\"", message);
        json_object_put(reply);
        ck_assert_int_eq(get_int(fd, "min-threads"), 3);
        ck_assert_int_eq(get_int(fd, "max-threads"), 4);

        /* A file gone is an error too, and a good one is read again. */
        ck_assert_int_eq(unlink(conf), 0);
        reply = client_call(fd, "reload", NULL);
        ck_assert_int_eq(reply_code(reply), -32001);
        json_object_put(reply);
        write_conf("min-threads = 4\n");
        reply = client_call(fd, "reload", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        ck_assert_int_eq(get_int(fd, "min-threads"), 4);
        close(fd);
        close(notify_fd);
        daemon_stop(&d);
}
END_TEST

/* Reloads asked for at once, by several clients and SIGHUP: each is answered, by a reload that
 * read the file after it was asked. */
START_TEST(reloads_at_once_are_each_answered)
{
        json_object *reply;
        struct daemon d;
        int fds[4], i;

        write_conf("min-threads = 1\n");
        daemon_start(&d, "--config", conf, NULL);
        for (i = 0; i < 4; i++)
                fds[i] = client_connect(d.sock);
        for (i = 0; i < 4; i++)
                client_send(fds[i], "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"reload\"}");
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        write_conf("min-threads = 2\n");
        client_send(fds[0], "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"reload\"}");
        for (i = 0; i < 5; i++) {
                char *line = client_read_line(fds[i % 4]);

                ck_assert_ptr_nonnull(line);
                reply = json_tokener_parse(line);
                ck_assert_msg(reply && reply_code(reply) == 0, "reply %s", line);
                json_object_put(reply);
                free(line);
        }
        ck_assert_int_eq(get_int(fds[0], "min-threads"), 2);
        for (i = 0; i < 4; i++)
                close(fds[i]);
        daemon_stop(&d);
}
END_TEST

/* Starts the daemon as start_observed() does, with JOURNAL_STREAM naming its stderr (or, when
 * !match, another stream), reloads a bad file and a good one, and returns what it logged. The
 * reloads are asked by the reload method, whose replies come once each is logged: what is
 * looked at is the lines, not how systemd hears of a reload (the sighup_ cases test that). */
static char *logged_with_journal_stream(bool match)
{
        char env[64];
        struct stat st;
        struct daemon d;
        int fd, notify_fd;
        json_object *reply;
        char *err;

        unlink(notify_path);
        fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fstat(fd, &st), 0);
        close(fd);
        snprintf(env, sizeof(env), "%llu:%llu", (unsigned long long)st.st_dev,
                 (unsigned long long)st.st_ino + (match ? 0 : 1));
        ck_assert_int_eq(setenv("JOURNAL_STREAM", env, 1), 0);
        write_conf("min-threads = 3\n");
        notify_fd = start_observed(&d, "--kill-grace=1");
        unsetenv("JOURNAL_STREAM");
        fd = client_connect(d.sock);
        write_conf("min-threads = lots\n");
        reply = client_call(fd, "reload", NULL);
        ck_assert_int_ne(reply_code(reply), 0);
        json_object_put(reply);
        write_conf("min-threads = 4\n");
        reply = client_call(fd, "reload", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        close(fd);
        daemon_stop(&d);
        close(notify_fd);
        err = file_text(err_path);
        return err;
}

START_TEST(under_journald_lines_do_not_name_the_daemon)
{
        char *err = logged_with_journal_stream(true);

        ck_assert_msg(
            strstr(err, "<3>Failed to reload the configuration, keeping the one in use: ") &&
                strstr(err, "\n<6>Reloaded the configuration\n") && !strstr(err, "slowworkd: "),
            "stderr \"%s\"", err);
        free(err);
        /* Another stream in JOURNAL_STREAM: stderr was redirected, and the name stays. */
        err = logged_with_journal_stream(false);
        ck_assert_msg(strstr(err, "<3>slowworkd: Failed to reload the configuration") &&
                          strstr(err, "\n<6>slowworkd: Reloaded the configuration\n"),
                      "stderr \"%s\"", err);
        free(err);
}
END_TEST

/* Whether check_config's stderr is as the journal's stream is (JOURNAL_STREAM naming it), as
 * under systemd's ExecReload=. */
static bool check_under_journal;

/* slowworkd --check-config with the arguments given, in a home of its own under dir (runtime,
 * state) that must stay empty: its exit status, its stdout and its stderr. */
static int check_config(char **ret_out, char **ret_err, ...)
{
        char *argv[16] = {(char *)SLOWWORKD, (char *)"--check-config"}, runtime[PATH_MAX + 16],
             state[PATH_MAX + 16];
        const char *a;
        int n = 2, status;
        va_list ap;
        pid_t pid;

        va_start(ap, ret_err);
        while ((a = va_arg(ap, const char *)) && n < 15)
                argv[n++] = (char *)a;
        va_end(ap);
        argv[n] = NULL;
        snprintf(runtime, sizeof(runtime), "%s/runtime", home);
        snprintf(state, sizeof(state), "%s/state", home);
        ck_assert_int_eq(mkdir(home, 0700), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                setenv("XDG_RUNTIME_DIR", runtime, 1);
                setenv("XDG_STATE_HOME", state, 1);
                setenv("HOME", home, 1);
                if (!freopen(out_path, "w", stdout) || !freopen(err_path, "w", stderr))
                        _exit(127);
                if (check_under_journal) {
                        struct stat st;
                        char stream[64];

                        if (fstat(STDERR_FILENO, &st) < 0)
                                _exit(127);
                        snprintf(stream, sizeof(stream), "%llu:%llu",
                                 (unsigned long long)st.st_dev, (unsigned long long)st.st_ino);
                        setenv("JOURNAL_STREAM", stream, 1);
                }
                execv(argv[0], argv);
                _exit(127);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        /* No socket, no state folder: the home is as it was made. */
        ck_assert_int_eq(rmdir(home), 0);
        *ret_out = file_text(out_path);
        *ret_err = file_text(err_path);
        return WEXITSTATUS(status);
}

START_TEST(check_config_passes_a_good_file)
{
        char want[PATH_MAX + 16], *out, *err;

        write_conf(every_key);
        ck_assert_int_eq(check_config(&out, &err, "--config", conf, NULL), 0);
        snprintf(want, sizeof(want), "%s: OK\n", conf);
        ck_assert_str_eq(out, want);
        ck_assert_str_eq(err, "");
        free(out);
        free(err);

        write_conf("queue.batch.max-threads = 2\nqueue.batch.max-running-per-user = 1\n");
        ck_assert_int_eq(check_config(&out, &err, "--config", conf, "--system", NULL), 0);
        ck_assert_str_eq(out, want);
        ck_assert_str_eq(err, "");
        free(out);
        free(err);
}
END_TEST

/* Each of bad_lines, as a start would see it: exit 1 and the line named. */
START_TEST(check_config_fails_a_bad_line_with_its_number)
{
        char text[256], want[PATH_MAX + 256], *out, *err;

        bad_text(text, sizeof(text), bad_lines[_i].line);
        write_conf(text);
        ck_assert_int_eq(check_config(&out, &err, "--config", conf, NULL), 1);
        snprintf(want, sizeof(want), "slowworkd: %s:3: %s", conf, bad_lines[_i].message);
        ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "stderr \"%s\", want \"%s\"", err,
                      want);
        ck_assert_str_eq(out, "");
        free(out);
        free(err);
}
END_TEST

/* Under systemd (ExecReload=), the journal names the program on each line: the lines do not. */
START_TEST(check_config_under_journald_does_not_name_itself)
{
        char want[PATH_MAX + 256], *out, *err;

        write_conf("max-threads = 4\nmax-threads = 5\n");
        check_under_journal = true;
        ck_assert_int_eq(check_config(&out, &err, "--config", conf, NULL), 1);
        check_under_journal = false;
        snprintf(want, sizeof(want), "%s:2: max-threads is already set on line 1\n", conf);
        ck_assert_str_eq(err, want);
        free(out);
        free(err);
}
END_TEST

/* Every bad line is told, not only the first: an unknown key, a bad value, bad queue lines. */
START_TEST(check_config_names_every_bad_line)
{
        char *want, *out, *err;

        write_conf("min-threads = 1\n"
                   "bogus = 2\n"
                   "max-threads = many\n"
                   "# good lines between\n"
                   "history-limit = 5\n"
                   "queue.batch.colour = blue\n"
                   "queue.batch.max-threads = 0\n");
        ck_assert_int_eq(check_config(&out, &err, "--config", conf, NULL), 1);
        ck_assert_int_ge(
            asprintf(&want,
                     "slowworkd: %1$s:2: unknown key \"bogus\"\n"
                     "slowworkd: %1$s:3: max-threads must be a number, not \"many\"\n"
                     "slowworkd: %1$s:6: queue.batch.colour: colour is not a setting of a queue\n"
                     "slowworkd: %1$s:7: parameter \"max-threads\" must be between 1 and 255\n",
                     conf),
            0);
        ck_assert_str_eq(err, want);
        ck_assert_str_eq(out, "");
        free(want);
        free(out);
        free(err);
}
END_TEST

START_TEST(check_config_names_threads_out_of_order)
{
        char want[PATH_MAX + 128], *out, *err;

        write_conf("max-threads = 3\nmin-threads = 5\n");
        ck_assert_int_eq(check_config(&out, &err, "--config", conf, NULL), 1);
        snprintf(want, sizeof(want),
                 "slowworkd: %s:2: min-threads (5) must not exceed max-threads (3)\n", conf);
        ck_assert_str_eq(err, want);
        free(out);
        free(err);
        /* The setting flags count as at a start: one that puts it right passes. */
        ck_assert_int_eq(check_config(&out, &err, "--config", conf, "--max-threads", "6", NULL),
                         0);
        free(out);
        free(err);
        /* A queue's settings out of order name the queue's last line. */
        write_conf("queue.batch.min-threads = 5\n# a comment\nqueue.batch.max-threads = 2\n");
        ck_assert_int_eq(check_config(&out, &err, "--config", conf, NULL), 1);
        snprintf(want, sizeof(want),
                 "slowworkd: %s:3: queue batch: min-threads (5) must not exceed max-threads (2)\n",
                 conf);
        ck_assert_str_eq(err, want);
        free(out);
        free(err);
}
END_TEST

START_TEST(check_config_fails_a_missing_file)
{
        char want[PATH_MAX + 64], *out, *err;

        ck_assert_int_eq(check_config(&out, &err, "--config", conf, NULL), 1);
        snprintf(want, sizeof(want), "slowworkd: cannot open %s: No such file or directory\n",
                 conf);
        ck_assert_str_eq(err, want);
        ck_assert_str_eq(out, "");
        free(out);
        free(err);
}
END_TEST

static Suite *config_suite(void)
{
        Suite *s = suite_create("config");
        TCase *parser = tcase_create("parser"), *daemon = tcase_create("daemon");
        int nbad = (int)(sizeof(bad_lines) / sizeof(bad_lines[0]));

        tcase_add_test(parser, parse_reads_every_key);
        tcase_add_test(parser, parse_takes_a_path_as_it_is);
        tcase_add_test(parser, parse_leaves_unset_keys_alone);
        tcase_add_test(parser, parse_reads_the_store_and_its_schema);
        tcase_add_test(parser, parse_reads_the_node_and_its_lease);
        tcase_add_loop_test(parser, parse_rejects_a_bad_line_with_its_number, 0, nbad);
        suite_add_tcase(s, parser);

        tcase_add_checked_fixture(daemon, setup, teardown);
        tcase_set_timeout(daemon, 60);
        tcase_add_test(daemon, every_key_reaches_settings_get);
        tcase_add_loop_test(daemon, a_bad_line_stops_the_start_with_its_number, 0, nbad);
        tcase_add_test(daemon, threads_out_of_order_name_the_line);
        tcase_add_test(daemon, flags_win_over_the_file);
        tcase_add_test(daemon, a_bad_store_schema_flag_stops_the_start);
        tcase_add_test(daemon, bad_node_flags_stop_the_start);
        tcase_add_test(daemon, a_job_database_out_of_reach_stops_the_start);
        tcase_add_test(daemon, an_empty_store_flag_keeps_the_jobs_in_sqlite);
        tcase_add_test(daemon, a_sqlite_daemon_never_loads_libpq);
        tcase_add_test(daemon, a_postgresql_store_without_libpq_stops_the_start_naming_it);
        tcase_add_test(daemon, a_missing_config_file_is_an_error);
        tcase_add_test(daemon, an_empty_file_means_the_defaults);
        tcase_add_test(daemon, a_missing_default_file_means_the_defaults);
        tcase_add_test(daemon, sighup_applies_a_change_and_flags_keep_winning);
        tcase_add_test(daemon, sighup_with_a_bad_file_keeps_the_running_config);
        tcase_add_test(daemon, reload_answers_once_the_file_is_applied);
        tcase_add_test(daemon, reload_of_a_bad_file_answers_its_error_and_changes_nothing);
        tcase_add_test(daemon, reloads_at_once_are_each_answered);
        tcase_add_test(daemon, under_journald_lines_do_not_name_the_daemon);
        tcase_add_test(daemon, check_config_passes_a_good_file);
        tcase_add_loop_test(daemon, check_config_fails_a_bad_line_with_its_number, 0, nbad);
        tcase_add_test(daemon, check_config_under_journald_does_not_name_itself);
        tcase_add_test(daemon, check_config_names_every_bad_line);
        tcase_add_test(daemon, check_config_names_threads_out_of_order);
        tcase_add_test(daemon, check_config_fails_a_missing_file);
        suite_add_tcase(s, daemon);
        return s;
}

int main(void)
{
        return run_suite(config_suite());
}
