/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/answer.h"
#include "jobs/drain.h"
#include "jobs/pause.h"
#include "jobs/queue.h"
#include "jobs/queues.h"
#include "jobs/shared-settings.h"
#include "store/db.h"
#include "store/store.h"
#include "util/log.h"
#include "util/random-start.h"

/* A client's pause with drain, waiting. */
struct drain_wait {
        struct drain_wait *next;
        struct daemon *d;
        struct answer *answer;
        char *queue;
        int64_t token;
        bool here;            /* this node's runs are still in progress */
        struct db_node *away; /* the other nodes awaited, n of them */
        size_t n;
};

/* Another node's drain, answered from here. */
struct drain_ask {
        struct daemon *d;
        char node[64];
        int64_t epoch; /* the asking node's */
        int64_t token;
        char *queue;
};

/* The pause of the queue named (NULL: the daemon's); NULL when there is no such queue. */
static struct pause *pause_of(struct daemon *d, const char *queue)
{
        struct queue *q;

        if (!queue)
                return &d->pause;
        q = queues_find(d, queue);
        return q ? &q->pause : NULL;
}

static void wait_free(struct drain_wait *w)
{
        free(w->queue);
        free(w->away);
        free(w);
}

/* Answered once this node's runs and every node awaited are done. */
static void finish(struct drain_wait *w)
{
        struct daemon *d = w->d;
        struct drain_wait **p;
        struct pause *pause;
        json_object *result;

        if (w->here || w->n > 0)
                return;
        for (p = &d->drain_waits; *p && *p != w; p = &(*p)->next)
                ;
        if (*p)
                *p = w->next;
        pause = pause_of(d, w->queue);
        if (pause) {
                result = pause_result(pause);
        } else {
                /* Removed meanwhile (on another node): its runs are over. */
                result = json_object_new_object();
                json_object_object_add(result, "queue", json_object_new_string(w->queue));
                json_object_object_add(result, "paused", json_object_new_boolean(1));
                json_object_object_add(result, "running", json_object_new_int64(0));
        }
        /* What is written so far (the runs' ends) is on disk first. */
        w->answer->done(w->answer, store_queued(d->store), result);
        wait_free(w);
}

static void here_done(void *data, bool drained)
{
        struct drain_wait *w = data;

        w->here = false;
        if (drained)
                finish(w);
}

/* Node i is no longer awaited. */
static void away_done(struct drain_wait *w, size_t i)
{
        w->away[i] = w->away[--w->n];
}

static int64_t new_token(struct daemon *d)
{
        if (d->last_drain == 0)
                d->last_drain = random_start();
        return ++d->last_drain;
}

/* The other live nodes are asked to drain too. */
static int ask_away(struct daemon *d, struct drain_wait *w)
{
        json_object *body;
        size_t n = 0;

        if (!store_shared(d->store) || store_nodes(d->store, &w->away, &n) < 0)
                return store_shared(d->store) ? -ENOMEM : 0;
        body = json_object_new_object();
        json_object_object_add(body, "token", json_object_new_int64(w->token));
        json_object_object_add(body, "queue", w->queue ? json_object_new_string(w->queue) : NULL);
        for (size_t i = 0; i < n; i++) {
                if (strcmp(w->away[i].name, store_node(d->store)) == 0)
                        continue;
                store_send_mail(d->store, w->away[i].name, w->away[i].epoch, 0, DRAIN_MAIL,
                                json_object_to_json_string_ext(body, JSON_C_TO_STRING_PLAIN));
                w->away[w->n++] = w->away[i];
        }
        json_object_put(body);
        return 0;
}

int drain_start(struct daemon *d, const char *queue, struct answer *a)
{
        struct drain_wait *w = calloc(1, sizeof(*w));
        int e;

        if (!w || (queue && !(w->queue = strdup(queue)))) {
                free(w);
                return -ENOMEM;
        }
        w->d = d;
        w->answer = a;
        w->token = new_token(d);
        e = ask_away(d, w);
        if (e == 0)
                e = pause_add_drain(pause_of(d, queue), here_done, w);
        if (e < 0 || (e == 0 && w->n == 0)) {
                wait_free(w);
                return e;
        }
        w->here = e > 0;
        w->next = d->drain_waits;
        d->drain_waits = w;
        return 1;
}

