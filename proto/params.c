/* SPDX-License-Identifier: MIT */
/*
 * Declarative parameters. Every member is checked and converted into a staging area first, so
 * that out changes only when the whole object is valid, and a failure leaves nothing behind.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error-internal.h"
#include "methods.h"
#include "proto.h"

union value {
        bool b;
        int64_t i;
        double d;
        char *s;
        char **v;
        json_object *j;
        int64_t *ids;
};

struct staged {
        bool given;
        union value v;
};

#define invalid(errbuf, errlen, ...) proto_error(errbuf, errlen, SW_E_INVALID_PARAMS, __VA_ARGS__)

static int out_of_memory(char *errbuf, size_t errlen)
{
        if (errbuf && errlen > 0)
                snprintf(errbuf, errlen, "out of memory");
        return -ENOMEM;
}

static void strv_free(char **v)
{
        size_t i;

        if (!v)
                return;
        for (i = 0; v[i]; i++)
                free(v[i]);
        free(v);
}

/* Frees what a field (or a staged value, which has the field's type) holds, and zeroes it. */
static void field_clear(const struct sw_param *p, void *field)
{
        switch (p->type) {
        case SW_P_BOOL:
                *(bool *)field = false;
                break;
        case SW_P_INT:
                *(int64_t *)field = 0;
                break;
        case SW_P_SECONDS:
                *(double *)field = 0;
                break;
        case SW_P_STRING:
                free(*(char **)field);
                *(char **)field = NULL;
                break;
        case SW_P_STRV:
        case SW_P_ENV:
                strv_free(*(char ***)field);
                *(char ***)field = NULL;
                break;
        case SW_P_JSON:
                json_object_put(*(json_object **)field);
                *(json_object **)field = NULL;
                break;
        case SW_P_IDS:
                free(*(int64_t **)field);
                *(int64_t **)field = NULL;
                break;
        case SW_P_PATH:
        case SW_P_TEXT:
        case SW_P_QUEUES:
                *(char *)field = '\0';
                break;
        }
}

/* Frees what a staged value holds: a field's, but a path's or a text's is its JSON string. */
static void staged_clear(const struct sw_param *p, union value *v)
{
        if (sw_ptype_in_place(p->type)) {
                json_object_put(v->j);
                v->j = NULL;
        } else
                field_clear(p, v);
}

static bool has_range(const struct sw_param *p)
{
        return p->min != 0 || p->max != 0;
}

/* A JSON string without NUL bytes. */
static bool is_plain_string(json_object *val)
{
        return json_object_is_type(val, json_type_string) &&
               !memchr(json_object_get_string(val), '\0', (size_t)json_object_get_string_len(val));
}

static int convert_int(const struct sw_param *p, json_object *val, union value *v, char *errbuf,
                       size_t errlen)
{
        int64_t i;

        if (!json_object_is_type(val, json_type_int))
                return invalid(errbuf, errlen, "parameter \"%s\" must be an integer", p->name);
        i = json_object_get_int64(val);
        /* json-c clamps what does not fit an int64; a true INT64_MAX reads the same as uint64. */
        if (i == INT64_MAX && json_object_get_uint64(val) != (uint64_t)INT64_MAX)
                return invalid(errbuf, errlen, "parameter \"%s\" is too large", p->name);
        if (has_range(p) && ((double)i < p->min || (double)i > p->max))
                return invalid(errbuf, errlen, "parameter \"%s\" must be between %.0f and %.0f",
                               p->name, p->min, p->max);
        v->i = i;
        return 0;
}

static int convert_seconds(const struct sw_param *p, json_object *val, union value *v, char *errbuf,
                           size_t errlen)
{
        double d;

        if (!json_object_is_type(val, json_type_int) && !json_object_is_type(val, json_type_double))
                return invalid(errbuf, errlen, "parameter \"%s\" must be a number", p->name);
        d = json_object_get_double(val);
        if (!isfinite(d))
                return invalid(errbuf, errlen, "parameter \"%s\" must be a finite number", p->name);
        if (has_range(p) && (d < p->min || d > p->max))
                return invalid(errbuf, errlen,
                               "parameter \"%s\" must be between %.15g and %.15g seconds", p->name,
                               p->min, p->max);
        v->d = d;
        return 0;
}

