/* SPDX-License-Identifier: MIT */
/*
 * Requests about the jobs of other nodes of a shared database: a request that names a job by id
 * which this node neither holds nor last ran, and a submit that waits for such jobs, wait while
 * the database says where the job is. A live job's request goes to its node (relay.c); a
 * finished job's last run is read from the database and learned, and the request is answered
 * here; but a restart goes to the node that ran it, which keeps its spec. A request that changes
 * a job this node offered to the others waits while it takes the job back, and goes where the
 * job went when another node claimed it first.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/job.h"
#include "jobs/queues.h"
#include "methods/elsewhere.h"
#include "methods/method.h"
#include "server/await.h"
#include "server/conn.h"
#include "server/relay.h"
#include "store/db.h"
#include "store/envs.h"
#include "store/run-record.h"
#include "store/store.h"

/* A request waiting to learn which node holds or ran a job. */
struct lookup {
        struct daemon *d;
        struct conn *c;
        json_object *id;     /* the request's */
        json_object *params; /* a submit's, whose after and after_any are looked at in turn */
        size_t dep;          /* the next of them to look at (after's, then after_any's) */
        int64_t job;
        char *line;
        size_t len;
        elsewhere_here_fn *here;     /* answers it here, once known */
        struct live_elsewhere *live; /* a submit's live jobs of other nodes, nlive of them */
        size_t nlive;
        bool to_runner; /* a finished job's request too goes to the node that ran it */
        char *placed;   /* a submit's node, which the database has though the last renewal
                         * did not see it live (the submit is served with d->node_listed) */
        char node[64];  /* the job's node, which the last renewal did not see live */
        uint64_t token; /* its wait for the database (await_begin) */
};

static void lookup_free(struct lookup *lk)
{
        await_done(lk->c, lk->token);
        json_object_put(lk->id);
        json_object_put(lk->params);
        conn_unref(lk->c);
        free(lk->line);
        free(lk->live);
        free(lk->placed);
        free(lk);
}

/* Whether this node holds the job or last ran it (the history's record of another node's run
 * may be outdated, and so may its own once the job went to another node). */
static bool known_here(struct daemon *d, int64_t job)
{
        const struct run_record *rec = daemon_last_run(d, job);

        return registry_find(&d->registry, job) ||
               (rec && !rec->left && !store_other_node(d->store, rec->node));
}

/* The next of a submit's after and after_any jobs, from *at on, that this node does not know;
 * *at moves past it (each is looked at once). 0 when none is left. */
static int64_t unknown_dep(struct daemon *d, json_object *params, size_t *at)
{
        static const char *const names[] = {"after", "after_any"};
        size_t base = 0;

        for (size_t k = 0; k < 2; k++) {
                json_object *ids = json_object_object_get(params, names[k]);
                size_t n = json_object_is_type(ids, json_type_array) ? json_object_array_length(ids)
                                                                     : 0;

                for (size_t i = *at > base ? *at - base : 0; i < n; i++) {
                        json_object *v = json_object_array_get_idx(ids, i);
                        int64_t job = json_object_get_int64(v);

                        if (json_object_is_type(v, json_type_int) && job > 0 &&
                            !known_here(d, job)) {
                                *at = base + i + 1;
                                return job;
                        }
                }
                base += n;
        }
        *at = base;
        return 0;
}

static void holder_found(void *data, const struct db_result *res);

/* Looks up the submit's next unknown job, or answers the request here. */
static void next_or_answer(struct lookup *lk)
{
        struct conn *c = lk->c;

        lk->job = lk->params ? unknown_dep(lk->d, lk->params, &lk->dep) : 0;
        if (lk->job) {
                store_find_job(lk->d->store, lk->job, holder_found, lk);
                return;
        }
        await_done(c, lk->token);
        c->busy = false;
        lk->d->live_elsewhere = lk->live;
        lk->d->nlive_elsewhere = lk->nlive;
        lk->d->node_listed = lk->placed;
        lk->here(lk->d, c, lk->line, lk->len);
        lk->d->live_elsewhere = NULL;
        lk->d->nlive_elsewhere = 0;
        lk->d->node_listed = NULL;
        if (!c->busy)
                conn_resume(c);
        lookup_free(lk);
}

