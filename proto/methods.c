/* SPDX-License-Identifier: MIT */
/* The method names and their parameter tables, as proto/PROTOCOL.md lists them. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "methods.h"

#define YEAR_SECONDS 31536000.0

const char *const sw_methods[] = {
    "submit",  "enqueue",      "wait",         "cancel",  "release",   "status", "list",
    "log",     "settings.get", "settings.set", "stats",   "subscribe", "ping",   "version",
    "history", "pause",        "resume",       "suspend", "continue",  "queue.add",
    "queue.remove", "queue.list", "metrics", "env.set", "nodes", "edit", "signal", "restart",
    "nodes.forget", NULL,
};

const struct sw_param sw_no_params[] = {
    {.name = NULL},
};

#define SUBMIT(field) offsetof(struct sw_submit_params, field)
const struct sw_param sw_submit_params[] = {
    {"class", SW_P_STRING, SUBMIT(class_name), false, 0, 16},
    {"command", SW_P_STRING, SUBMIT(command), false, 0, SW_COMMAND_MAX},
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
    {"limits", SW_P_JSON, SUBMIT(limits), false, 0, 0},
    {"after", SW_P_IDS, SUBMIT(after), false, 0, 1000},
    {"after_any", SW_P_IDS, SUBMIT(after_any), false, 0, 1000},
    {"retries", SW_P_INT, SUBMIT(retries), false, 0, SW_RETRIES_MAX},
    {"retry_delay", SW_P_SECONDS, SUBMIT(retry_delay), false, 0, SW_RETRY_DELAY_CAP},
    {"every", SW_P_SECONDS, SUBMIT(every), false, 1, YEAR_SECONDS},
    {"cron", SW_P_STRING, SUBMIT(cron), false, 0, 256},
    {"queue", SW_P_STRING, SUBMIT(queue), false, 0, SW_QUEUE_NAME_MAX},
    {"priority", SW_P_INT, SUBMIT(priority), false, SW_PRIORITY_MIN, SW_PRIORITY_MAX},
    {"stashed", SW_P_BOOL, SUBMIT(stashed), false, 0, 0},
    {"on_end", SW_P_STRING, SUBMIT(on_end), false, 0, SW_COMMAND_MAX},
    {"node", SW_P_STRING, SUBMIT(node), false, 0, 63},
    {.name = NULL},
};

#define EDIT(field) offsetof(struct sw_edit_params, field)
const struct sw_param sw_edit_params[] = {
    {"id", SW_P_INT, EDIT(id), true, 1, SW_JSON_INT_MAX},
    {"command", SW_P_STRING, EDIT(command), false, 0, 65536},
    {"argv", SW_P_STRV, EDIT(argv), false, 0, 0},
    {"name", SW_P_STRING, EDIT(name), false, 0, 256},
    {"priority", SW_P_INT, EDIT(priority), false, SW_PRIORITY_MIN, SW_PRIORITY_MAX},
    {"cwd", SW_P_STRING, EDIT(cwd), false, 0, 4096},
    {.name = NULL},
};

const struct sw_param sw_env_set_params[] = {
    {"env", SW_P_ENV, offsetof(struct sw_env_set_params, env), true, 0, 0},
    {.name = NULL},
};

/* Upper bounds: a byte count a double holds, the kernel's PID_MAX_LIMIT, cpu.weight's, the
 * niceness range, the kernel's default fs.nr_open, a year of CPU. */
#define LIMIT(field) offsetof(struct sw_limits, field)
const struct sw_param sw_limits_params[] = {
    {"memory_max", SW_P_INT, LIMIT(memory_max), false, 0, SW_JSON_INT_MAX},
    {"tasks_max", SW_P_INT, LIMIT(tasks_max), false, 0, 4194304},
    {"cpu_weight", SW_P_INT, LIMIT(cpu_weight), false, 0, 10000},
    {"nice", SW_P_INT, LIMIT(nice), false, -20, 19},
    {"open_files", SW_P_INT, LIMIT(open_files), false, 0, 1048576},
    {"cpu_time", SW_P_INT, LIMIT(cpu_time), false, 0, YEAR_SECONDS},
    {.name = NULL},
};

