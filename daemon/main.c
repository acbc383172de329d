/* SPDX-License-Identifier: MIT */
/* slowworkd: parse the command line, start the manager, run the loop. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "credentials.h"
#include "log.h"
#include "manager.h"

static void usage(FILE *f)
{
        fputs("Usage: slowworkd [OPTION]...\n"
              "Run the slowwork job service in the foreground.\n\n"
              "  --socket PATH             listen on PATH (default:\n"
              "                            $XDG_RUNTIME_DIR/slowwork/slowworkd.sock)\n"
              "  --state-dir DIR           run logs under DIR/logs (default:\n"
              "                            $XDG_STATE_HOME/slowwork)\n"
              "  --system                  the system instance: every user may connect, jobs\n"
              "                            run as their submitters (socket\n"
              "                            " MANAGER_SYSTEM_SOCKET_DIR "/slowworkd.sock, state\n"
              "                            " MANAGER_SYSTEM_STATE_DIR ")\n"
              "  --admin-group GROUP       members of GROUP are admins\n"
              "  --min-threads N           threads kept (1..255, default 2)\n"
              "  --max-threads N           threads at most (1..255, default 4)\n"
              "  --vslow-percentage N      share of threads for very slow jobs (1..99, 50)\n"
              "  --idle-timeout SECONDS    idle time before a surplus thread exits (5)\n"
              "  --history-limit N         finished runs remembered (10000)\n"
              "  --log-limit BYTES         log bytes kept per run (16777216)\n"
              "  --kill-grace SECONDS      SIGTERM to SIGKILL (5)\n"
              "  --stop-timeout SECONDS    wait for running jobs at shutdown (30)\n"
              "  --help                    show this and exit\n"
              "  --version                 show the version and exit\n",
              f);
}

/* A setting flag goes through the same parameter table as settings.set. */
static int set_from_flag(struct sw_settings *s, const char *name, const char *value)
{
        json_object *obj = json_object_new_object(), *v = json_tokener_parse(value);
        char err[256];
        int r;

        if (!v) {
                fprintf(stderr, "slowworkd: --%s: \"%s\" is not a number\n", name, value);
                json_object_put(obj);
                return -1;
        }
        json_object_object_add(obj, name, v);
        r = sw_params_parse(obj, sw_settings_params, s, err, sizeof(err));
        json_object_put(obj);
        if (r) {
                fprintf(stderr, "slowworkd: --%s: %s\n", name, err);
                return -1;
        }
        return 0;
}

int main(int argc, char **argv)
{
        enum {
                OPT_SOCKET = 256,
                OPT_STATE_DIR,
                OPT_SYSTEM,
                OPT_ADMIN_GROUP,
                OPT_SETTING,
                OPT_HELP,
                OPT_VERSION
        };
        static const struct option options[] = {
            {"socket", required_argument, NULL, OPT_SOCKET},
            {"state-dir", required_argument, NULL, OPT_STATE_DIR},
            {"system", no_argument, NULL, OPT_SYSTEM},
            {"admin-group", required_argument, NULL, OPT_ADMIN_GROUP},
            {"min-threads", required_argument, NULL, OPT_SETTING},
            {"max-threads", required_argument, NULL, OPT_SETTING},
            {"vslow-percentage", required_argument, NULL, OPT_SETTING},
            {"idle-timeout", required_argument, NULL, OPT_SETTING},
            {"history-limit", required_argument, NULL, OPT_SETTING},
            {"log-limit", required_argument, NULL, OPT_SETTING},
            {"kill-grace", required_argument, NULL, OPT_SETTING},
            {"stop-timeout", required_argument, NULL, OPT_SETTING},
            {"help", no_argument, NULL, OPT_HELP},
            {"version", no_argument, NULL, OPT_VERSION},
            {NULL, 0, NULL, 0},
        };
        struct sw_settings settings;
        const char *socket_path = NULL, *state_dir = NULL;
        struct manager *m = NULL;
        gid_t admin_gid = (gid_t)-1;
        bool system = false;
        int c, index, r;

        manager_default_settings(&settings);
        while ((c = getopt_long(argc, argv, "", options, &index)) != -1) {
                switch (c) {
                case OPT_SOCKET:
                        socket_path = optarg;
                        break;
                case OPT_STATE_DIR:
                        state_dir = optarg;
                        break;
                case OPT_SYSTEM:
                        system = true;
                        break;
                case OPT_ADMIN_GROUP:
                        r = credentials_group_by_name(optarg, &admin_gid);
                        if (r < 0) {
                                fprintf(stderr, "slowworkd: --admin-group: %s: %s\n", optarg,
                                        r == -ENOENT ? "no such group" : strerror(-r));
                                return 2;
                        }
                        break;
                case OPT_SETTING:
                        if (set_from_flag(&settings, options[index].name, optarg) < 0)
                                return 2;
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
        if (manager_settings_validate(&settings) < 0) {
                fprintf(stderr, "slowworkd: --min-threads must not exceed --max-threads\n");
                return 2;
        }

        /* A client that goes away must not take the daemon with it. */
        signal(SIGPIPE, SIG_IGN);

        r = manager_new(&settings, socket_path, state_dir, system, &m);
        if (r == 0) {
                m->admin_gid = admin_gid;
                r = manager_start(m);
        }
        if (r == 0)
                r = manager_run(m);
        manager_free(m);
        return r < 0 ? 1 : 0;
}
