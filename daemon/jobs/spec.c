/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "jobs/job.h"
#include "jobs/queue.h"
#include "jobs/spec.h"

/* A command is what the shell was given: an argv job that is exactly that runs the same. */
static const char *command_of(char **argv)
{
        if (argv[0] && argv[1] && argv[2] && !argv[3] && strcmp(argv[0], "/bin/sh") == 0 &&
            strcmp(argv[1], "-c") == 0)
                return argv[2];
        return NULL;
}

/* The argv and cwd the job's strings hold, as submit's params. */
static void add_payload(json_object *o, char **argv, const char *cwd)
{
        const char *command = command_of(argv);

        if (command) {
                json_object_object_add(o, "command", json_object_new_string(command));
        } else {
                json_object *a = json_object_new_array();

                for (size_t i = 0; argv[i]; i++)
                        json_object_array_add(a, json_object_new_string(argv[i]));
                json_object_object_add(o, "argv", a);
        }
        if (cwd)
                json_object_object_add(o, "cwd", json_object_new_string(cwd));
}


/* What the job's extra says of its limits, its timeout, its flow and its on-end command. */
static void add_extra(json_object *o, const struct job_extra *x)
{
        if (x->timeout > 0)
                json_object_object_add(o, "timeout", json_object_new_double(x->timeout));
        json_object_object_add(o, "limits", sw_limits_to_json(&x->limits));
        if (x->retries > 0) {
                json_object_object_add(o, "retries", json_object_new_int64(x->retries));
                json_object_object_add(o, "retry_delay", json_object_new_double(x->retry_delay));
        }
        if (x->every > 0)
                json_object_object_add(o, "every", json_object_new_double(x->every));
        if (x->cron_expr)
                json_object_object_add(o, "cron", json_object_new_string(x->cron_expr));
        if (x->on_end)
                json_object_object_add(o, "on_end", json_object_new_string(x->on_end));
        if (x->node)
                json_object_object_add(o, "node", json_object_new_string(x->node));
}

char *job_spec(const struct job *job)
{
        char **argv = job->x->plugin ? NULL : job_argv(job);
        json_object *o;
        char *text;

        if (!argv || !(o = json_object_new_object()))
                return NULL;
        add_payload(o, argv, job_cwd(job));
        if (job->env)
                json_object_object_add(o, "env", envs_to_json(job->env));
        json_object_object_add(o, "class",
                               json_object_new_string(job->very_slow ? "very-slow" : "slow"));
        json_object_object_add(o, "queue", json_object_new_string(job->queue->name));
        if (job->has_name)
                json_object_object_add(o, "name", json_object_new_string(job_name(job)));
        if (job->has_key)
                json_object_object_add(o, "key", json_object_new_string(job_key(job)));
        /* As it was when it ended: an edit's too. */
        if (job->priority != 0)
                json_object_object_add(o, "priority", json_object_new_int(job->priority));
        add_extra(o, job->x);
        if (job->persist)
                json_object_object_add(o, "persist", json_object_new_boolean(1));
        text = strdup(json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
        json_object_put(o);
        return text;
}