const struct sw_param sw_pause_params[] = {
    {"drain", SW_P_BOOL, offsetof(struct sw_pause_params, drain), false, 0, 0},
    {"queue", SW_P_STRING, offsetof(struct sw_pause_params, queue), false, 0, SW_QUEUE_NAME_MAX},
    {"node", SW_P_STRING, offsetof(struct sw_pause_params, node), false, 0, SW_NODE_NAME_MAX},
    {.name = NULL},
};

const struct sw_param sw_resume_params[] = {
    {"queue", SW_P_STRING, offsetof(struct sw_pause_params, queue), false, 0, SW_QUEUE_NAME_MAX},
    {"node", SW_P_STRING, offsetof(struct sw_pause_params, node), false, 0, SW_NODE_NAME_MAX},
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

/* The signal is a name or a number, which the daemon resolves and checks. */
const struct sw_param sw_signal_params[] = {
    {"id", SW_P_INT, offsetof(struct sw_signal_params, id), true, 1, SW_JSON_INT_MAX},
    {"signal", SW_P_JSON, offsetof(struct sw_signal_params, signal), true, 0, 0},
    {.name = NULL},
};

#define RESTART(field) offsetof(struct sw_restart_params, field)
const struct sw_param sw_restart_params[] = {
    {"id", SW_P_INT, RESTART(id), true, 1, SW_JSON_INT_MAX},
    {"command", SW_P_STRING, RESTART(command), false, 0, 65536},
    {"argv", SW_P_STRV, RESTART(argv), false, 0, 0},
    {.name = NULL},
};

#define LOG(field) offsetof(struct sw_log_params, field)
const struct sw_param sw_log_params[] = {
    {"id", SW_P_INT, LOG(id), true, 1, SW_JSON_INT_MAX},
    {"offset", SW_P_INT, LOG(offset), false, 0, SW_JSON_INT_MAX},
    {"max", SW_P_INT, LOG(max), false, 1, 1048576},
    {"run", SW_P_INT, LOG(run), false, 1, SW_JSON_INT_MAX},
    {.name = NULL},
};

#define LIST(field) offsetof(struct sw_list_params, field)
const struct sw_param sw_list_params[] = {
    {"limit", SW_P_INT, LIST(limit), false, 1, SW_LIST_LIMIT_MAX},
    {"after_id", SW_P_INT, LIST(after_id), false, 0, SW_JSON_INT_MAX},
    {"owner", SW_P_INT, LIST(owner), false, 0, 4294967294.0},
    {"state", SW_P_STRING, LIST(state), false, 0, 16},
    {.name = NULL},
};

const struct sw_param sw_enqueue_params[] = {
    {"id", SW_P_INT, offsetof(struct sw_enqueue_params, id), false, 1, SW_JSON_INT_MAX},
    {"key", SW_P_STRING, offsetof(struct sw_enqueue_params, key), false, 0, 256},
    {"queue", SW_P_STRING, offsetof(struct sw_enqueue_params, queue), false, 0, SW_QUEUE_NAME_MAX},
    {.name = NULL},
};

#define HISTORY(field) offsetof(struct sw_history_params, field)
const struct sw_param sw_history_params[] = {
    {"limit", SW_P_INT, HISTORY(limit), false, 1, SW_HISTORY_LIMIT_MAX},
    {"before", SW_P_JSON, HISTORY(before), false, 0, 0},
    {"outcome", SW_P_JSON, HISTORY(outcome), false, 0, 0},
    {"since", SW_P_SECONDS, HISTORY(since), false, 0, SW_JSON_INT_MAX},
    {"owner", SW_P_INT, HISTORY(owner), false, 0, 4294967294.0},
    {.name = NULL},
};

#define POSITION(field) offsetof(struct sw_run_position, field)
static const struct sw_param run_position_params[] = {
    {"id", SW_P_INT, POSITION(id), true, 1, SW_JSON_INT_MAX},
    {"run", SW_P_INT, POSITION(run), true, 0, SW_JSON_INT_MAX},
    {.name = NULL},
};

const char *const sw_outcomes[] = {
    "succeeded",   "failed",           "killed", "timed-out",
    "cancelled",   "interrupted",      "dependency-failed", NULL,
};

int sw_run_position_parse(json_object *obj, struct sw_run_position *pos, char *errbuf,
                          size_t errlen)
{
        struct sw_run_position staged = {0};
        char inner[200] = "";
        int r;

        if (!json_object_is_type(obj, json_type_object)) {
                snprintf(errbuf, errlen,
                         "parameter \"before\" must be an object {\"id\", \"run\"}");
                return SW_E_INVALID_PARAMS;
        }
        r = sw_params_parse(obj, run_position_params, &staged, inner, sizeof(inner));
        if (r) {
                snprintf(errbuf, errlen, "before: %s", inner);
                return r;
        }
        *pos = staged;
        return 0;
}

/* Whether name is one of sw_outcomes. */
static bool is_outcome(json_object *name)
{
        if (!json_object_is_type(name, json_type_string))
                return false;
        for (const char *const *o = sw_outcomes; *o; o++)
                if (strcmp(json_object_get_string(name), *o) == 0)
                        return true;
        return false;
}

int sw_outcomes_parse(json_object *obj, unsigned *ret_mask, char *errbuf, size_t errlen)
{
        unsigned mask = 0;
        size_t i, n;

        if (is_outcome(obj)) {
                *ret_mask = sw_outcome_bit(json_object_get_string(obj));
                return 0;
        }
        n = json_object_is_type(obj, json_type_array) ? json_object_array_length(obj) : 0;
        for (i = 0; i < n && is_outcome(json_object_array_get_idx(obj, i)); i++)
                mask |= sw_outcome_bit(json_object_get_string(json_object_array_get_idx(obj, i)));
        if (n == 0 || i < n) {
                snprintf(errbuf, errlen,
                         "parameter \"outcome\" must be an outcome or a non-empty array of them "
                         "(succeeded, failed, killed, timed-out, cancelled, interrupted)");
                return SW_E_INVALID_PARAMS;
        }
        *ret_mask = mask;
        return 0;
}

unsigned sw_outcome_bit(const char *name)
{
        for (unsigned i = 0; sw_outcomes[i]; i++)
                if (strcmp(name, sw_outcomes[i]) == 0)
                        return 1u << i;
        return 0;
}

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
    {"max-queued-per-user", SW_P_INT, SETTING(max_queued_per_user), false, 0, 10000000},
    {"max-running-per-user", SW_P_INT, SETTING(max_running_per_user), false, 0, 1000000},
    {"max-jobs-per-user", SW_P_INT, SETTING(max_jobs_per_user), false, 0, 10000000},
    {"max-job-bytes-per-user", SW_P_INT, SETTING(max_job_bytes_per_user), false, 0,
     1099511627776.0},
    {"default-memory-max", SW_P_INT, SETTING(limits.memory_max), false, 0, SW_JSON_INT_MAX},
    {"default-tasks-max", SW_P_INT, SETTING(limits.tasks_max), false, 0, 4194304},
    {"default-cpu-weight", SW_P_INT, SETTING(limits.cpu_weight), false, 0, 10000},
    {"default-nice", SW_P_INT, SETTING(limits.nice), false, -20, 19},
    {"default-open-files", SW_P_INT, SETTING(limits.open_files), false, 0, 1048576},
    {"default-cpu-time", SW_P_INT, SETTING(limits.cpu_time), false, 0, YEAR_SECONDS},
    {"max-job-memory", SW_P_INT, SETTING(ceilings.memory_max), false, 0, SW_JSON_INT_MAX},
    {"max-job-tasks", SW_P_INT, SETTING(ceilings.tasks_max), false, 0, 4194304},
    {"max-job-open-files", SW_P_INT, SETTING(ceilings.open_files), false, 0, 1048576},
    {"max-job-cpu-time", SW_P_INT, SETTING(ceilings.cpu_time), false, 0, YEAR_SECONDS},
    {"metrics-file", SW_P_PATH, SETTING(metrics_file), false, 0, SW_SETTING_PATH_MAX},
    {"metrics-interval", SW_P_SECONDS, SETTING(metrics_interval), false, 1, 86400},
    {"on-end", SW_P_TEXT, SETTING(on_end), false, 0, SW_SETTING_COMMAND_MAX},
    {"fair-share", SW_P_BOOL, SETTING(fair_share), false, 0, 0},
    {"node-queues", SW_P_QUEUES, SETTING(node_queues), false, 0, SW_SETTING_PATH_MAX},
    {"store-timeout", SW_P_SECONDS, SETTING(store_timeout), false, 0.1, 3600},
    {"runtime", SW_P_BOOL, SETTING(runtime), false, 0, 0},
    {"queue", SW_P_STRING, SETTING(queue), false, 0, SW_QUEUE_NAME_MAX},
    {.name = NULL},
};

