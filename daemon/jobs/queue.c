/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/job.h"
#include "jobs/queue.h"
#include "util/settings.h"

int queue_new(const char *name, const struct sw_queue_settings *s, struct store *store,
              struct pause *over, const bool *stopping,
              void (*release)(void *data, struct job *job), void *data, struct queue **ret)
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
        pause_init(&q->pause, q->name, store, over);
        users_init(&q->users, offsetof(struct job, queue_user_link),
                   offsetof(struct job, queue_user_listed), stopping, release, data);
        users_set_limits(&q->users, s->max_queued_per_user, s->max_running_per_user);
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

        if (r < 0)
                return r;
        q->settings = *s;
        users_set_limits(&q->users, s->max_queued_per_user, s->max_running_per_user);
        queue_set_fair(q, __atomic_load_n(&q->users.fair, __ATOMIC_RELAXED));
        return 0;
}

void queue_set_fair(struct queue *q, bool fair)
{
        struct slow_work_settings ps = settings_for_pool(&q->settings);

        users_set_fair(&q->users, fair, ps.max_threads, slow_work_very_slow_cap(&ps));
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
        users_close(&q->users);
        json_object_put(q->kept);
        free(q->name);
        free(q);
}
