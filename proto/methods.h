/* SPDX-License-Identifier: MIT */
/*
 * The methods of the protocol (proto/PROTOCOL.md): their names, and for each a params structure
 * with the table sw_params_parse() fills it by. Tables check types and ranges only; rules that
 * join parameters (command, argv or plugin; id or key) are the daemon's.
 */
#ifndef SLOWWORK_PROTO_METHODS_H
#define SLOWWORK_PROTO_METHODS_H

#include "proto.h"

#define SW_JSON_INT_MAX 9007199254740991.0 /* 2^53 - 1: the largest integer a double holds */

/* The 27 method names, NULL-terminated. */
extern const char *const sw_methods[];

/* Methods without params: list, stats, ping, version, subscribe, settings.get, resume. */
extern const struct sw_param sw_no_params[];

struct sw_submit_params {
        char *class_name; /* "class": "slow" or "very-slow", checked by the daemon */
        char *command;    /* for /bin/sh -c */
        char **argv;      /* or this, without a shell */
        char *cwd;
        char **env;     /* "KEY=VALUE" */
        double timeout; /* seconds; 0: none */
        char *plugin;   /* or a plugin's entry point */
        char *entry;
        json_object *arg; /* any JSON, NULL for null or absent */
        char *key;
        char *name;
        double delay; /* seconds */
        bool hold;
        bool persist;
        json_object *limits; /* an object for sw_limits_parse(), NULL when absent */
        int64_t *after;      /* job ids, 0-terminated: each must end succeeded first */
        int64_t *after_any;  /* job ids: each must end, whatever the outcome */
        char *queue;         /* the queue it runs in (NULL: "default"), checked by the daemon */
        int64_t retries;     /* runs again after failed, killed or timed-out, this many times */
        double retry_delay;  /* seconds before the first retry, doubled for each next one */
        double every;        /* seconds between the ticks of a recurring job; 0: none */
        char *cron;          /* or five cron fields, checked by the daemon */
        int64_t priority;    /* within its queue and class: higher runs first */
        bool stashed;        /* kept, not queued, until enqueue releases it */
        char *on_end;        /* a shell command run after each run (non-empty: the daemon's) */
        char *node;          /* the node of a shared database it runs on alone (NULL: any) */
};
#define SW_PRIORITY_MIN (-100)
#define SW_PRIORITY_MAX 100
#define SW_RETRIES_MAX 1000
#define SW_RETRY_DELAY_DEFAULT 1.0
#define SW_RETRY_DELAY_CAP 3600.0 /* the longest back-off */
extern const struct sw_param sw_submit_params[];

/* edit: id required; the others optional (the daemon pre-fills priority with
 * SW_PRIORITY_UNSET: not given). */
#define SW_PRIORITY_UNSET INT64_MIN
struct sw_edit_params {
        int64_t id;
        char *command;
        char **argv;
        char *name;
        int64_t priority;
        char *cwd;
};
extern const struct sw_param sw_edit_params[];

/* env.set: the connection's environment for its later submits without "env" (required). */
struct sw_env_set_params {
        char **env; /* "KEY=VALUE" */
};
extern const struct sw_param sw_env_set_params[];

/*
 * A job's limits ("limits" of submit, the default-* settings). SW_LIMIT_UNSET: not given; 0: no
 * limit (for nice: the daemon's own niceness). Bytes, tasks, a weight, a niceness, descriptors,
 * seconds.
 */
#define SW_LIMIT_UNSET INT64_MIN
struct sw_limits {
        int64_t memory_max, tasks_max, cpu_weight, nice, open_files, cpu_time;
};
#define SW_LIMITS_COUNT 6
extern const struct sw_param sw_limits_params[];
/* Every member SW_LIMIT_UNSET. */
void sw_limits_unset(struct sw_limits *l);
/* The members of obj (an object) over l: 0, or SW_E_INVALID_PARAMS with errbuf naming the
 * limit as "limits.NAME", or -ENOMEM; l changes only on success. */
