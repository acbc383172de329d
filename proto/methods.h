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

/* The 14 method names, NULL-terminated. */
extern const char *const sw_methods[];

/* Methods without params: list, stats, ping, version, subscribe, settings.get. */
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
};
extern const struct sw_param sw_submit_params[];

/* wait, cancel, release: id required; status: id optional (0 when absent). */
struct sw_id_params {
        int64_t id;
};
extern const struct sw_param sw_id_params[];
extern const struct sw_param sw_status_params[];

struct sw_log_params {
        int64_t id;
        int64_t offset; /* the byte to start at */
        int64_t max;    /* the most bytes to return */
};
extern const struct sw_param sw_log_params[];

/* Both optional; the daemon wants exactly one (id 0 and key NULL when absent). */
struct sw_enqueue_params {
        int64_t id;
        char *key;
};
extern const struct sw_param sw_enqueue_params[];

/* settings.set: pre-fill with the current values, then parse; every name is optional. */
struct sw_settings {
        int64_t min_threads, max_threads, vslow_percentage;
        double idle_timeout; /* seconds */
        int64_t history_limit, log_limit;
        double kill_grace, stop_timeout;  /* seconds */
        int64_t max_connections_per_user; /* a non-admin uid's connections at once */
        int64_t max_log_bytes_per_user;   /* the run logs a user keeps, in bytes */
        int64_t min_free_space;           /* percent of the state folder's file system kept free */
        bool runtime;                     /* settings.set only: do not persist the change */
};
extern const struct sw_param sw_settings_params[];

/* The settings.get result: every setting by its name (not "runtime"); NULL on ENOMEM. */
json_object *sw_settings_to_json(const struct sw_settings *s);

#endif
