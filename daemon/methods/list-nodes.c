/* SPDX-License-Identifier: MIT */
/*
 * list on a node of a shared database: its own page merged, by id, with the other nodes' live
 * jobs as the database has them (their rows as of their nodes' last writes).
 */
#include <stdlib.h>

#include "jobs/daemon.h"
#include "methods/list-nodes.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "server/await.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/store.h"

struct list_wait {
        struct conn *c;
        json_object *id;
        json_object *page; /* this node's: {"items":[...],"more":N} */
        int64_t limit;
        uint64_t token; /* its wait for the database (await_begin) */
};

static int64_t item_id(json_object *items, size_t i)
{
        return json_object_get_int64(
            json_object_object_get(json_object_array_get_idx(items, i), "id"));
}

/* The two pages, each in the order of ids, as one of at most limit items. */
static json_object *merged(json_object *page, json_object *others, int64_t others_count,
                           int64_t limit)
{
        json_object *mine = json_object_object_get(page, "items"), *items, *result;
        size_t a = 0, b = 0, na = json_object_array_length(mine),
               nb = json_object_array_length(others);
        int64_t all = (int64_t)na + json_object_get_int64(json_object_object_get(page, "more")) +
                      others_count,
                n = 0;

        items = json_object_new_array_ext((int)(na + nb));
        while ((a < na || b < nb) && (limit == 0 || n < limit)) {
                bool from_mine = b == nb || (a < na && item_id(mine, a) < item_id(others, b));
                json_object *item = from_mine ? json_object_array_get_idx(mine, a++)
                                              : json_object_array_get_idx(others, b++);

                json_object_array_add(items, json_object_get(item));
                n++;
        }
        result = json_object_new_object();
        json_object_object_add(result, "items", items);
        json_object_object_add(result, "more", json_object_new_int64(all - n));
        return result;
}

/* The database unread (it fails), the node's own page alone. */
static void listed(void *data, const struct db_result *res)
{
        struct list_wait *w = data;
        json_object *others = res && res->got && res->text ? json_tokener_parse(res->text) : NULL;

        if (!res || !await_current(w->c, w->token))
                json_object_put(w->id); /* the daemon stops, or the request was answered */
        else if (!json_object_is_type(others, json_type_array))
                conn_reply(w->c, w->id, json_object_get(w->page), 0, NULL);
        else
                conn_reply(w->c, w->id, merged(w->page, others, res->i[0], w->limit), 0, NULL);
        json_object_put(others);
        json_object_put(w->page);
        conn_unref(w->c);
        free(w);
}

void list_other_nodes(struct daemon *d, struct conn *c, const struct sw_list_params *p,
                      struct reply *r)
{
        struct list_wait *w;
        int64_t owner = p->owner;

        /* What requests_may_touch() lets the client see, of other nodes' as the last renewal
         * saw them. */
        if ((!conn_is_admin(c) && owner >= 0 && owner != (int64_t)c->uid) || store_alone(d->store))
                return;
        if (!conn_is_admin(c))
                owner = c->uid;
        w = calloc(1, sizeof(*w));
        if (!w)
                return; /* the node's own page, at least */
        *w = (struct list_wait){
            .c = conn_ref(c),
            .id = json_object_get(r->id),
            .page = r->result,
            .limit = p->limit,
            .token = await_begin(c, r->id),
        };
        r->result = NULL;
        r->deferred = true;
        store_list_jobs(d->store, p->after_id, owner, p->state, p->limit, listed, w);
}
