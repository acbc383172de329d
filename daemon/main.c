/* SPDX-License-Identifier: MIT */
/* slowworkd: parse the command line and the configuration, start the manager, run the loop. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "manager.h"
#include "run/run.h"
#include "server/listener.h"
#include "store/db.h"
#include "util/config-load.h"
#include "util/env-fd.h"
#include "util/log.h"
#include "util/mac.h"

static void usage(FILE *f)
{
        fputs("Usage: slowworkd [OPTION]...\n"
              "Run the slowwork job service in the foreground.\n\n"
              "  --socket PATH             listen on PATH (default:\n"
              "                            $XDG_RUNTIME_DIR/slowwork/slowworkd.sock)\n"
              "  --state-dir DIR           run logs under DIR/logs (default:\n"
              "                            $XDG_STATE_HOME/slowwork)\n"
              "  --plugin-dir DIR          where plugin names resolve (default:\n"
              "                            " PLUGINDIR ")\n"
              "  --config FILE             read the settings from FILE (default:\n"
              "                            " CONFIG_FILE_DEFAULT ", if it exists)\n"
              "  --store CONNINFO          keep the jobs in PostgreSQL: a libpq connection\n"
              "                            string (postgresql://... or key=value ...);\n"
              "                            \"\": SQLite in the state folder (default)\n"
              "  --store-schema NAME       PostgreSQL's schema of the tables (slowwork)\n"
              "  --node-name NAME          this daemon's name among the nodes that share a\n"
              "                            PostgreSQL schema (default: the host name)\n"
              "  --lease-renew SECONDS     how often a node renews its lease (2)\n"
              "  --lease-time SECONDS      how long a lease holds; then other nodes take the\n"
              "                            node's jobs (10)\n"
              "  --cluster-key-file FILE   the key the nodes sign their rows with (needed\n"
              "                            with --store; root's alone, mode 0600 or 0400)\n"
              "  --make-cluster-key FILE   write a new cluster key to FILE (which must not\n"
              "                            exist) and exit\n"
              "  --check-config            read the configuration file and the setting flags\n"
              "                            as a start would, print each problem, and exit\n"
              "                            (0: good, 1: not); nothing else is touched\n"
              "  --system                  the system instance: every user may connect, jobs\n"
              "                            run as their submitters (socket\n"
              "                            " LISTENER_SYSTEM_DIR "/slowworkd.sock, state\n"
              "                            " MANAGER_SYSTEM_STATE_DIR ")\n"
              "  --min-threads N           threads kept (1..255, default 2)\n"
              "  --max-threads N           threads at most (1..255, default 4)\n"
              "  --vslow-percentage N      share of threads for very slow jobs (1..99, 50)\n"
              "  --idle-timeout SECONDS    idle time before a surplus thread exits (5)\n"
              "  --history-limit N         finished runs remembered (10000)\n"
              "  --log-limit BYTES         log bytes kept per run (16777216)\n"
              "  --kill-grace SECONDS      SIGTERM to SIGKILL (5)\n"
              "  --stop-timeout SECONDS    wait for running jobs at shutdown (30)\n"
              "  --max-connections-per-user N\n"
              "                            connections of one user who is not an admin\n"
              "                            (1..1024, 64)\n"
              "  --max-log-bytes-per-user BYTES\n"
              "                            run log bytes kept per user (1073741824)\n"
              "  --min-free-space PERCENT  free space of the state folder's file system below\n"
              "                            which users' new runs wait (0..99, 5)\n"
              "  --max-queued-per-user N   jobs one user may have queued (0: no limit)\n"
              "  --max-running-per-user N  runs of one user at once (0: no limit)\n"
              "  --fair-share yes|no       a freed thread takes the next job of the user with\n"
              "                            the fewest runs in its queue (--system: yes; no)\n"
              "  --max-jobs-per-user N     live jobs of one user who is not an admin, in any\n"
              "                            state (0: no limit; --system: 10000)\n"
              "  --max-job-bytes-per-user BYTES\n"
              "                            bytes the live jobs of one user who is not an admin\n"
              "                            keep (0: no limit; --system: 268435456)\n"
              "  --default-memory-max BYTES, --default-tasks-max N, --default-cpu-weight N,\n"
              "  --default-nice N, --default-open-files N, --default-cpu-time SECONDS\n"
              "                            limits of a job that sets none (0: no limit)\n"
              "  --max-job-memory BYTES, --max-job-tasks N, --max-job-open-files N,\n"
              "  --max-job-cpu-time SECONDS\n"
              "                            the most a user's job may ask, and what one that\n"
              "                            asks none gets; admins' are not bound (0: none)\n"
              "  --metrics-file PATH       write the metrics there (Prometheus text) every\n"
              "  --metrics-interval SECONDS\n"
              "                            seconds (1..86400, 15); \"\": no file (default)\n"
              "  --on-end COMMAND          a shell command run after each run of a job that\n"
              "                            has no on_end of its own (\"\": none, the default)\n"
              "  --help                    show this and exit\n"
              "  --version                 show the version and exit\n",
              f);
}

/* A node whose place another took starts afresh: the same program and arguments, in the same
 * process, with the socket systemd passed (fd) passed on as systemd would. Returns on failure. */