static void tell(struct daemon *d, const char *node, int64_t epoch, int64_t token)
{
        char body[24];

        snprintf(body, sizeof(body), "%" PRId64, token);
        store_send_mail(d->store, node, epoch, 0, DRAINED_MAIL, body);
}

static void ask_free(struct drain_ask *a)
{
        free(a->queue);
        free(a);
}

static void ask_done(void *data, bool drained)
{
        struct drain_ask *a = data;

        /* Not at shutdown: the node asking sees this one go. */
        if (drained)
                tell(a->d, a->node, a->epoch, a->token);
        ask_free(a);
}

/* The shared rows as they are now, read after the asking node's pause was committed: the
 * node asking is told once no run is in progress here, if the pause still holds. A read that
 * failed is asked for again (paced by the store's tries); out of memory, it is told at once. */
static void ask_read(void *data, int r)
{
        struct drain_ask *a = data;
        struct pause *p = pause_of(a->d, a->queue);
        int e = 0;

        if (r == -ECANCELED) {
                ask_free(a);
                return;
        }
        if (r == -EIO) {
                shared_settings_read(a->d, ask_read, a);
                return;
        }
        if (p && pause_is_on(p))
                e = pause_add_drain(p, ask_done, a);
        /* Nothing runs there (or, out of memory, the asking node is not kept waiting). */
        if (e <= 0)
                ask_done(a, true);
}

static void asked(struct daemon *d, const struct db_mail *m)
{
        json_object *body = json_tokener_parse(m->body), *token, *queue;
        struct drain_ask *a;

        queue = json_object_object_get(body, "queue");
        if (!json_object_object_get_ex(body, "token", &token) ||
            !json_object_is_type(token, json_type_int) ||
            (queue && !json_object_is_type(queue, json_type_string))) {
                log_warning("Ignoring a drain of node %s that is not one", m->from);
                json_object_put(body);
                return;
        }
        a = calloc(1, sizeof(*a));
        if (a && queue && !(a->queue = strdup(json_object_get_string(queue)))) {
                free(a);
                a = NULL;
        }
        if (a) {
                a->d = d;
                a->token = json_object_get_int64(token);
                snprintf(a->node, sizeof(a->node), "%s", m->from);
                a->epoch = m->epoch;
                shared_settings_read(d, ask_read, a);
        } else {
                tell(d, m->from, m->epoch, json_object_get_int64(token));
        }
        json_object_put(body);
}

static void drained(struct daemon *d, const struct db_mail *m)
{
        int64_t token = strtoll(m->body, NULL, 10);

        for (struct drain_wait *w = d->drain_waits; w; w = w->next) {
                if (w->token != token)
                        continue;
                for (size_t i = 0; i < w->n; i++)
                        if (strcmp(w->away[i].name, m->from) == 0) {
                                away_done(w, i);
                                break;
                        }
                finish(w);
                return;
        }
}

void drain_mail(struct daemon *d, const struct db_mail *m)
{
        if (strcmp(m->kind, DRAIN_MAIL) == 0)
                asked(d, m);
        else
                drained(d, m);
}

void drain_check(struct daemon *d)
{
        struct drain_wait *w, *next;
        struct db_node *live = NULL;
        size_t n = 0;

        if (!d->drain_waits || store_nodes(d->store, &live, &n) < 0)
                return;
        for (w = d->drain_waits; w; w = next) {
                next = w->next;
                for (size_t i = w->n; i-- > 0;) {
                        size_t k;

                        for (k = 0; k < n && !(strcmp(live[k].name, w->away[i].name) == 0 &&
                                               live[k].epoch == w->away[i].epoch);
                             k++)
                                ;
                        if (k == n)
                                away_done(w, i);
                }
                finish(w);
        }
        free(live);
}

void drain_close_all(struct daemon *d)
{
        struct drain_wait *w;

        while ((w = d->drain_waits)) {
                d->drain_waits = w->next;
                w->answer->drop(w->answer);
                wait_free(w);
        }
}
