/* SPDX-License-Identifier: MIT */
/* Tables sized from their data, JSON lines, and values out of results. */
#define _GNU_SOURCE
#include <errno.h>
#include <pwd.h>
#include <stdio.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "format.h"
#include "output.h"

#define TABLE_GAP 2 /* spaces between columns */

void table_init(struct table *t, unsigned ncols, unsigned right)
{
        *t = (struct table){.ncols = ncols, .right = right};
}

/* A cell, in its colour if it has one. */
static void print_cell(const struct table *t, size_t row, unsigned col, const char *cell, FILE *f)
{
        const char *sgr = t->colour && (t->coloured & (1u << col)) ? t->colour(t, row, cell) : NULL;

        if (sgr)
                fprintf(f, "%s%s%s", sgr, cell, FORMAT_COLOUR_OFF);
        else
                fputs(cell, f);
}

/* A copy fit for one line of a table, and for a terminal. */
static char *cell_dup(const char *s)
{
        return escape_dup(s, 0);
}

int table_add_row(struct table *t, const char *const *cells)
{
        size_t first = t->nrows * t->ncols;
        unsigned i;

        if (first + t->ncols > t->size) {
                size_t size = t->size ? 2 * t->size : 16 * t->ncols;
                char **p = realloc(t->cells, size * sizeof(*p));

                if (!p)
                        return -ENOMEM;
                t->cells = p;
                t->size = size;
        }
        for (i = 0; i < t->ncols; i++) {
                t->cells[first + i] = cell_dup(cells[i]);
                if (!t->cells[first + i]) {
                        while (i-- > 0)
                                free(t->cells[first + i]);
                        return -ENOMEM;
                }
        }
        t->nrows++;
        return 0;
}

int table_add(struct table *t, ...)
{
        const char *cells[16];
        unsigned i;
        va_list ap;

        if (t->ncols > sizeof(cells) / sizeof(cells[0]))
                return -EINVAL;
        va_start(ap, t);
        for (i = 0; i < t->ncols; i++)
                cells[i] = va_arg(ap, const char *);
        va_end(ap);
        return table_add_row(t, cells);
}

/* Columns on a terminal: UTF-8 characters, not bytes. */
static size_t width(const char *s)
{
        size_t n = 0;

        for (; *s; s++)
                n += ((unsigned char)*s & 0xc0) != 0x80;
        return n;
}

void table_print(const struct table *t, FILE *f)
{
        size_t *widths = calloc(t->ncols, sizeof(*widths)), row;
        unsigned i;

        if (!widths)
                return;
        for (row = 0; row < t->nrows; row++)
                for (i = 0; i < t->ncols; i++) {
                        size_t w = width(t->cells[row * t->ncols + i]);

                        if (w > widths[i])
                                widths[i] = w;
                }
        for (row = 0; row < t->nrows; row++) {
                for (i = 0; i < t->ncols; i++) {
                        const char *cell = t->cells[row * t->ncols + i];
                        int pad = (int)(widths[i] - width(cell));
                        bool last = i + 1 == t->ncols;

                        if (t->right & (1u << i))
                                fprintf(f, "%*s", pad, "");
                        print_cell(t, row, i, cell, f);
                        if (!(t->right & (1u << i)) && !last)
                                fprintf(f, "%*s", pad, "");
                        if (!last)
                                fprintf(f, "%*s", TABLE_GAP, "");
                }
                fputc('\n', f);
        }
        free(widths);
}

void table_clear(struct table *t)
{
        size_t i;

        for (i = 0; i < t->nrows * t->ncols; i++)
                free(t->cells[i]);
        free(t->cells);
        table_init(t, t->ncols, t->right);
}

/* Adds an object's members as rows NAME VALUE, the members of objects within as NAME.MEMBER. */
/* A job's limit that is off: 0 is no limit, but for nice (a niceness of 0). */
static bool limit_off(const char *prefix, const char *name, json_object *v)
{
        return strcmp(prefix, "limits.") == 0 && strcmp(name, "nice") != 0 &&
               json_object_is_type(v, json_type_int) && json_object_get_int64(v) == 0;
}

static int add_members(struct table *t, const char *prefix, json_object *o, const char *skip,
                       bool human)
{
        int r;

        json_object_object_foreach(o, name, value)
        {
                bool inner = json_object_is_type(value, json_type_object);
                char *key, *text;

                if (skip && strcmp(name, skip) == 0)
                        continue;
                if (asprintf(&key, "%s%s%s", prefix, name, inner ? "." : "") < 0)
                        return -ENOMEM;
                if (inner) {
                        r = add_members(t, key, value, NULL, human);
                } else {
                        if (!human)
                                text = output_value(value);
                        else if (limit_off(prefix, name, value))
                                text = strdup("none");
                        else
                                text = output_human(name, value);
                        r = text ? table_add(t, key, text) : -ENOMEM;
                        free(text);
                }
                free(key);
                if (r < 0)
                        return r;
        }
        return 0;
}

