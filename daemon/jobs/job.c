/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/job.h"
#include "jobs/payload.h"
#include "run/run.h"
#include "store/run-record.h"
#include "util/cron.h"
#include "util/strv.h"

/* The argv a submit asks for: its own, or the shell's for a command (made in shell). */
static char *const *payload_argv(const struct sw_submit_params *p, char *shell[4])
{
        if (!p->command)
                return p->argv;
        shell[0] = (char *)"/bin/sh";
        shell[1] = (char *)"-c";
        shell[2] = p->command;
        shell[3] = NULL;
        return shell;
}

static const struct job_extra job_no_extra = {
    .limits = {SW_LIMIT_UNSET, SW_LIMIT_UNSET, SW_LIMIT_UNSET, SW_LIMIT_UNSET, SW_LIMIT_UNSET,
               SW_LIMIT_UNSET},
};

/* The extra jobs share for these limits alone: NULL when out of memory. */
static struct job_extra *limits_alone(struct job_shared *shared, const struct sw_limits *limits)
{
        struct job_extra *x;

        for (x = shared->limits_alone; x; x = x->next)
                if (memcmp(&x->limits, limits, sizeof(*limits)) == 0) {
                        x->refs++;
                        return x;
                }
        x = calloc(1, sizeof(*x));
        if (!x)
                return NULL;
        x->limits = *limits;
        x->refs = 1;
        x->next = shared->limits_alone;
        shared->limits_alone = x;
        return x;
}

static void extra_free(struct job_shared *shared, const struct job_extra *shared_x)
{
        struct job_extra *x = (struct job_extra *)shared_x, **p;

        if (shared_x == &job_no_extra || (x->refs > 0 && --x->refs > 0))
                return;
        for (p = &shared->limits_alone; *p; p = &(*p)->next)
                if (*p == x) {
                        *p = x->next;
                        break;
                }
        plugins_put(&shared->plugins, x->plugin);
        json_object_put(x->arg);
        free(x->entry);
        free(x->arg_text);
        free(x->cron);
        free(x->cron_expr);
        free(x->on_end);
        free(x->node);
        free((struct job_extra *)x);
}

/* The extra a submit asks for, or job_no_extra: 0, -ENOMEM, or -EINVAL with err said. */
static int make_extra(struct job_shared *shared, const struct sw_submit_params *p,
                      const struct sw_limits *limits, const struct job_extra **ret, char *err,
                      size_t errlen)
{
        struct job_extra *x;
        char why[192];
        int r = 0;

        *ret = &job_no_extra;
        if (!p->plugin && p->timeout <= 0 && p->retries <= 0 && p->every <= 0 && !p->cron &&
            !p->on_end && !p->node) {
                if (!limits || memcmp(limits, &job_no_extra.limits, sizeof(*limits)) == 0)
                        return 0;
                *ret = limits_alone(shared, limits);
                return *ret ? 0 : (*ret = &job_no_extra, -ENOMEM);
        }
        x = calloc(1, sizeof(*x));
        if (!x)
                return -ENOMEM;
        *ret = x;
        x->limits = limits && !p->plugin ? *limits : job_no_extra.limits;
        x->timeout = p->timeout;
        x->retries = p->retries;
        x->retry_delay = p->retry_delay;
        x->every = p->every;
        if ((p->on_end && !(x->on_end = strdup(p->on_end))) ||
            (p->node && !(x->node = strdup(p->node))))
                return -ENOMEM;
        if (p->plugin) {
                r = plugins_get(&shared->plugins, p->plugin, p->entry, &x->plugin,
                                &x->plugin_entry, err, errlen);
                if (r < 0)
                        return r;
                x->arg = json_object_get(p->arg);
                x->entry = strdup(p->entry);
                x->arg_text = strdup(payload_arg_text(p->arg));
                if (!x->entry || !x->arg_text)
                        return -ENOMEM;
        }
        if (p->cron) {
                x->cron = malloc(sizeof(*x->cron));
                x->cron_expr = strdup(p->cron);
                if (!x->cron || !x->cron_expr)
                        return -ENOMEM;
                r = cron_parse(p->cron, x->cron, why, sizeof(why));
                if (r == -EINVAL)
                        snprintf(err, errlen, "\"cron\": %s", why);
        }
        return r;
}

