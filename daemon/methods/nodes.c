/* SPDX-License-Identifier: MIT */
/*
 * nodes and nodes.forget. On a shared database both are answered from the database at the time
 * of the call (a read on the store's thread, answered later), not from the view of the last
 * lease renewal: a node that just started is listed, and one whose lease ran out is listed
 * `expired` (also once another node took its jobs) until nodes.forget removes its row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/daemon.h"
#include "methods/method.h"
#include "server/await.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/store.h"

/* A request answered once the database has: its connection and id. */
struct nodes_wait {
        struct conn *c;
        json_object *id;
        struct daemon *d;
        uint64_t token; /* its wait for the database (await_begin) */
        char name[SW_NODE_NAME_MAX + 1]; /* nodes.forget's */
};

static struct nodes_wait *wait_new(struct daemon *d, struct conn *c, struct reply *r)
{
        struct nodes_wait *w = calloc(1, sizeof(*w));

        if (!w) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return NULL;
        }
        *w = (struct nodes_wait){.c = conn_ref(c), .id = json_object_get(r->id), .d = d,
                                 .token = await_begin(c, r->id)};
        r->deferred = true;
        return w;
}

static void wait_free(struct nodes_wait *w)
{
        conn_unref(w->c);
        free(w);
}

/* A node's item from a struct db_node (this node's, or the only one without a shared
 * database). */
static json_object *node_item(const struct db_node *node, bool self, bool live)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "name", json_object_new_string(node->name));
        json_object_object_add(o, "host", json_object_new_string(node->host));
        json_object_object_add(o, "pid", json_object_new_int64(node->pid));
        json_object_object_add(o, "running", json_object_new_int64(node->running));
        json_object_object_add(o, "min_threads", json_object_new_int64(node->min_threads));
        json_object_object_add(o, "max_threads", json_object_new_int64(node->max_threads));
        json_object_object_add(o, "lease_age", json_object_new_double(node->lease_age));
        json_object_object_add(o, "state", json_object_new_string(live ? "live" : "expired"));
        json_object_object_add(o, "paused", json_object_new_boolean(node->paused));
        json_object_object_add(o, "node_queues", json_object_new_string(node->queues));
        json_object_object_add(o, "self", json_object_new_boolean(self));
        return o;
}

/* The database's rows as nodes' items: this node's with what it has now (its row says what
 * its last renewal told), each with self; NULL when they cannot be read. */
static json_object *items_of(struct daemon *d, const char *text)
{
        json_object *rows = text ? json_tokener_parse(text) : NULL;
        struct db_node *mine;
        size_t n;

        if (!json_object_is_type(rows, json_type_array)) {
                json_object_put(rows);
                return NULL;
        }
        if (store_nodes(d->store, &mine, &n) < 0)
                mine = NULL;
        for (size_t i = 0; i < json_object_array_length(rows); i++) {
                json_object *o = json_object_array_get_idx(rows, i);
                const char *name = json_object_get_string(json_object_object_get(o, "name"));
                bool self = name && strcmp(name, store_node(d->store)) == 0;

                json_object_object_del(o, "epoch");
                json_object_object_del(o, "taken");
                for (size_t k = 0; self && mine && k < n; k++)
                        if (strcmp(mine[k].name, name) == 0) {
                                json_object_object_add(o, "running",
                                                       json_object_new_int64(mine[k].running));
                                json_object_object_add(o, "min_threads",
                                                       json_object_new_int64(mine[k].min_threads));
                                json_object_object_add(o, "max_threads",
                                                       json_object_new_int64(mine[k].max_threads));
                                json_object_object_add(o, "node_queues",
                                                       json_object_new_string(mine[k].queues));
                                json_object_object_add(
                                    o, "paused",
                                    json_object_new_boolean(pause_is_on(&d->node_pause)));
                        }
                json_object_object_add(o, "self", json_object_new_boolean(self));
        }
        free(mine);
        return rows;
}

