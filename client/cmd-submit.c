/* SPDX-License-Identifier: MIT */
/*
 * submit: one job from the command line, or one per line of standard input, pipelined over one
 * connection with at most STDIN_INFLIGHT requests unanswered (the environment sent once, by
 * env.set, where the daemon knows that method).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "output.h"
#include "slowctl.h"

#define STDIN_INFLIGHT 2048

extern char **environ;

static int add(json_object *o, const char *name, json_object *v)
{
        if (!v || json_object_object_add(o, name, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* This process's environment, as the object "env" wants. */
static json_object *env_object(void)
{
        json_object *env = json_object_new_object();
        char **e;

        for (e = environ; env && *e; e++) {
                const char *eq = strchr(*e, '=');
                char *name;

                if (!eq || eq == *e)
                        continue;
                name = strndup(*e, (size_t)(eq - *e));
                if (!name || add(env, name, json_object_new_string(eq + 1)) < 0) {
                        free(name);
                        json_object_put(env);
                        return NULL;
                }
                free(name);
        }
        return env;
}

/* --cwd made absolute, or the current directory; malloc'd. */
static char *job_cwd(const char *cwd)
{
        char *here = getcwd(NULL, 0), *path;

        if (cwd && cwd[0] == '/')
                path = strdup(cwd);
        else if (!here)
                path = NULL;
        else if (!cwd || strcmp(cwd, ".") == 0)
                return here;
        else if (asprintf(&path, "%s/%s", here, cwd) < 0)
                path = NULL;
        free(here);
        return path;
}

/* The params every job of this command line shares; a shell job's also cwd and env. 0 or an exit
 * status. */
static int common_params(struct ctl *x, const struct opts *o, bool shell, json_object **ret)
{
        json_object *p = json_object_new_object(), *limits = sw_limits_to_json(&o->limits);
        char *cwd = NULL;
        int r = 0;

        if (!p || !limits) {
                json_object_put(p);
                json_object_put(limits);
                return ctl_error(x, "out of memory");
        }
        if (o->very_slow)
                r = add(p, "class", json_object_new_string("very-slow"));
        if (r == 0 && o->key)
                r = add(p, "key", json_object_new_string(o->key));
        if (r == 0 && o->queue)
                r = add(p, "queue", json_object_new_string(o->queue));
        if (r == 0 && o->name)
                r = add(p, "name", json_object_new_string(o->name));
        if (r == 0 && o->delay > 0)
                r = add(p, "delay", json_object_new_double(o->delay));
        if (r == 0 && o->timeout > 0)
                r = add(p, "timeout", json_object_new_double(o->timeout));
        if (r == 0 && o->hold)
                r = add(p, "hold", json_object_new_boolean(1));
        if (r == 0 && o->persist)
                r = add(p, "persist", json_object_new_boolean(1));
        if (r == 0 && json_object_object_length(limits) > 0)
                r = add(p, "limits", json_object_get(limits));
        if (r == 0 && o->after)
                r = add(p, "after", json_object_get(o->after));
        if (r == 0 && o->after_any)
                r = add(p, "after_any", json_object_get(o->after_any));
        if (r == 0 && o->retries > 0)
                r = add(p, "retries", json_object_new_int64(o->retries));
        if (r == 0 && o->retry_delay_given)
                r = add(p, "retry_delay", json_object_new_double(o->retry_delay));
        if (r == 0 && o->every_given)
                r = add(p, "every", json_object_new_double(o->every));
        if (r == 0 && o->cron)
                r = add(p, "cron", json_object_new_string(o->cron));
        if (r == 0 && o->priority_given)
                r = add(p, "priority", json_object_new_int64(o->priority));
        if (r == 0 && o->stashed)
                r = add(p, "stashed", json_object_new_boolean(1));
        if (r == 0 && o->on_end)
                r = add(p, "on_end", json_object_new_string(o->on_end));
        if (r == 0 && o->node)
                r = add(p, "node", json_object_new_string(o->node));
        if (r == 0 && shell) {
                cwd = job_cwd(o->cwd);
                if (!cwd) {
                        json_object_put(p);
                        return ctl_error(x, "submit: cannot get the current directory: %s",
                                         strerror(errno));
                }
                r = add(p, "cwd", json_object_new_string(cwd));
                if (r == 0)
                        r = add(p, "env", env_object());
                free(cwd);
        }
        if (r == 0 && !shell) {
                r = add(p, "plugin", json_object_new_string(o->plugin));
                if (r == 0)
                        r = add(p, "entry", json_object_new_string(o->entry));
                /* JSON null is a NULL object, which json-c adds as null. */
                if (r == 0 && o->arg_given &&
                    json_object_object_add(p, "arg", json_object_get(o->arg)) < 0) {
                        json_object_put(o->arg);
                        r = -ENOMEM;
                }
        }
        json_object_put(limits);
        if (r < 0) {
                json_object_put(p);
                return ctl_error(x, "out of memory");
        }
        *ret = p;
        return 0;
}

