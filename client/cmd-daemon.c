/* SPDX-License-Identifier: MIT */
/* The daemon's own commands: get, set, reload, nodes, ping, version. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "output.h"
#include "slowctl.h"

/* One per line, values in the column after the longest of the pool's names: a longer name (the
 * limits' default-* ones) pushes its own value only, so the column stays where scripts and eyes
 * found it. */
#define SETTING_NAME_COLUMN 16
static int print_settings(json_object *settings)
{
        json_object_object_foreach(settings, name, value)
        {
                char *text = output_value(value);

                if (!text)
                        return -1;
                printf("%-*s  %s\n", SETTING_NAME_COLUMN, name, text);
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
                text = output_value(value);
                if (text)
                        puts(text);
                else
                        r = ctl_error(x, "out of memory");
                free(text);
        }
        json_object_put(result);
        return r;
}

/* Whether the setting takes a path (metrics-file), given as it is. */
static bool takes_path(const char *name)
{
        for (const struct sw_param *p = sw_settings_params; p->name; p++)
                if (strcmp(p->name, name) == 0)
                        return p->type == SW_P_PATH;
        return false;
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
                v = takes_path(argv[i]) ? json_object_new_string(argv[i + 1])
                                        : ctl_parse_number(argv[i + 1]);
                if (!v) {
                        json_object_put(p);
                        return ctl_usage_error(x, "the value of %s must be a number, not \"%s\"",
                                               argv[i], argv[i + 1]);
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

int cmd_nodes(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *result, *list;
        struct table t;
        size_t i, n;
        int r = ctl_call(x, NULL, "nodes", NULL, &result);

        if (r || x->json) {
                json_object_put(result);
                return r;
        }
        list = json_object_object_get(result, "nodes");
        n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
        table_init(&t, 7, 0x7cu);
        r = table_add(&t, "NODE", "HOST", "PID", "RUNNING", "MIN", "MAX", "LEASE-AGE");
        for (i = 0; i < n && r == 0; i++) {
                json_object *node = json_object_array_get_idx(list, i);
                static const char *const counts[] = {"pid", "running", "min_threads",
                                                     "max_threads"};
                char name[80], cells[5][24];
                const char *row[7];

                snprintf(name, sizeof(name), "%s%s", json_str(node, "name", "?"),
                         json_object_get_boolean(json_object_object_get(node, "self")) ? " *"
                                                                                       : "");
                row[0] = name;
                row[1] = json_str(node, "host", "?");
                for (size_t c = 0; c < 4; c++) {
                        snprintf(cells[c], sizeof(cells[c]), "%lld",
                                 (long long)json_int(node, counts[c], 0));
                        row[c + 2] = cells[c];
                }
                snprintf(cells[4], sizeof(cells[4]), "%.1fs",
                         json_object_get_double(json_object_object_get(node, "lease_age")));
                row[6] = cells[4];
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
                printf("pong from %s (%s instance)\n", sw_client_socket(x->client),
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
                printf("slowworkd %s (protocol %lld)\n", json_str(result, "version", "?"),
                       (long long)json_int(result, "protocol", 0));
        json_object_put(result);
        return EXIT_OK;
}