/* A finished job's last run, as the database has it, learned: this node answers. */
static void run_found(void *data, const struct db_result *res)
{
        struct lookup *lk = data;
        json_object *row = res && res->text ? json_tokener_parse(res->text) : NULL;
        struct run_record *rec = row ? run_record_from_row(row) : NULL;

        json_object_put(row);
        if (!res || !await_current(lk->c, lk->token) || !res->got) {
                if (res && !res->got && await_current(lk->c, lk->token))
                        conn_reply_line(lk->c, sw_error_line(json_object_get(lk->id),
                                                             SW_E_INTERNAL,
                                                             "cannot read the job database"));
                run_record_free(rec);
                lookup_free(lk);
                return;
        }
        if (rec && !registry_find(&lk->d->registry, rec->id))
                daemon_learn_run(lk->d, rec);
        else
                run_record_free(rec);
        next_or_answer(lk);
}

/* The submit's line with the connection's environment (env.set) when it has none of its own:
 * the other node's connection has none. A new string, or NULL for the line as it is. */
static char *with_env(struct lookup *lk)
{
        struct env_block *env = lk->c->env;
        json_object *req, *params;
        char *line = NULL;

        if (!lk->params || !env || json_object_object_get(lk->params, "env") ||
            json_object_object_get(lk->params, "plugin"))
                return NULL;
        if (sw_json_read(lk->line, strlen(lk->line), &req, NULL, 0) != 0)
                return NULL;
        params = json_object_object_get(req, "params");
        if (!json_object_is_type(params, json_type_object)) {
                json_object_put(req);
                return NULL;
        }
        json_object_object_add(params, "env", envs_to_json(env));
        line = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
        json_object_put(req);
        return line;
}

/* Passes the request to the node: false when that node is not live. */
static bool forward(struct lookup *lk, const char *node)
{
        char *line = with_env(lk);
        bool sent = relay_forward(lk->d->relay, lk->c, node, line ? line : lk->line,
                                  line ? strlen(line) : lk->len);

        free(line);
        return sent;
}

/* The live job of this node that the request's key (and queue) names for its client, or NULL. */
static struct job *keyed_job(struct daemon *d, struct conn *c, json_object *params)
{
        json_object *key = json_object_object_get(params, "key");
        json_object *queue = json_object_object_get(params, "queue");
        struct queue *q;

        if (!json_object_is_type(key, json_type_string) ||
            (queue && !json_object_is_type(queue, json_type_string)))
                return NULL;
        q = queues_find(d, json_object_get_string(queue));
        return q ? registry_find_key(&d->registry, c->uid, q, json_object_get_string(key)) : NULL;
}

/* Whether the submit's key names a live job of this node, which a submit with after jobs adds
 * them to: it stays here, whatever node those are on. */
static bool key_here(struct lookup *lk)
{
        return keyed_job(lk->d, lk->c, lk->params) != NULL;
}

/* The epoch of the node named so if the database's rows (DB_LIST_NODES' text) say it is live;
 * -1 else. */
static int64_t live_epoch(const char *text, const char *node)
{
        json_object *rows = text ? json_tokener_parse(text) : NULL;
        int64_t epoch = -1;

        for (size_t i = 0;
             json_object_is_type(rows, json_type_array) && i < json_object_array_length(rows);
             i++) {
                json_object *o = json_object_array_get_idx(rows, i);
                const char *name = json_object_get_string(json_object_object_get(o, "name"));
                const char *state = json_object_get_string(json_object_object_get(o, "state"));

                if (name && state && strcmp(name, node) == 0 && strcmp(state, "live") == 0)
                        epoch = json_object_get_int64(json_object_object_get(o, "epoch"));
        }
        json_object_put(rows);
        return epoch > 0 ? epoch : -1;
}

/* The nodes as the database has them now: the job's node, which the last renewal did not see,
 * may have started since. */
static void nodes_read(void *data, const struct db_result *res)
{
        struct lookup *lk = data;
        int64_t epoch = res && res->got ? live_epoch(res->text, lk->node) : -1;
        char why[192];

        if (!res || !await_current(lk->c, lk->token)) {
                lookup_free(lk);
                return;
        }
        if (epoch > 0) {
                char *line = with_env(lk);

                relay_forward_read(lk->d->relay, lk->c, lk->node, epoch, line ? line : lk->line,
                                   line ? strlen(line) : lk->len);
                free(line);
        } else {
                /* A live job of a node whose lease ran out: the next node to renew takes it. */
                snprintf(why, sizeof(why),
                         "the job's node %s is not live: another node takes its jobs", lk->node);
                conn_reply_line(lk->c, sw_error_line(json_object_get(lk->id), SW_E_BUSY, why));
        }
        lookup_free(lk);
}

