/* SPDX-License-Identifier: MIT */
/* The method names and their parameter tables, as proto/PROTOCOL.md lists them. */
#include <stddef.h>

#include "methods.h"

#define YEAR_SECONDS 31536000.0

const char *const sw_methods[] = {
    "submit",       "enqueue",      "wait",  "cancel",    "release", "status",  "list", "log",
    "settings.get", "settings.set", "stats", "subscribe", "ping",    "version", NULL,
};

const struct sw_param sw_no_params[] = {
    {.name = NULL},
};

#define SUBMIT(field) offsetof(struct sw_submit_params, field)
const struct sw_param sw_submit_params[] = {
    {"class", SW_P_STRING, SUBMIT(class_name), false, 0, 16},
    {"command", SW_P_STRING, SUBMIT(command), false, 0, 65536},
    {"argv", SW_P_STRV, SUBMIT(argv), false, 0, 0},
    {"cwd", SW_P_STRING, SUBMIT(cwd), false, 0, 4096},
    {"env", SW_P_ENV, SUBMIT(env), false, 0, 0},
    {"timeout", SW_P_SECONDS, SUBMIT(timeout), false, 0, YEAR_SECONDS},
    {"plugin", SW_P_STRING, SUBMIT(plugin), false, 0, 255},
    {"entry", SW_P_STRING, SUBMIT(entry), false, 0, 255},
    {"arg", SW_P_JSON, SUBMIT(arg), false, 0, 0},
    {"key", SW_P_STRING, SUBMIT(key), false, 0, 256},
    {"name", SW_P_STRING, SUBMIT(name), false, 0, 256},
    {"delay", SW_P_SECONDS, SUBMIT(delay), false, 0, YEAR_SECONDS},
    {"hold", SW_P_BOOL, SUBMIT(hold), false, 0, 0},
    {"persist", SW_P_BOOL, SUBMIT(persist), false, 0, 0},
    {.name = NULL},
};

const struct sw_param sw_id_params[] = {
    {"id", SW_P_INT, offsetof(struct sw_id_params, id), true, 1, SW_JSON_INT_MAX},
    {.name = NULL},
};

const struct sw_param sw_status_params[] = {
    {"id", SW_P_INT, offsetof(struct sw_id_params, id), false, 1, SW_JSON_INT_MAX},
    {.name = NULL},
};

#define LOG(field) offsetof(struct sw_log_params, field)
const struct sw_param sw_log_params[] = {
    {"id", SW_P_INT, LOG(id), true, 1, SW_JSON_INT_MAX},
    {"offset", SW_P_INT, LOG(offset), false, 0, SW_JSON_INT_MAX},
    {"max", SW_P_INT, LOG(max), false, 1, 1048576},
    {.name = NULL},
};

const struct sw_param sw_enqueue_params[] = {
    {"id", SW_P_INT, offsetof(struct sw_enqueue_params, id), false, 1, SW_JSON_INT_MAX},
    {"key", SW_P_STRING, offsetof(struct sw_enqueue_params, key), false, 0, 256},
    {.name = NULL},
};

#define SETTING(field) offsetof(struct sw_settings, field)
const struct sw_param sw_settings_params[] = {
    {"min-threads", SW_P_INT, SETTING(min_threads), false, 1, 255},
    {"max-threads", SW_P_INT, SETTING(max_threads), false, 1, 255},
    {"vslow-percentage", SW_P_INT, SETTING(vslow_percentage), false, 1, 99},
    {"idle-timeout", SW_P_SECONDS, SETTING(idle_timeout), false, 0.001, 86400},
    {"history-limit", SW_P_INT, SETTING(history_limit), false, 1, 10000000},
    {"log-limit", SW_P_INT, SETTING(log_limit), false, 1024, 1099511627776.0},
    {"kill-grace", SW_P_SECONDS, SETTING(kill_grace), false, 0, 3600},
    {"stop-timeout", SW_P_SECONDS, SETTING(stop_timeout), false, 0, 86400},
    {"max-connections-per-user", SW_P_INT, SETTING(max_connections_per_user), false, 1, 1024},
    {"max-log-bytes-per-user", SW_P_INT, SETTING(max_log_bytes_per_user), false, 1024,
     1099511627776.0},
    {"min-free-space", SW_P_INT, SETTING(min_free_space), false, 0, 99},
    {"runtime", SW_P_BOOL, SETTING(runtime), false, 0, 0},
    {.name = NULL},
};

static int add(json_object *obj, const char *key, json_object *val)
{
        if (val && json_object_object_add(obj, key, val) == 0)
                return 0;
        json_object_put(val);
        return -1;
}

json_object *sw_settings_to_json(const struct sw_settings *s)
{
        json_object *obj = json_object_new_object();

        if (!obj)
                return NULL;
        if (add(obj, "min-threads", json_object_new_int64(s->min_threads)) < 0 ||
            add(obj, "max-threads", json_object_new_int64(s->max_threads)) < 0 ||
            add(obj, "vslow-percentage", json_object_new_int64(s->vslow_percentage)) < 0 ||
            add(obj, "idle-timeout", json_object_new_double(s->idle_timeout)) < 0 ||
            add(obj, "history-limit", json_object_new_int64(s->history_limit)) < 0 ||
            add(obj, "log-limit", json_object_new_int64(s->log_limit)) < 0 ||
            add(obj, "kill-grace", json_object_new_double(s->kill_grace)) < 0 ||
            add(obj, "stop-timeout", json_object_new_double(s->stop_timeout)) < 0 ||
            add(obj, "max-connections-per-user",
                json_object_new_int64(s->max_connections_per_user)) < 0 ||
            add(obj, "max-log-bytes-per-user", json_object_new_int64(s->max_log_bytes_per_user)) <
                0 ||
            add(obj, "min-free-space", json_object_new_int64(s->min_free_space)) < 0) {
                json_object_put(obj);
                return NULL;
        }
        return obj;
}
