/* SPDX-License-Identifier: MIT */
/*
 * The daemon's start and stop order: the loop, the state folder and database, the daemon's
 * shared state (the registry of jobs, the pools), the clients and the listening socket, signals,
 * and systemd's notify.
 */
#ifndef SLOWWORKD_MANAGER_H
#define SLOWWORKD_MANAGER_H

#include <stdbool.h>
#include <sys/types.h>
#include <uv.h>

#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/lease.h"
#include "reexec.h"
#include "reload.h"
#include "server/conn.h"
#include "server/relay.h"
#include "server/listener.h"
#include "server/notify.h"
#include "util/config-load.h"

#define MANAGER_SYSTEM_STATE_DIR "/var/lib/slowwork"

struct manager {
        uv_loop_t *loop;
        bool system; /* the system instance: every user may connect, jobs run as their owners */
        struct config config; /* the file and the flags, for reloads */
        char *state_dir, *log_dir;
        struct store *store;
        struct daemon daemon;
        struct clients clients;
        struct listener listener;
        struct notify notify;
        struct reload reload;
        struct reexec_ctx reexec;
        struct lease lease;
        bool lease_open;
        struct relay relay; /* requests about other nodes' jobs (a shared database) */
        bool relay_open;
        struct claims claims; /* jobs offered to and claimed from other nodes (the same) */
        bool claims_open;
        double lease_renew;
        /* Another node took this one's place: main() starts the daemon afresh once it stopped
         * (the activated socket, when there is one, kept in this descriptor). */
        bool restart;
        int restart_fd;
        int test_clock_fd;             /* manager_options's, until manager_start takes it */
        struct test_clock *test_clock; /* the tests' hook on the clocks, NULL: none */

        uv_signal_t sigterm, sigint, sighup, sigusr2;
        uv_timer_t stop_timer;
        uv_work_t drain;
        bool stopping;
};

/* What main() read from the command line and the configuration. */
struct manager_options {
        const char *socket_path; /* NULL: the instance's default */
        const char *state_dir;   /* NULL: the instance's default */
        const char *plugin_dir;  /* NULL: PLUGINDIR */
        bool system;
        struct config config;
        struct config_file file;
        int test_clock_fd; /* SLOWWORKD_TEST_CLOCK_FD's socket (jobs/test-clock.h), 0: none */
        struct reexec_taken *taken; /* what the last program handed over (reexec), NULL: none */
};

int manager_new(const struct manager_options *o, struct manager **ret);
/* Listens, restores the jobs and starts the state database: 0, or -errno (logged). */
int manager_start(struct manager *m);
int manager_run(struct manager *m);
struct manager *manager_free(struct manager *m);

#endif