/* What the job's strings are made of; summary NULL: argv's last (a command's, or argv alone). */
struct strings {
        char *const *argv; /* the submit's own, or shell's for a command */
        char *shell[4];
        const char *cwd, *summary, *name, *key;
        char *owned; /* what summary was made into */
};

/* "plugin:entry", and " arg" after it when there is one (made for every job: no printf). */
static char *plugin_summary(const struct sw_submit_params *p)
{
        const char *arg = p->arg ? payload_arg_text(p->arg) : NULL;
        size_t np = strlen(p->plugin), ne = strlen(p->entry), na = arg ? strlen(arg) : 0;
        char *s = malloc(np + ne + na + 3), *e;

        if (!s)
                return NULL;
        memcpy(s, p->plugin, np);
        s[np] = ':';
        e = mempcpy(s + np + 1, p->entry, ne);
        if (arg) {
                *e++ = ' ';
                e = mempcpy(e, arg, na);
        }
        *e = '\0';
        return s;
}

static int strings_of(const struct sw_submit_params *p, struct strings *ret)
{
        *ret = (struct strings){.name = p->name, .key = p->key};
        if (p->plugin) {
                ret->owned = plugin_summary(p);
                if (!ret->owned)
                        return -ENOMEM;
                ret->summary = ret->owned;
                return 0;
        }
        ret->argv = payload_argv(p, ret->shell);
        ret->cwd = p->cwd ? p->cwd : "/";
        if (!p->command && !ret->argv[0])
                ret->summary = "";
        else if (!p->command && ret->argv[1]) {
                ret->owned = strv_join(ret->argv);
                if (!ret->owned)
                        return -ENOMEM;
                ret->summary = ret->owned;
        }
        return 0;
}

static size_t strings_size(const struct strings *st)
{
        const char *in[] = {st->cwd, st->summary, st->name, st->key};
        size_t i, n = 0, size = 0;

        for (; st->argv && st->argv[n]; n++)
                size += strlen(st->argv[n]) + 1;
        if (st->argv)
                size += (n + 1) * sizeof(char *);
        for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
                size += in[i] ? strlen(in[i]) + 1 : 0;
        return size;
}

/* Into a job's block: a shell job's argv (the array, then its strings), then the others; which
 * of them it has into ret. */
static void strings_pack(char *block, const struct strings *st, struct job_strings *ret)
{
        const char *in[] = {st->cwd, st->summary, st->name, st->key};
        char *at = block, **argv = (char **)(void *)block;
        size_t i, n = 0;

        for (; st->argv && st->argv[n]; n++)
                ;
        if (st->argv) {
                at += (n + 1) * sizeof(char *);
                for (i = 0; i < n; i++) {
                        argv[i] = at;
                        at = stpcpy(at, st->argv[i]) + 1;
                }
                argv[n] = NULL;
        }
        for (i = 0; i < sizeof(in) / sizeof(in[0]); i++)
                if (in[i])
                        at = stpcpy(at, in[i]) + 1;
        ret->block = block;
        ret->own_summary = st->summary;
        ret->has_name = st->name;
        ret->has_key = st->key;
}

char **job_argv(const struct job *job)
{
        return job->x->plugin ? NULL : (char **)(void *)job->strings;
}

const char *job_cwd(const struct job *job)
{
        char **argv = job_argv(job);
        size_t n = 0;

        if (!argv)
                return NULL;
        for (; argv[n]; n++)
                ;
        return n ? argv[n - 1] + strlen(argv[n - 1]) + 1
                 : job->strings + sizeof(char *);
}

