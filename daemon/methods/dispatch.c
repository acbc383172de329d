/* SPDX-License-Identifier: MIT */
/* Requests to method handlers: the tables of methods/, parameters parsed by each method's own. */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "jobs/queues.h"
#include "jobs/registry.h"
#include "methods/dispatch.h"
#include "methods/method.h"
#include "server/conn.h"
#include "server/relay.h"
#include "store/db.h"
#include "store/run-record.h"
#include "store/store.h"

static const struct method *const tables[] = {
    daemon_methods, submit_methods, control_methods, query_methods,
    log_methods,    flow_methods,   queue_methods,   metrics_methods,
};

int reply_error(struct reply *r, int code, const char *fmt, ...)
{
        va_list ap;

        r->code = code;
        va_start(ap, fmt);
        vsnprintf(r->message, sizeof(r->message), fmt, ap);
        va_end(ap);
        return code;
}

/* proto's calls return JSON-RPC codes, or a negative errno (-ENOMEM) that needs one. */
static int protocol_code(int code, char *message, size_t len)
{
        if (code <= -32000)
                return code;
        snprintf(message, len, "%s", strerror(-code));
        return sw_error_from_errno(code);
}

static const struct method *find(const char *name)
{
        for (size_t t = 0; t < sizeof(tables) / sizeof(tables[0]); t++)
                for (const struct method *m = tables[t]; m->name; m++)
                        if (strcmp(m->name, name) == 0)
                                return m;
        return NULL;
}

struct job *method_lookup_job(struct registry *reg, struct conn *c, int64_t id, struct reply *r)
{
        struct job *job = registry_find(reg, id);

        if (!job) {
                reply_error(r, SW_E_NOT_FOUND, "no live job %lld", (long long)id);
                return NULL;
        }
        if (!registry_may_touch(c, job->owner)) {
                reply_error(r, SW_E_PERMISSION, "job %lld is not yours", (long long)id);
                return NULL;
        }
        return job;
}

struct queue *method_lookup_queue(struct registry *reg, const char *param, const char *name,
                                  struct reply *r)
{
        struct queue *q;

        if (name && sw_queue_name_check(param, name, r->message, sizeof(r->message))) {
                r->code = SW_E_INVALID_PARAMS;
                return NULL;
        }
        q = registry_find_queue(reg, name);
        if (!q)
                reply_error(r, SW_E_INVALID_PARAMS, "parameter \"%s\": no queue \"%s\"", param,
                            name);
        return q;
}

/* The request's params parsed (an error in r), and the handler called; the connection's later
 * replies wait for what it wrote. */
static void call(struct registry *reg, struct conn *c, const struct method *method,
                 json_object *params, struct reply *r)
{
        union params p;
        uint64_t queued;
        int code;

        memset(&p, 0, sizeof(p));
        if (method->prefill)
                method->prefill(reg, &p);
        code = sw_params_parse(params, method->params, &p, r->message, sizeof(r->message));
        if (code) {
                r->code = protocol_code(code, r->message, sizeof(r->message));
                return;
        }
        r->params = params;
        queued = store_queued(reg->store);
        method->handle(reg, c, &p, r);
        if (store_queued(reg->store) != queued)
                conn_wait_for_store(c);
        sw_params_clear(method->params, &p);
}

void method_call_again(struct registry *reg, struct conn *c, const char *name, json_object *id,
                       json_object *params, struct reply *r)
{
        r->id = id;
        call(reg, c, find(name), params, r);
        if (r->deferred)
                json_object_put(id);
        else
                conn_reply(c, id, r->result, r->code, r->message);
}

/* A request about a job this node neither holds nor ran, waiting to learn which node does. */
struct holder_lookup {
        struct registry *reg;
        struct conn *c;
        json_object *id; /* the request's */
        int64_t job;
        char *line;
        size_t len;
};

static void dispatch(struct registry *reg, struct conn *c, const char *line, size_t len,
                     bool may_relay);

static void lookup_free(struct holder_lookup *lk)
{
        json_object_put(lk->id);
        conn_unref(lk->c);
        free(lk->line);
        free(lk);
}

/* The request answered here, as any request. */
static void answer_here(struct holder_lookup *lk)
{
        struct conn *c = lk->c;

        c->busy = false;
        dispatch(lk->reg, c, lk->line, lk->len, false);
        if (!c->busy)
                conn_resume(c);
        lookup_free(lk);
}

/* A finished job's last run, as the database has it, learned: this node answers. */
static void run_found(void *data, const struct db_result *res)
{
        struct holder_lookup *lk = data;
        struct run_record *rec = res && res->text ? run_record_from_row(res->text) : NULL;

        if (!res || lk->c->closing) {
                run_record_free(rec);
                lookup_free(lk);
                return;
        }
        if (!res->got) {
                conn_reply_line(lk->c, sw_error_line(json_object_get(lk->id), SW_E_INTERNAL,
                                                     "cannot read the job database"));
                lookup_free(lk);
                return;
        }
        if (rec && !registry_find(lk->reg, rec->id))
                registry_learn_run(lk->reg, rec);
        else
                run_record_free(rec);
        answer_here(lk);
}