/* A copy of the shared params that shares their values. */
static json_object *params_copy(json_object *common)
{
        json_object *p = json_object_new_object();

        json_object_object_foreach(common, name, value)
        {
                if (!p)
                        break;
                if (json_object_object_add(p, name, json_object_get(value)) < 0) {
                        json_object_put(value);
                        json_object_put(p);
                        p = NULL;
                }
        }
        return p;
}

static int submit_one(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *p, *result;
        bool shell = !o->plugin;
        int64_t id;
        int r;

        r = common_params(x, o, shell, &p);
        if (r)
                return r;
        if (shell && argc == 1)
                r = add(p, "command", json_object_new_string(argv[0]));
        else if (shell)
                r = add(p, "argv", ctl_argv_array(argc, argv));
        if (r < 0) {
                json_object_put(p);
                return ctl_error(x, "out of memory");
        }
        r = ctl_call(x, NULL, "submit", p, &result);
        if (r)
                return r;
        id = json_int(result, "id", 0);
        json_object_put(result);
        if (!x->json)
                printf("%lld\n", (long long)id);
        if (!o->wait)
                return EXIT_OK;
        fflush(stdout);
        return jobs_wait_one(x, id, true);
}

/* The jobs read from stdin, in input order; printed as soon as all before them are answered. */
struct slot {
        json_object *result; /* the reply, or NULL while it is to come or when it failed */
        bool answered;
        unsigned long line;
};

struct batch {
        struct slot *slots;
        size_t n, size;
        size_t printed;
        int64_t first_request; /* the request id of slots[0] */
        bool failed;
};

static int batch_add(struct batch *b, unsigned long line)
{
        if (b->n == b->size) {
                size_t size = b->size ? 2 * b->size : 256;
                struct slot *s = realloc(b->slots, size * sizeof(*s));

                if (!s)
                        return -ENOMEM;
                b->slots = s;
                b->size = size;
        }
        b->slots[b->n++] = (struct slot){.line = line};
        return 0;
}

static void batch_print(struct ctl *x, struct batch *b)
{
        while (b->printed < b->n && b->slots[b->printed].answered) {
                struct slot *s = &b->slots[b->printed++];

                if (s->result && x->json)
                        output_json(s->result);
                else if (s->result)
                        printf("%lld\n", (long long)json_int(s->result, "id", 0));
                json_object_put(s->result);
                s->result = NULL;
        }
}

/* Takes one reply: 0, or an exit status. */
static int batch_receive(struct ctl *x, struct batch *b)
{
        struct sw_client_error err;
        json_object *result = NULL;
        struct slot *s;
        int64_t id;
        size_t i;
        int r;

        r = ctl_receive(x, &result, &err, &id);
        if (r < 0)
                return EXIT_FAIL;
        if (id < 0 && r == 0) {
                json_object_put(result); /* a notification */
                return 0;
        }
        if (id < 0) {
                /* A request the daemon could not read: replies come in order, so the oldest. */
                for (i = b->printed; i < b->n && b->slots[i].answered; i++)
                        ;
        } else {
                i = (size_t)(id - b->first_request);
        }
        if (i >= b->n) {
                json_object_put(result);
                return ctl_error(x, "submit: a reply to a request slowctl did not send");
        }
        s = &b->slots[i];
        s->answered = true;
        s->result = r == 0 ? result : NULL;
        if (r == 1) {
                b->failed = true;
                ctl_error(x, "submit: line %lu: %s", s->line, err.message);
        }
        batch_print(x, b);
        return 0;
}

static bool blank(const char *s)
{
        for (; *s; s++)
                if (*s != ' ' && *s != '\t' && *s != '\r')
                        return false;
        return true;
}

/* Sends common's env once for the connection, and takes it out of common; a daemon without
 * env.set keeps getting it with every job. 0, or an exit status. */
static int env_once(struct ctl *x, json_object *common)
{
        struct sw_client_error err;
        json_object *env, *p, *result;
        int r;

        if (!json_object_object_get_ex(common, "env", &env))
                return 0;
        p = json_object_new_object();
        if (!p || add(p, "env", json_object_get(env)) < 0) {
                json_object_put(p);
                return ctl_error(x, "out of memory");
        }
        r = ctl_try(x, NULL, "env.set", p, &result, &err);
        if (r)
                return r;
        if (!result && err.code != SW_E_NO_METHOD)
                return ctl_error(x, "submit: %s", err.message);
        if (result)
                json_object_object_del(common, "env");
        json_object_put(result);
        return 0;
}

