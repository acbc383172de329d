/* SPDX-License-Identifier: MIT */
/* What every command does with the daemon: connect, call, and say what went wrong. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "output.h"
#include "slowctl.h"

#define ID_MAX 9007199254740991LL /* the protocol's largest id: 2^53 - 1 */

int ctl_error(struct ctl *x, const char *fmt, ...)
{
        va_list ap;

        /* Messages carry the daemon's words and the user's arguments: escaped, like all output. */
        fputs("slowctl: ", stderr);
        va_start(ap, fmt);
        escape_vprintf(stderr, fmt, ap);
        va_end(ap);
        fputc('\n', stderr);
        return EXIT_FAIL;
}

int ctl_usage_error(struct ctl *x, const char *fmt, ...)
{
        va_list ap;

        fprintf(stderr, "slowctl: %s: ", x->command);
        va_start(ap, fmt);
        escape_vprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\nUsage: slowctl %s %s\n", x->command, x->usage);
        return EXIT_USAGE;
}

int ctl_connect(struct ctl *x)
{
        int r;

        if (x->client)
                return 0;
        r = sw_client_connect(x->socket, &x->client);
        if (r == -ENOMEM)
                return ctl_error(x, "out of memory");
        if (r == -EPERM && sw_client_server_uid(x->client) >= 0) {
                ctl_error(x, "%s is served by uid %lld, not by you or root",
                          sw_client_socket(x->client), (long long)sw_client_server_uid(x->client));
                x->client = sw_client_free(x->client);
                return EXIT_UNAVAILABLE;
        }
        if (r < 0) {
                fprintf(stderr, "slowctl: cannot connect to %s: %s (is slowworkd running?)\n",
                        sw_client_socket(x->client), strerror(-r));
                x->client = sw_client_free(x->client);
                return EXIT_UNAVAILABLE;
        }
        if (sw_client_fell_back(x->client) && ctl_changes(x->command))
                fprintf(stderr,
                        "slowctl: no user instance of slowworkd answered: %s goes to the system "
                        "instance on %s\n",
                        x->command, sw_client_socket(x->client));
        return 0;
}

bool ctl_changes(const char *command)
{
        /* The commands that only look; any other changes something. */
        static const char *const looking[] = {"status", "list",  "history", "log",  "wait",
                                              "get",    "stats", "top",     "rq",   "metrics",
                                              "nodes",  "ping",  "version", "help", NULL};

        for (const char *const *l = looking; *l; l++)
                if (strcmp(*l, command) == 0)
                        return false;
        return true;
}

int ctl_transport_error(struct ctl *x, const char *what, int r)
{
        what = what ? what : x->command;
        switch (r) {
        case -ECONNRESET:
                return ctl_error(x, "%s: slowworkd closed the connection", what);
        case -EBADMSG:
                return ctl_error(x, "%s: slowworkd sent a reply that is not JSON-RPC", what);
        case -E2BIG:
                return ctl_error(x, "%s: slowworkd sent a reply too large to read", what);
        default:
                return ctl_error(x, "%s: talking to slowworkd on %s: %s", what,
                                 sw_client_socket(x->client), strerror(-r));
        }
}

int ctl_try(struct ctl *x, const char *what, const char *method, json_object *params,
            json_object **ret_result, struct sw_client_error *err)
{
        int r;

        *ret_result = NULL;
        r = ctl_connect(x);
        if (r) {
                json_object_put(params);
                return r;
        }
        r = sw_client_call(x->client, method, params, ret_result, err);
        if (r < 0)
                return ctl_transport_error(x, what, r);
        if (r == 0 && !*ret_result)
                *ret_result = json_object_new_object(); /* a null result: nothing to say */
        return 0;
}

int ctl_call(struct ctl *x, const char *what, const char *method, json_object *params,
             json_object **ret_result)
{
        struct sw_client_error err;
        json_object *result;
        int r;

        r = ctl_try(x, what, method, params, &result, &err);
        if (r)
                return r;
        if (!result)
                return ctl_error(x, "%s: %s", what ? what : x->command, err.message);
        if (x->json)
                output_json(result);
        if (ret_result)
                *ret_result = result;
        else
                json_object_put(result);
        return 0;
}

int ctl_call_print_id(struct ctl *x, const char *what, const char *method, json_object *params)
{
        json_object *result;
        int r = ctl_call(x, what, method, params, &result);

        if (r)
                return r;
        if (!x->json)
                printf("%lld\n", (long long)json_int(result, "id", 0));
        json_object_put(result);
        return EXIT_OK;
}

int ctl_call_print_object(struct ctl *x, const char *what, const char *method,
                          json_object *params)
{
        json_object *result;
        int r = ctl_call(x, what, method, params, &result);

        if (r)
                return r;
        if (!x->json && output_object_human(result, NULL) < 0)
                r = ctl_error(x, "out of memory");
        json_object_put(result);
        return r;
}

int ctl_send(struct ctl *x, const char *method, json_object *params, int64_t *ret_id)
{
        int r;

        r = ctl_connect(x);
        if (r) {
                json_object_put(params);
                return r;
        }
        r = sw_client_queue(x->client, method, params, ret_id);
        return r < 0 ? ctl_transport_error(x, NULL, r) : 0;
}

int ctl_receive(struct ctl *x, json_object **ret_result, struct sw_client_error *err,
                int64_t *ret_id)
{
        int r = sw_client_receive(x->client, ret_result, err, ret_id);

        if (r < 0)
                ctl_transport_error(x, NULL, r);
        return r;
}

int64_t ctl_parse_id(struct ctl *x, const char *s)
{
        char *end;
        long long id;

        errno = 0;
        id = strtoll(s, &end, 10);
        if (errno || end == s || *end || id < 1 || id > ID_MAX) {
                ctl_usage_error(x, "not a job id: \"%s\"", s);
                return -1;
        }
        return id;
}

json_object *ctl_id_params(int64_t id)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_int64(id));
        return o;
}

json_object *ctl_queue_params(const struct opts *o)
{
        json_object *p;

        if (!o->queue)
                return NULL;
        p = json_object_new_object();
        json_object_object_add(p, "queue", json_object_new_string(o->queue));
        return p;
}

json_object *ctl_parse_number(const char *s)
{
        json_object *v = NULL;

        if (sw_json_read(s, strlen(s), &v, NULL, 0) == 0 && v &&
            (json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double)))
                return v;
        json_object_put(v);
        return NULL;
}