int sw_limits_parse(json_object *obj, struct sw_limits *l, char *errbuf, size_t errlen);
/* The members that are set, by name; NULL on ENOMEM. */
json_object *sw_limits_to_json(const struct sw_limits *l);

/* pause: drain optional (false when absent); queue optional (NULL: the whole daemon); node
 * optional (a node of a shared database alone). resume: queue and node, as pause's. */
struct sw_pause_params {
        bool drain;
        char *queue;
        char *node;
};
extern const struct sw_param sw_pause_params[];
extern const struct sw_param sw_resume_params[];

/* wait, cancel, release, suspend, continue: id required; status: id optional (0 when absent). */
struct sw_id_params {
        int64_t id;
};
extern const struct sw_param sw_id_params[];
extern const struct sw_param sw_status_params[];

/* signal: signal is a JSON string ("USR1", "SIGUSR1") or number, resolved by the daemon. */
struct sw_signal_params {
        int64_t id;
        json_object *signal;
};
extern const struct sw_param sw_signal_params[];

/* restart: an ended job's spec again, as a new job; command (a shell command's) or argv (an
 * argv job's) replaces what it ran (NULL: the same). */
struct sw_restart_params {
        int64_t id;
        char *command;
        char **argv;
};
extern const struct sw_param sw_restart_params[];

struct sw_log_params {
        int64_t id;
        int64_t offset; /* the byte to start at */
        int64_t max;    /* the most bytes to return */
        int64_t run;    /* that run's log; 0: the run in progress, else the last one */
};
extern const struct sw_param sw_log_params[];

/* list: every member optional; the daemon pre-fills limit (0: every item) and owner (-1: any);
 * state is checked by the daemon. */
#define SW_LIST_LIMIT_MAX 100000
struct sw_list_params {
        int64_t limit;    /* the most items in the page */
        int64_t after_id; /* the page starts after this id */
        int64_t owner;
        char *state; /* pending, running, waiting or idle */
};
extern const struct sw_param sw_list_params[];

/* Both optional; the daemon wants exactly one (id 0 and key NULL when absent); a key names a
 * job of the queue (NULL: "default"). */
struct sw_enqueue_params {
        int64_t id;
        char *key;
        char *queue;
};
extern const struct sw_param sw_enqueue_params[];

/*
 * history: finished runs, newest first. The daemon pre-fills limit (100) and owner (-1: not
 * given); before and outcome are checked by the two calls below.
 */
#define SW_HISTORY_LIMIT_MAX 10000
struct sw_history_params {
        int64_t limit;
        json_object *before;  /* {"id": N, "run": R}: the page goes on after this run */
        json_object *outcome; /* an outcome, or an array of them */
        double since;         /* Unix seconds: runs that ended then or later */
        int64_t owner;
};
extern const struct sw_param sw_history_params[];

/* A run's place in the history, as history's "before" gives it. */
struct sw_run_position {
        int64_t id, run;
};
/* 0, or SW_E_INVALID_PARAMS with errbuf; pos changes only on success. */
int sw_run_position_parse(json_object *obj, struct sw_run_position *pos, char *errbuf,
                          size_t errlen);

/* The outcomes of a run, NULL-terminated; a set of them is a mask of 1 << index. */
extern const char *const sw_outcomes[];
/* The bit of an outcome's name, 0 for no outcome. */
unsigned sw_outcome_bit(const char *name);
/* An outcome or an array of them as a mask: 0, or SW_E_INVALID_PARAMS with errbuf. */
int sw_outcomes_parse(json_object *obj, unsigned *ret_mask, char *errbuf, size_t errlen);

/* The longest path a setting takes (metrics-file). */
#define SW_SETTING_PATH_MAX 1024
/* The longest command a setting takes (on-end); a submit's "command" and "on_end" take 64 KiB. */
#define SW_SETTING_COMMAND_MAX 4096
#define SW_COMMAND_MAX         65536

