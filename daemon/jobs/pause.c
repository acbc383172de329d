/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "jobs/pause.h"
#include "store/store.h"
#include "util/log.h"

struct drain {
        struct drain *next;
        void (*done)(void *data, bool drained);
        void *data;
};

void pause_init(struct pause *p, const char *queue, struct store *store, struct pause *over)
{
        *p = (struct pause){.queue = queue, .store = store, .over = over};
        if (queue)
                snprintf(p->kept_name, sizeof(p->kept_name), "queue.%s/%s", queue, PAUSE_KEPT_NAME);
        else
                snprintf(p->kept_name, sizeof(p->kept_name), "%s", PAUSE_KEPT_NAME);
}

void pause_init_node(struct pause *p, const char *node)
{
        *p = (struct pause){.node = node};
}

/* "Paused", "Queue gpu paused", "Node n1 paused", for the log. */
static void log_change(const struct pause *p, const char *what, const char *rest)
{
        if (p->node)
                log_info("Node %s %s%s", p->node, what, rest);
        else if (p->queue)
                log_info("Queue %s %s%s", p->queue, what, rest);
        else
                log_info("%c%s%s", what[0] - 'a' + 'A', what + 1, rest);
}

bool pause_is_on(const struct pause *p)
{
        return __atomic_load_n(&p->paused, __ATOMIC_SEQ_CST);
}

bool pause_any_on(const struct pause *p)
{
        for (; p; p = p->over)
                if (pause_is_on(p))
                        return true;
        return false;
}

void pause_run_started(struct pause *p)
{
        for (; p; p = p->over)
                __atomic_add_fetch(&p->runs, 1, __ATOMIC_SEQ_CST);
}

static int64_t running(const struct pause *p)
{
        return __atomic_load_n(&p->runs, __ATOMIC_SEQ_CST);
}

json_object *pause_result(const struct pause *p)
{
        json_object *o = json_object_new_object();

        if (p->queue)
                json_object_object_add(o, "queue", json_object_new_string(p->queue));
        if (p->node)
                json_object_object_add(o, "node", json_object_new_string(p->node));
        json_object_object_add(o, "paused", json_object_new_boolean(pause_is_on(p)));
        json_object_object_add(o, "running", json_object_new_int64(running(p)));
        return o;
}

/* Each drain is done (drained) or dropped. */
static void end_drains(struct pause *p, bool drained)
{
        struct drain *d, *drains = p->drains;

        p->drains = NULL;
        while ((d = drains)) {
                drains = d->next;
                d->done(d->data, drained);
                free(d);
        }
}

/* The state changed here (how NULL: kept), or as the database keeps it. */
static void change(struct pause *p, bool paused, const char *how)
{
        char rest[96];

        if (pause_is_on(p) != paused) {
                snprintf(rest, sizeof(rest), "%s%s", how ? how : "",
                         paused ? ": no job starts until resume" : "");
                log_change(p, paused ? "paused" : "resumed", rest);
        }
        __atomic_store_n(&p->paused, paused, __ATOMIC_SEQ_CST);
        if (!how && p->store)
                store_put_setting(p->store, p->kept_name, paused ? 1 : 0);
        if (!paused)
                end_drains(p, true);
}

void pause_set(struct pause *p, bool paused)
{
        change(p, paused, NULL);
}

void pause_restore(struct pause *p, bool paused, const char *how)
{
        change(p, paused, how);
}

int pause_add_drain(struct pause *p, void (*done)(void *data, bool drained), void *data)
{
        struct drain *d;

        if (running(p) == 0)
                return 0;
        d = malloc(sizeof(*d));
        if (!d)
                return -ENOMEM;
        *d = (struct drain){p->drains, done, data};
        p->drains = d;
        return 1;
}

void pause_run_done(struct pause *p)
{
        for (; p; p = p->over)
                if (__atomic_sub_fetch(&p->runs, 1, __ATOMIC_SEQ_CST) == 0)
                        end_drains(p, true);
}

void pause_close(struct pause *p)
{
        end_drains(p, false);
}