static void start_again(char **argv, int fd)
{
        char pid[32];

        if (fd >= 0) {
                if (fd != SD_LISTEN_FDS_START) {
                        dup2(fd, SD_LISTEN_FDS_START);
                        close(fd);
                }
                snprintf(pid, sizeof(pid), "%ld", (long)getpid());
                setenv("LISTEN_FDS", "1", 1);
                setenv("LISTEN_PID", pid, 1);
        }
        execv("/proc/self/exe", argv);
        fprintf(stderr, "slowworkd: cannot start again: %s\n", strerror(errno));
}

/* The program's path now (where an upgrade puts the next one) and its arguments, for a reexec. */
static void set_program(char **argv)
{
        char path[PATH_MAX];
        ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

        if (n <= 0)
                return;
        path[n] = '\0';
        reexec_set_program(path, argv);
}

/* The arguments as given, for a start again (kept while the process lives); then a password in
 * --store's value is blanked in the process's own (what ps and /proc/PID/cmdline show), as
 * database clients do. */
static char **kept;

static void keep_args(int argc, char **argv)
{
        int i = 0;

        kept = calloc((size_t)argc + 1, sizeof(*kept));
        while (kept && i < argc && (kept[i] = strdup(argv[i])))
                i++;
        if (i < argc) {
                fprintf(stderr, "slowworkd: out of memory\n");
                exit(1);
        }
}

/* Without libpq, the value cannot be read: blanked as well (the start then fails, saying why). */
static void blank(char *secret)
{
        if (db_pg_conninfo_has_password(secret) != 0)
                memset(secret, 'x', strlen(secret));
}

/* SLOWWORKD_TEST_CLOCK_FD, the tests' hook on the clocks (jobs/test-clock.h): its socket, kept
 * from the jobs, the programs the daemon starts and a start again; 0: none, -1: not a socket. */
static int test_clock_fd(void)
{
        int fd = env_fd("SLOWWORKD_TEST_CLOCK_FD");
        struct stat st;

        if (fd > 0 && (fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode)))
                return -1;
        return fd < 0 ? -1 : fd;
}

/* As the daemon's own lines: named, but where the journal names them already (ExecReload=). */
static void tell_problem(const char *problem)
{
        fprintf(stderr, "%s%s\n", log_to_journal() ? "" : "slowworkd: ", problem);
}

/* --check-config: the file and the flags as a start (or a reload) would read them, and nothing
 * else: no socket, no state folder, no store. Every bad line is told, as sshd -t and nginx -t
 * do, so that one run shows what to fix. */
static int check_config(const struct config *c)
{
        const char *path = c->path ? c->path : CONFIG_FILE_DEFAULT;

        if (config_check(c, tell_problem) < 0)
                return 1;
        if (!c->path && access(path, F_OK) < 0)
                printf("%s: OK (no such file: the defaults)\n", path);
        else
                printf("%s: OK\n", path);
        return 0;
}

