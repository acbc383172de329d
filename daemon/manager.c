/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobs/claims.h"
#include "jobs/drain.h"
#include "jobs/lifecycle.h"
#include "jobs/queues.h"
#include "jobs/restore.h"
#include "jobs/settings.h"
#include "jobs/shared-settings.h"
#include "jobs/test-clock.h"
#include "jobs/waits.h"
#include "manager.h"
#include "methods/dispatch.h"
#include "methods/metrics.h"
#include "methods/requests.h"
#include "server/activation.h"
#include "server/await.h"
#include "store/db.h"
#include "store/store.h"
#include "util/log.h"
#include "util/mac.h"
#include "util/private-dir.h"

/*
 * --state-dir, else the system instance's /var/lib/slowwork, else $XDG_STATE_HOME/slowwork, else
 * ~/.local/state/slowwork; it and its logs folder made 0700, or refused when they are there but
 * not the daemon's alone (in the system instance, logs are read through the daemon).
 */
static int make_state_dir(struct manager *m, const char *given)
{
        const char *xdg = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
        char *p;
        int r;

        if (given)
                r = (m->state_dir = strdup(given)) ? 0 : -1;
        else if (m->system)
                r = (m->state_dir = strdup(MANAGER_SYSTEM_STATE_DIR)) ? 0 : -1;
        else if (xdg && xdg[0] == '/')
                r = asprintf(&m->state_dir, "%s/slowwork", xdg);
        else if (home && home[0] == '/')
                r = asprintf(&m->state_dir, "%s/.local/state/slowwork", home);
        else {
                log_error("Neither XDG_STATE_HOME nor HOME is set: give --state-dir DIR");
                return -EINVAL;
        }
        if (r < 0 || asprintf(&m->log_dir, "%s/logs", m->state_dir) < 0)
                return -ENOMEM;
        /* mkdir -p, the last two levels private */
        for (p = m->state_dir + 1; (p = strchr(p, '/')); p++) {
                *p = '\0';
                r = mkdir(m->state_dir, 0755) < 0 && errno != EEXIST ? -errno : 0;
                *p = '/';
                if (r < 0)
                        return log_error_errno(r, "Failed to create %s: %m", m->state_dir);
        }
        r = private_dir_make(m->state_dir);
        return r < 0 ? r : private_dir_make(m->log_dir);
}

static void manager_stop(struct manager *m);

static void on_signal(uv_signal_t *handle, int signum)
{
        struct manager *m = handle->data;

        log_info("Received %s, stopping", strsignal(signum));
        manager_stop(m);
}

static void on_sighup(uv_signal_t *handle, int signum)
{
        struct manager *m = handle->data;

        reload(&m->reload);
}

static int on_reload_request(void *data, struct conn *c, json_object *id)
{
        struct manager *m = data;

        return reload_request(&m->reload, c, id);
}

/* The metrics file's text. */
static int on_reexec_request(void *data, struct conn *c, json_object *id, char *err,
                             size_t len)
{
        struct manager *m = data;

        return reexec_begin(&m->reexec, c, id, err, len);
}

static void on_sigusr2(uv_signal_t *handle, int signum)
{
        char err[512];

        (void)signum;
        struct manager *m = handle->data;

        if (reexec_begin(&m->reexec, NULL, NULL, err, sizeof(err)) < 0)
                log_warning("SIGUSR2: no reexec: %s", err);
}

static char *render_metrics(void *data)
{
        struct manager *m = data;

        return metrics_text(&m->daemon, &m->clients, false);
}

/* What systemd's STATUS= tells: every queue's pool. */
static void every_pool_stats(void *data, struct slow_work_stats *ret)
{
        queues_stats(data, NULL, ret);
}

/* A connection goes: the daemon forgets its handles and subscription. */
static void on_conn_close(void *data, struct conn *c)
{
        struct daemon *d = data;

        requests_forget(d, c);
        if (d->relay)
                relay_conn_closed(d->relay, c);
}

/* The state database has more on disk (replies that waited for it go out, and what the node
 * runs is told at its next renewal), or the node's lease was renewed. */
