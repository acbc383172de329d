/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include "jobs/events.h"
#include "jobs/job.h"
#include "util/log.h"

void events_flush(struct events *ev)
{
        struct event *e, *next;

        pthread_mutex_lock(&ev->lock);
        e = ev->head;
        ev->head = ev->tail = NULL;
        pthread_mutex_unlock(&ev->lock);

        for (; e; e = next) {
                next = e->next;
                ev->handle(ev->data, e);
                if (e->type == EVENT_RELEASED)
                        job_unref(e->job);
                free(e);
        }
}

static void on_async(uv_async_t *async)
{
        events_flush(async->data);
}

int events_init(struct events *ev, uv_loop_t *loop, void (*handle)(void *data, struct event *e),
                void *data)
{
        pthread_mutex_init(&ev->lock, NULL);
        ev->handle = handle;
        ev->data = data;
        ev->async.data = ev;
        return uv_async_init(loop, &ev->async, on_async);
}

void events_close(struct events *ev)
{
        if (ev->async.loop && !uv_is_closing((uv_handle_t *)&ev->async))
                uv_close((uv_handle_t *)&ev->async, NULL);
}

void events_post(struct events *ev, enum event_type type, struct job *job,
                 struct run_record *rec)
{
        struct event *e = malloc(sizeof(*e));

        if (!e) {
                log_error("Out of memory for a job event");
                abort();
        }
        *e = (struct event){.type = type, .job = job, .rec = rec};
        pthread_mutex_lock(&ev->lock);
        if (ev->tail)
                ev->tail->next = e;
        else
                ev->head = e;
        ev->tail = e;
        pthread_mutex_unlock(&ev->lock);
        uv_async_send(&ev->async);
}