/* The nodes the database has, for a submit placed on a node the last renewal did not see live:
 * one it never had is refused. */
static void placed_listed(void *data, const struct db_result *res)
{
        struct lookup *lk = data;
        json_object *rows = res && res->got && res->text ? json_tokener_parse(res->text) : NULL;
        bool listed = false;

        for (size_t i = 0;
             json_object_is_type(rows, json_type_array) && i < json_object_array_length(rows);
             i++) {
                const char *name = json_object_get_string(
                    json_object_object_get(json_object_array_get_idx(rows, i), "name"));

                listed = listed || (name && strcmp(name, lk->placed) == 0);
        }
        json_object_put(rows);
        if (!res || !await_current(lk->c, lk->token)) {
                lookup_free(lk);
                return;
        }
        if (!res->got) {
                conn_reply_line(lk->c, sw_error_line(json_object_get(lk->id), SW_E_INTERNAL,
                                                     "cannot read the job database"));
                lookup_free(lk);
                return;
        }
        if (!listed) {
                char why[160];

                snprintf(why, sizeof(why), "parameter \"node\": no node is named %.64s",
                         lk->placed);
                conn_reply_line(lk->c,
                                sw_error_line(json_object_get(lk->id), SW_E_INVALID_PARAMS, why));
                lookup_free(lk);
                return;
        }
        next_or_answer(lk);
}

static void holder_found(void *data, const struct db_result *res)
{
        struct lookup *lk = data;
        struct conn *c = lk->c;
        const char *node = res && res->got ? res->text : NULL;
        char why[192];
        int code;

        if (!res || !await_current(c, lk->token)) {
                lookup_free(lk);
                return;
        }
        if (!node || strcmp(node, store_node(lk->d->store)) == 0) {
                next_or_answer(lk); /* nowhere else (or unknown: the database unread) */
                return;
        }
        if (res->i[0] == 1) {
                /* Finished: its record and log are in the database (its spec is not: restart
                 * is the node's that ran it, answered here when that node is not live). */
                if (lk->to_runner && !c->relayed && forward(lk, node)) {
                        lookup_free(lk);
                        return;
                }
                store_find_run(lk->d->store, lk->job, run_found, lk);
                return;
        }
        if (c->relayed || key_here(lk)) {
                /* A submit passed on from another node, or of a key held here, is made here: it
                 * waits for the live jobs of other nodes as the database tells their ends
                 * (deps-elsewhere.c). */
                struct live_elsewhere *more = realloc(lk->live, (lk->nlive + 1) * sizeof(*more));

                if (more) {
                        lk->live = more;
                        lk->live[lk->nlive++] = (struct live_elsewhere){lk->job, (uid_t)res->i[1]};
                        next_or_answer(lk);
                        return;
                }
                code = SW_E_INTERNAL;
                snprintf(why, sizeof(why), "out of memory");
        } else if (res->i[2] > 0) {
                /* Live at its epoch now, which the last renewal may not have seen yet (it just
                 * started again). */
                char *line = with_env(lk);

                relay_forward_read(lk->d->relay, c, node, res->i[2], line ? line : lk->line,
                                   line ? strlen(line) : lk->len);
                free(line);
                lookup_free(lk);
                return;
        } else if (forward(lk, node)) {
                lookup_free(lk);
                return;
        } else {
                /* Not live as the last renewal saw: the database says whether it is now. */
                snprintf(lk->node, sizeof(lk->node), "%s", node);
                store_list_nodes(lk->d->store, nodes_read, lk);
                return;
        }
        conn_reply_line(c, sw_error_line(json_object_get(lk->id), code, why));
        lookup_free(lk);
}

/* A request that changes a job this node offered, waiting while the node takes it back. */
struct take_back {
        struct daemon *d;
        struct conn *c;
        struct job *job;
        char *line;
        size_t len;
        elsewhere_here_fn *again;
        uint64_t token; /* its wait for the database (await_begin) */
};

static void take_back_free(struct take_back *tb)
{
        await_done(tb->c, tb->token);
        job_unref(tb->job);
        conn_unref(tb->c);
        free(tb->line);
        free(tb);
}