static void on_store_wake(void *data, unsigned what)
{
        struct manager *m = data;
        struct conn *c, *next;

        if ((what & STORE_RENEWED) && m->lease_open)
                lease_renewed(&m->lease);
        if ((what & STORE_CLAIMED) && m->claims_open) {
                restore_adopted(&m->daemon);
                claims_claimed(&m->daemon);
        }
        if (!(what & STORE_COMMITTED))
                return;
        if (m->daemon.claims)
                daemon_report_node(&m->daemon);
        for (c = m->clients.head; c; c = next) {
                next = c->next;
                conn_flush(c);
        }
}

/* Its jobs went to other nodes: the daemon stops (its runs were killed by the fence) and starts
 * again, as a node that has none. */
static void on_lease_lost(void *data)
{
        struct manager *m = data;

        log_error("Another node took this node's jobs: starting again");
        m->restart = true;
        if (m->listener.activated_fd >= 0)
                m->restart_fd = dup(m->listener.activated_fd);
        manager_stop(m);
}

/* Mail from another node: its shared settings changed, or a relayed request's. */
static void on_mail(void *data, const struct db_mail *mail)
{
        struct manager *m = data;

        if (strcmp(mail->kind, SHARED_SETTINGS_MAIL) == 0)
                shared_settings_read(&m->daemon, NULL, NULL);
        else if (strcmp(mail->kind, DRAIN_MAIL) == 0 || strcmp(mail->kind, DRAINED_MAIL) == 0)
                drain_mail(&m->daemon, mail);
        else if (strcmp(mail->kind, CLAIMS_OFFERED_MAIL) == 0 ||
                 strcmp(mail->kind, CLAIMS_TAKEN_MAIL) == 0)
                claims_mail(&m->daemon, mail);
        else if (m->relay_open)
                relay_on_mail(&m->relay, mail);
}

static void close_relay(struct manager *m)
{
        if (m->store)
                store_on_mail(m->store, NULL, NULL);
        if (!m->relay_open)
                return;
        relay_close(&m->relay);
        m->daemon.relay = NULL;
        m->relay_open = false;
}

/* Nothing more is offered or claimed (the daemon stops). */
static void close_claims(struct manager *m)
{
        if (!m->claims_open)
                return;
        claims_close(&m->claims);
        m->daemon.claims = NULL;
        m->daemon.on_queued = NULL;
        m->claims_open = false;
}

static void close_lease(struct manager *m)
{
        if (!m->lease_open)
                return;
        lease_close(&m->lease);
        m->lease_open = false;
}

/* Descriptors for CONN_MAX connections, and for the runs of up to 255 threads (log, pipe, pidfd,
 * eventfd, cgroup files each), the database and the rest. */
#define FDS_WANTED 4096

/* The soft limit is often 1024, below what CONN_MAX connections and the runs need: without
 * descriptors, a connection of root's would be refused whatever room was kept for it. */
static void raise_fd_limit(struct rlimit *ret_before)
{
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                rl = (struct rlimit){RLIM_INFINITY, RLIM_INFINITY};
        *ret_before = rl;
        if (rl.rlim_cur >= FDS_WANTED)
                return;
        rl.rlim_cur = rl.rlim_max < FDS_WANTED ? rl.rlim_max : FDS_WANTED;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < FDS_WANTED)
                log_warning("Only %llu file descriptors (RLIMIT_NOFILE; %d wanted): fewer than %d "
                            "connections may fit",
                            (unsigned long long)rl.rlim_cur, FDS_WANTED, CONN_MAX);
}

/* A password in the configuration file's store is the database's: the file must be readable
 * by its owner alone, root or this daemon's user, as a key file (libpq's .pgpass, sshd). */
static int password_kept_safe(const struct manager_options *o)
{
        const char *path = o->config.path ? o->config.path : CONFIG_FILE_DEFAULT;
        struct stat st;

        /* The file's store is the one in force unless --store was given. */
        if (o->config.store || !config_file_line(&o->file, "store") ||
            db_pg_conninfo_has_password(o->file.store) <= 0) /* < 0: store_open says why */
                return 0;
        if (stat(path, &st) < 0)
                return log_error_errno(-errno, "Cannot check %s: %m", path);
        if ((st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 077)) {
                log_error("%s holds the job database's password (store) but is open to others "
                          "(mode %04o, uid %u): make it readable by its owner alone (chmod 600, "
                          "owner root), or keep the password in a .pgpass file (PGPASSFILE)",
                          path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid);
                return -EPERM;
        }
        return 0;
}