static int submit_stdin(struct ctl *x, const struct opts *o)
{
        struct batch b = {.first_request = -1};
        json_object *common, *p, *arg;
        char jerr[256];
        unsigned long lineno = 0;
        size_t size = 0;
        char *line = NULL;
        ssize_t len;
        int64_t id;
        int r;

        r = common_params(x, o, !o->plugin, &common);
        if (r)
                return r;
        r = ctl_connect(x);
        if (!r)
                r = env_once(x, common);
        while (!r && (len = getline(&line, &size, stdin)) >= 0) {
                lineno++;
                if (len > 0 && line[len - 1] == '\n')
                        line[--len] = '\0';
                if (blank(line))
                        continue;
                while (!r && sw_client_outstanding(x->client) >= STDIN_INFLIGHT)
                        r = batch_receive(x, &b);
                if (r)
                        break;
                arg = NULL;
                if (o->plugin && sw_json_read(line, (size_t)len, &arg, jerr, sizeof(jerr)) != 0) {
                        fprintf(stderr, "slowctl: line %lu: not a JSON value: %s\n", lineno, jerr);
                        b.failed = true;
                        continue;
                }
                p = params_copy(common);
                if (!p) {
                        json_object_put(arg);
                        r = ctl_error(x, "out of memory");
                        break;
                }
                if ((o->plugin ? arg ? add(p, "arg", arg) : 0
                               : add(p, "command", json_object_new_string(line))) < 0 ||
                    batch_add(&b, lineno) < 0) {
                        json_object_put(p);
                        r = ctl_error(x, "out of memory");
                        break;
                }
                r = ctl_send(x, "submit", p, &id);
                if (r) {
                        b.n--;
                        break;
                }
                if (b.first_request < 0)
                        b.first_request = id;
        }
        if (!r && ferror(stdin))
                r = ctl_error(x, "submit: cannot read standard input: %s", strerror(errno));
        while (!r && sw_client_outstanding(x->client) > 0)
                r = batch_receive(x, &b);
        for (; b.printed < b.n; b.printed++)
                json_object_put(b.slots[b.printed].result);
        free(b.slots);
        free(line);
        json_object_put(common);
        return r ? r : b.failed ? EXIT_FAIL : EXIT_OK;
}

int cmd_submit(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        bool plugin = o->plugin || o->entry || o->arg_given;

        if (o->from_stdin) {
                if (argc > 0 || o->arg_given)
                        return ctl_usage_error(x, "--stdin reads the commands (or the plugin's "
                                                  "args) from standard input");
                if (plugin && (!o->plugin || !o->entry))
                        return ctl_usage_error(x, "--plugin and --entry go together");
                if (o->wait)
                        return ctl_usage_error(x, "--wait does not go with --stdin");
                return submit_stdin(x, o);
        }
        if (plugin) {
                if (argc > 0)
                        return ctl_usage_error(x, "a plugin job takes no command");
                if (!o->plugin || !o->entry)
                        return ctl_usage_error(x, "--plugin and --entry go together");
                if (o->cwd)
                        return ctl_usage_error(x, "--cwd is for commands, not plugins");
        } else if (argc == 0) {
                return ctl_usage_error(x, "no command given");
        }
        return submit_one(x, o, argc, argv);
}

/* edit ID: what the options give, and a program with its args after the id (argv). */
int cmd_edit(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *p;
        char *cwd = NULL;
        int64_t id;
        int r = 0;

        id = ctl_parse_id(x, argv[0]);
        if (id < 0)
                return EXIT_USAGE;
        if (o->command && argc > 1)
                return ctl_usage_error(x, "give --command or a program with its args, not both");
        if (!o->command && argc == 1 && !o->name && !o->priority_given && !o->cwd)
                return ctl_usage_error(x, "nothing to change: give --command, --name, "
                                          "--priority, --cwd or a program");
        p = ctl_id_params(id);
        if (!p)
                return ctl_error(x, "out of memory");
        if (o->command)
                r = add(p, "command", json_object_new_string(o->command));
        if (r == 0 && argc > 1)
                r = add(p, "argv", ctl_argv_array(argc - 1, argv + 1));
        if (r == 0 && o->name)
                r = add(p, "name", json_object_new_string(o->name));
        if (r == 0 && o->priority_given)
                r = add(p, "priority", json_object_new_int64(o->priority));
        if (r == 0 && o->cwd) {
                cwd = job_cwd(o->cwd);
                if (!cwd) {
                        json_object_put(p);
                        return ctl_error(x, "edit: cannot get the current directory: %s",
                                         strerror(errno));
                }
                r = add(p, "cwd", json_object_new_string(cwd));
                free(cwd);
        }
        if (r < 0) {
                json_object_put(p);
                return ctl_error(x, "out of memory");
        }
        return ctl_call_print_object(x, NULL, "edit", p);
}
