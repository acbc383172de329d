/* SPDX-License-Identifier: MIT */
/*
 * A call is made on the loop with copies of what it needs of the job (the job may go before it
 * runs, and a job's parts are the loop's), runs on a thread of the on-end pool through the shell
 * runner as the job's on-end command, and is logged there and freed when the pool lets it go:
 * nothing of it goes back to the loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/job.h"
#include "jobs/on-end.h"
#include "run/run.h"
#include "store/run-record.h"
#include "util/log.h"
#include "util/strv.h"

/* Commands at once: a few, as notifications are short. */
#define ON_END_THREADS_MAX 4
/* The start of a command's output kept for the log when it fails. */
#define ON_END_OUTPUT 256

struct on_end_call {
        struct slow_work work; /* first: the pool's item */
        struct on_end *oe;
        struct on_end_call *next, *prev; /* on oe's running list, under its lock */
        int64_t id, run;
        uid_t owner;
        double timeout;
        struct sw_limits limits;
        char *argv[4]; /* /bin/sh -c COMMAND */
        char *cwd;
        char **envp;   /* the job's (NULL: what a run without one gets) */
        char *vars[5]; /* the run's SLOWWORK_* */
        pthread_mutex_t kick_lock;
        int kick_fd;
        pid_t pid;
        unsigned cancelling; /* never set: a call is not cancelled, only stopped with the daemon */
        struct suspend suspend;
        char output[ON_END_OUTPUT];
};

static void call_free(struct on_end_call *call)
{
        free(call->argv[2]);
        free(call->cwd);
        strv_free(call->envp);
        for (size_t i = 0; i < sizeof(call->vars) / sizeof(call->vars[0]); i++)
                free(call->vars[i]);
        suspend_destroy(&call->suspend);
        pthread_mutex_destroy(&call->kick_lock);
        free(call);
}

/* The run's variables: SLOWWORK_EXIT_CODE is empty when a signal ended it or it never started. */
static int set_vars(struct on_end_call *call, const struct run_record *rec)
{
        char code[16] = "";

        if (rec->started > 0 && !rec->signal)
                snprintf(code, sizeof(code), "%d", rec->exit_code);
        if (asprintf(&call->vars[0], "SLOWWORK_JOB=%" PRId64, rec->id) < 0)
                call->vars[0] = NULL;
        if (asprintf(&call->vars[1], "SLOWWORK_RUN=%" PRId64, rec->run) < 0)
                call->vars[1] = NULL;
        if (asprintf(&call->vars[2], "SLOWWORK_OUTCOME=%s", rec->outcome) < 0)
                call->vars[2] = NULL;
        if (asprintf(&call->vars[3], "SLOWWORK_EXIT_CODE=%s", code) < 0)
                call->vars[3] = NULL;
        return call->vars[0] && call->vars[1] && call->vars[2] && call->vars[3] ? 0 : -ENOMEM;
}

static struct on_end_call *call_new(struct on_end *oe, const struct job *job,
                                    const struct run_record *rec, const char *command)
{
        struct on_end_call *call = calloc(1, sizeof(*call));
        const char *cwd = job_cwd(job);

        if (!call)
                return NULL;
        pthread_mutex_init(&call->kick_lock, NULL);
        suspend_init(&call->suspend);
        call->oe = oe;
        call->id = job->id;
        call->run = rec->run;
        call->owner = job->owner;
        call->timeout = job->x->timeout;
        call->limits = job->x->limits;
        call->kick_fd = -1;
        call->argv[0] = (char *)"/bin/sh";
        call->argv[1] = (char *)"-c";
        call->argv[2] = strdup(command);
        call->cwd = strdup(cwd ? cwd : "/"); /* a plugin job's runs inside the daemon */
        call->envp = job->env ? strv_dup(job->env->vars) : NULL;
        if (!call->argv[2] || !call->cwd || (job->env && !call->envp) || set_vars(call, rec) < 0) {
                call_free(call);
                return NULL;
        }
        return call;
}

static void listed(struct on_end_call *call, bool on)
{
        struct on_end *oe = call->oe;

        pthread_mutex_lock(&oe->lock);
        if (on) {
                call->prev = NULL;
                call->next = oe->running;
                if (oe->running)
                        oe->running->prev = call;
                oe->running = call;
        } else {
                if (call->prev)
                        call->prev->next = call->next;
                else
                        oe->running = call->next;
                if (call->next)
                        call->next->prev = call->prev;
        }
        pthread_mutex_unlock(&oe->lock);
}

/* The command starts: nothing to tell, but its start for the record. */
static void started(const struct run_job *rj, struct run_record *rec)
{
        (void)rj;
        rec->started = run_wall_now();
}

/* "exit code 3", or the outcome (with the signal that ended it), then the start of what it
 * wrote (its first line). */
