/* SPDX-License-Identifier: MIT */
/*
 * What a connection waits for from a shared job database, bounded by store-timeout: a reply
 * held for a write not committed yet goes out as -32603 (what its request wrote may or may not
 * be kept), and a request waiting for a read is answered -32603 naming the nodes it could not
 * ask, its late answer dropped. One timer of the clients', started while something waits.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods.h"
#include "server/await.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/store.h"

/* A result held too long: the same request's error, its id kept (a piece of a batch's line stays
 * one, its lead kept); 0 when it is no result (an error stays as it is: its request changed
 * nothing). */
static char *expired_line(struct conn *c, const struct held_line *h)
{
        json_object *o = json_tokener_parse(h->part ? h->line + 1 : h->line), *id;
        char *error = NULL, *piece;
        size_t len;

        if (json_object_object_get_ex(o, "id", &id) && json_object_object_get(o, "result"))
                error = sw_error_line(json_object_get(id), SW_E_INTERNAL,
                                      store_failing_means(c->clients->store));
        json_object_put(o);
        if (!error || !h->part)
                return error;
        len = strlen(error) - 1; /* its newline: the batch's line goes on */
        piece = malloc(len + 2);
        if (piece) {
                piece[0] = h->line[0];
                memcpy(piece + 1, error, len);
                piece[len + 1] = '\0';
        }
        free(error);
        return piece;
}

/* "cannot reach the job database: node n1 could not ask the others (n2, n3)": the nodes of the
 * last renewal's view (a new string). */
static char *not_asked(struct clients *clients)
{
        struct db_node *nodes = NULL;
        size_t n = 0, len;
        const char *me = store_node(clients->store);
        char *text = NULL;
        FILE *f = open_memstream(&text, &len);

        if (!f)
                return NULL;
        fprintf(f, "%s: node %s could not ask the others", store_failing_means(clients->store), me);
        if (store_nodes(clients->store, &nodes, &n) == 0)
                for (size_t i = 0, k = 0; i < n; i++)
                        if (strcmp(nodes[i].name, me) != 0)
                                fprintf(f, "%s%s", k++ ? ", " : " (", nodes[i].name);
        if (n > 1)
                fputc(')', f);
        free(nodes);
        return fclose(f) == 0 ? text : (free(text), NULL);
}

/* A request that waited store-timeout for the job database is answered so; 0 when it has not,
 * else when the next may have. */
static uint64_t expire_await(struct conn *c, uint64_t now, uint64_t limit)
{
        char *why;

        if (!c->await_id)
                return 0;
        if (now - c->await_at < limit)
                return c->await_at + limit;
        why = not_asked(c->clients);
        conn_send(c, sw_error_line(json_object_get(c->await_id), SW_E_INTERNAL,
                                   why ? why : store_failing_means(c->clients->store)));
        free(why);
        conn_resume(c);
        return 0;
}

/* The replies held past store-timeout for writes not committed go out as errors, with the
 * events behind them, and so do requests that waited as long for a read; the check comes again
 * while some wait. */
static void expire_held(uv_timer_t *timer)
{
        struct clients *clients = timer->data;
        uint64_t now = uv_now(clients->loop),
                 limit = (uint64_t)(clients->settings->store_timeout * 1000);
        uint64_t committed = store_committed(clients->store), next = 0;

        for (struct conn *c = clients->head, *after; c; c = after) {
                uint64_t at;

                after = c->next; /* the answer's resume may close c */
                at = expire_await(c, now, limit);
                if (at)
                        next = next && next < at ? next : at;
                for (size_t i = 0; i < c->nheld; i++) {
                        struct held_line *h = &c->held[i];
                        char *error;

                        if (h->seq <= committed)
                                continue;
                        if (now - h->at < limit) {
                                next = next && next < h->at + limit ? next : h->at + limit;
                                continue;
                        }
                        h->seq = 0;
                        if (h->event || !(error = expired_line(c, h)))
                                continue;
                        c->held_len = c->held_len - strlen(h->line) + strlen(error);
                        free(h->line);
                        h->line = error;
                }
                conn_flush(c);
        }
        if (next)
                uv_timer_start(timer, expire_held, next - now, 0);
}

void await_held(struct conn *c)
{
        struct clients *clients = c->clients;

        if (!clients->held_timer_made) {
                if (uv_timer_init(clients->loop, &clients->held_timer) < 0)
                        return;
                clients->held_timer.data = clients;
                clients->held_timer_made = true;
        }
        if (!uv_is_active((uv_handle_t *)&clients->held_timer))
                uv_timer_start(&clients->held_timer, expire_held,
                               (uint64_t)(clients->settings->store_timeout * 1000), 0);
}

uint64_t await_begin(struct conn *c, json_object *id)
{
        conn_await_end(c);
        if (!store_shared(c->clients->store))
                return c->await_token;
        c->await_id = json_object_get(id);
        c->await_at = uv_now(c->clients->loop);
        await_held(c);
        return c->await_token;
}

bool await_current(const struct conn *c, uint64_t token)
{
        return !c->closing && token == c->await_token;
}

void await_done(struct conn *c, uint64_t token)
{
        if (token == c->await_token)
                conn_await_end(c);
}
