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

/* The job's strings in one block: a shell job's argv (the array, then its strings), then the
 * others; each member points into it, NULL for a string not given. */
static int pack_strings(struct job *job, char *const *argv, const char *cwd, const char *summary,
                        const char *name, const char *key, const char *entry, const char *arg)
{
        const char *in[] = {cwd, summary, name, key, entry, arg};
        char **out[] = {&job->cwd, &job->summary, &job->name, &job->key, &job->entry,
                        &job->arg_text};
        size_t i, n = 0, size = 1;
        char *at;

        for (; argv && argv[n]; n++)
                size += strlen(argv[n]) + 1;
        if (argv)
                size += (n + 1) * sizeof(char *);
        for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
                size += in[i] ? strlen(in[i]) + 1 : 0;
        job->strings = malloc(size);
        if (!job->strings)
                return -ENOMEM;
        at = job->strings;
        if (argv) {
                job->argv = (char **)(void *)at;
                at += (n + 1) * sizeof(char *);
                for (i = 0; i < n; i++) {
                        job->argv[i] = at;
                        at = stpcpy(at, argv[i]) + 1;
                }
                job->argv[n] = NULL;
        }
        for (i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
                *out[i] = in[i] ? at : NULL;
                if (in[i])
                        at = stpcpy(at, in[i]) + 1;
        }
        return 0;
}

/* What a plugin job runs: its loaded entry point and its argument. */
static int plugin_payload(struct job *job, const struct sw_submit_params *p, char *err,
                          size_t errlen)
{
        const char *text = arg_text(p->arg);
        char *summary;
        int r = plugins_get(&job->shared->plugins, p->plugin, p->entry, &job->plugin,
                            &job->plugin_entry, err, errlen);

        if (r < 0)
                return r;
        job->arg = json_object_get(p->arg);
        if (asprintf(&summary, "%s:%s%s%s", p->plugin, p->entry, p->arg ? " " : "",
                     p->arg ? text : "") < 0)
                return -ENOMEM;
        r = pack_strings(job, NULL, NULL, summary, p->name, p->key, p->entry, text);
        free(summary);
        return r;
}

static int shell_payload(struct job *job, const struct sw_submit_params *p)
{
        char **argv = payload_argv(p);
        char *joined = argv && !p->command ? strv_join(argv) : NULL;
        int r = -ENOMEM;

        job->env = p->env ? envs_intern(&job->shared->envs, p->env) : NULL;
        if (argv && (p->command || joined) && (!p->env || job->env))
                r = pack_strings(job, argv, p->cwd ? p->cwd : "/", p->command ? p->command : joined,
                                 p->name, p->key, NULL, NULL);
        strv_free(argv);
        free(joined);
        return r;
}

/* What the job runs, as the state database keeps it: the submit's own params, parsed back by
 * the same table after a restart (the environment has its own table, the class a column). */
static char *payload_json(const struct sw_submit_params *p, const struct sw_limits *limits)
{
        json_object *o = json_object_new_object(), *argv;
        char *text;

        if (p->command)
                json_object_object_add(o, "command", json_object_new_string(p->command));
        if (p->argv) {
                argv = json_object_new_array();
                for (char **a = p->argv; *a; a++)
                        json_object_array_add(argv, json_object_new_string(*a));
                json_object_object_add(o, "argv", argv);
        }
        if (p->cwd)
                json_object_object_add(o, "cwd", json_object_new_string(p->cwd));
        if (p->timeout > 0)
                json_object_object_add(o, "timeout", json_object_new_double(p->timeout));
        /* Every limit, defaults included: a restart must not give the job other ones. */
        if (!p->plugin)
                json_object_object_add(o, "limits", sw_limits_to_json(limits));
        if (p->retries > 0) {
                json_object_object_add(o, "retries", json_object_new_int64(p->retries));
                json_object_object_add(o, "retry_delay", json_object_new_double(p->retry_delay));
        }
        if (p->every > 0)
                json_object_object_add(o, "every", json_object_new_double(p->every));
        if (p->cron)
                json_object_object_add(o, "cron", json_object_new_string(p->cron));
        if (p->queue && strcmp(p->queue, SW_QUEUE_DEFAULT) != 0)
                json_object_object_add(o, "queue", json_object_new_string(p->queue));
        if (p->plugin) {
                json_object_object_add(o, "plugin", json_object_new_string(p->plugin));
                json_object_object_add(o, "entry", json_object_new_string(p->entry));
                json_object_object_add(o, "arg", json_object_get(p->arg));
        }
        text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN |
                                                            JSON_C_TO_STRING_NOSLASHESCAPE));
        json_object_put(o);
        return text;
}

/* A job; with its payload for its first row when it is a submit's. */
static int make(struct job_shared *shared, uid_t owner, struct queue *queue,
                const struct sw_submit_params *p, const struct sw_limits *limits, bool submitted,
                struct job **ret, char *err, size_t errlen)
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
        if (r == 0 && submitted) {
                job->payload = payload_json(p, &job->limits);
                if (!job->payload)
                        r = -ENOMEM;
        }
        if (r < 0) {
                job_unref(job);
                return r;
        }
        *ret = job;
        return 0;
}

int job_new(struct job_shared *shared, uid_t owner, struct queue *queue,
            const struct sw_submit_params *p, const struct sw_limits *limits, struct job **ret,
            char *err, size_t errlen)
{
        return make(shared, owner, queue, p, limits, true, ret, err, errlen);
}

int job_new_restored(struct job_shared *shared, uid_t owner, struct queue *queue,
                     const struct sw_submit_params *p, const struct sw_limits *limits,
                     struct job **ret, char *err, size_t errlen)
{
        return make(shared, owner, queue, p, limits, false, ret, err, errlen);
}

#define RUN_LOCKS 64

static pthread_mutex_t run_locks[RUN_LOCKS] = {
    [0 ... RUN_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER,
};

pthread_mutex_t *job_run_lock(const struct job *job)
{
        return &run_locks[((uintptr_t)job / sizeof(*job)) % RUN_LOCKS];
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
        suspend_destroy(&job->suspend);
        envs_unref(&job->shared->envs, job->env);
        plugins_put(&job->shared->plugins, job->plugin);
        json_object_put(job->arg);
        free(job->strings);
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

        pthread_mutex_lock(job_run_lock(job));
        if (job->kick_fd >= 0 && write(job->kick_fd, &one, sizeof(one)) < 0) {
                /* the counter is full: a kick is pending anyway */
        }
        pthread_mutex_unlock(job_run_lock(job));
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
