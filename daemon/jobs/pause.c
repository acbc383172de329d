/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>

#include "jobs/gate.h"
#include "jobs/pause.h"
#include "jobs/run.h"
#include "server/conn.h"
#include "store/store.h"
#include "util/log.h"

struct drain {
        struct drain *next;
        struct conn *c;
        json_object *id;
};

void pause_init(struct pause *p, struct run_context *ctx, struct gate *gate, struct store *store)
{
        *p = (struct pause){.ctx = ctx, .gate = gate, .store = store};
}

void pause_restore(struct pause *p, bool paused)
{
        __atomic_store_n(&p->ctx->paused, paused, __ATOMIC_SEQ_CST);
        if (paused)
                log_info("Paused before the restart: no job starts until resume");
}

bool pause_is_on(const struct pause *p)
{
        return __atomic_load_n(&p->ctx->paused, __ATOMIC_SEQ_CST);
}

static int64_t running(const struct pause *p)
{
        return __atomic_load_n(&p->ctx->runs, __ATOMIC_SEQ_CST);
}

json_object *pause_result(const struct pause *p)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "paused", json_object_new_boolean(pause_is_on(p)));
        json_object_object_add(o, "running", json_object_new_int64(running(p)));
        return o;
}

/* Each drain gets the result, once what is written so far (the runs' ends) is on disk. */
static void answer_drains(struct pause *p)
{
        struct drain *d, *drains = p->drains;

        p->drains = NULL;
        while ((d = drains)) {
                drains = d->next;
                conn_wait_for_store(d->c);
                conn_reply(d->c, d->id, pause_result(p), 0, NULL);
                conn_unref(d->c);
                free(d);
        }
}

void pause_set(struct pause *p, bool paused)
{
        if (pause_is_on(p) != paused)
                log_info(paused ? "Paused: no job starts until resume" : "Resumed");
        __atomic_store_n(&p->ctx->paused, paused, __ATOMIC_SEQ_CST);
        store_put_setting(p->store, PAUSE_KEPT_NAME, paused ? 1 : 0);
        if (paused)
                return;
        answer_drains(p);
        gate_open(p->gate);
}

int pause_add_drain(struct pause *p, struct conn *c, json_object *id)
{
        struct drain *d;

        if (running(p) == 0)
                return 0;
        d = malloc(sizeof(*d));
        if (!d)
                return -ENOMEM;
        d->c = conn_ref(c);
        d->id = json_object_get(id);
        d->next = p->drains;
        p->drains = d;
        return 1;
}

void pause_run_done(struct pause *p)
{
        if (__atomic_sub_fetch(&p->ctx->runs, 1, __ATOMIC_SEQ_CST) == 0)
                answer_drains(p);
}

void pause_close(struct pause *p)
{
        struct drain *d;

        while ((d = p->drains)) {
                p->drains = d->next;
                json_object_put(d->id);
                conn_unref(d->c);
                free(d);
        }
}