static void nodes_listed(void *data, const struct db_result *res)
{
        struct nodes_wait *w = data;
        json_object *items = res && res->got ? items_of(w->d, res->text) : NULL, *result;

        if (!res || !await_current(w->c, w->token)) {
                json_object_put(w->id); /* the daemon stops, or the request was answered */
        } else if (!items) {
                conn_reply(w->c, w->id, NULL, SW_E_INTERNAL,
                           "cannot read the nodes from the job database");
        } else {
                result = json_object_new_object();
                json_object_object_add(result, "nodes", items);
                conn_reply(w->c, w->id, result, 0, NULL);
        }
        wait_free(w);
}

/* Without a shared database: this node alone, as it reports now. */
static void nodes_alone(struct daemon *d, struct reply *r)
{
        struct db_node *nodes;
        json_object *list;
        size_t n;

        if (store_nodes(d->store, &nodes, &n) < 0 || !(list = json_object_new_array())) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        for (size_t i = 0; i < n; i++)
                json_object_array_add(
                    list,
                    node_item(&nodes[i], strcmp(nodes[i].name, store_node(d->store)) == 0, true));
        free(nodes);
        r->result = json_object_new_object();
        json_object_object_add(r->result, "nodes", list);
}

static void handle_nodes(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        struct nodes_wait *w;

        (void)p;
        daemon_report_node(d);
        if (!store_shared(d->store)) {
                nodes_alone(d, r);
                return;
        }
        w = wait_new(d, c, r);
        if (w)
                store_list_nodes(d->store, nodes_listed, w);
}

static void node_forgotten(void *data, const struct db_result *res)
{
        struct nodes_wait *w = data;
        char why[192];

        if (!res || !await_current(w->c, w->token)) {
                json_object_put(w->id);
                wait_free(w);
                return;
        }
        if (!res->got) {
                conn_reply(w->c, w->id, NULL, SW_E_INTERNAL, "cannot reach the job database");
        } else if (res->i[0] == 1) {
                json_object *result = json_object_new_object();

                json_object_object_add(result, "name", json_object_new_string(w->name));
                json_object_object_add(result, "forgotten", json_object_new_boolean(true));
                conn_reply(w->c, w->id, result, 0, NULL);
        } else {
                int code = res->i[0] == 0 ? SW_E_NOT_FOUND : SW_E_CONFLICT;

                snprintf(why, sizeof(why), "%s%s%s", res->i[0] == 0 ? "no node is named " : "node ",
                         w->name,
                         res->i[0] == 0   ? ""
                         : res->i[0] == 2 ? " is live: only a node whose lease ran out is forgotten"
                                          : " has jobs that no other node took yet: forget it "
                                            "once one has");
                conn_reply(w->c, w->id, NULL, code, why);
        }
        wait_free(w);
}

/* Admins only: the row of an expired node, which another node took the jobs of, removed. */
static void handle_nodes_forget(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        const char *name = p->node.name;
        struct nodes_wait *w;

        if (!conn_is_admin(c)) {
                reply_error(r, SW_E_PERMISSION, "permission denied: only admins forget nodes");
                return;
        }
        if (!store_shared(d->store)) {
                /* The node alone: itself, live, and no other. */
                if (strcmp(name, store_node(d->store)) == 0)
                        reply_error(r, SW_E_CONFLICT,
                                    "node %s is live: only a node whose lease ran out is forgotten",
                                    name);
                else
                        reply_error(r, SW_E_NOT_FOUND, "no node is named %s", name);
                return;
        }
        w = wait_new(d, c, r);
        if (!w)
                return;
        snprintf(w->name, sizeof(w->name), "%s", name);
        store_forget_node(d->store, name, node_forgotten, w);
}

const struct method nodes_methods[] = {
    {"nodes", sw_no_params, NULL, handle_nodes, false},
    {"nodes.forget", sw_node_name_params, NULL, handle_nodes_forget, false},
    {NULL, NULL, NULL, NULL, false},
};
