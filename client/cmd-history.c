/* SPDX-License-Identifier: MIT */
/* history, and the last runs under list --all: finished runs as a table, newest first. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "format.h"
#include "output.h"
#include "slowctl.h"

#define HISTORY_ROWS 20 /* without -n */

/* --failed: every outcome but succeeded. */
static json_object *not_succeeded(void)
{
        json_object *a = json_object_new_array();

        for (const char *const *o = sw_outcomes; a && *o; o++)
                if (strcmp(*o, "succeeded") != 0)
                        json_object_array_add(a, json_object_new_string(*o));
        return a;
}

static json_object *history_params(const struct opts *o)
{
        json_object *p = json_object_new_object();

        json_object_object_add(p, "limit",
                               json_object_new_int64(o->limit ? o->limit : HISTORY_ROWS));
        if (o->failed)
                json_object_object_add(p, "outcome", not_succeeded());
        else if (o->outcome)
                json_object_object_add(p, "outcome", json_object_new_string(o->outcome));
        if (o->since_given)
                json_object_object_add(p, "since", json_object_new_double(o->since));
        return p;
}

/* EXIT: the exit code, the signal's name, or "-" for a run that never ran. */
static void exit_text(json_object *rec, char *buf, size_t len)
{
        int64_t sig = json_int(rec, "signal", 0);
        const char *name = sig > 0 && sig < 128 ? sigabbrev_np((int)sig) : NULL;

        if (name)
                snprintf(buf, len, "SIG%s", name);
        else if (sig)
                snprintf(buf, len, "signal %lld", (long long)sig);
        else if (json_object_object_get_ex(rec, "exit_code", NULL))
                snprintf(buf, len, "%lld", (long long)json_int(rec, "exit_code", 0));
        else
                snprintf(buf, len, "-");
}

static int add_run(struct table *t, json_object *rec, bool nodes)
{
        char id[24], run[24], code[24], started[FORMAT_MAX], duration[FORMAT_MAX];
        double start = json_double(rec, "started", 0), end = json_double(rec, "ended", 0);

        snprintf(id, sizeof(id), "%lld", (long long)json_int(rec, "id", 0));
        snprintf(run, sizeof(run), "%lld", (long long)json_int(rec, "run", 0));
        exit_text(rec, code, sizeof(code));
        format_time(start, started, sizeof(started));
        if (start > 0 && end >= start)
                format_duration(end - start, duration, sizeof(duration));
        else
                snprintf(duration, sizeof(duration), "-");
        return table_add_row(t, (const char *[]){id, run, json_str(rec, "outcome", "?"), code,
                                                 started, duration,
                                                 nodes ? json_str(rec, "node", "")
                                                       : json_str(rec, "command", ""),
                                                 json_str(rec, "command", "")});
}

static const char *colour_outcome(const struct table *t, size_t row, const char *cell)
{
        return row > 0 ? output_outcome_colour(cell) : NULL;
}

static int print_runs(struct ctl *x, json_object *result)
{
        json_object *runs = json_object_object_get(result, "runs");
        size_t i,
            n = json_object_is_type(runs, json_type_array) ? json_object_array_length(runs) : 0;
        /* Runs of several nodes (a shared database) say where they ran. */
        bool nodes = output_several_nodes(runs);
        struct table t;
        int r;

        table_init(&t, 7 + nodes, 1u << 0 | 1u << 1 | 1u << 3 | 1u << 5);
        t.coloured = 1u << 2;
        t.colour = colour_outcome;
        r = table_add_row(&t, (const char *[]){"ID", "RUN", "OUTCOME", "EXIT", "STARTED",
                                               "DURATION", nodes ? "NODE" : "COMMAND", "COMMAND"});
        for (i = 0; i < n && r == 0; i++)
                r = add_run(&t, json_object_array_get_idx(runs, i), nodes);
        if (r == 0)
                table_print(&t, stdout);
        else
                r = ctl_error(x, "out of memory");
        table_clear(&t);
        return r;
}

int history_show(struct ctl *x, const struct opts *o)
{
        json_object *result = NULL;
        int r;

        if (o->failed && o->outcome)
                return ctl_usage_error(x, "give --failed or --outcome, not both");
        r = ctl_call(x, "history", "history", history_params(o), &result);
        if (r == 0 && !x->json)
                r = print_runs(x, result);
        json_object_put(result);
        return r;
}

int cmd_history(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        return history_show(x, o);
}
