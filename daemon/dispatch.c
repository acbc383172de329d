/* SPDX-License-Identifier: MIT */
/* Requests to method handlers: one table, parameters parsed by each method's declared table. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "conn.h"
#include "dispatch.h"
#include "handlers.h"
#include "manager.h"
#include "store.h"

struct method {
        const char *name;
        const struct sw_param *params;
        /* Fills in what parameters that are not given stand for. */
        void (*prefill)(struct conn *c, union params *p);
        void (*handle)(struct conn *c, union params *p, struct reply *r);
};

static const struct method methods[] = {
    {"ping", sw_no_params, NULL, handle_ping},
    {"version", sw_no_params, NULL, handle_version},
    {"settings.get", sw_no_params, NULL, handle_settings_get},
    {"settings.set", sw_settings_params, prefill_settings, handle_settings_set},
    {"stats", sw_no_params, NULL, handle_stats},
    {"submit", sw_submit_params, NULL, handle_submit},
    {"enqueue", sw_enqueue_params, NULL, handle_enqueue},
    {"wait", sw_id_params, NULL, handle_wait},
    {"cancel", sw_id_params, NULL, handle_cancel},
    {"release", sw_id_params, NULL, handle_release},
    {"status", sw_status_params, NULL, handle_status},
    {"list", sw_no_params, NULL, handle_list},
    {"log", sw_log_params, NULL, handle_log},
    {"subscribe", sw_no_params, NULL, handle_subscribe},
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
        size_t i;

        for (i = 0; i < sizeof(methods) / sizeof(methods[0]); i++)
                if (strcmp(methods[i].name, name) == 0)
                        return &methods[i];
        return NULL;
}

void dispatch_line(struct conn *c, const char *line, size_t len)
{
        struct sw_request req = {0};
        struct reply r = {0};
        const struct method *method;
        json_object *id = NULL;
        union params p;
        uint64_t queued;
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
        memset(&p, 0, sizeof(p));
        if (method->prefill)
                method->prefill(c, &p);
        code = sw_params_parse(req.params, method->params, &p, r.message, sizeof(r.message));
        if (code) {
                r.code = protocol_code(code, r.message, sizeof(r.message));
                goto done;
        }
        r.id = id;
        queued = store_queued(c->m->store);
        method->handle(c, &p, &r);
        if (store_queued(c->m->store) != queued)
                conn_wait_for_store(c);
        sw_params_clear(method->params, &p);
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

void dispatch_error(struct conn *c, int code, const char *message)
{
        conn_send(c, sw_error_line(NULL, code, message));
}
