/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORKD_MANAGER_H
#define SLOWWORKD_MANAGER_H

#include <stdbool.h>
#include <sys/types.h>
#include <uv.h>

#include "config-load.h"
#include "events.h"
#include "history.h"
#include "inflight.h"
#include "jobs.h"
#include "methods.h"
#include "notify.h"
#include "plugins.h"
#include "slowwork.h"

#define MANAGER_CONNECTIONS_MAX 1024
#define MANAGER_SYSTEM_SOCKET_DIR "/run/slowwork"
#define MANAGER_SYSTEM_STATE_DIR "/var/lib/slowwork"

struct config_reload;
struct conn;

struct manager {
        uv_loop_t *loop;
        struct slow_work_pool *pool;
        struct sw_settings settings;
        /* What the runners read of the settings, written atomically. */
        int64_t run_log_limit;
        double run_kill_grace;
        uid_t uid;
        /* The system instance: every user may connect, and jobs run as their owners. */
        bool system;
        gid_t admin_gid;  /* members are admins; (gid_t)-1: none */
        gid_t socket_gid; /* system instance: the socket's group, mode 0660; (gid_t)-1: 0666 */
        struct config config;
        struct config_reload *reload; /* a reload under way */
        struct notify notify;

        char *socket_path;
        int activated_fd; /* the listening socket systemd passed, or -1 */
        uv_pipe_t listener;
        bool listening;

        struct conn *conns;
        unsigned nconns;

        char *state_dir, *log_dir;
        struct events events;
        struct history history;
        struct envs envs;
        struct plugins plugins;
        struct store *store;
        struct inflight inflight;
        int64_t *crashed; /* start: the plugin jobs the last daemon died running */
        size_t ncrashed;
        json_object *persisted; /* settings.set's changes, as the state database keeps them */
        int64_t next_qorder;
        struct job *jobs_by_id[JOBS_BUCKETS];
        struct job *jobs_by_key[JOBS_BUCKETS];
        size_t njobs;
        int64_t next_id;

        uv_signal_t sigterm, sigint, sighup;
        uv_timer_t stop_timer;
        uv_work_t drain;
        unsigned cancels;   /* slow_work_cancel() calls under way: the pool outlives them */
        bool drain_due;     /* stopping, and waiting for cancels before freeing the pool */
        bool stopping;      /* atomic: read by the runners */
        bool interrupting;  /* atomic: stop-timeout is up, running jobs must stop */
};

/* The daemon's settings before any flag: the kernel's pool defaults and SPEC's. */
void manager_default_settings(struct sw_settings *s);
/* Checks a whole set of settings: 0 or -EINVAL. */
int manager_settings_validate(const struct sw_settings *s);

/* socket_path and state_dir NULL: the instance's defaults. */
int manager_new(const struct sw_settings *settings, const char *socket_path, const char *state_dir,
                bool system, struct manager **ret);
/* settings.set without "runtime": what changed from old is kept in the state database. */
void manager_persist_settings(struct manager *m, const struct sw_settings *old);
/* Over the settings of the file and the flags: the persisted ones, where no flag decides. */
void manager_overlay_persisted(struct manager *m, struct sw_settings *s);
/* Where plugin names resolve: dir, or NULL for the default (PLUGINDIR). */
int manager_set_plugin_dir(struct manager *m, const char *dir);
struct manager *manager_free(struct manager *m);
int manager_start(struct manager *m);
int manager_run(struct manager *m);
void manager_stop(struct manager *m);
int manager_apply_settings(struct manager *m, const struct sw_settings *s);
/* Frees the pool off the loop once no cancel is under way (the loop keeps running). */
void manager_drain(struct manager *m);

/* activation.c: 1 with the listening socket systemd passed and its path, 0 when it passed none
 * (*ret_fd is -1), or -errno (logged) when it passed anything but one Unix stream socket. */
int activation_socket(int *ret_fd, char **ret_path);

/* listener.c */
int listener_resolve_path(const char *given, bool system, char **ret_path);
int listener_open(struct manager *m);
void listener_close(struct manager *m);

#endif