static void log_failure(const struct on_end_call *call, const struct run_record *rec)
{
        int n = (int)strcspn(call->output, "\n");
        char how[64];

        if (rec->signal)
                snprintf(how, sizeof(how), "%s (signal %d)", rec->outcome, rec->signal);
        else if (strcmp(rec->outcome, "failed") == 0 && rec->started > 0)
                snprintf(how, sizeof(how), "exit code %d", rec->exit_code);
        else
                snprintf(how, sizeof(how), "%s", rec->outcome);
        log_warning("Job %" PRId64 " run %" PRId64 ": on-end command failed: %s%s%.*s", call->id,
                    call->run, how, n ? ": " : "", n, call->output);
}

static void call_execute(struct slow_work *work)
{
        struct on_end_call *call = (struct on_end_call *)work;
        struct run_record rec = {.id = call->id, .run = call->run, .owner = call->owner};
        struct run_job rj = {
            .id = call->id,
            .owner = call->owner,
            .timeout = call->timeout,
            .argv = call->argv,
            .cwd = call->cwd,
            .envp = call->envp,
            .limits = &call->limits,
            .cancelling = &call->cancelling,
            .kick_lock = &call->kick_lock,
            .kick_fd = &call->kick_fd,
            .pid = &call->pid,
            .suspend = &call->suspend,
            .started = started,
            .data = call,
            .on_end = true,
            .extra_env = call->vars,
            .output = call->output,
            .output_size = sizeof(call->output),
        };

        listed(call, true);
        shell_run(call->oe->ctx, &rj, &rec);
        listed(call, false);
        if (!rec.outcome || strcmp(rec.outcome, "succeeded") != 0)
                log_failure(call, &rec);
}

static int call_get_ref(struct slow_work *work)
{
        (void)work;
        return 0; /* enqueued once: the pool's reference is the call itself */
}

static void call_put_ref(struct slow_work *work)
{
        call_free((struct on_end_call *)work);
}

static void call_desc(struct slow_work *work, char *buf, size_t len)
{
        struct on_end_call *call = (struct on_end_call *)work;

        snprintf(buf, len, "%" PRId64 ": on-end of run %" PRId64, call->id, call->run);
}

static const struct slow_work_ops call_ops = {
    .get_ref = call_get_ref,
    .put_ref = call_put_ref,
    .execute = call_execute,
    .desc = call_desc,
};

int on_end_init(struct on_end *oe, const struct run_context *ctx)
{
        struct slow_work_settings s = {
            .min_threads = 1,
            .max_threads = ON_END_THREADS_MAX,
            .vslow_percentage = 50,
            .idle_timeout_ms = 5000,
        };

        *oe = (struct on_end){.ctx = ctx};
        pthread_mutex_init(&oe->lock, NULL);
        return slow_work_pool_new(&s, &oe->pool);
}

void on_end_after(struct on_end *oe, const struct job *job, const struct run_record *rec,
                  const char *command)
{
        struct on_end_call *call;
        int r;

        /* No process starts once the daemon stops (its pool goes off the loop). */
        if (__atomic_load_n(&oe->ctx->stopping, __ATOMIC_ACQUIRE) || !oe->pool) {
                log_info("Job %" PRId64 " run %" PRId64 ": on-end command not run: the daemon "
                         "is stopping",
                         rec->id, rec->run);
                return;
        }
        call = call_new(oe, job, rec, command);
        if (!call) {
                log_error("Job %" PRId64 " run %" PRId64 ": on-end command not run: out of memory",
                          rec->id, rec->run);
                return;
        }
        slow_work_init(&call->work, &call_ops);
        r = slow_work_pool_enqueue(oe->pool, &call->work);
        if (r < 0) {
                log_error("Job %" PRId64 " run %" PRId64 ": on-end command not run: %s", rec->id,
                          rec->run, strerror(-r));
                call_free(call);
        }
}

bool on_end_busy(struct on_end *oe)
{
        struct slow_work_stats st;

        if (!oe->pool)
                return false;
        slow_work_pool_stats(oe->pool, &st);
        return st.busy + st.queued_slow + st.queued_very_slow + st.delayed > 0;
}

void on_end_kick(struct on_end *oe)
{
        uint64_t one = 1;

        pthread_mutex_lock(&oe->lock);
        for (struct on_end_call *call = oe->running; call; call = call->next) {
                pthread_mutex_lock(&call->kick_lock);
                if (call->kick_fd >= 0 && write(call->kick_fd, &one, sizeof(one)) < 0) {
                        /* the counter is full: a kick is pending anyway */
                }
                pthread_mutex_unlock(&call->kick_lock);
        }
        pthread_mutex_unlock(&oe->lock);
}

void on_end_free_pool(struct on_end *oe)
{
        slow_work_pool_free(oe->pool);
        oe->pool = NULL;
}

void on_end_close(struct on_end *oe)
{
        if (oe->pool)
                on_end_free_pool(oe);
        if (oe->ctx)
                pthread_mutex_destroy(&oe->lock);
        oe->ctx = NULL;
}