static void holder_found(void *data, const struct db_result *res)
{
        struct holder_lookup *lk = data;
        struct conn *c = lk->c;
        const char *node = res && res->got ? res->text : NULL;
        bool elsewhere = node && strcmp(node, store_node(lk->reg->store)) != 0;
        char why[160];

        if (!res || c->closing) {
                /* nobody to answer */
        } else if (elsewhere && res->i[0] == 1) {
                /* Finished: its record and log are in the database. */
                store_find_run(lk->reg->store, lk->job, run_found, lk);
                return;
        } else if (elsewhere && relay_forward(lk->reg->relay, c, node, lk->line, lk->len)) {
                /* answered there */
        } else if (elsewhere) {
                /* A live job of a node whose lease ran out: the next node to renew takes it. */
                snprintf(why, sizeof(why),
                         "the job's node %s is not live: another node takes its jobs", node);
                conn_reply_line(c, sw_error_line(json_object_get(lk->id), SW_E_BUSY, why));
        } else {
                answer_here(lk);
                return;
        }
        lookup_free(lk);
}

/* The first of a submit's after and after_any jobs that this node neither holds nor knows the
 * end of, or 0. */
static int64_t unknown_dep(struct registry *reg, json_object *params)
{
        static const char *const names[] = {"after", "after_any"};

        for (size_t k = 0; k < 2; k++) {
                json_object *ids = json_object_object_get(params, names[k]);
                size_t n = json_object_is_type(ids, json_type_array) ? json_object_array_length(ids)
                                                                     : 0;

                for (size_t i = 0; i < n; i++) {
                        json_object *v = json_object_array_get_idx(ids, i);
                        int64_t job = json_object_get_int64(v);

                        if (json_object_is_type(v, json_type_int) && job > 0 &&
                            !registry_find(reg, job) && !registry_last_run(reg, job))
                                return job;
                }
        }
        return 0;
}

/* The job whose node a request is to be asked of, or 0: a job that this node neither holds nor
 * last ran (the history's record of another node's run may be outdated), named by the request's
 * id; or one that a submit waits for (the submit goes to that job's node). */
static int64_t job_elsewhere(struct registry *reg, const struct method *method,
                             json_object *params)
{
        const struct run_record *rec;
        json_object *v;
        int64_t job;

        if (strcmp(method->name, "submit") == 0)
                return unknown_dep(reg, params);
        if (!method->by_id || !json_object_object_get_ex(params, "id", &v) ||
            !json_object_is_type(v, json_type_int))
                return 0;
        job = json_object_get_int64(v);
        rec = registry_last_run(reg, job);
        if (job <= 0 || registry_find(reg, job) || (rec && rec->node == store_node(reg->store)))
                return 0;
        return job;
}

/* Whether a request about another node's job is to be asked of that node, once known (then the
 * request waits for that). */
static bool ask_holder(struct registry *reg, struct conn *c, const struct method *method,
                       json_object *id, json_object *params, const char *line, size_t len)
{
        struct holder_lookup *lk;
        int64_t job;

        if (!reg->relay || c->relayed || !store_shared(reg->store) ||
            !(job = job_elsewhere(reg, method, params)))
                return false;
        lk = calloc(1, sizeof(*lk));
        if (!lk || !(lk->line = strndup(line, len))) {
                free(lk);
                return false;
        }
        lk->reg = reg;
        lk->c = conn_ref(c);
        lk->id = json_object_get(id);
        lk->job = job;
        lk->len = len;
        c->busy = true;
        store_find_job(reg->store, job, holder_found, lk);
        return true;
}

static void dispatch(struct registry *reg, struct conn *c, const char *line, size_t len,
                     bool may_relay)
{
        struct sw_request req = {0};
        struct reply r = {0};
        const struct method *method;
        json_object *id = NULL;
        int code;

        code = sw_request_parse(line, len, &req, &id, r.message, sizeof(r.message));
        if (code) {
                r.code = protocol_code(code, r.message, sizeof(r.message));
                /* An unreadable request still gets an error, addressed to id null. */
                conn_send(c, sw_error_line(id, r.code, r.message));
                return;
        }
        id = req.id ? json_object_get(req.id) : NULL;

        method = find(req.method);
        if (!method) {
                reply_error(&r, SW_E_NO_METHOD, "no method \"%.64s\"", req.method);
                goto done;
        }
        if (may_relay && ask_holder(reg, c, method, id, req.params, line, len)) {
                json_object_put(id);
                sw_request_clear(&req);
                return;
        }
        r.id = id;
        call(reg, c, method, req.params, &r);
        if (r.deferred) {
                c->busy = true;
                json_object_put(id);
                sw_request_clear(&req);
                return;
        }
done:
        conn_send_reply(c, id, r.result, r.code, r.message);
        sw_request_clear(&req);
}

void dispatch_line(void *data, struct conn *c, const char *line, size_t len)
{
        dispatch(data, c, line, len, true);
}