int manager_new(const struct manager_options *o, struct manager **ret)
{
        struct rlimit jobs_nofile;
        struct mac_key *key = NULL;
        struct manager *m;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        raise_fd_limit(&jobs_nofile);
        m->system = o->system;
        m->config = o->config;
        m->lease_renew = o->file.lease_renew;
        m->restart_fd = -1;
        m->test_clock_fd = o->test_clock_fd;
        m->loop = uv_default_loop();
        r = notify_init(&m->notify);
        if (r < 0)
                goto fail;
        m->listener = (struct listener){
            .system = o->system, .socket_gid = o->file.socket_gid, .clients = &m->clients};
        if (o->taken) {
                r = activation_taken(o->taken->socket_fd, &m->listener.path);
                m->listener.activated_fd = o->taken->socket_fd;
                m->listener.owned = o->taken->socket_owned;
                o->taken->socket_fd = -1;
                r = r < 0 ? r : 1;
        } else
                r = activation_socket(&m->listener.activated_fd, &m->listener.path);
        if (r == 0)
                r = listener_resolve_path(o->socket_path, o->system, &m->listener.path);
        if (r < 0)
                goto fail;
        r = make_state_dir(m, o->state_dir);
        if (r < 0)
                goto fail;
        if (o->file.store && ((r = password_kept_safe(o)) < 0 ||
                              (r = mac_key_load(o->file.cluster_key_file, &key)) < 0))
                goto fail;
        r = store_open(&(struct store_config){.dir = m->state_dir,
                                              .conninfo = o->file.store,
                                              .key = key,
                                              .schema = o->file.store_schema,
                                              .node = o->file.node_name,
                                              .lease_renew = o->file.lease_renew,
                                              .lease_time = o->file.lease_time,
                                              .timeout = o->file.settings.store_timeout,
                                              .min_threads = o->file.settings.min_threads,
                                              .max_threads = o->file.settings.max_threads},
                       &m->store);
        key = mac_key_unref(key);
        if (r < 0)
                goto fail;
        m->daemon.shared.plugins.dir = strdup(o->plugin_dir ? o->plugin_dir : PLUGINDIR);
        if (!m->daemon.shared.plugins.dir) {
                r = log_error_errno(-ENOMEM, "Failed to set the plugin folder: %m");
                goto fail;
        }
        r = daemon_init(&m->daemon, &(struct daemon_config){
                                        .loop = m->loop,
                                        .store = m->store,
                                        .settings = &o->file.settings,
                                        .file_queues = o->file.queues,
                                        .state_dir = m->state_dir,
                                        .log_dir = m->log_dir,
                                        .system = o->system,
                                        .uid = geteuid(),
                                        .jobs_nofile = jobs_nofile,
                                        .on_run_event = lifecycle_on_event,
                                    });
        if (r < 0)
                goto fail;
        if (o->taken) {
                m->daemon.contain.taken_up = o->taken->runs;
                o->taken->runs = NULL;
        }
        waits_init(&m->daemon);
        m->clients = (struct clients){
            .loop = m->loop,
            .store = m->store,
            .uid = geteuid(),
            .system = o->system,
            .admin_gid = o->file.admin_gid,
            .settings = &m->daemon.settings,
            .envs = &m->daemon.shared.envs,
            .on_line = dispatch_line,
            .on_close = on_conn_close,
            /* A database of its own on the local disk is not cut off: its replies wait. */
            .on_held = store_shared(m->store) ? await_held : NULL,
            .data = &m->daemon,
        };
        m->notify.loop = m->loop;
        m->notify.stats = every_pool_stats;
        m->notify.stats_data = &m->daemon;
        m->reload = (struct reload){
            .loop = m->loop,
            .config = &m->config,
            .daemon = &m->daemon,
            .clients = &m->clients,
            .listener = &m->listener,
            .notify = &m->notify,
            .stopping = &m->stopping,
        };
        m->reexec = (struct reexec_ctx){
            .loop = m->loop,
            .daemon = &m->daemon,
            .store = m->store,
            .listener = &m->listener,
            .notify = &m->notify,
            .stopping = &m->stopping,
        };
        m->daemon.reload = on_reload_request;
        m->daemon.reexec = on_reexec_request;
        m->daemon.reload_data = m;
        m->daemon.on_event = requests_notify;
        m->daemon.event_data = &m->clients;
        m->daemon.metrics_file.render = render_metrics;
        m->daemon.metrics_file.data = m;
        *ret = m;
        return 0;
fail:
        manager_free(m);
        return r;
}

