/* SPDX-License-Identifier: MIT */
/* slowctl's output: aligned tables, JSON lines, and reading values out of results. */
#ifndef SLOWCTL_OUTPUT_H
#define SLOWCTL_OUTPUT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Rows of cells, printed with each column as wide as its widest cell. */
struct table {
        unsigned ncols;
        unsigned right; /* bit i: column i is aligned to the right */
        char **cells;   /* row after row, ncols each */
        size_t nrows, size;
        /* Cells of the columns in coloured (bit i: column i) are printed after the escape
         * sequence colour() gives for them (when not NULL), and a reset; widths leave both out. */
        unsigned coloured;
        const char *(*colour)(const struct table *t, size_t row, const char *cell);
};

void table_init(struct table *t, unsigned ncols, unsigned right);
/* Adds a row of ncols cells, given as arguments or as an array (NULL prints as "-"); controls
 * are shown escaped (escape.h). 0 or -ENOMEM. */
int table_add(struct table *t, ...);
int table_add_row(struct table *t, const char *const *cells);
void table_print(const struct table *t, FILE *f);
void table_clear(struct table *t);

/* An object's members as an aligned two-column table on stdout, leaving out the member skip (or
 * NULL); objects within as NAME.MEMBER. 0 or -ENOMEM. */
int output_object(json_object *o, const char *skip);
/* The same for a person: times, durations, sizes and owners by the member's name (see
 * output_human), outcomes in colour on a terminal. */
int output_object_human(json_object *o, const char *skip);
/* A member's value for a person, by its name: times (started, ended, next_run) in local time,
 * durations (timeout, cpu_time, ...) and sizes (memory_peak, ...) in their units, owner as a
 * user name; else as output_value(). malloc'd. */
char *output_human(const char *name, json_object *v);
/* A uid's user name, or the uid as text when it has none: a static buffer. */
const char *output_user(int64_t uid);
/* The colour of an outcome where stdout wants colours, else NULL. */
const char *output_outcome_colour(const char *outcome);
/* Whether the objects of an array (jobs, runs) name more than one "node": a shared database's,
 * whose tables then show a NODE column. */
bool output_several_nodes(json_object *items);
/* One line of compact JSON on stdout. */
void output_json(json_object *o);
/* A value as text: strings bare, null as "-", numbers and the rest as JSON; malloc'd. */
char *output_value(json_object *v);

/* Members of a result, with a fallback when absent or of another type. */
int64_t json_int(json_object *o, const char *name, int64_t fallback);
double json_double(json_object *o, const char *name, double fallback);
bool json_true(json_object *o, const char *name); /* false unless it is true */
const char *json_str(json_object *o, const char *name, const char *fallback);

#endif