static int convert_string(const struct sw_param *p, json_object *val, union value *v, char *errbuf,
                          size_t errlen)
{
        if (!json_object_is_type(val, json_type_string))
                return invalid(errbuf, errlen, "parameter \"%s\" must be a string", p->name);
        if (!is_plain_string(val))
                return invalid(errbuf, errlen, "parameter \"%s\" must not contain NUL bytes",
                               p->name);
        if (p->max > 0 && (double)json_object_get_string_len(val) > p->max)
                return invalid(errbuf, errlen, "parameter \"%s\" must be at most %.0f bytes long",
                               p->name, p->max);
        v->s = strdup(json_object_get_string(val));
        if (!v->s)
                return out_of_memory(errbuf, errlen);
        return 0;
}

/* Whether text is "*" or queue names joined by commas. */
static bool queue_list(const char *text)
{
        if (strcmp(text, "*") == 0)
                return true;
        for (;;) {
                size_t n = strcspn(text, ",");
                char name[SW_QUEUE_NAME_MAX + 1], err[8];

                if (n == 0 || n > SW_QUEUE_NAME_MAX)
                        return false;
                memcpy(name, text, n);
                name[n] = '\0';
                if (sw_queue_name_check("", name, err, sizeof(err)))
                        return false;
                if (!text[n])
                        return true;
                text += n + 1;
        }
}

/* A path's or a text's string, kept in place once every row is parsed. */
static int convert_path(const struct sw_param *p, json_object *val, union value *v, char *errbuf,
                        size_t errlen)
{
        const char *path = json_object_get_string(val);

        if (p->type == SW_P_TEXT && !is_plain_string(val))
                return invalid(errbuf, errlen,
                               "parameter \"%s\" must be a string without NUL bytes, or \"\" for "
                               "none",
                               p->name);
        if (p->type == SW_P_PATH && (!is_plain_string(val) || (path[0] != '\0' && path[0] != '/')))
                return invalid(errbuf, errlen,
                               "parameter \"%s\" must be an absolute path, or \"\" for none",
                               p->name);
        if (p->type == SW_P_QUEUES && (!is_plain_string(val) || !queue_list(path)))
                return invalid(errbuf, errlen,
                               "parameter \"%s\" must be \"*\" or queue names (1 to %d of A-Z "
                               "a-z 0-9 . _ -) joined by commas",
                               p->name, SW_QUEUE_NAME_MAX);
        if ((double)json_object_get_string_len(val) > p->max)
                return invalid(errbuf, errlen, "parameter \"%s\" must be at most %.0f bytes long",
                               p->name, p->max);
        v->j = json_object_get(val);
        return 0;
}

static int convert_strv(const struct sw_param *p, json_object *val, union value *v, char *errbuf,
                        size_t errlen)
{
        size_t n, i;
        char **strv;

        if (!json_object_is_type(val, json_type_array) || json_object_array_length(val) == 0)
                return invalid(errbuf, errlen,
                               "parameter \"%s\" must be a non-empty array of strings", p->name);
        n = json_object_array_length(val);
        for (i = 0; i < n; i++) {
                json_object *s = json_object_array_get_idx(val, i);

                if (!json_object_is_type(s, json_type_string))
                        return invalid(errbuf, errlen,
                                       "parameter \"%s\" must be a non-empty array of strings",
                                       p->name);
                if (!is_plain_string(s))
                        return invalid(errbuf, errlen,
                                       "parameter \"%s\" must not contain NUL bytes", p->name);
        }
        strv = calloc(n + 1, sizeof(*strv));
        if (!strv)
                return out_of_memory(errbuf, errlen);
        for (i = 0; i < n; i++) {
                strv[i] = strdup(json_object_get_string(json_object_array_get_idx(val, i)));
                if (!strv[i]) {
                        strv_free(strv);
                        return out_of_memory(errbuf, errlen);
                }
        }
        v->v = strv;
        return 0;
}