/* The string after s in the block. */
static const char *next_string(const char *s)
{
        return s + strlen(s) + 1;
}

/* Where the strings after cwd start. */
static const char *after_cwd(const struct job *job)
{
        const char *cwd = job_cwd(job);

        return cwd ? next_string(cwd) : job->strings;
}

const char *job_summary(const struct job *job)
{
        char **argv = job_argv(job);
        size_t n = 0;

        if (job->own_summary)
                return after_cwd(job);
        for (; argv[n]; n++)
                ;
        return argv[n - 1];
}

const char *job_name(const struct job *job)
{
        const char *at = after_cwd(job);

        if (!job->has_name)
                return NULL;
        return job->own_summary ? next_string(at) : at;
}

const char *job_key(const struct job *job)
{
        const char *at = after_cwd(job);

        if (!job->has_key)
                return NULL;
        if (job->own_summary)
                at = next_string(at);
        return job->has_name ? next_string(at) : at;
}

static void strings_clear(struct strings *st)
{
        free(st->owned);
}

/* A job; with its payload for its first row when it is a submit's. */
static int make(struct job_shared *shared, uid_t owner, struct queue *queue,
                const struct sw_submit_params *p, const struct sw_limits *limits, bool submitted,
                struct job **ret, char *err, size_t errlen)
{
        const struct job_extra *x = &job_no_extra;
        struct env_block *env = NULL;
        struct job_strings packed;
        struct strings st;
        struct job *job = NULL;
        bool very_slow;
        int r;

