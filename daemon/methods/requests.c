/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "jobs/answer.h"
#include "jobs/daemon.h"
#include "jobs/lifecycle.h"
#include "methods/requests.h"
#include "server/conn.h"
#include "store/run-record.h"

/* What a connection holds (conn->data): made by its first hold or subscribe. */
struct client {
        int64_t *holds; /* ids of the jobs it holds a handle on, one entry per handle */
        size_t nholds, holds_size;
        bool subscribed;
};

/* A request answered later. */
struct request {
        struct answer answer;
        struct conn *c;
        json_object *id;
        /* Made again where the job went (requests_answer_again()'s). */
        void (*again)(void *data, struct conn *c, json_object *id, int64_t job);
        void *data;
        int64_t job;
};

bool requests_may_touch(const struct conn *c, uid_t owner)
{
        return c->uid == owner || conn_is_admin(c);
}

bool requests_may_see_rq_entry(struct daemon *d, const struct conn *c,
                               const struct slow_work_rq_entry *e)
{
        struct job *job;

        if (conn_is_admin(c))
                return true;
        job = registry_job_of_rq_entry(&d->registry, e);
        return job && requests_may_touch(c, job->owner);
}

void requests_answer_free(struct answer *a)
{
        struct request *q = (struct request *)a;

        json_object_put(q->id);
        conn_unref(q->c);
        free(q);
}

static void answer_done(struct answer *a, uint64_t seq, json_object *result)
{
        struct request *q = (struct request *)a;

        conn_wait_for(q->c, seq);
        conn_reply(q->c, q->id, result, 0, NULL); /* which takes the id */
        q->id = NULL;
        requests_answer_free(a);
}

static void answer_moved(struct answer *a)
{
        struct request *q = (struct request *)a;

        q->again(q->data, q->c, q->id, q->job);
        requests_answer_free(a);
}

void requests_answer_again(struct answer *a,
                           void (*again)(void *data, struct conn *c, json_object *id, int64_t job),
                           void *data, int64_t job)
{
        struct request *q = (struct request *)a;

        q->again = again;
        q->data = data;
        q->job = job;
        a->moved = answer_moved;
}

struct answer *requests_answer_new(struct conn *c, json_object *id)
{
        struct request *q = calloc(1, sizeof(*q));

        if (!q)
                return NULL;
        q->answer.done = answer_done;
        q->answer.drop = requests_answer_free;
        q->c = conn_ref(c);
        q->id = json_object_get(id);
        return &q->answer;
}

static struct client *client_of(struct conn *c)
{
        if (!c->data)
                c->data = calloc(1, sizeof(struct client));
        return c->data;
}

int requests_hold(struct conn *c, struct job *job)
{
        struct client *cl = client_of(c);

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

bool requests_unhold(struct conn *c, struct job *job)
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

void requests_forget(struct daemon *d, struct conn *c)
{
        struct client *cl = c->data;

        if (!cl)
                return;
        c->data = NULL;
        while (cl->nholds > 0) {
                struct job *job = registry_find(&d->registry, cl->holds[--cl->nholds]);

                if (job) {
                        job->handles--;
                        lifecycle_check_idle(d, job);
                }
        }
        free(cl->holds);
        free(cl);
}

int requests_subscribe(struct conn *c)
{
        struct client *cl = client_of(c);

        if (!cl)
                return -ENOMEM;
        cl->subscribed = true;
        return 0;
}

void requests_notify(void *clients, const struct job *job, const char *state,
                     const struct run_record *ended)
{
        struct conn *c, *next;

        /* A client that does not read its events is closed by conn_notify(). */
        for (c = ((struct clients *)clients)->head; c; c = next) {
                struct client *cl = c->data;
                json_object *o;

                next = c->next;
                if (!cl || !cl->subscribed || !requests_may_touch(c, job->owner))
                        continue;
                o = json_object_new_object();
                json_object_object_add(o, "id", json_object_new_int64(job->id));
                json_object_object_add(o, "state", json_object_new_string(state));
                if (ended) {
                        json_object_object_add(o, "run", json_object_new_int64(ended->run));
                        json_object_object_add(o, "outcome",
                                               json_object_new_string(ended->outcome));
                }
                conn_notify(c, sw_notification_line("event", o));
        }
}