/* queue.add's table: the settings as an object, the name, then a queue's settings (their ranges are those of the
 * daemon's settings of the same names), which are also a table of their own. */
#define QUEUE(field) offsetof(struct sw_queue_params, field)
const struct sw_param sw_queue_add_params[] = {
    {"settings", SW_P_JSON, QUEUE(nested), false, 0, 0},
    {"name", SW_P_STRING, QUEUE(name), true, 0, SW_QUEUE_NAME_MAX},
    {"min-threads", SW_P_INT, QUEUE(settings.min_threads), false, 1, 255},
    {"max-threads", SW_P_INT, QUEUE(settings.max_threads), false, 1, 255},
    {"vslow-percentage", SW_P_INT, QUEUE(settings.vslow_percentage), false, 1, 99},
    {"idle-timeout", SW_P_SECONDS, QUEUE(settings.idle_timeout), false, 0.001, 86400},
    {"max-queued-per-user", SW_P_INT, QUEUE(settings.max_queued_per_user), false, 0, 10000000},
    {"max-running-per-user", SW_P_INT, QUEUE(settings.max_running_per_user), false, 0, 1000000},
    {"max-job-memory", SW_P_INT, QUEUE(settings.ceilings.memory_max), false, 0, SW_JSON_INT_MAX},
    {"max-job-tasks", SW_P_INT, QUEUE(settings.ceilings.tasks_max), false, 0, 4194304},
    {"max-job-open-files", SW_P_INT, QUEUE(settings.ceilings.open_files), false, 0, 1048576},
    {"max-job-cpu-time", SW_P_INT, QUEUE(settings.ceilings.cpu_time), false, 0, YEAR_SECONDS},
    {.name = NULL},
};
_Static_assert(offsetof(struct sw_queue_params, settings) == 0,
               "the settings rows are a table of struct sw_queue_settings too");
