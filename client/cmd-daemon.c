/* SPDX-License-Identifier: MIT */
/* The daemon's own commands: get, set, reload, nodes, ping, version. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "duration.h"
#include "escape.h"
#include "format.h"
#include "output.h"
#include "slowctl.h"

/* What a setting's number means to people (--json keeps the numbers). */
enum unit { COUNT, BYTES, PERCENT, SECONDS };

static const struct {
        const char *name;
        enum unit unit;
        const char *zero; /* what 0 means, NULL: 0 */
} units[] = {
    {"vslow-percentage", PERCENT, NULL},
    {"log-limit", BYTES, NULL},
    {"max-log-bytes-per-user", BYTES, NULL},
    {"min-free-space", PERCENT, "off"},
    {"max-queued-per-user", COUNT, "none"},
    {"max-running-per-user", COUNT, "none"},
    {"max-jobs-per-user", COUNT, "none"},
    {"max-job-bytes-per-user", BYTES, "none"},
    {"default-memory-max", BYTES, "none"},
    {"default-tasks-max", COUNT, "none"},
    {"default-cpu-weight", COUNT, "none"},
    {"default-open-files", COUNT, "none"},
    {"default-cpu-time", SECONDS, "none"},
    {"max-job-memory", BYTES, "none"},
    {"max-job-tasks", COUNT, "none"},
    {"max-job-open-files", COUNT, "none"},
    {"max-job-cpu-time", SECONDS, "none"},
};

/* The value as people read it: sizes in B, KiB, ...; durations in s, m, h; "none" for a limit
 * that is off; a setting slowctl does not know, as the daemon gave it. NULL: out of memory. */
static char *setting_text(const char *name, json_object *value)
{
        enum unit unit = COUNT;
        const char *zero = NULL;
        char buf[64];
        double v = json_object_get_double(value);

        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(units[i].name, name) == 0) {
                        unit = units[i].unit;
                        zero = units[i].zero;
                }
        if (json_object_is_type(value, json_type_double))
                unit = SECONDS; /* every setting with fractions is a time */
        if (json_object_is_type(value, json_type_string) && !*json_object_get_string(value))
                return strdup("none"); /* a path not set */
        if (json_object_is_type(value, json_type_boolean))
                return strdup(json_object_get_boolean(value) ? "yes" : "no");
        if (!json_object_is_type(value, json_type_int) && !json_object_is_type(value, json_type_double))
                return output_value(value);
        if (v == 0 && zero)
                return strdup(zero);
        switch (unit) {
        case BYTES:
                return strdup(format_size(json_object_get_int64(value), buf, sizeof(buf)));
        case SECONDS:
                return strdup(format_duration(v, buf, sizeof(buf)));
        case PERCENT:
                snprintf(buf, sizeof(buf), "%lld%%", (long long)json_object_get_int64(value));
                return strdup(buf);
        default:
                return output_value(value);
        }
}

/* One per line, the values in a column after the longest name. */
static int print_settings(json_object *settings)
{
        int width = 0;

        json_object_object_foreach(settings, key, unused)
        {
                (void)unused;
                if ((int)strlen(key) > width)
                        width = (int)strlen(key);
        }
        json_object_object_foreach(settings, name, value)
        {
                char *text = setting_text(name, value);

                if (!text)
                        return -1;
                escape_linef(stdout, "%-*s  %s", width, name, text);
                free(text);
        }
        return 0;
}

int cmd_get(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *result = NULL, *value;
        char *text;
        int r;

        r = ctl_call(x, NULL, "settings.get", ctl_queue_params(o), &result);
        if (r || x->json) {
                json_object_put(result);
                return r;
        }
        if (argc == 0) {
                r = print_settings(result) < 0 ? ctl_error(x, "out of memory") : EXIT_OK;
        } else if (!json_object_object_get_ex(result, argv[0], &value)) {
                r = ctl_error(x, "get: no setting \"%s\"", argv[0]);
        } else {
                text = setting_text(argv[0], value);
                if (text)
                        escape_linef(stdout, "%s", text);
                else
                        r = ctl_error(x, "out of memory");
                free(text);
        }
        json_object_put(result);
        return r;
}

