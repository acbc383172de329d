/* SPDX-License-Identifier: MIT */
/* What a connection has of the registry: the jobs it holds (hold) and its subscription to their
 * events; both go with the connection (registry_forget). */
#include <errno.h>
#include <stdlib.h>

#include "jobs/registry.h"
#include "server/conn.h"
#include "store/run-record.h"

static struct client *client_of(struct registry *reg, struct conn *c)
{
        struct client *cl = c->data;

        if (cl)
                return cl;
        cl = calloc(1, sizeof(*cl));
        if (!cl)
                return NULL;
        cl->conn = c;
        cl->next = reg->clients;
        if (reg->clients)
                reg->clients->prev = cl;
        reg->clients = cl;
        c->data = cl;
        return cl;
}

int registry_hold(struct registry *reg, struct conn *c, struct job *job)
{
        struct client *cl = client_of(reg, c);

        if (!cl)
                return -ENOMEM;
        if (cl->nholds == cl->holds_size) {
                size_t size = cl->holds_size ? 2 * cl->holds_size : 8;
                int64_t *holds = realloc(cl->holds, size * sizeof(*holds));

                if (!holds)
                        return -ENOMEM;
                cl->holds = holds;
                cl->holds_size = size;
        }
        cl->holds[cl->nholds++] = job->id;
        job->handles++;
        return 0;
}

bool registry_unhold(struct registry *reg, struct conn *c, struct job *job)
{
        struct client *cl = c->data;

        for (size_t i = 0; cl && i < cl->nholds; i++)
                if (cl->holds[i] == job->id) {
                        cl->holds[i] = cl->holds[--cl->nholds];
                        job->handles--;
                        return true;
                }
        return false;
}

void registry_forget(struct registry *reg, struct conn *c)
{
        struct client *cl = c->data;

        if (!cl)
                return;
        c->data = NULL;
        if (cl->prev)
                cl->prev->next = cl->next;
        else
                reg->clients = cl->next;
        if (cl->next)
                cl->next->prev = cl->prev;
        while (cl->nholds > 0) {
                struct job *job = registry_find(reg, cl->holds[--cl->nholds]);

                if (job) {
                        job->handles--;
                        registry_check_idle(reg, job);
                }
        }
        free(cl->holds);
        free(cl);
}

int registry_subscribe(struct registry *reg, struct conn *c)
{
        struct client *cl = client_of(reg, c);

        if (!cl)
                return -ENOMEM;
        cl->subscribed = true;
        return 0;
}

void registry_notify(struct registry *reg, struct job *job, const char *state,
                     const struct run_record *ended)
{
        struct client *cl, *next;

        /* A client that does not read its events is dropped by conn_notify(), which frees it. */
        for (cl = reg->clients; cl; cl = next) {
                json_object *o;

                next = cl->next;
                if (!cl->subscribed || !registry_may_touch(cl->conn, job->owner))
                        continue;
                o = json_object_new_object();
                json_object_object_add(o, "id", json_object_new_int64(job->id));
                json_object_object_add(o, "state", json_object_new_string(state));
                if (ended) {
                        json_object_object_add(o, "run", json_object_new_int64(ended->run));
                        json_object_object_add(o, "outcome",
                                               json_object_new_string(ended->outcome));
                }
                conn_notify(cl->conn, sw_notification_line("event", o));
        }
}