        r = payload_check(p, &very_slow, err, errlen);
        if (r < 0)
                return r;
        r = strings_of(p, &st);
        if (r == 0)
                r = make_extra(shared, p, limits, &x, err, errlen);
        if (r == 0 && !p->plugin && p->env) {
                env = envs_intern(&shared->envs, p->env);
                r = env ? 0 : -ENOMEM;
        }
        if (r == 0) {
                job = calloc(1, sizeof(*job) + strings_size(&st));
                r = job ? 0 : -ENOMEM;
        }
        if (r < 0) {
                strings_clear(&st);
                extra_free(shared, x);
                envs_unref(&shared->envs, env);
                return r;
        }
        if (very_slow)
                delayed_vslow_work_init(&job->dw, shared->ops);
        else
                delayed_slow_work_init(&job->dw, shared->ops);
        job->shared = shared;
        job->refs = 1;
        job->owner = owner;
        job->queue = queue;
        job->very_slow = very_slow;
        job->x = x;
        job->env = env;
        job->strings = job->strings_own;
        job->strings_size = (int64_t)strings_size(&st);
        strings_pack(job->strings, &st, &packed);
        job->own_summary = packed.own_summary;
        job->has_name = packed.has_name;
        job->has_key = packed.has_key;
        strings_clear(&st);
        job->shell_command = p->command;
        job->stashed = p->stashed;
        job->priority = (int)p->priority;
        slow_work_set_priority(&job->dw.work, job->priority); /* idle: no pool has it yet */
        job->persist = p->persist || job_recurs(job); /* a recurring one: until released */
        job->attempt = 1;
        job->kick_fd = -1;
        suspend_init(&job->suspend);
        if (submitted) {
                job->submitted = run_wall_now();
                job->payload = payload_json(p, &x->limits);
                if (!job->payload) {
                        job_unref(job);
                        return -ENOMEM;
                }
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

/* The submit params that made the job, as far as its payload keeps them; its argv and cwd as
 * they are now (p's strings are the job's). */
static void params_of(const struct job *job, const char *queue, struct sw_submit_params *p)
{
        char **argv = job_argv(job);

        *p = (struct sw_submit_params){
            .cwd = (char *)job_cwd(job),
            .timeout = job->x->timeout,
            .retries = job->x->retries,
            .retry_delay = job->x->retry_delay,
            .every = job->x->every,
            .cron = job->x->cron_expr,
            .queue = (char *)queue,
            .priority = job->priority,
            .on_end = job->x->on_end,
            .node = job->x->node,
        };
        if (job->x->plugin) {
                p->plugin = (char *)job->x->plugin->name;
                p->entry = job->x->entry;
                p->arg = job->x->arg;
        } else if (job->shell_command) {
                p->command = argv[2];
        } else {
                p->argv = argv;
        }
}

char *job_payload(const struct job *job, const char *queue)
{
        struct sw_submit_params p;

        params_of(job, queue, &p);
        return payload_json(&p, &job->x->limits);
}

int job_strings_new(const struct job *job, const struct job_change *change,
                    struct job_strings *ret, char *err, size_t errlen)
{
        struct sw_submit_params p;
        struct strings st;
        char *block;
        int r;

        params_of(job, NULL, &p);
        if (job->x->plugin && (change->command || change->argv || change->cwd)) {
                snprintf(err, errlen, "job %lld is a plugin's: it has no \"command\", \"argv\" "
                                      "or \"cwd\" to change", (long long)job->id);
                return -EINVAL;
        }
        if (change->command && change->argv) {
                snprintf(err, errlen, "give at most one of \"command\" and \"argv\"");
                return -EINVAL;
        }
        if ((change->command && !job->shell_command) || (change->argv && job->shell_command)) {
                snprintf(err, errlen, "job %lld runs %s: give \"%s\", not \"%s\"",
                         (long long)job->id, job->shell_command ? "a command" : "an argv",
                         job->shell_command ? "command" : "argv",
                         job->shell_command ? "argv" : "command");
                return -EINVAL;
        }
        if (change->cwd && change->cwd[0] != '/') {
                snprintf(err, errlen, "\"cwd\" must be an absolute path");
                return -EINVAL;
        }
        if (change->command)
                p.command = (char *)change->command;
        if (change->argv)
                p.argv = (char **)change->argv;
        if (change->cwd)
                p.cwd = (char *)change->cwd;
        p.name = (char *)(change->name ? change->name : job_name(job));
        p.key = (char *)job_key(job);
        r = strings_of(&p, &st);
        if (r < 0) {
                strings_clear(&st);
                return r;
        }
        block = malloc(strings_size(&st));
        if (!block) {
                strings_clear(&st);
                return -ENOMEM;
        }
        ret->size = strings_size(&st);
        strings_pack(block, &st, ret);
        ret->shell_command = job->shell_command;
        strings_clear(&st);
        return 0;
}

void job_strings_swap(struct job *job, struct job_strings *s)
{
        struct job_strings old = {job->strings, (size_t)job->strings_size, job->own_summary,
                                  job->has_name, job->has_key, job->shell_command};

        job->strings = s->block;
        job->strings_size = (int64_t)s->size;
        job->own_summary = s->own_summary;
        job->has_name = s->has_name;
        job->has_key = s->has_key;
        job->shell_command = s->shell_command;
        *s = old;
}

int64_t job_bytes(const struct job *job)
{
        int64_t n = job->strings_size;

        if (job->env)
                n += (int64_t)job->env->bytes;
        if (job->x->arg_text)
                n += (int64_t)strlen(job->x->arg_text) + 1;
        if (job->x->on_end)
                n += (int64_t)strlen(job->x->on_end) + 1;
        return n;
}

void job_strings_free(const struct job *job, struct job_strings *s)
{
        if (s->block != job->strings_own)
                free(s->block);
        s->block = NULL;
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
        if (job->strings != job->strings_own)
                free(job->strings);
        envs_unref(&job->shared->envs, job->env);
        extra_free(job->shared, job->x);
        free(job->payload);
        free(job->after);
        free(job->after_any);
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
        char *shell[4];
        bool very_slow;
        char err[8];

        if (payload_check(p, &very_slow, err, sizeof(err)) < 0 || very_slow != job->very_slow ||
            !p->plugin != !job->x->plugin)
                return false;
        if (job->x->plugin)
                return strcmp(p->plugin, job->x->plugin->name) == 0 &&
                       strcmp(p->entry, job->x->entry) == 0 &&
                       json_object_equal(p->arg, job->x->arg);
        return strv_equal(payload_argv(p, shell), job_argv(job));
}

char *job_what(const struct job *job)
{
        json_object *a = json_object_new_array();
        char *what;

        json_object_array_add(a, json_object_new_string(job->very_slow ? "very-slow" : "slow"));
        if (job->x->plugin) {
                json_object_array_add(a, json_object_new_string(job->x->plugin->name));
                json_object_array_add(a, json_object_new_string(job->x->entry));
                json_object_array_add(a, json_object_get(job->x->arg));
        } else {
                for (char **arg = job_argv(job); arg && *arg; arg++)
                        json_object_array_add(a, json_object_new_string(*arg));
        }
        what = strdup(json_object_to_json_string_ext(a, JSON_C_TO_STRING_PLAIN));
        json_object_put(a);
        return what;
}

bool job_recurs(const struct job *job)
{
        return job->x->every > 0 || job->x->cron;
}

bool job_idle(struct job *job)
{
        return !job->claim && !job->waiting && !job->stashed && !job->retry_due && !job->lost &&
               !__atomic_load_n(&job->offered, __ATOMIC_ACQUIRE) &&
               !slow_work_is_pending(&job->dw.work) && !slow_work_is_executing(&job->dw.work) &&
               job->runs_ended == __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE) &&
               !__atomic_load_n(&job->cancelling, __ATOMIC_ACQUIRE) &&
               !__atomic_load_n(&job->held, __ATOMIC_ACQUIRE);
}

bool job_executing(struct job *job)
{
        return job->resuming || slow_work_is_executing(&job->dw.work);
}

const char *job_state(struct job *job)
{
        if (job_executing(job))
                return "running";
        /* Offered to the other nodes, or lost (claimed by one: it leaves in a moment,
         * claims.c): queued, here or there. */
        if (slow_work_is_pending(&job->dw.work) || job->retry_due || job->claim || job->lost ||
            __atomic_load_n(&job->offered, __ATOMIC_ACQUIRE) ||
            __atomic_load_n(&job->held, __ATOMIC_ACQUIRE))
                return "pending";
        if (job->waiting)
                return "waiting";
        if (job->stashed)
                return "stashed";
        return job_idle(job) ? "idle" : "running";
}

static json_object *ids_to_json(const int64_t *ids)
{
        json_object *a = json_object_new_array();

        for (; ids && *ids; ids++)
                json_object_array_add(a, json_object_new_int64(*ids));
        return a;
}

/* A member of a job's JSON: its name is a literal, each given once. */
static void add(json_object *o, const char *key, json_object *value)
{
        json_object_object_add_ex(o, key, value,
                                  JSON_C_OBJECT_ADD_KEY_IS_NEW | JSON_C_OBJECT_ADD_CONSTANT_KEY);
}

/* What status shows of the job's flow (for_status), or its row keeps. */
static void flow_to_json(struct job *job, json_object *o, bool for_status)
{
        if (job->waiting) {
                add(o, "after", ids_to_json(job->after));
                add(o, "after_any", ids_to_json(job->after_any));
        }
        if (job->submitted > 0)
                add(o, "submitted", json_object_new_double(job->submitted));
        if (for_status || job->attempt > 1)
                add(o, "attempt",
                    json_object_new_int64(__atomic_load_n(&job->attempt, __ATOMIC_RELAXED)));
        if (job->next_run > 0 && (!for_status || job->retry_due || job_recurs(job) ||
                                  slow_work_is_pending(&job->dw.work)))
                add(o, "next_run", json_object_new_double(job->next_run));
        else if (for_status && job->due > run_wall_now() && slow_work_is_pending(&job->dw.work))
                add(o, "next_run", json_object_new_double(job->due)); /* a delayed run's */
        if (for_status && job->x->retries > 0) {
                add(o, "retries", json_object_new_int64(job->x->retries));
                add(o, "retry_delay", json_object_new_double(job->x->retry_delay));
        }
        if (for_status && job->x->every > 0)
                add(o, "every", json_object_new_double(job->x->every));
        if (for_status && job->x->cron_expr)
                add(o, "cron", json_object_new_string(job->x->cron_expr));
        if (for_status && job->x->on_end)
                add(o, "on_end", json_object_new_string(job->x->on_end));
        if (for_status && job->x->node)
                add(o, "pinned_to", json_object_new_string(job->x->node));
}

/* Its flow as its row keeps it: NULL when there is nothing to keep. */
static char *flow_text(struct job *job)
{
        json_object *o;
        char *text;

        if (!job->waiting && job->attempt <= 1 && job->next_run <= 0 && job->submitted <= 0)
                return NULL;
        o = json_object_new_object();
        flow_to_json(job, o, false);
        text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        return text;
}

/* The run in progress, once started: when, and its main process (a shell run's). */
static void run_to_json(struct job *job, json_object *o)
{
        pid_t pid = __atomic_load_n(&job->pid, __ATOMIC_ACQUIRE);
        double started;

        __atomic_load(&job->run_started, &started, __ATOMIC_RELAXED);
        if (!slow_work_is_executing(&job->dw.work) || started <= 0)
                return;
        add(o, "started", json_object_new_double(started));
        if (pid > 0)
                add(o, "pid", json_object_new_int(pid));
}

json_object *job_to_json(struct job *job)
{
        json_object *o = json_object_new_object();

        add(o, "id", json_object_new_int64(job->id));
        add(o, "class", json_object_new_string(job->very_slow ? "very-slow" : "slow"));
        add(o, "state", json_object_new_string(job_state(job)));
        add(o, "live", json_object_new_boolean(1));
        add(o, "name", job->has_name ? json_object_new_string(job_name(job)) : NULL);
        add(o, "key", job->has_key ? json_object_new_string(job_key(job)) : NULL);
        add(o, "owner", json_object_new_int64(job->owner));
        add(o, "node", json_object_new_string(job->shared->node ? job->shared->node : ""));
        add(o, "refs", json_object_new_int(__atomic_load_n(&job->refs, __ATOMIC_RELAXED)));
        add(o, "handles", json_object_new_int((int)job->handles));
        add(o, "persist", json_object_new_boolean(job->persist));
        add(o, "runs",
            json_object_new_int64(__atomic_load_n(&job->runs_started, __ATOMIC_RELAXED)));
        add(o, "command", json_object_new_string(job_summary(job)));
        add(o, "priority", json_object_new_int(job->priority));
        if (!job->x->plugin)
                add(o, "limits", sw_limits_to_json(&job->x->limits));
        flow_to_json(job, o, true);
        run_to_json(job, o);
        add(o, "last", job->last ? run_record_to_json(job->last) : NULL);
        return o;
}

void job_row(struct job *job, const char *state, struct store_job_row *ret)
{
        *ret = (struct store_job_row){
            .id = job->id,
            .owner = job->owner,
            .very_slow = job->very_slow,
            .payload = job->payload,
            .key = job_key(job),
            .name = job_name(job),
            .persist = job->persist,
            .state = state ? state : job_state(job),
            .qorder = job->qorder,
            .due = job->due,
            .runs = __atomic_load_n(&job->runs_started, __ATOMIC_RELAXED),
            .flow = flow_text(job),
        };
        __atomic_load(&job->run_started, &ret->started, __ATOMIC_RELAXED);
}

void job_row_free(struct store_job_row *row)
{
        free((char *)row->flow);
        row->flow = NULL;
}

json_object *job_state_result(struct job *job, const char *extra)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_int64(job->id));
        json_object_object_add(o, "state", json_object_new_string(job_state(job)));
        if (extra)
                json_object_object_add(o, extra, json_object_new_boolean(1));
        return o;
}