/* "KEY=VALUE" from one member of an env object, or NULL. */
static char *env_entry(const char *key, json_object *val)
{
        size_t klen = strlen(key), vlen = (size_t)json_object_get_string_len(val);
        char *entry = malloc(klen + 1 + vlen + 1);

        if (!entry)
                return NULL;
        memcpy(entry, key, klen);
        entry[klen] = '=';
        memcpy(entry + klen + 1, json_object_get_string(val), vlen + 1);
        return entry;
}

static int check_env(const struct sw_param *p, json_object *val, char *errbuf, size_t errlen)
{
        json_object_object_foreach(val, key, s)
        {
                if (!json_object_is_type(s, json_type_string))
                        return invalid(errbuf, errlen,
                                       "parameter \"%s\" must be an object of strings", p->name);
                if (!is_plain_string(s))
                        return invalid(errbuf, errlen,
                                       "parameter \"%s\" must not contain NUL bytes", p->name);
                if (key[0] == '\0' || strchr(key, '='))
                        return invalid(errbuf, errlen,
                                       "parameter \"%s\": invalid variable name \"%.64s\"", p->name,
                                       key);
        }
        return 0;
}

static int convert_env(const struct sw_param *p, json_object *val, union value *v, char *errbuf,
                       size_t errlen)
{
        size_t n = 0;
        char **strv;
        int r;

        if (!json_object_is_type(val, json_type_object))
                return invalid(errbuf, errlen, "parameter \"%s\" must be an object of strings",
                               p->name);
        r = check_env(p, val, errbuf, errlen);
        if (r)
                return r;
        strv = calloc((size_t)json_object_object_length(val) + 1, sizeof(*strv));
        if (!strv)
                return out_of_memory(errbuf, errlen);
        json_object_object_foreach(val, key, s)
        {
                strv[n] = env_entry(key, s);
                if (!strv[n]) {
                        strv_free(strv);
                        return out_of_memory(errbuf, errlen);
                }
                n++;
        }
        v->v = strv;
        return 0;
}

static int convert_ids(const struct sw_param *p, json_object *val, union value *v, char *errbuf,
                       size_t errlen)
{
        size_t n, i;

        if (!json_object_is_type(val, json_type_array))
                return invalid(errbuf, errlen, "parameter \"%s\" must be an array of job ids",
                               p->name);
        n = json_object_array_length(val);
        if (p->max > 0 && (double)n > p->max)
                return invalid(errbuf, errlen, "parameter \"%s\" may name at most %.0f jobs",
                               p->name, p->max);
        for (i = 0; i < n; i++) {
                json_object *id = json_object_array_get_idx(val, i);

                if (!json_object_is_type(id, json_type_int) || json_object_get_int64(id) < 1 ||
                    json_object_get_int64(id) > INT64_C(9007199254740991))
                        return invalid(errbuf, errlen,
                                       "parameter \"%s\" must be an array of job ids (positive "
                                       "integers)",
                                       p->name);
        }
        v->ids = calloc(n + 1, sizeof(*v->ids));
        if (!v->ids)
                return out_of_memory(errbuf, errlen);
        for (i = 0; i < n; i++)
                v->ids[i] = json_object_get_int64(json_object_array_get_idx(val, i));
        return 0;
}

