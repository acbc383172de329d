/* SPDX-License-Identifier: MIT */
/* The daemon's state: the loop, the pool, the settings, the listener and the clients. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conn.h"
#include "log.h"
#include "manager.h"
#include "store.h"

void manager_default_settings(struct sw_settings *s)
{
        *s = (struct sw_settings){
            .min_threads = 2,
            .max_threads = 4,
            .vslow_percentage = 50,
            .idle_timeout = 5.0,
            .history_limit = 10000,
            .log_limit = 16 * 1024 * 1024,
            .kill_grace = 5.0,
            .stop_timeout = 30.0,
        };
}

static struct slow_work_settings pool_settings(const struct sw_settings *s)
{
        double ms = s->idle_timeout * 1000.0;

        return (struct slow_work_settings){
            .min_threads = (unsigned)s->min_threads,
            .max_threads = (unsigned)s->max_threads,
            .vslow_percentage = (unsigned)s->vslow_percentage,
            .idle_timeout_ms = ms < 1.0 ? 1u : (unsigned)ms,
        };
}

int manager_settings_validate(const struct sw_settings *s)
{
        struct slow_work_settings ps = pool_settings(s);

        return slow_work_settings_validate(&ps);
}

static void publish_run_settings(struct manager *m)
{
        __atomic_store_n(&m->run_log_limit, m->settings.log_limit, __ATOMIC_RELAXED);
        __atomic_store(&m->run_kill_grace, &m->settings.kill_grace, __ATOMIC_RELAXED);
}

int manager_apply_settings(struct manager *m, const struct sw_settings *s)
{
        struct slow_work_settings ps = pool_settings(s);
        int r = slow_work_pool_configure(m->pool, &ps);

        if (r < 0)
                return r;
        m->settings = *s;
        m->settings.runtime = false;
        publish_run_settings(m);
        return 0;
}

/*
 * --state-dir, else the system instance's /var/lib/slowwork, else $XDG_STATE_HOME/slowwork, else
 * ~/.local/state/slowwork; made 0700 (in the system instance, logs are read through the daemon).
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
        if (mkdir(m->state_dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create %s: %m", m->state_dir);
        if (mkdir(m->log_dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create %s: %m", m->log_dir);
        return 0;
}

static void on_signal(uv_signal_t *handle, int signum)
{
        struct manager *m = handle->data;

        log_info("Received %s, stopping", strsignal(signum));
        manager_stop(m);
}

static void on_sighup(uv_signal_t *handle, int signum)
{
        config_reload(handle->data);
}

int manager_new(const struct sw_settings *settings, const char *socket_path, const char *state_dir,
                bool system, struct manager **ret)
{
        struct slow_work_settings ps = pool_settings(settings);
        struct manager *m;
        int r;

        m = calloc(1, sizeof(*m));
        if (!m)
                return -ENOMEM;
        m->inflight.fd = -1;
        m->settings = *settings;
        publish_run_settings(m);
        m->uid = geteuid();
        m->system = system;
        m->admin_gid = m->socket_gid = (gid_t)-1;
        r = notify_init(&m->notify);
        if (r < 0)
                goto fail;
        m->loop = uv_default_loop();
        r = activation_socket(&m->activated_fd, &m->socket_path);
        if (r == 0)
                r = listener_resolve_path(socket_path, system, &m->socket_path);
        if (r < 0)
                goto fail;
        r = make_state_dir(m, state_dir);
        if (r < 0)
                goto fail;
        r = store_open(m->state_dir, &m->store);
        if (r == 0)
                r = inflight_open(&m->inflight, m->state_dir, &m->crashed, &m->ncrashed);
        if (r < 0)
                goto fail;
        r = slow_work_pool_new(&ps, &m->pool);
        if (r < 0) {
                log_error_errno(r, "Failed to start the thread pool: %m");
                goto fail;
        }
        *ret = m;
        return 0;
fail:
        manager_free(m);
        return r;
}

int manager_set_plugin_dir(struct manager *m, const char *dir)
{
        char *copy = strdup(dir ? dir : PLUGINDIR);

        if (!copy)
                return log_error_errno(-ENOMEM, "Failed to set the plugin folder: %m");
        free(m->plugins.dir);
        m->plugins.dir = copy;
        return 0;
}

/* The state database has more on disk: replies that waited for it go out. */
static void on_commit(void *data)
{
        struct manager *m = data;
        struct conn *c, *next;

        for (c = m->conns; c; c = next) {
                next = c->next;
                conn_flush(c);
        }
}

void manager_persist_settings(struct manager *m, const struct sw_settings *old)
{
        json_object *before = sw_settings_to_json(old), *after = sw_settings_to_json(&m->settings);

        if (!m->persisted)
                m->persisted = json_object_new_object();
        json_object_object_foreach(after, name, value)
        {
                if (json_object_equal(value, json_object_object_get(before, name)))
                        continue;
                store_put_setting(m->store, name, json_object_get_double(value));
                json_object_object_add(m->persisted, name, json_object_get(value));
        }
        json_object_put(before);
        json_object_put(after);
}

static bool given_by_flag(const struct manager *m, const char *name)
{
        for (unsigned i = 0; i < m->config.nflags; i++)
                if (strcmp(m->config.flags[i].name, name) == 0)
                        return true;
        return false;
}