/* What a setting takes: a number, unless the daemon's table says otherwise. */
static enum sw_ptype setting_type(const char *name)
{
        for (const struct sw_param *p = sw_settings_params; p->name; p++)
                if (strcmp(p->name, name) == 0)
                        return p->type;
        return SW_P_INT;
}

/* What get says for 0 of a setting (none, off), and whether it is a time; as setting_text. */
static const char *setting_unit(const char *name, enum unit *ret_unit)
{
        *ret_unit = COUNT;
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
                if (strcmp(units[i].name, name) == 0) {
                        *ret_unit = units[i].unit;
                        return units[i].zero;
                }
        return NULL;
}

/* A value as its setting takes it: a path or a command (metrics-file, on-end) as it is, yes or
 * no (true, false) as a boolean, a time as a span (90, 2m, 1h30m: whole seconds where the
 * setting takes an integer), what get says for 0 (none, off) as 0, else a number; NULL when it
 * is none of these. */
static json_object *setting_value(const char *name, enum sw_ptype type, const char *value)
{
        enum unit unit;
        const char *zero = setting_unit(name, &unit);
        double seconds;

        if (sw_ptype_in_place(type))
                return json_object_new_string(value);
        if (zero && strcmp(value, zero) == 0)
                return json_object_new_int(0);
        if (type == SW_P_SECONDS)
                return duration_parse(value, &seconds) < 0 ? NULL
                                                           : json_object_new_double(seconds);
        if (unit == SECONDS && type == SW_P_INT)
                return duration_parse(value, &seconds) < 0 || seconds > 9007199254740991.0 ||
                               seconds != (double)(int64_t)seconds
                           ? NULL
                           : json_object_new_int64((int64_t)seconds);
        if (type != SW_P_BOOL)
                return ctl_parse_number(value);
        if (strcmp(value, "yes") == 0 || strcmp(value, "true") == 0)
                return json_object_new_boolean(1);
        if (strcmp(value, "no") == 0 || strcmp(value, "false") == 0)
                return json_object_new_boolean(0);
        return NULL;
}

/* What a setting's value must be, for the message when it is not. */
static const char *setting_wants(const char *name, enum sw_ptype type)
{
        enum unit unit;

        setting_unit(name, &unit);
        if (type == SW_P_BOOL)
                return "yes or no";
        if (type == SW_P_SECONDS)
                return "seconds or a span (90, 0.5, 2m, 1h30m)";
        if (unit == SECONDS)
                return "whole seconds or a span (90, 2m, 1h30m)";
        return "a number";
}

int cmd_set(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *p, *v;
        int i;

        if (argc % 2)
                return ctl_usage_error(x, "\"%s\" has no value", argv[argc - 1]);
        p = json_object_new_object();
        if (!p)
                return ctl_error(x, "out of memory");
        for (i = 0; i < argc; i += 2) {
                enum sw_ptype type = setting_type(argv[i]);

                v = setting_value(argv[i], type, argv[i + 1]);
                if (!v) {
                        json_object_put(p);
                        return ctl_usage_error(x, "the value of %s must be %s, not \"%s\"",
                                               argv[i], setting_wants(argv[i], type), argv[i + 1]);
                }
                json_object_object_add(p, argv[i], v);
        }
        if (o->runtime)
                json_object_object_add(p, "runtime", json_object_new_boolean(1));
        if (o->queue)
                json_object_object_add(p, "queue", json_object_new_string(o->queue));
        return ctl_call(x, NULL, "settings.set", p, NULL);
}

