/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/run-record.h"

struct node_name {
        struct node_name *next;
        char name[];
};

static struct node_name *node_names;
static pthread_mutex_t node_names_lock = PTHREAD_MUTEX_INITIALIZER;

const char *run_record_node(const char *name)
{
        struct node_name *n;

        pthread_mutex_lock(&node_names_lock);
        for (n = node_names; n && strcmp(n->name, name) != 0; n = n->next)
                ;
        if (!n && (n = malloc(sizeof(*n) + strlen(name) + 1))) {
                strcpy(n->name, name);
                n->next = node_names;
                node_names = n;
        }
        pthread_mutex_unlock(&node_names_lock);
        return n ? n->name : NULL;
}

struct run_record *run_record_dup(const struct run_record *rec)
{
        struct run_record *copy = malloc(sizeof(*copy));

        if (!copy)
                return NULL;
        *copy = *rec;
        copy->summary = strdup(rec->summary);
        copy->log = rec->log ? strdup(rec->log) : NULL;
        copy->spec = rec->spec ? strdup(rec->spec) : NULL;
        if (!copy->summary || (rec->log && !copy->log) || (rec->spec && !copy->spec)) {
                run_record_free(copy);
                return NULL;
        }
        return copy;
}

void run_record_free(struct run_record *rec)
{
        if (!rec)
                return;
        free(rec->summary);
        free(rec->log);
        free(rec->spec);
        free(rec);
}

json_object *run_record_to_json(const struct run_record *rec)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_int64(rec->id));
        json_object_object_add(o, "run", json_object_new_int64(rec->run));
        json_object_object_add(o, "class",
                               json_object_new_string(rec->very_slow ? "very-slow" : "slow"));
        json_object_object_add(o, "command", json_object_new_string(rec->summary));
        json_object_object_add(o, "owner", json_object_new_int64(rec->owner));
        json_object_object_add(o, "node", json_object_new_string(rec->node ? rec->node : ""));
        json_object_object_add(o, "outcome", json_object_new_string(rec->outcome));
        json_object_object_add(o, "attempt", json_object_new_int64(rec->attempt > 0 ? rec->attempt : 1));
        if (rec->signal)
                json_object_object_add(o, "signal", json_object_new_int(rec->signal));
        else if (rec->started > 0)
                json_object_object_add(o, "exit_code", json_object_new_int(rec->exit_code));
        json_object_object_add(o, "started", json_object_new_double(rec->started));
        json_object_object_add(o, "ended", json_object_new_double(rec->ended));
        json_object_object_add(o, "log", rec->log ? json_object_new_string(rec->log) : NULL);
        json_object_object_add(o, "oom", json_object_new_boolean(rec->oom));
        if (rec->leftovers)
                json_object_object_add(o, "leftovers", json_object_new_int(rec->leftovers));
        if (rec->cpu_time >= 0)
                json_object_object_add(o, "cpu_time", json_object_new_double(rec->cpu_time));
        if (rec->memory_peak >= 0)
                json_object_object_add(o, "memory_peak", json_object_new_int64(rec->memory_peak));
        return o;
}

static int64_t row_int(json_object *row, const char *name, int64_t none)
{
        json_object *v = json_object_object_get(row, name);

        return v ? json_object_get_int64(v) : none;
}

static double row_real(json_object *row, const char *name, double none)
{
        json_object *v = json_object_object_get(row, name);

        return v ? json_object_get_double(v) : none;
}

static const char *row_text(json_object *row, const char *name)
{
        json_object *v = json_object_object_get(row, name);

        return json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;
}

struct run_record *run_record_from_row(json_object *row)
{
        struct run_record *rec = calloc(1, sizeof(*rec));
        const char *summary = row_text(row, "summary"), *log = row_text(row, "log");

        if (!rec || !json_object_is_type(row, json_type_object) || !summary ||
            !row_text(row, "outcome") || !row_text(row, "node"))
                goto fail;
        rec->id = row_int(row, "id", 0);
        rec->run = row_int(row, "run", 0);
        rec->very_slow = row_int(row, "very_slow", 0);
        rec->owner = (uid_t)row_int(row, "owner", 0);
        rec->started = row_real(row, "started", 0);
        rec->ended = row_real(row, "ended", 0);
        rec->outcome = db_outcome_name(row_text(row, "outcome"));
        rec->exit_code = (int)row_int(row, "exit_code", 0);
        rec->signal = (int)row_int(row, "signal", 0);
        rec->oom = row_int(row, "oom", 0);
        rec->cpu_time = row_real(row, "cpu_time", -1);
        rec->memory_peak = row_int(row, "memory_peak", -1);
        rec->leftovers = (int)row_int(row, "leftovers", 0);
        rec->attempt = row_int(row, "attempt", 1);
        rec->node = run_record_node(row_text(row, "node"));
        rec->summary = strdup(summary);
        rec->log = log ? strdup(log) : NULL;
        if (!rec->node || !rec->summary || (log && !rec->log))
                goto fail;
        return rec;
fail:
        run_record_free(rec);
        return NULL;
}
