/* SPDX-License-Identifier: MIT */
/* Job flow: pause, resume, suspend, continue, signal. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "output.h"
#include "slowctl.h"

/* pause and resume: the daemon's state after the change. */
static int flow_call(struct ctl *x, const char *method, json_object *params)
{
        json_object *result;
        int r = ctl_call(x, NULL, method, params, &result);
        int64_t running;

        if (r)
                return r;
        if (!x->json) {
                const char *queue = json_str(result, "queue", NULL);
                const char *node = json_str(result, "node", NULL);
                bool paused = json_object_get_boolean(json_object_object_get(result, "paused"));

                running = json_int(result, "running", 0);
                escape_linef(stdout, "%s%s%s%s; %lld job%s running",
                             queue ? "queue " : node ? "node " : "",
                             queue ? queue : node ? node : "", queue || node ? " " : "",
                             paused ? "paused" : "not paused",
                             (long long)running, running == 1 ? "" : "s");
        }
        json_object_put(result);
        return EXIT_OK;
}

int cmd_pause(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *p = json_object_new_object();

        if (!p)
                return ctl_error(x, "out of memory");
        if (o->wait)
                json_object_object_add(p, "drain", json_object_new_boolean(1));
        if (o->queue)
                json_object_object_add(p, "queue", json_object_new_string(o->queue));
        if (o->node)
                json_object_object_add(p, "node", json_object_new_string(o->node));
        return flow_call(x, "pause", p);
}

int cmd_resume(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *p = json_object_new_object();

        if (!p)
                return ctl_error(x, "out of memory");
        if (o->queue)
                json_object_object_add(p, "queue", json_object_new_string(o->queue));
        if (o->node)
                json_object_object_add(p, "node", json_object_new_string(o->node));
        return flow_call(x, "resume", p);
}

/* suspend and continue: what the job's processes are now, and whether that changed. */
static int job_call(struct ctl *x, const char *method, const char *arg)
{
        int64_t id = ctl_parse_id(x, arg);
        json_object *result;
        char what[64];
        bool suspended;
        int r;

        if (id < 0)
                return EXIT_USAGE;
        snprintf(what, sizeof(what), "%s %lld", method, (long long)id);
        r = ctl_call(x, what, method, ctl_id_params(id), &result);
        if (r)
                return r;
        if (!x->json) {
                suspended = json_object_get_boolean(json_object_object_get(result, "suspended"));
                printf("job %lld %s%s\n", (long long)id,
                       json_object_get_boolean(json_object_object_get(result, "changed"))
                           ? ""
                           : "was already ",
                       suspended ? "suspended" : "running");
        }
        json_object_put(result);
        return EXIT_OK;
}

int cmd_suspend(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        return job_call(x, "suspend", argv[0]);
}

int cmd_continue(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        return job_call(x, "continue", argv[0]);
}

/* SIG: a number goes as one, anything else as the name the daemon looks up ("USR1", "SIGUSR1"). */
int cmd_signal(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        int64_t id = ctl_parse_id(x, argv[0]);
        const char *sig = argv[1];
        json_object *p, *result;
        char what[64];
        int r;

        if (id < 0)
                return EXIT_USAGE;
        if (!*sig) {
                ctl_usage_error(x, "no signal given");
                return EXIT_USAGE;
        }
        p = ctl_id_params(id);
        json_object_object_add(p, "signal",
                               strspn(sig, "0123456789") == strlen(sig) && strlen(sig) < 10
                                   ? json_object_new_int(atoi(sig))
                                   : json_object_new_string(sig));
        snprintf(what, sizeof(what), "signal %lld", (long long)id);
        r = ctl_call(x, what, "signal", p, &result);
        if (r)
                return r;
        if (!x->json)
                printf("job %lld: signal %s sent\n", (long long)id, sig);
        json_object_put(result);
        return EXIT_OK;
}