/* settings.set: pre-fill with the current values, then parse; every name is optional. */
struct sw_settings {
        int64_t min_threads, max_threads, vslow_percentage;
        double idle_timeout; /* seconds */
        int64_t history_limit, log_limit;
        double kill_grace, stop_timeout;  /* seconds */
        int64_t max_connections_per_user; /* a non-admin uid's connections at once */
        int64_t max_log_bytes_per_user;   /* the run logs a user keeps, in bytes */
        int64_t min_free_space;           /* percent of the state folder's file system kept free */
        int64_t max_queued_per_user;      /* a user's jobs queued at once (0: no limit) */
        int64_t max_running_per_user;     /* a user's runs at once (0: no limit) */
        int64_t max_jobs_per_user;        /* a user's live jobs, whatever their state (0: none) */
        int64_t max_job_bytes_per_user;   /* the bytes a user's live jobs keep (0: no limit) */
        struct sw_limits limits;          /* default-*: what a job that does not say gets */
        /* max-job-*: the most a job of a user who is not an admin may have (0: no ceiling);
         * memory_max, tasks_max, open_files and cpu_time only. */
        struct sw_limits ceilings;
        char metrics_file[SW_SETTING_PATH_MAX + 1]; /* "": none */
        double metrics_interval;                    /* seconds */
        char on_end[SW_SETTING_COMMAND_MAX + 1]; /* run after each run of a job without its own */
        bool fair_share; /* a freed thread takes the next job of the user running fewest */
        char node_queues[SW_SETTING_PATH_MAX + 1]; /* the queues whose jobs this node runs: "*" */
        double store_timeout; /* seconds a reply waits for the job database's commit at most */
        bool runtime;                     /* settings.set only: do not persist the change */
        char *queue;                      /* settings.set only: the queue whose settings change */
};
/* The settings, then "runtime"; SW_SETTINGS_COUNT rows before it. */
extern const struct sw_param sw_settings_params[];
#define SW_SETTINGS_COUNT (25 + SW_LIMITS_COUNT)

/* The settings.get result: every setting by its name (not "runtime"); NULL on ENOMEM. */
json_object *sw_settings_to_json(const struct sw_settings *s);

/*
 * Named queues. A queue's own settings, by the names the daemon's have (queue.add, settings.set
 * with "queue", "queue.NAME.SETTING" lines of the configuration file).
 */
#define SW_QUEUE_DEFAULT "default"
#define SW_QUEUE_NAME_MAX 64
struct sw_queue_settings {
        int64_t min_threads, max_threads, vslow_percentage;
        double idle_timeout; /* seconds */
        int64_t max_queued_per_user, max_running_per_user; /* in the queue (0: no limit) */
        /* max-job-*: the queue's own ceilings, over the daemon's (0: the daemon's apply). */
        struct sw_limits ceilings;
};
extern const struct sw_param *const sw_queue_settings_params;
/* {"min-threads": N, ...}: a queue's settings by name; NULL on ENOMEM. */
json_object *sw_queue_settings_to_json(const struct sw_queue_settings *s);
/* Whether name is a queue's name, 1..64 of [A-Za-z0-9._-]: 0, or SW_E_INVALID_PARAMS with errbuf
 * naming param. */
int sw_queue_name_check(const char *param, const char *name, char *errbuf, size_t errlen);

/* queue.add (name and settings), queue.remove (name), and the methods that take an optional
 * queue (settings.get, stats, resume: name NULL when absent). */
struct sw_queue_params {
        struct sw_queue_settings settings; /* first */
        char *name;
        json_object *nested; /* queue.add's "settings": the same, as an object (NULL: none) */
};
extern const struct sw_param sw_queue_add_params[];
extern const struct sw_param sw_queue_name_params[];
struct sw_queue_opt_params {
        char *queue;
};
extern const struct sw_param sw_queue_opt_params[];

/* nodes.forget: a node's name, as the database has it (at most 63 bytes, as a node's setting
 * node-name). */
#define SW_NODE_NAME_MAX 63
struct sw_node_params {
        char *name;
};
extern const struct sw_param sw_node_name_params[];

#endif
