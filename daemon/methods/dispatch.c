/* SPDX-License-Identifier: MIT */
/* Requests to method handlers: the tables of methods/, parameters parsed by each method's own. */
#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "jobs/daemon.h"
#include "jobs/queues.h"
#include "methods/dispatch.h"
#include "methods/elsewhere.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "server/conn.h"
#include "server/relay.h"
#include "store/db.h"
#include "store/store.h"

static const struct method *const tables[] = {
    daemon_methods, submit_methods, control_methods, query_methods,
    log_methods,    flow_methods,   queue_methods,   metrics_methods, edit_methods,
    nodes_methods,
    restart_methods,
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

struct job *method_lookup_job(struct daemon *d, struct conn *c, int64_t id, struct reply *r)
{
        struct job *job = registry_find(&d->registry, id);

        if (!job) {
                reply_error(r, SW_E_NOT_FOUND, "no live job %lld", (long long)id);
                return NULL;
        }
        if (!requests_may_touch(c, job->owner)) {
                reply_error(r, SW_E_PERMISSION, "job %lld is not yours", (long long)id);
                return NULL;
        }
        return job;
}

bool method_may_choose_run(struct daemon *d, struct conn *c, uid_t owner, int64_t id,
                           struct reply *r)
{
        uid_t own = d->shared.run.uid;

        if (!d->shared.run.system || (owner != 0 && owner != own) || c->uid == 0 || c->uid == own)
                return true;
        reply_error(r, SW_E_PERMISSION,
                    "permission denied: job %lld is root's: only root changes what it runs (it "
                    "runs as root)",
                    (long long)id);
        return false;
}

struct queue *method_lookup_queue(struct daemon *d, const char *param, const char *name,
                                  struct reply *r)
{
        struct queue *q;

        if (name && sw_queue_name_check(param, name, r->message, sizeof(r->message))) {
                r->code = SW_E_INVALID_PARAMS;
                return NULL;
        }
        q = queues_find(d, name);
        if (!q)
                reply_error(r, SW_E_INVALID_PARAMS, "parameter \"%s\": no queue \"%s\"", param,
                            name);
        return q;
}

/* The request's params parsed (an error in r), and the handler called; the connection's later
 * replies wait for what it wrote. */
static void call(struct daemon *d, struct conn *c, const struct method *method, json_object *params,
                 struct reply *r)
{
        union params p;
        uint64_t queued, after;
        int code;

        memset(&p, 0, sizeof(p));
        if (method->prefill)
                method->prefill(d, &p);
        code = sw_params_parse(params, method->params, &p, r->message, sizeof(r->message));
        if (code) {
                r->code = protocol_code(code, r->message, sizeof(r->message));
                return;
        }
        r->params = params;
        queued = store_queued(d->store);
        method->handle(d, c, &p, r);
        after = store_queued(d->store);
        if (after != queued)
                conn_wait_for(c, after);
        sw_params_clear(method->params, &p);
}

void method_call_again(struct daemon *d, struct conn *c, const char *name, json_object *id,
                       json_object *params, struct reply *r)
{
        r->id = id;
        call(d, c, find(name), params, r);
        if (r->deferred)
                json_object_put(id);
        else
                conn_reply(c, id, r->result, r->code, r->message);
}

static void dispatch_here(struct daemon *d, struct conn *c, const char *line, size_t len);
static void dispatch_moved(struct daemon *d, struct conn *c, const char *line, size_t len);

/* Where a request may be answered: here alone, here or on the node that holds its job, or the
 * same once more for a request made again (dispatch_again), whatever connection it came on. */
enum reach { HERE, ELSEWHERE, ELSEWHERE_AGAIN };

static void dispatch(struct daemon *d, struct conn *c, const char *line, size_t len,
                     enum reach reach)
{
        struct sw_request req = {0};
        struct reply r = {0};
        const struct method *method;
        json_object *id = NULL;
        int code;

        code = sw_request_parse(line, len, &req, &id, r.message, sizeof(r.message));
        if (code == SW_E_INVALID_PARAMS) {
                /* A request whose params are wrong, as any other: a notification gets no reply. */
                conn_send_reply(c, id, NULL, code, r.message);
                return;
        }
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
        if (reach != HERE &&
            (elsewhere_take_back(d, c, method, id, req.params, line, len, dispatch_moved) ||
             elsewhere_ask(d, c, method, id, req.params, line, len, dispatch_here,
                           reach == ELSEWHERE_AGAIN))) {
                json_object_put(id);
                sw_request_clear(&req);
                return;
        }
        r.id = id;
        call(d, c, method, req.params, &r);
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
        struct daemon *d = data;

        /* A node alone with its database has no elsewhere. */
        dispatch(d, c, line, len, d->claims ? ELSEWHERE : HERE);
}

/* Made again: here, or where its job went. */
static void dispatch_moved(struct daemon *d, struct conn *c, const char *line, size_t len)
{
        dispatch(d, c, line, len, ELSEWHERE_AGAIN);
}

void dispatch_again(void *data, struct conn *c, const char *line, size_t len)
{
        c->busy = false;
        dispatch_moved(data, c, line, len);
        if (!c->busy)
                conn_resume(c);
}

/* The same, answered by this node whatever job it names (once elsewhere.c knows). */
static void dispatch_here(struct daemon *d, struct conn *c, const char *line, size_t len)
{
        dispatch(d, c, line, len, HERE);
}