static int convert(const struct sw_param *p, json_object *val, union value *v, char *errbuf,
                   size_t errlen)
{
        switch (p->type) {
        case SW_P_BOOL:
                if (!json_object_is_type(val, json_type_boolean))
                        return invalid(errbuf, errlen, "parameter \"%s\" must be a boolean",
                                       p->name);
                v->b = json_object_get_boolean(val);
                return 0;
        case SW_P_INT:
                return convert_int(p, val, v, errbuf, errlen);
        case SW_P_SECONDS:
                return convert_seconds(p, val, v, errbuf, errlen);
        case SW_P_STRING:
                return convert_string(p, val, v, errbuf, errlen);
        case SW_P_STRV:
                return convert_strv(p, val, v, errbuf, errlen);
        case SW_P_ENV:
                return convert_env(p, val, v, errbuf, errlen);
        case SW_P_JSON:
                v->j = json_object_get(val);
                return 0;
        case SW_P_IDS:
                return convert_ids(p, val, v, errbuf, errlen);
        case SW_P_PATH:
        case SW_P_TEXT:
        case SW_P_QUEUES:
                return convert_path(p, val, v, errbuf, errlen);
        }
        return invalid(errbuf, errlen, "parameter \"%s\" has an unknown type", p->name);
}

static size_t table_len(const struct sw_param *table)
{
        size_t n = 0;

        while (table[n].name)
                n++;
        return n;
}

static const struct sw_param *lookup(const struct sw_param *table, const char *name)
{
        for (; table->name; table++)
                if (strcmp(table->name, name) == 0)
                        return table;
        return NULL;
}

/* Fills st, one entry per table row, from the members of params. */
static int stage(json_object *params, const struct sw_param *table, struct staged *st, char *errbuf,
                 size_t errlen)
{
        const struct sw_param *p;
        int r;

        json_object_object_foreach(params, key, val)
        {
                p = lookup(table, key);
                if (!p)
                        return invalid(errbuf, errlen, "unknown parameter \"%.64s\"", key);
                r = convert(p, val, &st[p - table].v, errbuf, errlen);
                if (r)
                        return r;
                st[p - table].given = true;
        }
        return 0;
}

/* Moves a staged value into its field, freeing what the field held. */
static void store(const struct sw_param *p, void *out, union value *v)
{
        void *field = (char *)out + p->offset;

        field_clear(p, field);
        switch (p->type) {
        case SW_P_BOOL:
                *(bool *)field = v->b;
                break;
        case SW_P_INT:
                *(int64_t *)field = v->i;
                break;
        case SW_P_SECONDS:
                *(double *)field = v->d;
                break;
        case SW_P_STRING:
                *(char **)field = v->s;
                break;
        case SW_P_STRV:
        case SW_P_ENV:
                *(char ***)field = v->v;
                break;
        case SW_P_JSON:
                *(json_object **)field = v->j;
                break;
        case SW_P_IDS:
                *(int64_t **)field = v->ids;
                break;
        case SW_P_PATH:
        case SW_P_TEXT:
        case SW_P_QUEUES:
                memcpy(field, json_object_get_string(v->j),
                       (size_t)json_object_get_string_len(v->j) + 1);
                json_object_put(v->j);
                break;
        }
}

int sw_params_parse(json_object *params, const struct sw_param *table, void *out, char *errbuf,
                    size_t errlen)
{
        size_t n = table_len(table), i;
        struct staged *st;
        int r = 0;

        if (params && !json_object_is_type(params, json_type_object))
                return invalid(errbuf, errlen, "params must be an object");
        st = calloc(n + 1, sizeof(*st));
        if (!st)
                return out_of_memory(errbuf, errlen);
        if (params) {
                r = stage(params, table, st, errbuf, errlen);
                if (r)
                        goto out;
        }
        for (i = 0; i < n; i++) {
                if (table[i].required && !st[i].given) {
                        r = invalid(errbuf, errlen, "missing parameter \"%s\"", table[i].name);
                        goto out;
                }
        }
        for (i = 0; i < n; i++) {
                if (st[i].given) {
                        store(&table[i], out, &st[i].v);
                        st[i].given = false;
                }
        }
out:
        for (i = 0; i < n; i++)
                if (st[i].given)
                        staged_clear(&table[i], &st[i].v);
        free(st);
        return r;
}

void sw_params_clear(const struct sw_param *table, void *out)
{
        const struct sw_param *p;

        for (p = table; p->name; p++)
                field_clear(p, (char *)out + p->offset);
}
