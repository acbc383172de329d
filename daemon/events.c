/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "events.h"
#include "jobs.h"
#include "log.h"
#include "manager.h"
#include "store.h"

void events_flush(struct manager *m)
{
        struct event *e, *next;

        pthread_mutex_lock(&m->events.lock);
        e = m->events.head;
        m->events.head = m->events.tail = NULL;
        pthread_mutex_unlock(&m->events.lock);

        for (; e; e = next) {
                next = e->next;
                if (e->type == EVENT_ENDED)
                        jobs_run_ended(m, e->job, e->rec);
                if (e->type == EVENT_STARTED) {
                        /* A plugin's runs are marked in the inflight file, which a crash keeps. */
                        if (!e->job->plugin_entry)
                                store_put_job_state(m->store, e->job, NULL);
                        jobs_notify(m, e->job, "running", NULL);
                }
                if (e->type == EVENT_ENDED)
                        jobs_notify(m, e->job,
                                    slow_work_is_pending(&e->job->dw.work) ? "pending" : "idle",
                                    e->job->last);
                jobs_check_idle(m, e->job);
                job_unref(e->job);
                free(e);
        }
}

static void on_async(uv_async_t *async)
{
        events_flush(async->data);
}

int events_init(struct manager *m)
{
        pthread_mutex_init(&m->events.lock, NULL);
        m->events.async.data = m;
        return uv_async_init(m->loop, &m->events.async, on_async);
}

void events_close(struct manager *m)
{
        uv_close((uv_handle_t *)&m->events.async, NULL);
}

void events_post(struct manager *m, enum event_type type, struct job *job,
                 struct run_record *rec)
{
        struct event *e = malloc(sizeof(*e));

        if (!e) {
                log_error("Out of memory for a job event");
                abort();
        }
        *e = (struct event){.type = type, .job = job, .rec = rec};
        pthread_mutex_lock(&m->events.lock);
        if (m->events.tail)
                m->events.tail->next = e;
        else
                m->events.head = e;
        m->events.tail = e;
        pthread_mutex_unlock(&m->events.lock);
        uv_async_send(&m->events.async);
}
