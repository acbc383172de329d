/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "jobs/payload.h"
#include "util/json-text.h"

int payload_check(const struct sw_submit_params *p, bool *ret_very_slow, char *err,
                  size_t errlen)
{
        if (p->plugin || p->entry || p->arg) {
                if (!p->plugin || !p->entry) {
                        snprintf(err, errlen, "a plugin job needs both \"plugin\" and \"entry\"");
                        return -EINVAL;
                }
                if (p->command || p->argv || p->cwd || p->env || p->limits) {
                        snprintf(err, errlen, "a plugin job takes no \"command\", \"argv\", "
                                              "\"cwd\", \"env\" or \"limits\" (it runs inside "
                                              "the daemon)");
                        return -EINVAL;
                }
        } else if (!p->command == !p->argv) {
                snprintf(err, errlen, "give exactly one of \"command\" and \"argv\"");
                return -EINVAL;
        }
        if (!p->class_name || strcmp(p->class_name, "slow") == 0)
                *ret_very_slow = false;
        else if (strcmp(p->class_name, "very-slow") == 0)
                *ret_very_slow = true;
        else {
                snprintf(err, errlen, "\"class\" must be \"slow\" or \"very-slow\"");
                return -EINVAL;
        }
        if (p->cwd && p->cwd[0] != '/') {
                snprintf(err, errlen, "\"cwd\" must be an absolute path");
                return -EINVAL;
        }
        if (p->node && !p->node[0]) {
                snprintf(err, errlen, "\"node\" must not be empty");
                return -EINVAL;
        }
        if (p->on_end && !p->on_end[0]) {
                snprintf(err, errlen, "\"on_end\" must not be empty");
                return -EINVAL;
        }
        if (p->every > 0 && p->cron) {
                snprintf(err, errlen, "give at most one of \"every\" and \"cron\"");
                return -EINVAL;
        }
        if (p->stashed && (p->after || p->after_any || p->delay > 0 || p->every > 0 || p->cron)) {
                snprintf(err, errlen, "a stashed job waits for enqueue: it takes no \"after\", "
                                      "\"after_any\", \"delay\", \"every\" or \"cron\"");
                return -EINVAL;
        }
        if ((p->every > 0 || p->cron) && (p->after || p->after_any || p->delay > 0)) {
                snprintf(err, errlen, "a recurring job (\"%s\") runs at its ticks: it takes no "
                                      "\"after\", \"after_any\" or \"delay\"",
                         p->cron ? "cron" : "every");
                return -EINVAL;
        }
        return 0;
}

const char *payload_arg_text(json_object *arg)
{
        return arg ? json_object_to_json_string_ext(arg, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE)
                   : "null";
}

/* Whether a limit asks for something: set, and not 0 (none). */
static bool limit_asks(int64_t v)
{
        return v != SW_LIMIT_UNSET && v != 0;
}

static int64_t limit_of(const struct sw_limits *limits, const struct sw_param *p)
{
        return *(const int64_t *)((const char *)limits + p->offset);
}

static bool any_limit_asks(const struct sw_limits *limits)
{
        for (const struct sw_param *p = sw_limits_params; p->name; p++)
                if (limit_asks(limit_of(limits, p)))
                        return true;
        return false;
}

/* The members of limits that ask for something. */
static void limits_text(struct json_text *t, const struct sw_limits *limits)
{
        json_text_open(t, '{');
        for (const struct sw_param *p = sw_limits_params; p->name; p++) {
                int64_t v = limit_of(limits, p);

                if (limit_asks(v)) {
                        json_text_name(t, p->name);
                        json_text_int(t, v);
                }
        }
        json_text_close(t, '}');
}

char *payload_json(const struct sw_submit_params *p, const struct sw_limits *limits)
{
        struct json_text t;
        char first[1024];

        sw_text_start(&t.text, first, sizeof(first));

        json_text_open(&t, '{');
        if (p->command) {
                json_text_name(&t, "command");
                json_text_string(&t, p->command);
        }
        if (p->argv) {
                json_text_name(&t, "argv");
                json_text_open(&t, '[');
                for (char **a = p->argv; *a; a++)
                        json_text_string(&t, *a);
                json_text_close(&t, ']');
        }
        if (p->cwd) {
                json_text_name(&t, "cwd");
                json_text_string(&t, p->cwd);
        }
        if (p->timeout > 0) {
                json_text_name(&t, "timeout");
                json_text_double(&t, p->timeout);
        }
        /* Every limit that asks for something, defaults included: a restart must not give the
         * job other ones. One left out is 0, none (as jobs/restore.c reads it back). */
        if (!p->plugin && any_limit_asks(limits)) {
                json_text_name(&t, "limits");
                limits_text(&t, limits);
        }
        if (p->retries > 0) {
                json_text_name(&t, "retries");
                json_text_int(&t, p->retries);
                json_text_name(&t, "retry_delay");
                json_text_double(&t, p->retry_delay);
        }
        if (p->every > 0) {
                json_text_name(&t, "every");
                json_text_double(&t, p->every);
        }
        if (p->cron) {
                json_text_name(&t, "cron");
                json_text_string(&t, p->cron);
        }
        if (p->queue && strcmp(p->queue, SW_QUEUE_DEFAULT) != 0) {
                json_text_name(&t, "queue");
                json_text_string(&t, p->queue);
        }
        if (p->priority != 0) {
                json_text_name(&t, "priority");
                json_text_int(&t, p->priority);
        }
        if (p->plugin) {
                const char *arg = payload_arg_text(p->arg);

                json_text_name(&t, "plugin");
                json_text_string(&t, p->plugin);
                json_text_name(&t, "entry");
                json_text_string(&t, p->entry);
                json_text_name(&t, "arg");
                json_text_raw(&t, arg, strlen(arg));
        }
        if (p->on_end) {
                json_text_name(&t, "on_end");
                json_text_string(&t, p->on_end);
        }
        if (p->node) {
                json_text_name(&t, "node");
                json_text_string(&t, p->node);
        }
        json_text_close(&t, '}');
        return json_text_end(&t);
}

