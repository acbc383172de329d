/* SPDX-License-Identifier: MIT */
/*
 * history on a node of a shared database: every node's runs, newest first, as the database has
 * them (each node keeps its own last history-limit runs there).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/daemon.h"
#include "methods/history-nodes.h"
#include "methods/method.h"
#include "server/await.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/run-record.h"
#include "store/store.h"

bool history_page_add(json_object *runs, const struct run_record *rec, int64_t limit,
                      size_t *bytes)
{
        *bytes += RECORD_BYTES + strlen(rec->summary) + (rec->log ? strlen(rec->log) : 0);
        if ((int64_t)json_object_array_length(runs) == limit ||
            (*bytes > HISTORY_PAGE_BYTES && json_object_array_length(runs) > 0))
                return false;
        json_object_array_add(runs, run_record_to_json(rec));
        return true;
}

struct history_wait {
        struct conn *c;
        json_object *id;
        struct sw_run_position before;
        int64_t limit;
        uint64_t token; /* its wait for the database (await_begin) */
};

/* The page from the rows (limit + 1 of them at most: one more says there are more). */
static json_object *page_of(json_object *rows, int64_t limit)
{
        json_object *result = json_object_new_object(), *runs = json_object_new_array();
        size_t n = json_object_array_length(rows), bytes = 0, i;
        bool more = false;

        json_object_object_add(result, "runs", runs);
        for (i = 0; i < n && !more; i++) {
                struct run_record *rec = run_record_from_row(json_object_array_get_idx(rows, i));

                more = rec && !history_page_add(runs, rec, limit, &bytes);
                run_record_free(rec);
        }
        json_object_object_add(result, "more", json_object_new_boolean(more));
        return result;
}

static void listed(void *data, const struct db_result *res)
{
        struct history_wait *w = data;
        json_object *rows = res && res->got && res->text ? json_tokener_parse(res->text) : NULL;
        char message[128];

        if (!res || !await_current(w->c, w->token)) {
                json_object_put(w->id); /* the daemon stops, or the request was answered */
        } else if (!json_object_is_type(rows, json_type_array)) {
                conn_reply(w->c, w->id, NULL, SW_E_INTERNAL, "cannot read the job database");
        } else if (!res->i[0]) {
                snprintf(message, sizeof(message), "run %lld/%lld is not in the history",
                         (long long)w->before.id, (long long)w->before.run);
                conn_reply(w->c, w->id, NULL, SW_E_NOT_FOUND, message);
        } else {
                conn_reply(w->c, w->id, page_of(rows, w->limit), 0, NULL);
        }
        json_object_put(rows);
        conn_unref(w->c);
        free(w);
}

/* The outcomes of the mask as a PostgreSQL array's text, in buf; NULL for any. */
static const char *outcome_array(unsigned outcomes, char *buf, size_t len)
{
        size_t used = 0;

        if (!outcomes)
                return NULL;
        buf[used++] = '{';
        for (unsigned i = 0; sw_outcomes[i]; i++)
                if (outcomes & (1u << i))
                        used += (size_t)snprintf(buf + used, len - used, "%s%s",
                                                 used > 1 ? "," : "", sw_outcomes[i]);
        snprintf(buf + used, len - used, "}");
        return buf;
}

void history_of_all_nodes(struct daemon *d, struct conn *c, const struct sw_history_params *p,
                          int64_t owner, unsigned outcomes, const struct sw_run_position *before,
                          struct reply *r)
{
        struct history_wait *w = calloc(1, sizeof(*w));
        char array[256];

        if (!w) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        *w = (struct history_wait){
            .c = conn_ref(c),
            .id = json_object_get(r->id),
            .before = *before,
            .limit = p->limit,
            .token = await_begin(c, r->id),
        };
        r->deferred = true;
        store_list_runs(d->store, before->id, before->run, owner,
                        outcome_array(outcomes, array, sizeof(array)), p->since, p->limit + 1,
                        HISTORY_PAGE_BYTES, RECORD_BYTES, listed, w);
}