void manager_overlay_persisted(struct manager *m, struct sw_settings *s)
{
        struct sw_settings next = *s;
        json_object *overlay;
        char err[256] = "";

        if (!m->persisted)
                return;
        overlay = json_object_new_object();
        json_object_object_foreach(m->persisted, name, value)
        {
                if (!given_by_flag(m, name))
                        json_object_object_add(overlay, name, json_object_get(value));
        }
        /* The same table as settings.set: values from an older daemon are checked again. */
        if (sw_params_parse(overlay, sw_settings_params, &next, err, sizeof(err)) != 0 ||
            manager_settings_validate(&next) < 0)
                log_warning("Ignoring the settings kept in the state database: %s",
                            err[0] ? err : "min-threads would exceed max-threads");
        else
                *s = next;
        json_object_put(overlay);
}

static void load_setting(void *data, const char *name, double value)
{
        struct manager *m = data;
        json_object *v = value == (double)(int64_t)value ? json_object_new_int64((int64_t)value)
                                                         : json_object_new_double(value);

        json_object_object_add(m->persisted, name, v);
}

/* The settings a settings.set kept, over the file's, unless a flag says otherwise. */
static int restore_settings(struct manager *m)
{
        struct sw_settings s = m->settings;
        int r;

        m->persisted = json_object_new_object();
        r = store_load_settings(m->store, load_setting, m);
        if (r < 0 || json_object_object_length(m->persisted) == 0)
                return r;
        manager_overlay_persisted(m, &s);
        return manager_apply_settings(m, &s);
}

static void start_signals(struct manager *m)
{
        uv_signal_init(m->loop, &m->sigterm);
        uv_signal_init(m->loop, &m->sigint);
        uv_signal_init(m->loop, &m->sighup);
        m->sigterm.data = m->sigint.data = m->sighup.data = m;
        uv_signal_start(&m->sigterm, on_signal, SIGTERM);
        uv_signal_start(&m->sigint, on_signal, SIGINT);
        uv_signal_start(&m->sighup, on_sighup, SIGHUP);
}

static void close_signals(struct manager *m)
{
        uv_close((uv_handle_t *)&m->sigterm, NULL);
        uv_close((uv_handle_t *)&m->sigint, NULL);
        uv_close((uv_handle_t *)&m->sighup, NULL);
}

int manager_start(struct manager *m)
{
        int r;

        /*
         * Caught before the socket listens: whoever can connect may send SIGTERM or SIGHUP at
         * once (a test, systemctl), and the default action would kill the daemon without a
         * clean stop. Their callbacks run only once the loop does.
         */
        start_signals(m);
        r = listener_open(m);
        if (r < 0) {
                close_signals(m);
                return r;
        }
        r = events_init(m);
        if (r == 0)
                r = restore_settings(m);
        /* Read on this thread before the store's own thread uses the connection. */
        if (r == 0)
                r = jobs_restore(m);
        if (r == 0) {
                r = store_start(m->store, m->loop, on_commit, m);
                if (r < 0)
                        log_error_errno(r, "Failed to start the state database's thread: %m");
        }
        if (r < 0) {
                /* What was restored does not start: it stays on disk for the next start. */
                __atomic_store_n(&m->stopping, true, __ATOMIC_RELEASE);
                listener_close(m);
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
                  m->settings.kill_grace + 1);
        _exit(EXIT_FAILURE);
}

static void on_stop_timeout(uv_timer_t *timer)
{
        struct manager *m = timer->data;

        log_info("Stop timeout: interrupting the jobs still running");
        __atomic_store_n(&m->interrupting, true, __ATOMIC_RELEASE);
        jobs_interrupt_all(m);
        uv_timer_start(&m->stop_timer, on_stop_overdue,
                       (uint64_t)((m->settings.kill_grace + 1) * 1000.0), 0);
}

/* Queued jobs do not start any more (their runs are recorded interrupted); running ones get
 * stop-timeout to finish. Freeing the pool waits for them, off the loop. */
static void drain_work(uv_work_t *work)
{
        struct manager *m = work->data;

        slow_work_pool_free(m->pool);
}

static void drain_done(uv_work_t *work, int status)
{
        struct manager *m = work->data;

        m->pool = NULL;
        events_flush(m);
        events_close(m);
        uv_close((uv_handle_t *)&m->stop_timer, NULL);
        store_stop(m->store);
}

void manager_stop(struct manager *m)
{
        if (m->stopping)
                return;
        __atomic_store_n(&m->stopping, true, __ATOMIC_RELEASE);
        notify_stopping(m);
        listener_close(m);
        while (m->conns)
                conn_close(m->conns, NULL);
        close_signals(m);
        uv_timer_init(m->loop, &m->stop_timer);
        m->stop_timer.data = m;
        uv_timer_start(&m->stop_timer, on_stop_timeout,
                       (uint64_t)(m->settings.stop_timeout * 1000.0), 0);
        m->drain_due = true;
        manager_drain(m);
}

void manager_drain(struct manager *m)
{
        if (!m->drain_due || m->cancels > 0)
                return;
        m->drain_due = false;
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
        slow_work_pool_free(m->pool);
        store_stop(m->store);
        notify_close(m);
        if (m->loop) {
                uv_run(m->loop, UV_RUN_NOWAIT); /* close callbacks still due */
                uv_loop_close(m->loop);
        }
        jobs_free_all(m);
        store_free(m->store);
        inflight_close(&m->inflight);
        free(m->crashed);
        json_object_put(m->persisted);
        history_free(&m->history);
        plugins_free(&m->plugins);
        free(m->socket_path);
        free(m->state_dir);
        free(m->log_dir);
        free(m);
        return NULL;
}