static void start_signals(struct manager *m)
{
        uv_signal_init(m->loop, &m->sigterm);
        uv_signal_init(m->loop, &m->sigint);
        uv_signal_init(m->loop, &m->sighup);
        uv_signal_init(m->loop, &m->sigusr2);
        m->sigterm.data = m->sigint.data = m->sighup.data = m->sigusr2.data = m;
        uv_signal_start(&m->sigterm, on_signal, SIGTERM);
        uv_signal_start(&m->sigint, on_signal, SIGINT);
        uv_signal_start(&m->sighup, on_sighup, SIGHUP);
        uv_signal_start(&m->sigusr2, on_sigusr2, SIGUSR2);
}

static void close_signals(struct manager *m)
{
        uv_close((uv_handle_t *)&m->sigterm, NULL);
        uv_close((uv_handle_t *)&m->sigint, NULL);
        uv_close((uv_handle_t *)&m->sighup, NULL);
        uv_close((uv_handle_t *)&m->sigusr2, NULL);
}

static void no_work(uv_work_t *work)
{
}

static void no_work_done(uv_work_t *work, int status)
{
        free(work);
}

/*
 * The daemon's signals (SIGHUP, SIGTERM, SIGINT) go to the loop's thread alone: the threads
 * started here (the store's, a shared database's mailbox, libuv's pool, started now by a work that
 * does nothing) inherit a mask that blocks every signal, and the pool's threads block them
 * themselves. A signal sent to the process while the loop's thread blocks signals for a moment
 * (pthread_create, posix_spawn) then waits for it, instead of reaching another thread: under
 * ThreadSanitizer such a SIGHUP was sometimes never handled (test-config, sighup cases, about one
 * in fifteen under a CPU hog: the daemon idle, the signal gone, libuv's handler never run).
 */
static void start_threads_without_signals(struct manager *m, sigset_t *ret_old)
{
        uv_work_t *work = calloc(1, sizeof(*work));
        sigset_t all;

        sigfillset(&all);
        pthread_sigmask(SIG_BLOCK, &all, ret_old);
        if (work && uv_queue_work(m->loop, work, no_work, no_work_done) < 0)
                free(work);
}

static int start(struct manager *m);

int manager_start(struct manager *m)
{
        sigset_t old;
        int r;

        start_threads_without_signals(m, &old);
        r = start(m);
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        return r;
}

static int start(struct manager *m)
{
        int r;

        /*
         * Caught before the socket listens: whoever can connect may send SIGTERM or SIGHUP at
         * once (a test, systemctl), and the default action would kill the daemon without a
         * clean stop. Their callbacks run only once the loop does.
         */
        start_signals(m);
        r = listener_open(&m->listener, m->loop);
        if (r < 0) {
                close_signals(m);
                return r;
        }
        r = settings_load_kept(&m->daemon, &m->config);
        if (r == 0 && store_shared(m->store)) {
                r = claims_init(&m->claims, m->loop, &m->daemon);
                m->claims_open = r == 0;
        }
        /* Read on this thread before the store's own thread uses the connection. */
        if (r == 0)
                r = restore(&m->daemon);
        if (r == 0 && metrics_file_set(&m->daemon.metrics_file, m->daemon.settings.metrics_file,
                                       m->daemon.settings.metrics_interval) < 0)
                r = log_error_errno(-ENOMEM, "Failed to set up the metrics file: %m");
        if (r == 0) {
                /* The first renewal tells what the settings kept made of the threads. */
                if (m->daemon.claims)
                        daemon_report_node(&m->daemon);
                if (store_shared(m->store) &&
                    relay_init(&m->relay, m->loop, &m->clients, m->store) == 0) {
                        m->relay_open = true;
                        m->daemon.relay = &m->relay;
                }
                store_on_mail(m->store, on_mail, m);
                r = store_start(m->store, m->loop, on_store_wake, m);
                if (r < 0)
                        log_error_errno(r, "Failed to start the state database's thread: %m");
        }
        if (r == 0) {
                r = lease_init(&m->lease, m->loop, &m->daemon, m->lease_renew, on_lease_lost, m);
                m->lease_open = r == 0;
                if (r == 0)
                        lease_renewed(&m->lease); /* the first renewal was at store_open() */
        }
        if (r == 0 && m->test_clock_fd > 0) {
                r = test_clock_open(&m->daemon, m->loop, m->test_clock_fd, &m->test_clock);
                m->test_clock_fd = 0;
                if (r < 0)
                        log_error_errno(r, "Failed to listen to the test clock's socket: %m");
        }
        if (r < 0) {
                /* What was restored does not start: it stays on disk for the next start. */
                daemon_stop_starting(&m->daemon);
                listener_close(&m->listener);
                close_signals(m);
                return r;
        }
        return 0;
}