int cmd_reload(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        int r = ctl_call(x, NULL, "reload", NULL, NULL);

        if (r == 0 && !x->json)
                printf("slowworkd reloaded its configuration\n");
        return r;
}

int cmd_reexec(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *result;
        int r = ctl_call(x, NULL, "reexec", NULL, &result);

        if (r == 0 && !x->json)
                printf("slowworkd runs its program again (pid %lld, version %s)\n",
                       (long long)json_int(result, "pid", 0), json_str(result, "version", "?"));
        json_object_put(result);
        return r;
}

/* nodes forget NAME: an expired node's row removed. `nodes` only looks (ctl_changes()); this
 * changes something, so a fall back to the system instance is told, as for other changes. */
static int nodes_forget(struct ctl *x, const char *name)
{
        json_object *p;
        int r = ctl_connect(x);

        if (r)
                return r;
        ctl_tell_fallback(x, "nodes forget");
        p = json_object_new_object();
        json_object_object_add(p, "name", json_object_new_string(name));
        r = ctl_call(x, NULL, "nodes.forget", p, NULL);
        if (r == 0 && !x->json)
                escape_linef(stdout, "node %s forgotten", name);
        return r;
}

int cmd_nodes(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *result, *list;
        struct table t;
        size_t i, n;
        int r;

        if (argc == 2 && strcmp(argv[0], "forget") == 0)
                return nodes_forget(x, argv[1]);
        if (argc != 0)
                return ctl_usage_error(x, "nodes takes nothing, or forget NAME");
        r = ctl_call(x, NULL, "nodes", NULL, &result);
        if (r || x->json) {
                json_object_put(result);
                return r;
        }
        list = json_object_object_get(result, "nodes");
        n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
        table_init(&t, 8, 0xf8u);
        r = table_add(&t, "NODE", "HOST", "STATE", "PID", "RUNNING", "MIN", "MAX", "LEASE-AGE");
        for (i = 0; i < n && r == 0; i++) {
                json_object *node = json_object_array_get_idx(list, i);
                static const char *const counts[] = {"pid", "running", "min_threads",
                                                     "max_threads"};
                char name[80], cells[5][24];
                const char *row[8];

                snprintf(name, sizeof(name), "%s%s", json_str(node, "name", "?"),
                         json_object_get_boolean(json_object_object_get(node, "self")) ? " *"
                                                                                       : "");
                row[0] = name;
                row[1] = json_str(node, "host", "?");
                row[2] = json_str(node, "state", "?");
                for (size_t c = 0; c < 4; c++) {
                        snprintf(cells[c], sizeof(cells[c]), "%lld",
                                 (long long)json_int(node, counts[c], 0));
                        row[c + 3] = cells[c];
                }
                snprintf(cells[4], sizeof(cells[4]), "%.1fs",
                         json_object_get_double(json_object_object_get(node, "lease_age")));
                row[7] = cells[4];
                r = table_add_row(&t, row);
        }
        if (r == 0)
                table_print(&t, stdout);
        else
                r = ctl_error(x, "out of memory");
        table_clear(&t);
        json_object_put(result);
        return r;
}

int cmd_ping(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *result;
        int r = ctl_call(x, NULL, "ping", NULL, &result);

        if (r)
                return r;
        if (!x->json)
                escape_linef(stdout, "pong from %s (%s instance)", sw_client_socket(x->client),
                             json_str(result, "instance", "an unknown"));
        json_object_put(result);
        return EXIT_OK;
}

int cmd_version(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *result;
        int r;

        if (!x->json) {
                printf("slowctl %s\n", PACKAGE_VERSION);
                fflush(stdout);
        }
        r = ctl_call(x, NULL, "version", NULL, &result);
        if (r)
                return r;
        if (!x->json)
                escape_linef(stdout, "slowworkd %s (protocol %lld)",
                             json_str(result, "version", "?"),
                             (long long)json_int(result, "protocol", 0));
        json_object_put(result);
        return EXIT_OK;
}