int main(int argc, char **argv)
{
        enum {
                OPT_SOCKET = 256,
                OPT_STATE_DIR,
                OPT_PLUGIN_DIR,
                OPT_CONFIG,
                OPT_STORE,
                OPT_STORE_SCHEMA,
                OPT_NODE_NAME,
                OPT_LEASE_RENEW,
                OPT_LEASE_TIME,
                OPT_CLUSTER_KEY_FILE,
                OPT_MAKE_CLUSTER_KEY,
                OPT_CHECK_CONFIG,
                OPT_SYSTEM,
                OPT_SETTING,
                OPT_HELP,
                OPT_VERSION
        };
        static const struct option options[] = {
            {"socket", required_argument, NULL, OPT_SOCKET},
            {"state-dir", required_argument, NULL, OPT_STATE_DIR},
            {"plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR},
            {"config", required_argument, NULL, OPT_CONFIG},
            {"store", required_argument, NULL, OPT_STORE},
            {"store-schema", required_argument, NULL, OPT_STORE_SCHEMA},
            {"node-name", required_argument, NULL, OPT_NODE_NAME},
            {"lease-renew", required_argument, NULL, OPT_LEASE_RENEW},
            {"lease-time", required_argument, NULL, OPT_LEASE_TIME},
            {"cluster-key-file", required_argument, NULL, OPT_CLUSTER_KEY_FILE},
            {"make-cluster-key", required_argument, NULL, OPT_MAKE_CLUSTER_KEY},
            {"check-config", no_argument, NULL, OPT_CHECK_CONFIG},
            {"system", no_argument, NULL, OPT_SYSTEM},
            {"min-threads", required_argument, NULL, OPT_SETTING},
            {"max-threads", required_argument, NULL, OPT_SETTING},
            {"vslow-percentage", required_argument, NULL, OPT_SETTING},
            {"idle-timeout", required_argument, NULL, OPT_SETTING},
            {"history-limit", required_argument, NULL, OPT_SETTING},
            {"log-limit", required_argument, NULL, OPT_SETTING},
            {"kill-grace", required_argument, NULL, OPT_SETTING},
            {"stop-timeout", required_argument, NULL, OPT_SETTING},
            {"max-connections-per-user", required_argument, NULL, OPT_SETTING},
            {"max-log-bytes-per-user", required_argument, NULL, OPT_SETTING},
            {"min-free-space", required_argument, NULL, OPT_SETTING},
            {"max-queued-per-user", required_argument, NULL, OPT_SETTING},
            {"max-running-per-user", required_argument, NULL, OPT_SETTING},
            {"fair-share", required_argument, NULL, OPT_SETTING},
            {"max-jobs-per-user", required_argument, NULL, OPT_SETTING},
            {"max-job-bytes-per-user", required_argument, NULL, OPT_SETTING},
            {"default-memory-max", required_argument, NULL, OPT_SETTING},
            {"default-tasks-max", required_argument, NULL, OPT_SETTING},
            {"default-cpu-weight", required_argument, NULL, OPT_SETTING},
            {"default-nice", required_argument, NULL, OPT_SETTING},
            {"default-open-files", required_argument, NULL, OPT_SETTING},
            {"default-cpu-time", required_argument, NULL, OPT_SETTING},
            {"max-job-memory", required_argument, NULL, OPT_SETTING},
            {"max-job-tasks", required_argument, NULL, OPT_SETTING},
            {"max-job-open-files", required_argument, NULL, OPT_SETTING},
            {"max-job-cpu-time", required_argument, NULL, OPT_SETTING},
            {"metrics-file", required_argument, NULL, OPT_SETTING},
            {"metrics-interval", required_argument, NULL, OPT_SETTING},
            {"on-end", required_argument, NULL, OPT_SETTING},
            {"node-queues", required_argument, NULL, OPT_SETTING},
            {"store-timeout", required_argument, NULL, OPT_SETTING},
            {"help", no_argument, NULL, OPT_HELP},
            {"version", no_argument, NULL, OPT_VERSION},
            {NULL, 0, NULL, 0},
        };
        struct manager_options o = {0};
        struct reexec_taken taken;
        struct manager *m = NULL;
        char err[512];
        int c, index, r, restart_fd;
        bool restart, check = false;

        if (argc > 1 && strcmp(argv[1], SUPERVISE_FLAG) == 0)
                supervise_main(argc, argv);
        keep_args(argc, argv);
        tzset(); /* cron schedules are in local time, as TZ says */
        while ((c = getopt_long(argc, argv, "", options, &index)) != -1) {
                switch (c) {
                case OPT_SOCKET:
                        o.socket_path = optarg;
                        break;
                case OPT_STATE_DIR:
                        o.state_dir = optarg;
                        break;
                case OPT_PLUGIN_DIR:
                        o.plugin_dir = optarg;
                        break;
                case OPT_CONFIG:
                        o.config.path = optarg;
                        break;
                case OPT_STORE:
                        o.config.store = kept[optind - 1] + (optarg - argv[optind - 1]);
                        blank(optarg);
                        break;
                case OPT_STORE_SCHEMA:
                        if (config_check_schema(optarg, err, sizeof(err)) < 0) {
                                fprintf(stderr, "slowworkd: --store-schema: %s\n", err);
                                return 2;
                        }
                        o.config.store_schema = optarg;
                        break;
                case OPT_NODE_NAME:
                        if (config_check_node_name(optarg, err, sizeof(err)) < 0) {
                                fprintf(stderr, "slowworkd: --node-name: %s\n", err);
                                return 2;
                        }
                        o.config.node_name = optarg;
                        break;
                case OPT_LEASE_RENEW:
                case OPT_LEASE_TIME:
                        if (config_parse_lease(options[index].name, optarg,
                                               c == OPT_LEASE_RENEW ? &o.config.lease_renew
                                                                    : &o.config.lease_time,
                                               err, sizeof(err)) < 0) {
                                fprintf(stderr, "slowworkd: --%s: %s\n", options[index].name, err);
                                return 2;
                        }
                        break;
                case OPT_CLUSTER_KEY_FILE:
                        o.config.cluster_key_file = optarg;
                        break;
                case OPT_MAKE_CLUSTER_KEY:
                        return mac_key_make(optarg) < 0 ? 1 : 0;
                case OPT_CHECK_CONFIG:
                        check = true;
                        break;
                case OPT_SYSTEM:
                        o.system = o.config.system = true;
                        break;
                case OPT_SETTING:
                        if (config_add_flag(&o.config, options[index].name, optarg, err,
                                            sizeof(err)) < 0) {
                                fprintf(stderr, "slowworkd: --%s: %s\n", options[index].name, err);
                                return 2;
                        }
                        break;
                case OPT_HELP:
                        usage(stdout);
                        return 0;
                case OPT_VERSION:
                        printf("slowworkd %s (protocol %d)\n", PACKAGE_VERSION, SW_PROTO_VERSION);
                        return 0;
                default:
                        usage(stderr);
                        return 2;
                }
        }
        if (optind < argc) {
                fprintf(stderr, "slowworkd: unexpected argument \"%s\"\n", argv[optind]);
                return 2;
        }
        if (check)
                return check_config(&o.config);
        o.test_clock_fd = test_clock_fd();
        if (o.test_clock_fd < 0) {
                fprintf(stderr, "slowworkd: SLOWWORKD_TEST_CLOCK_FD names no open socket\n");
                return 2;
        }
        if (config_load(&o.config, &o.file, err, sizeof(err)) < 0) {
                fprintf(stderr, "slowworkd: %s\n", err);
                return 2;
        }

        /* Buffers of 128 KiB and more (requests read ahead, long replies) get pages of their
         * own that go back when freed: glibc would otherwise raise the threshold after the first
         * large free and keep what clients made the daemon hold. */
        mallopt(M_MMAP_THRESHOLD, 128 * 1024);
        /* A client that goes away must not take the daemon with it. */
        signal(SIGPIPE, SIG_IGN);
        /* A file-size limit reached (like a full disk) is an error to handle, not the end. */
        signal(SIGXFSZ, SIG_IGN);

        set_program(kept);
        r = reexec_take(&taken);
        if (r > 0)
                o.taken = &taken;
        if (r >= 0)
                r = manager_new(&o, &m);
        if (r == 0)
                r = manager_start(m);
        reexec_answer(&taken, r);
        run_handover_free(taken.runs);
        if (r == 0) {
                notify_ready(&m->notify);
                r = manager_run(m);
        }
        restart = m && m->restart;
        restart_fd = m ? m->restart_fd : -1;
        manager_free(m);
        config_file_clear(&o.file);
        if (restart)
                start_again(kept, restart_fd);
        return r < 0 || restart ? 1 : 0;
}
