/* SPDX-License-Identifier: MIT */
/* What every command does with the daemon: connect, call, and say what went wrong. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "escape.h"
#include "output.h"
#include "slowctl.h"

#define ID_MAX 9007199254740991LL /* the protocol's largest id: 2^53 - 1 */

/* After the daemon closed the connection (a restart, a re-exec), ctl_reconnect() tries again
 * for this long in all, first after RECONNECT_FIRST_DELAY, then twice as long each time up to
 * RECONNECT_MAX_DELAY: a restart takes well under a second, and nothing spins meanwhile. */
#define RECONNECT_SECONDS     30.0
#define RECONNECT_FIRST_DELAY 0.01
#define RECONNECT_MAX_DELAY   0.5

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

/* A connection that could not be made: the message, and the exit status; the client goes. */
static int connect_failed(struct ctl *x, int r)
{
        if (r == -ENOMEM)
                return ctl_error(x, "out of memory");
        if (r == -EPERM && sw_client_server_uid(x->client) >= 0) {
                ctl_error(x, "%s is served by uid %lld, not by you or root",
                          sw_client_socket(x->client), (long long)sw_client_server_uid(x->client));
                x->client = sw_client_free(x->client);
                return EXIT_UNAVAILABLE;
        }
        fprintf(stderr, "slowctl: cannot connect to %s: %s (is slowworkd running?)\n",
                sw_client_socket(x->client), strerror(-r));
        x->client = sw_client_free(x->client);
        return EXIT_UNAVAILABLE;
}

int ctl_connect(struct ctl *x)
{
        int r;

        if (x->client)
                return 0;
        r = sw_client_connect(x->socket, &x->client);
        if (r < 0)
                return connect_failed(x, r);
        if (ctl_changes(x->command))
                ctl_tell_fallback(x, x->command);
        return 0;
}

void ctl_tell_fallback(struct ctl *x, const char *what)
{
        if (x->client && sw_client_fell_back(x->client))
                fprintf(stderr,
                        "slowctl: no user instance of slowworkd answered: %s goes to the system "
                        "instance on %s\n",
                        what, sw_client_socket(x->client));
}

bool ctl_lost(int r)
{
        return r == -ECONNRESET || r == -EPIPE || r == -ECONNABORTED;
}

/* How long ctl_reconnect() tries: RECONNECT_SECONDS, or $SLOWWORK_RECONNECT_TIMEOUT (a span, as
 * the options of seconds take them), which the tests set to see the end without waiting 30 s. */
static double reconnect_timeout(void)
{
        const char *env = getenv("SLOWWORK_RECONNECT_TIMEOUT");
        double s;

        return env && duration_parse(env, &s) == 0 ? s : RECONNECT_SECONDS;
}

static double mono_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_for(double s)
{
        struct timespec ts = {.tv_sec = (time_t)s,
                              .tv_nsec = (long)((s - (double)(time_t)s) * 1e9)};

        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
}

int ctl_reconnect(struct ctl *x)
{
        double now = mono_now(), deadline, delay = RECONNECT_FIRST_DELAY, left;
        char *path;
        int r;

        if (x->lost_at > 0) {
                /* Lost again before any reply (a daemon that closes each connection at once):
                 * the same time in all, and never at once again. */
                if (now >= x->lost_at + reconnect_timeout())
                        return ctl_transport_error(x, NULL, -ECONNRESET);
                sleep_for(RECONNECT_MAX_DELAY);
        } else {
                x->lost_at = now;
        }
        deadline = x->lost_at + reconnect_timeout();
        path = strdup(sw_client_socket(x->client));
        if (!path)
                return ctl_error(x, "out of memory");
        x->client = sw_client_free(x->client);
        /* The path that answered before, as it is: a user instance restarting must not make
         * slowctl fall back to the system instance's socket and ask it about another's jobs. */
        for (;;) {
                r = sw_client_connect(path, &x->client);
                left = deadline - mono_now();
                if (r == 0 || !(r == -ENOENT || r == -ECONNREFUSED || r == -EAGAIN) || left <= 0)
                        break;
                x->client = sw_client_free(x->client);
                sleep_for(delay < left ? delay : left);
                delay = delay * 2 < RECONNECT_MAX_DELAY ? delay * 2 : RECONNECT_MAX_DELAY;
        }
        free(path);
        return r < 0 ? connect_failed(x, r) : 0;
}

void ctl_replied(struct ctl *x)
{
        x->lost_at = 0;
}

/* The call, connected first: 0 once the daemon replied (*ret_replied: sw_client_call()'s 0 for a
 * result, 1 for an error in err), else an exit status; with reconnect, a lost connection is made
 * again and CTL_RECONNECTED returned. */
static int call(struct ctl *x, const char *what, const char *method, json_object *params,
                json_object **ret_result, struct sw_client_error *err, bool reconnect,
                int *ret_replied)
{
        int r;

        *ret_result = NULL;
        r = ctl_connect(x);
        if (r) {
                json_object_put(params);
                return r;
        }
        r = sw_client_call(x->client, method, params, ret_result, err);
        if (reconnect && ctl_lost(r)) {
                r = ctl_reconnect(x);
                return r ? r : CTL_RECONNECTED;
        }
        if (r < 0)
                return ctl_transport_error(x, what, r);
        *ret_replied = r;
        return 0;
}

int ctl_ask(struct ctl *x, const char *what, const char *method, json_object *params,
            json_object **ret_result, struct sw_client_error *err)
{
        int replied = 0, r = call(x, what, method, params, ret_result, err, true, &replied);

        if (r)
                return r;
        ctl_replied(x);
        if (replied == 0 && !*ret_result)
                *ret_result = json_object_new_object(); /* a null result: nothing to say */
        return 0;
}

int ctl_ask_again(struct ctl *x, const char *what, const char *method, json_object *params,
                  json_object **ret_result, struct sw_client_error *err)
{
        int r;

        do
                r = ctl_ask(x, what, method, json_object_get(params), ret_result, err);
        while (r == CTL_RECONNECTED);
        json_object_put(params);
        return r;
}

bool ctl_changes(const char *command)
{
        /* The commands that only look; any other changes something. Of nodes and queue, only
         * nodes forget, queue add and queue rm do: they say so themselves. */
        static const char *const looking[] = {
            "status", "list",    "history", "log",   "wait", "get",  "stats", "top",
            "rq",     "metrics", "nodes",   "queue", "ping", "version", "help", NULL};

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
        int replied = 0;

        return call(x, what, method, params, ret_result, err, false, &replied);
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

json_object *ctl_argv_array(int argc, char **argv)
{
        json_object *a = json_object_new_array_ext(argc);
        int i;

        for (i = 0; a && i < argc; i++)
                if (json_object_array_add(a, json_object_new_string(argv[i])) < 0) {
                        json_object_put(a);
                        return NULL;
                }
        return a;
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