int output_object(json_object *o, const char *skip)
{
        struct table t;
        int r;

        table_init(&t, 2, 0);
        r = add_members(&t, "", o, skip, false);
        if (r == 0)
                table_print(&t, stdout);
        table_clear(&t);
        return r;
}

const char *output_outcome_colour(const char *outcome)
{
        static int wanted = -1;

        if (wanted < 0)
                wanted = format_colour_wanted(fileno(stdout));
        return wanted ? format_outcome_colour(outcome) : NULL;
}

const char *output_user(int64_t uid)
{
        static char buf[64];
        struct passwd pw, *found = NULL;
        char names[1024];

        if (uid >= 0 && uid <= UINT32_MAX &&
            getpwuid_r((uid_t)uid, &pw, names, sizeof(names), &found) == 0 && found)
                snprintf(buf, sizeof(buf), "%s", found->pw_name);
        else
                snprintf(buf, sizeof(buf), "%lld", (long long)uid);
        return buf;
}

static bool is_one_of(const char *name, const char *const *names)
{
        for (; *names; names++)
                if (strcmp(name, *names) == 0)
                        return true;
        return false;
}

char *output_human(const char *name, json_object *v)
{
        static const char *const times[] = {"submitted", "started", "ended", "next_run", "created", NULL};
        static const char *const durations[] = {
            "timeout",      "delay",      "cpu_time",     "cpu-time",    "retry_delay",
            "every",        "idle-timeout", "kill-grace", "stop-timeout", NULL};
        static const char *const sizes[] = {"memory_peak", "memory_max", "log-limit", NULL};
        char buf[FORMAT_MAX];
        bool number =
            json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double);

        if (number && is_one_of(name, times))
                return strdup(format_time(json_object_get_double(v), buf, sizeof(buf)));
        if (number && is_one_of(name, durations))
                return strdup(format_duration(json_object_get_double(v), buf, sizeof(buf)));
        if (json_object_is_type(v, json_type_int) && is_one_of(name, sizes))
                return strdup(format_size(json_object_get_int64(v), buf, sizeof(buf)));
        if (json_object_is_type(v, json_type_int) && strcmp(name, "owner") == 0)
                return strdup(output_user(json_object_get_int64(v)));
        return output_value(v);
}

/* An outcome's value in a NAME VALUE table ("outcome", "last.outcome"). */
static const char *colour_outcome_row(const struct table *t, size_t row, const char *cell)
{
        const char *name = t->cells[row * t->ncols], *dot = strrchr(name, '.');

        return strcmp(dot ? dot + 1 : name, "outcome") == 0 ? output_outcome_colour(cell) : NULL;
}

int output_object_human(json_object *o, const char *skip)
{
        struct table t;
        int r;

        table_init(&t, 2, 0);
        t.coloured = 1u << 1;
        t.colour = colour_outcome_row;
        r = add_members(&t, "", o, skip, true);
        if (r == 0)
                table_print(&t, stdout);
        table_clear(&t);
        return r;
}

void output_json(json_object *o)
{
        puts(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                   JSON_C_TO_STRING_NOSLASHESCAPE));
}

char *output_value(json_object *v)
{
        if (!v)
                return strdup("-");
        if (json_object_is_type(v, json_type_string))
                return strdup(json_object_get_string(v));
        return strdup(json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
}

int64_t json_int(json_object *o, const char *name, int64_t fallback)
{
        json_object *v;

        if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_int))
                return fallback;
        return json_object_get_int64(v);
}

double json_double(json_object *o, const char *name, double fallback)
{
        json_object *v;

        if (!json_object_object_get_ex(o, name, &v) ||
            (!json_object_is_type(v, json_type_int) && !json_object_is_type(v, json_type_double)))
                return fallback;
        return json_object_get_double(v);
}

bool json_true(json_object *o, const char *name)
{
        json_object *v;

        return json_object_object_get_ex(o, name, &v) && json_object_is_type(v, json_type_boolean) &&
               json_object_get_boolean(v);
}

bool output_several_nodes(json_object *items)
{
        size_t n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;

        for (size_t i = 1; i < n; i++)
                if (strcmp(json_str(json_object_array_get_idx(items, i), "node", ""),
                           json_str(json_object_array_get_idx(items, 0), "node", "")) != 0)
                        return true;
        return false;
}

const char *json_str(json_object *o, const char *name, const char *fallback)
{
        json_object *v;

        if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
                return fallback;
        return json_object_get_string(v);
}