const struct sw_param *const sw_queue_settings_params = sw_queue_add_params + 2;

json_object *sw_queue_settings_to_json(const struct sw_queue_settings *s)
{
        json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        json_object_object_add(o, "min-threads", json_object_new_int64(s->min_threads));
        json_object_object_add(o, "max-threads", json_object_new_int64(s->max_threads));
        json_object_object_add(o, "vslow-percentage", json_object_new_int64(s->vslow_percentage));
        json_object_object_add(o, "idle-timeout", json_object_new_double(s->idle_timeout));
        json_object_object_add(o, "max-queued-per-user",
                               json_object_new_int64(s->max_queued_per_user));
        json_object_object_add(o, "max-running-per-user",
                               json_object_new_int64(s->max_running_per_user));
        json_object_object_add(o, "max-job-memory", json_object_new_int64(s->ceilings.memory_max));
        json_object_object_add(o, "max-job-tasks", json_object_new_int64(s->ceilings.tasks_max));
        json_object_object_add(o, "max-job-open-files",
                               json_object_new_int64(s->ceilings.open_files));
        json_object_object_add(o, "max-job-cpu-time", json_object_new_int64(s->ceilings.cpu_time));
        return o;
}

int sw_queue_name_check(const char *param, const char *name, char *errbuf, size_t errlen)
{
        size_t n = strlen(name);

        if (n == 0 || n > SW_QUEUE_NAME_MAX ||
            strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") != n) {
                snprintf(errbuf, errlen,
                         "parameter \"%s\" must be a queue name: 1 to %d of A-Z a-z 0-9 . _ -",
                         param, SW_QUEUE_NAME_MAX);
                return SW_E_INVALID_PARAMS;
        }
        return 0;
}