/* Shell jobs are gone kill-grace after SIGTERM; a plugin that does not return never is. */
static void on_stop_overdue(uv_timer_t *timer)
{
        struct manager *m = timer->data;

        log_error("Jobs still running %g s after being told to stop (a plugin that does not "
                  "return?): exiting without them",
                  m->daemon.settings.kill_grace + 1);
        _exit(EXIT_FAILURE);
}

static void on_stop_timeout(uv_timer_t *timer)
{
        struct manager *m = timer->data;

        log_warning("Stop timeout: interrupting the jobs still running");
        daemon_interrupt_all(&m->daemon);
        uv_timer_start(&m->stop_timer, on_stop_overdue,
                       (uint64_t)((m->daemon.settings.kill_grace + 1) * 1000.0), 0);
}

/* Queued jobs do not start any more; running ones get stop-timeout to finish. Freeing the pool
 * waits for them, off the loop. */
static void drain_work(uv_work_t *work)
{
        struct manager *m = work->data;

        daemon_free_pool(&m->daemon);
}

static void drain_done(uv_work_t *work, int status)
{
        struct manager *m = work->data;

        daemon_close_events(&m->daemon);
        uv_close((uv_handle_t *)&m->stop_timer, NULL);
        close_lease(m);
        store_stop(m->store);
}

/* SIGTERM, SIGINT: no more clients, running jobs get stop-timeout, queued ones stay on disk. */
static void manager_stop(struct manager *m)
{
        if (m->stopping)
                return;
        reexec_give_up(&m->reexec, "the daemon is stopping");
        m->stopping = true;
        daemon_stop_starting(&m->daemon);
        close_claims(m);
        notify_stopping(&m->notify);
        listener_close(&m->listener);
        conn_close_all(&m->clients);
        close_relay(m);
        close_signals(m);
        test_clock_close(m->test_clock);
        m->test_clock = NULL;
        uv_timer_init(m->loop, &m->stop_timer);
        m->stop_timer.data = m;
        uv_timer_start(&m->stop_timer, on_stop_timeout,
                       (uint64_t)(m->daemon.settings.stop_timeout * 1000.0), 0);
        m->drain.data = m;
        uv_queue_work(m->loop, &m->drain, drain_work, drain_done);
}

int manager_run(struct manager *m)
{
        return uv_run(m->loop, UV_RUN_DEFAULT);
}

struct manager *manager_free(struct manager *m)
{
        if (!m)
                return NULL;
        daemon_free_pool(&m->daemon);
        daemon_close_events(&m->daemon);
        drain_close_all(&m->daemon);
        close_claims(m);
        close_lease(m);
        close_relay(m);
        test_clock_close(m->test_clock);
        m->test_clock = NULL;
        if (m->test_clock_fd > 0)
                close(m->test_clock_fd);
        store_stop(m->store);
        notify_close(&m->notify);
        if (m->loop) {
                uv_run(m->loop, UV_RUN_NOWAIT); /* close callbacks still due */
                uv_loop_close(m->loop);
        }
        daemon_free(&m->daemon);
        store_free(m->store);
        free(m->listener.path);
        free(m->state_dir);
        free(m->log_dir);
        free(m);
        return NULL;
}
