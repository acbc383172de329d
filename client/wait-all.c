/* SPDX-License-Identifier: MIT */
/*
 * The jobs wait --all and wait --queue wait for: the caller's live jobs that will end, so
 * neither persist ones (kept until released) nor recurring ones (every, cron), which never do,
 * nor stashed ones, which wait for an enqueue that the waiting script would never send. A queue
 * that does not exist is an error, not a queue with nothing to wait for: a name mistyped in a
 * script would otherwise pass as success.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "slowctl.h"

#define WAIT_ALL_PAGE 1000

static bool will_end(json_object *job, const char *queue)
{
        if (json_object_get_boolean(json_object_object_get(job, "persist")) ||
            json_object_object_get(job, "every") || json_object_object_get(job, "cron") ||
            strcmp(json_str(job, "state", ""), "stashed") == 0)
                return false;
        return !queue || strcmp(json_str(job, "queue", ""), queue) == 0;
}

static int add_id(int64_t **ids, size_t *n, int64_t id)
{
        int64_t *more = realloc(*ids, (*n + 1) * sizeof(**ids));

        if (!more)
                return -1;
        *ids = more;
        (*ids)[(*n)++] = id;
        return 0;
}

/* One page of the caller's live jobs after after_id: their ids added; the last id listed in
 * *after_id, and whether more follow. 0, or an exit status. */
static int list_page(struct ctl *x, const char *queue, int64_t **ids, size_t *n, int64_t *after_id,
                     bool *ret_more)
{
        json_object *p = json_object_new_object(), *result, *items;
        struct sw_client_error err;
        size_t i, len;
        int r;

        json_object_object_add(p, "limit", json_object_new_int(WAIT_ALL_PAGE));
        json_object_object_add(p, "owner", json_object_new_int64((int64_t)getuid()));
        if (*after_id)
                json_object_object_add(p, "after_id", json_object_new_int64(*after_id));
        r = ctl_ask_again(x, "list", "list", p, &result, &err);
        if (r)
                return r;
        if (!result)
                return ctl_error(x, "cannot list your jobs: %s", err.message);
        items = json_object_object_get(result, "items");
        len = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
        for (i = 0; i < len && r == 0; i++) {
                json_object *job = json_object_array_get_idx(items, i);

                *after_id = json_int(job, "id", *after_id);
                if (will_end(job, queue) && add_id(ids, n, json_int(job, "id", 0)) < 0)
                        r = ctl_error(x, "out of memory");
        }
        *ret_more = len > 0 && json_int(result, "more", 0) > 0;
        json_object_put(result);
        return r;
}

/* 0 when the daemon has the queue, else an exit status (the message printed). */
static int queue_known(struct ctl *x, const char *queue)
{
        json_object *result, *queues;
        struct sw_client_error err;
        size_t i, len;
        int r = ctl_ask_again(x, "wait", "queue.list", NULL, &result, &err);

        if (r)
                return r;
        if (!result)
                return ctl_error(x, "wait: %s", err.message);
        queues = json_object_object_get(result, "queues");
        len = json_object_is_type(queues, json_type_array) ? json_object_array_length(queues) : 0;
        for (i = 0; i < len; i++)
                if (strcmp(json_str(json_object_array_get_idx(queues, i), "name", ""), queue) == 0)
                        break;
        json_object_put(result);
        return i < len ? 0 : ctl_error(x, "wait: no queue \"%s\"", queue);
}

int wait_all_ids(struct ctl *x, const char *queue, int64_t **ret_ids, size_t *ret_n)
{
        int64_t *ids = NULL, after_id = 0;
        bool more = true;
        size_t n = 0;
        int r = queue ? queue_known(x, queue) : 0;

        if (r)
                return r;

        while (more && r == 0)
                r = list_page(x, queue, &ids, &n, &after_id, &more);
        if (r) {
                free(ids);
                return r;
        }
        *ret_ids = ids;
        *ret_n = n;
        return 0;
}
