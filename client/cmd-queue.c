/* SPDX-License-Identifier: MIT */
/* The named queues: queue add, queue rm, queue ls. Only add and rm change something: they say
 * so when they go to the system instance because no user instance answered (ctl_changes()). */
#include <stdio.h>
#include <string.h>

#include "escape.h"
#include "output.h"
#include "slowctl.h"

static int queue_add(struct ctl *x, const struct opts *o, const char *name)
{
        json_object *p = o->queue_settings ? json_object_get(o->queue_settings)
                                           : json_object_new_object();
        int r;

        json_object_object_add(p, "name", json_object_new_string(name));
        r = ctl_connect(x);
        if (r) {
                json_object_put(p);
                return r;
        }
        ctl_tell_fallback(x, "queue add");
        r = ctl_call(x, NULL, "queue.add", p, NULL);
        if (r == 0 && !x->json)
                escape_linef(stdout, "queue %s added", name);
        return r;
}

static int queue_rm(struct ctl *x, const char *name)
{
        json_object *p;
        int r = ctl_connect(x);

        if (r)
                return r;
        ctl_tell_fallback(x, "queue rm");
        p = json_object_new_object();
        json_object_object_add(p, "name", json_object_new_string(name));
        r = ctl_call(x, NULL, "queue.remove", p, NULL);
        if (r == 0 && !x->json)
                escape_linef(stdout, "queue %s removed", name);
        return r;
}

static int queue_ls(struct ctl *x)
{
        json_object *result, *list;
        struct table t;
        size_t i, n;
        int r = ctl_call(x, NULL, "queue.list", NULL, &result);

        if (r || x->json) {
                json_object_put(result);
                return r;
        }
        list = json_object_object_get(result, "queues");
        n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;
        table_init(&t, 8, 0xfeu);
        r = table_add(&t, "QUEUE", "MIN", "MAX", "VSLOW%", "THREADS", "RUNNING", "QUEUED",
                      "PAUSED");
        for (i = 0; i < n && r == 0; i++) {
                json_object *q = json_object_array_get_idx(list, i);
                static const char *const counts[] = {"min-threads", "max-threads",
                                                     "vslow-percentage", "threads", "running",
                                                     "queued"};
                char cells[6][24];
                const char *row[8];

                row[0] = json_str(q, "name", "?");
                for (size_t c = 0; c < 6; c++) {
                        snprintf(cells[c], sizeof(cells[c]), "%lld",
                                 (long long)json_int(q, counts[c], 0));
                        row[c + 1] = cells[c];
                }
                row[7] = json_object_get_boolean(json_object_object_get(q, "paused")) ? "yes"
                                                                                       : "no";
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

int cmd_queue(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        bool settings = o->queue_settings != NULL;

        if (strcmp(argv[0], "add") == 0 && argc == 2)
                return queue_add(x, o, argv[1]);
        if (strcmp(argv[0], "rm") == 0 && argc == 2 && !settings)
                return queue_rm(x, argv[1]);
        if (strcmp(argv[0], "ls") == 0 && argc == 1 && !settings)
                return queue_ls(x);
        return ctl_usage_error(x, "queue takes add Q [SETTINGS], rm Q or ls");
}
