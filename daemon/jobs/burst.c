/* SPDX-License-Identifier: MIT */
#include <stdlib.h>

#include <slowwork.h>

#include "jobs/burst.h"

static void on_prepare(uv_prepare_t *prepare)
{
        burst_end(prepare->data);
}

int burst_init(struct burst *b, uv_loop_t *loop)
{
        b->prepare.data = b;
        return uv_prepare_init(loop, &b->prepare);
}

void burst_add(struct burst *b, struct slow_work_pool *pool)
{
        for (size_t i = 0; i < b->n; i++)
                if (b->plugged[i] == pool)
                        return;
        if (b->n == b->size) {
                size_t size = b->size ? 2 * b->size : 4;
                struct slow_work_pool **more = realloc(b->plugged, size * sizeof(*more));

                if (!more)
                        return; /* its threads are woken an item at a time */
                b->plugged = more;
                b->size = size;
        }
        if (b->n == 0)
                uv_prepare_start(&b->prepare, on_prepare);
        slow_work_pool_plug(pool);
        b->plugged[b->n++] = pool;
}

void burst_end(struct burst *b)
{
        for (size_t i = 0; i < b->n; i++)
                slow_work_pool_unplug(b->plugged[i]);
        b->n = 0;
        if (b->prepare.loop)
                uv_prepare_stop(&b->prepare);
}

void burst_close(struct burst *b)
{
        burst_end(b);
        free(b->plugged);
        b->plugged = NULL;
        b->size = 0;
        if (b->prepare.loop && !uv_is_closing((uv_handle_t *)&b->prepare))
                uv_close((uv_handle_t *)&b->prepare, NULL);
}