const struct sw_param sw_queue_name_params[] = {
    {"name", SW_P_STRING, QUEUE(name), true, 0, SW_QUEUE_NAME_MAX},
    {.name = NULL},
};

const struct sw_param sw_node_name_params[] = {
    {"name", SW_P_STRING, offsetof(struct sw_node_params, name), true, 0, SW_NODE_NAME_MAX},
    {.name = NULL},
};

const struct sw_param sw_queue_opt_params[] = {
    {"queue", SW_P_STRING, offsetof(struct sw_queue_opt_params, queue), false, 0,
     SW_QUEUE_NAME_MAX},
    {.name = NULL},
};

void sw_limits_unset(struct sw_limits *l)
{
        *l = (struct sw_limits){SW_LIMIT_UNSET, SW_LIMIT_UNSET, SW_LIMIT_UNSET,
                                SW_LIMIT_UNSET, SW_LIMIT_UNSET, SW_LIMIT_UNSET};
}

int sw_limits_parse(json_object *obj, struct sw_limits *l, char *errbuf, size_t errlen)
{
        char inner[200] = "", *quote;
        int r;

        if (!json_object_is_type(obj, json_type_object)) {
                snprintf(errbuf, errlen, "parameter \"limits\" must be an object");
                return SW_E_INVALID_PARAMS;
        }
        r = sw_params_parse(obj, sw_limits_params, l, inner, sizeof(inner));
        /* The inner table's messages name "x"; here it is "limits.x". */
        quote = strchr(inner, '"');
        if (r && quote)
                snprintf(errbuf, errlen, "%.*s\"limits.%s", (int)(quote - inner), inner, quote + 1);
        else if (r)
                snprintf(errbuf, errlen, "limits: %s", inner);
        return r;
}

/* The value of an integer or seconds row of a table, as JSON. */
static json_object *row_json(const struct sw_param *p, const void *base)
{
        const char *field = (const char *)base + p->offset;

        if (p->type == SW_P_SECONDS)
                return json_object_new_double(*(const double *)field);
        if (sw_ptype_in_place(p->type))
                return json_object_new_string(field);
        if (p->type == SW_P_BOOL)
                return json_object_new_boolean(*(const bool *)field);
        return json_object_new_int64(*(const int64_t *)field);
}

json_object *sw_limits_to_json(const struct sw_limits *l)
{
        json_object *obj = json_object_new_object();

        for (const struct sw_param *p = sw_limits_params; obj && p->name; p++) {
                json_object *v;

                if (*(const int64_t *)((const char *)l + p->offset) == SW_LIMIT_UNSET)
                        continue;
                v = row_json(p, l);
                if (!v || json_object_object_add(obj, p->name, v) < 0) {
                        json_object_put(v);
                        json_object_put(obj);
                        return NULL;
                }
        }
        return obj;
}

json_object *sw_settings_to_json(const struct sw_settings *s)
{
        json_object *obj = json_object_new_object();

        for (const struct sw_param *p = sw_settings_params;
             obj && p < sw_settings_params + SW_SETTINGS_COUNT; p++) {
                json_object *v = row_json(p, s);

                if (!v || json_object_object_add(obj, p->name, v) < 0) {
                        json_object_put(v);
                        json_object_put(obj);
                        return NULL;
                }
        }
        return obj;
}
