/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/job.h"
#include "store/run-record.h"
#include "util/cron.h"
#include "util/json-text.h"
#include "util/strv.h"

/* The argv a submit asks for: its own, or the shell's for a command. */
static char **payload_argv(const struct sw_submit_params *p)
{
        char *shell[] = {(char *)"/bin/sh", (char *)"-c", p->command, NULL};

        return strv_dup(p->command ? shell : p->argv);
}

static int payload_check(const struct sw_submit_params *p, bool *ret_very_slow, char *err,
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
        if (p->every > 0 && p->cron) {
                snprintf(err, errlen, "give at most one of \"every\" and \"cron\"");
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

static const char *arg_text(json_object *arg)
{
        return arg ? json_object_to_json_string_ext(arg, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE)
                   : "null";
}

/* What a plugin job runs: its loaded entry point and its argument. */
static int plugin_payload(struct job *job, const struct sw_submit_params *p, char *err,
                          size_t errlen)
{
        int r = plugins_get(&job->shared->plugins, p->plugin, p->entry, &job->plugin, &job->plugin_entry,
                            err, errlen);

        if (r < 0)
                return r;
        job->entry = strdup(p->entry);
        job->arg = json_object_get(p->arg);
        job->arg_text = strdup(arg_text(p->arg));
        if (asprintf(&job->summary, "%s:%s%s%s", p->plugin, p->entry, p->arg ? " " : "",
                     p->arg ? job->arg_text : "") < 0)
                job->summary = NULL;
        return job->entry && job->arg_text && job->summary ? 0 : -ENOMEM;
}

static int shell_payload(struct job *job, const struct sw_submit_params *p)
{
        job->argv = payload_argv(p);
        job->env = p->env ? envs_intern(&job->shared->envs, p->env) : NULL;
        job->cwd = strdup(p->cwd ? p->cwd : "/");
        job->summary = p->command ? strdup(p->command) : job->argv ? strv_join(job->argv) : NULL;
        return job->argv && (!p->env || job->env) && job->cwd && job->summary ? 0 : -ENOMEM;
}

/* The members of limits that are set. */
static void limits_text(struct json_text *t, const struct sw_limits *limits)
{
        json_text_open(t, '{');
        for (const struct sw_param *p = sw_limits_params; p->name; p++) {
                int64_t v = *(const int64_t *)((const char *)limits + p->offset);

                if (v != SW_LIMIT_UNSET) {
                        json_text_name(t, p->name);
                        json_text_int(t, v);
                }
        }
        json_text_close(t, '}');
}

/* What the job runs, as the state database keeps it: the submit's own params, parsed back by
 * the same table after a restart (the environment has its own table, the class a column). */
static char *payload_json(const struct sw_submit_params *p, const struct sw_limits *limits)
{
        struct json_text t = {0};

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
        /* Every limit, defaults included: a restart must not give the job other ones. */
        if (!p->plugin) {
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
        if (p->plugin) {
                const char *arg = arg_text(p->arg);

                json_text_name(&t, "plugin");
                json_text_string(&t, p->plugin);
                json_text_name(&t, "entry");
                json_text_string(&t, p->entry);
                json_text_name(&t, "arg");
                json_text_raw(&t, arg, strlen(arg));
        }
        json_text_close(&t, '}');
        return json_text_end(&t);
}

int job_new(struct job_shared *shared, uid_t owner, struct queue *queue,
            const struct sw_submit_params *p, const struct sw_limits *limits, struct job **ret,
            char *err, size_t errlen)
{
        struct job *job;
        bool very_slow;
        int r;

        r = payload_check(p, &very_slow, err, errlen);
        if (r < 0)
                return r;
        job = calloc(1, sizeof(*job));
        if (!job)
                return -ENOMEM;
        if (very_slow)
                delayed_vslow_work_init(&job->dw, shared->ops);
        else
                delayed_slow_work_init(&job->dw, shared->ops);
        job->shared = shared;
        job->refs = 1;
        job->owner = owner;
        job->queue = queue;
        job->very_slow = very_slow;
        job->timeout = p->timeout;
        if (limits && !p->plugin)
                job->limits = *limits;
        else
                sw_limits_unset(&job->limits);
        job->persist = p->persist;
        job->retries = p->retries;
        job->retry_delay = p->retry_delay;
        job->every = p->every;
        job->attempt = 1;
        job->kick_fd = -1;
        pthread_mutex_init(&job->run_lock, NULL);
        suspend_init(&job->suspend);
        r = p->plugin ? plugin_payload(job, p, err, errlen) : shell_payload(job, p);
        if (r == 0 && p->cron) {
                char why[192];

                job->cron = malloc(sizeof(*job->cron));
                job->cron_expr = strdup(p->cron);
                r = !job->cron || !job->cron_expr ? -ENOMEM
                                                  : cron_parse(p->cron, job->cron, why, sizeof(why));
                if (r == -EINVAL)
                        snprintf(err, errlen, "\"cron\": %s", why);
        }
        if (job_recurs(job))
                job->persist = true; /* kept until released, like persist */
        job->name = p->name ? strdup(p->name) : NULL;
        job->key = p->key ? strdup(p->key) : NULL;
        job->payload = payload_json(p, &job->limits);
        if (r == 0 && ((p->name && !job->name) || (p->key && !job->key) || !job->payload))
                r = -ENOMEM;
        if (r < 0) {
                job_unref(job);
                return r;
        }
        *ret = job;
        return 0;
}

struct job *job_ref(struct job *job)
{
        __atomic_add_fetch(&job->refs, 1, __ATOMIC_RELAXED);
        return job;
}

void job_unref(struct job *job)
{
        if (!job || __atomic_sub_fetch(&job->refs, 1, __ATOMIC_ACQ_REL) > 0)
                return;
        pthread_mutex_destroy(&job->run_lock);
        suspend_destroy(&job->suspend);
        strv_free(job->argv);
        envs_unref(&job->shared->envs, job->env);
        plugins_put(&job->shared->plugins, job->plugin);
        free(job->entry);
        json_object_put(job->arg);
        free(job->arg_text);
        free(job->cwd);
        free(job->name);
        free(job->key);
        free(job->summary);
        free(job->payload);
        free(job->cron);
        free(job->cron_expr);
        free(job->after);
        free(job->after_any);
        free(job->flow);
        run_record_free(job->last);
        free(job);
}

void job_kick(struct job *job)
{
        uint64_t one = 1;

        pthread_mutex_lock(&job->run_lock);
        if (job->kick_fd >= 0 && write(job->kick_fd, &one, sizeof(one)) < 0) {
                /* the counter is full: a kick is pending anyway */
        }
        pthread_mutex_unlock(&job->run_lock);
}

bool job_same_payload(const struct job *job, const struct sw_submit_params *p)
{
        char **argv;
        bool very_slow, same;
        char err[8];

        if (payload_check(p, &very_slow, err, sizeof(err)) < 0 || very_slow != job->very_slow ||
            !p->plugin != !job->plugin)
                return false;
        if (job->plugin)
                return strcmp(p->plugin, job->plugin->name) == 0 &&
                       strcmp(p->entry, job->entry) == 0 && json_object_equal(p->arg, job->arg);
        argv = payload_argv(p);
        same = argv && strv_equal(argv, job->argv);
        strv_free(argv);
        return same;
}

bool job_recurs(const struct job *job)
{
        return job->every > 0 || job->cron;
}

bool job_idle(struct job *job)
{
        return !job->waiting && !job->retry_due && !slow_work_is_pending(&job->dw.work) &&
               !slow_work_is_executing(&job->dw.work) &&
               job->runs_ended == __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE) &&
               !__atomic_load_n(&job->cancelling, __ATOMIC_ACQUIRE) &&
               !__atomic_load_n(&job->held, __ATOMIC_ACQUIRE);
}

const char *job_state(struct job *job)
{
        if (slow_work_is_executing(&job->dw.work))
                return "running";
        if (slow_work_is_pending(&job->dw.work) || job->retry_due ||
            __atomic_load_n(&job->held, __ATOMIC_ACQUIRE))
                return "pending";
        if (job->waiting)
                return "waiting";
        return job_idle(job) ? "idle" : "running";
}

static json_object *ids_to_json(const int64_t *ids)
{
        json_object *a = json_object_new_array();

        for (; ids && *ids; ids++)
                json_object_array_add(a, json_object_new_int64(*ids));
        return a;
}

/* What status shows of the job's flow (for_status), or its row keeps. */
static void flow_to_json(struct job *job, json_object *o, bool for_status)
{
        if (job->waiting) {
                json_object_object_add(o, "after", ids_to_json(job->after));
                json_object_object_add(o, "after_any", ids_to_json(job->after_any));
        }
        if (for_status || job->attempt > 1)
                json_object_object_add(o, "attempt", json_object_new_int64(__atomic_load_n(
                                                         &job->attempt, __ATOMIC_RELAXED)));
        if (job->next_run > 0 && (!for_status || job->retry_due || job_recurs(job) ||
                                  slow_work_is_pending(&job->dw.work)))
                json_object_object_add(o, "next_run", json_object_new_double(job->next_run));
        if (for_status && job->retries > 0) {
                json_object_object_add(o, "retries", json_object_new_int64(job->retries));
                json_object_object_add(o, "retry_delay", json_object_new_double(job->retry_delay));
        }
        if (for_status && job->every > 0)
                json_object_object_add(o, "every", json_object_new_double(job->every));
        if (for_status && job->cron_expr)
                json_object_object_add(o, "cron", json_object_new_string(job->cron_expr));
}

/* Its flow as its row keeps it: NULL when there is nothing to keep. */
static void flow_text(struct job *job)
{
        json_object *o;

        free(job->flow);
        job->flow = NULL;
        if (!job->waiting && job->attempt <= 1 && job->next_run <= 0)
                return;
        o = json_object_new_object();
        flow_to_json(job, o, false);
        job->flow = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
}

json_object *job_to_json(struct job *job)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_int64(job->id));
        json_object_object_add(o, "class",
                               json_object_new_string(job->very_slow ? "very-slow" : "slow"));
        json_object_object_add(o, "state", json_object_new_string(job_state(job)));
        json_object_object_add(o, "live", json_object_new_boolean(1));
        json_object_object_add(o, "name", job->name ? json_object_new_string(job->name) : NULL);
        json_object_object_add(o, "key", job->key ? json_object_new_string(job->key) : NULL);
        json_object_object_add(o, "owner", json_object_new_int64(job->owner));
        json_object_object_add(o, "refs", json_object_new_int(__atomic_load_n(&job->refs,
                                                                                __ATOMIC_RELAXED)));
        json_object_object_add(o, "handles", json_object_new_int((int)job->handles));
        json_object_object_add(o, "runs", json_object_new_int64(__atomic_load_n(
                                              &job->runs_started, __ATOMIC_RELAXED)));
        json_object_object_add(o, "command", json_object_new_string(job->summary));
        if (!job->plugin)
                json_object_object_add(o, "limits", sw_limits_to_json(&job->limits));
        flow_to_json(job, o, true);
        json_object_object_add(o, "last", job->last ? run_record_to_json(job->last) : NULL);
        return o;
}

void job_row(struct job *job, const char *state, struct store_job_row *ret)
{
        flow_text(job);
        *ret = (struct store_job_row){
            .id = job->id,
            .owner = job->owner,
            .very_slow = job->very_slow,
            .payload = job->payload,
            .key = job->key,
            .name = job->name,
            .persist = job->persist,
            .state = state ? state : job_state(job),
            .qorder = job->qorder,
            .due = job->due,
            .runs = __atomic_load_n(&job->runs_started, __ATOMIC_RELAXED),
            .flow = job->flow,
        };
        __atomic_load(&job->run_started, &ret->started, __ATOMIC_RELAXED);
}
