/* SPDX-License-Identifier: MIT */
/* From the pool's threads to the loop: what happened to a job, handed over with uv_async. */
#ifndef SLOWWORKD_EVENTS_H
#define SLOWWORKD_EVENTS_H

#include <pthread.h>
#include <uv.h>

struct job;
struct run_record;

enum event_type {
        EVENT_RELEASED,  /* the pool dropped a reference: the job may be idle */
        EVENT_STARTED,   /* a run started */
        EVENT_ENDED,     /* a run ended, with its record */
        EVENT_HELD,      /* a run did not start: paused, or too little free space (held is set) */
        EVENT_HELD_USER, /* a run did not start: its owner has max-running-per-user (held set) */
        EVENT_HELD_QUEUE_USER, /* the same in its queue (it took a slot of the daemon's limit) */
        EVENT_HANDED_OVER, /* a run was handed over (reexec): job->handed; it goes on */
        EVENT_HELD_KEY, /* a keyed run's start was not committed before the node was fenced (it
                         * took a slot of both limits; held is set) */
        EVENT_CLAIMED,  /* an offered run did not start: another node claimed the job first (it
                         * took a slot of both limits) */
        EVENT_HELD_AWAY, /* a run did not start: it runs on another node (placed there, or of a
                          * queue this one does not serve; held is set) */
};

struct event {
        struct event *next;
        enum event_type type;
        /* EVENT_RELEASED's: the pool's reference, dropped after the handler. The others are
         * posted while the pool runs the job, and borrow that reference: their EVENT_RELEASED
         * is posted after them. */
        struct job *job;
        struct run_record *rec; /* the handler's: it takes the record over */
};

struct events {
        pthread_mutex_t lock;
        struct event *head, *tail;
        uv_async_t async;
        /* On the loop, once per event, in order; the event's record is its own. */
        void (*handle)(void *data, struct event *e);
        void *data;
};

/* ev zeroed first: events_close() of one never set up does nothing. */
int events_init(struct events *ev, uv_loop_t *loop, void (*handle)(void *data, struct event *e),
                void *data);
void events_close(struct events *ev);
/* Handles what has been posted so far (the loop's async does it on its own). */
void events_flush(struct events *ev);
/* Any thread. Aborts on allocation failure: an event lost would leak a job forever. */
void events_post(struct events *ev, enum event_type type, struct job *job,
                 struct run_record *rec);

#endif
