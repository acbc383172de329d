/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/queue.h"
#include "util/settings.h"

int queue_new(const char *name, const struct sw_queue_settings *s, struct store *store,
              struct queue **ret)
{
        struct slow_work_settings ps = settings_for_pool(s);
        struct queue *q = calloc(1, sizeof(*q));
        int r;

        if (!q)
                return -ENOMEM;
        q->name = strdup(name);
        if (!q->name) {
                free(q);
                return -ENOMEM;
        }
        q->settings = *s;
        pause_init(&q->pause, q->name, store);
        r = slow_work_pool_new(&ps, &q->pool);
        if (r < 0) {
                queue_free(q);
                return r;
        }
        *ret = q;
        return 0;
}

int queue_configure(struct queue *q, const struct sw_queue_settings *s)
{
        struct slow_work_settings ps = settings_for_pool(s);
        int r = slow_work_pool_configure(q->pool, &ps);

        if (r == 0)
                q->settings = *s;
        return r;
}

void queue_free_pool(struct queue *q)
{
        slow_work_pool_free(q->pool);
        q->pool = NULL;
}

void queue_free(struct queue *q)
{
        if (!q)
                return;
        if (q->pool)
                queue_free_pool(q);
        pause_close(&q->pause);
        json_object_put(q->kept);
        free(q->name);
        free(q);
}
