/* SPDX-License-Identifier: MIT */
/* What the database drivers share: how a row's texts become the daemon's values. */
#include <json-c/json.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "methods.h"
#include "util/strv.h"

/* An environment's row ("[\"K=V\", ...]") as a NULL-terminated vector. */
static char **db_parse_env(const char *text)
{
        json_object *a = text ? json_tokener_parse(text) : NULL;
        size_t i,
            n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
        char **vars = a ? calloc(n + 1, sizeof(*vars)) : NULL;

        for (i = 0; vars && i < n; i++)
                vars[i] = strdup(json_object_get_string(json_object_array_get_idx(a, i)));
        json_object_put(a);
        return vars;
}

char **db_env_of(struct db_env_rows *rows, int64_t id, const char *text)
{
        if (id != rows->id || !rows->vars) {
                db_env_rows_free(rows);
                rows->id = id;
                rows->vars = db_parse_env(text);
        }
        return rows->vars;
}

void db_env_rows_free(struct db_env_rows *rows)
{
        strv_free(rows->vars);
        rows->vars = NULL;
}

const char *db_outcome_name(const char *text)
{
        for (const char *const *o = sw_outcomes; text && *o; o++)
                if (strcmp(text, *o) == 0)
                        return *o;
        return "interrupted";
}

void db_mail_free(struct db_mail *m)
{
        while (m) {
                struct db_mail *next = m->next;

                free(m->from);
                free(m->kind);
                free(m->body);
                free(m->refused);
                free(m);
                m = next;
        }
}

bool db_setting_shared(const char *name)
{
        return strcmp(name, "paused") == 0 || strncmp(name, "queue.", strlen("queue.")) == 0;
}
