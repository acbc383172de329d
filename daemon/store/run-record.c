/* SPDX-License-Identifier: MIT */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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
        if (!copy->summary || (rec->log && !copy->log)) {
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