/* The request made now: here, or where its job went. */
static void take_back_done(void *data)
{
        struct take_back *tb = data;
        struct conn *c = tb->c;

        if (await_current(c, tb->token)) {
                await_done(c, tb->token);
                c->busy = false;
                tb->again(tb->d, c, tb->line, tb->len);
                if (!c->busy)
                        conn_resume(c);
        }
        take_back_free(tb);
}

static void taken_back(void *data, const struct db_result *res)
{
        struct take_back *tb = data;

        if (!res) { /* the store's end: the daemon stops */
                take_back_free(tb);
                return;
        }
        if (res->i[0] == 1 || !tb->job->live) {
                claims_taken_back(tb->d, tb->job);
                take_back_done(tb);
                return;
        }
        tb->job->lost = true; /* not this node's: its start would find that too */
        claims_lost(tb->d, tb->job, take_back_done, tb);
}

bool elsewhere_take_back(struct daemon *d, struct conn *c, const struct method *method,
                         json_object *id, json_object *params, const char *line, size_t len,
                         elsewhere_here_fn *again)
{
        static const char *const reads[] = {"status", "wait", "log"};
        struct take_back *tb;
        struct job *job;
        json_object *v;

        /* By id, or a key's job (a keyed submit or enqueue: coalesced into a run that another
         * node has just claimed and started, it would be lost). */
        if (method->by_id && json_object_object_get_ex(params, "id", &v) &&
            json_object_is_type(v, json_type_int))
                job = registry_find(&d->registry, json_object_get_int64(v));
        else
                job = keyed_job(d, c, params);
        if (!job || !__atomic_load_n(&job->offered, __ATOMIC_ACQUIRE))
                return false;
        for (size_t i = 0; i < sizeof(reads) / sizeof(*reads); i++)
                if (strcmp(method->name, reads[i]) == 0)
                        return false;
        tb = calloc(1, sizeof(*tb));
        if (!tb || !(tb->line = strndup(line, len))) {
                free(tb);
                return false;
        }
        tb->d = d;
        tb->c = conn_ref(c);
        tb->job = job_ref(job);
        tb->len = len;
        tb->again = again;
        tb->token = await_begin(c, id);
        c->busy = true;
        store_reclaim_job_then(d->store, job->id, taken_back, tb);
        return true;
}

bool elsewhere_ask(struct daemon *d, struct conn *c, const struct method *method, json_object *id,
                   json_object *params, const char *line, size_t len, elsewhere_here_fn *here,
                   bool again)
{
        bool submit = strcmp(method->name, "submit") == 0;
        const char *placed = NULL;
        struct lookup *lk;
        json_object *v;
        size_t dep = 0;
        int64_t job = 0;

        /* A node serving another node's client asks no further, but learns finished jobs. */
        if (!d->relay || !store_shared(d->store) || (c->relayed && !submit && !again))
                return false;
        if (submit && json_object_object_get_ex(params, "node", &v) &&
            json_object_is_type(v, json_type_string) &&
            !claims_node_known(d, json_object_get_string(v)))
                placed = json_object_get_string(v);
        if (submit) {
                /* A placed one's jobs are looked up once its node is (next_or_answer()). */
                if (!placed)
                        job = unknown_dep(d, params, &dep);
        } else if (method->by_id && json_object_object_get_ex(params, "id", &v) &&
                   json_object_is_type(v, json_type_int) && json_object_get_int64(v) > 0 &&
                   !known_here(d, json_object_get_int64(v))) {
                job = json_object_get_int64(v);
        }
        if (!job && !placed)
                return false;
        lk = calloc(1, sizeof(*lk));
        if (!lk || !(lk->line = strndup(line, len)) || (placed && !(lk->placed = strdup(placed)))) {
                if (lk)
                        free(lk->line);
                free(lk);
                return false;
        }
        *lk = (struct lookup){
            .d = d,
            .c = conn_ref(c),
            .id = json_object_get(id),
            .params = submit ? json_object_get(params) : NULL,
            .dep = dep,
            .job = job,
            .line = lk->line,
            .len = len,
            .here = here,
            .to_runner = strcmp(method->name, "restart") == 0,
            .placed = lk->placed,
            .token = await_begin(c, id),
        };
        c->busy = true;
        if (placed)
                store_list_nodes(d->store, placed_listed, lk);
        else
                store_find_job(d->store, job, holder_found, lk);
        return true;
}
