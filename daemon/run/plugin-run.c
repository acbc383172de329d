/* SPDX-License-Identifier: MIT */
/*
 * One run of a plugin job: its entry point called on the pool thread. Cancel and timeout are
 * cooperative: the plugin asks stop_reason() or sleeps through sleep(), which a kick wakes. The
 * log file is created by the first write, so runs that log nothing cost no file.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "run/context.h"
#include "run/inflight.h"
#include "run/plugin-run.h"
#include "store/run-record.h"

struct plugin_run {
        struct slowwork_plugin_ctx ctx; /* first: what the plugin holds */
        const struct run_context *run_ctx;
        const struct run_job *job;
        struct run_record *rec;
        double deadline; /* monotonic seconds, 0: no timeout */
        struct run_log log;
        int kick_fd; /* made by the first sleep */
};

static struct plugin_run *run_of(struct slowwork_plugin_ctx *ctx)
{
        return (struct plugin_run *)ctx;
}

static int api_log_write(struct slowwork_plugin_ctx *ctx, const void *data, size_t n)
{
        return run_log_write(&run_of(ctx)->log, data, n);
}

static int api_log_vprintf(struct slowwork_plugin_ctx *ctx, const char *format, va_list ap)
{
        char *text;
        int n, r;

        n = vasprintf(&text, format, ap);
        if (n < 0)
                return -ENOMEM;
        r = api_log_write(ctx, text, (size_t)n);
        free(text);
        return r;
}

static const char *api_stop_reason(struct slowwork_plugin_ctx *ctx)
{
        struct plugin_run *run = run_of(ctx);

        if (__atomic_load_n(&run->run_ctx->interrupting, __ATOMIC_ACQUIRE) ||
            run_fenced(run->run_ctx))
                return "interrupted";
        if (__atomic_load_n(run->job->cancelling, __ATOMIC_ACQUIRE))
                return "cancelled";
        if (run->deadline > 0 && run_mono_now() >= run->deadline)
                return "timed-out";
        return NULL;
}

static int api_sleep(struct slowwork_plugin_ctx *ctx, double seconds)
{
        struct plugin_run *run = run_of(ctx);
        double end = run_mono_now() + (seconds > 0 ? seconds : 0);
        uint64_t kicks;

        if (run->kick_fd < 0) {
                run->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
                if (run->kick_fd < 0)
                        return -errno;
                /* Published before the reason is read: a cancel is either seen or kicks. */
                pthread_mutex_lock(run->job->kick_lock);
                *run->job->kick_fd = run->kick_fd;
                pthread_mutex_unlock(run->job->kick_lock);
        }
        for (;;) {
                struct pollfd pfd = {.fd = run->kick_fd, .events = POLLIN};
                double now = run_mono_now(), until = end;

                if (api_stop_reason(ctx))
                        return -ECANCELED;
                if (now >= end)
                        return 0;
                if (run->deadline > 0 && run->deadline < until)
                        until = run->deadline;
                if (poll(&pfd, 1, (int)ceil((until - now) * 1000.0)) > 0 &&
                    read(run->kick_fd, &kicks, sizeof(kicks)) < 0) {
                        /* drained by an earlier read */
                }
        }
}

static int64_t api_item_id(struct slowwork_plugin_ctx *ctx)
{
        return run_of(ctx)->job->id;
}

static int64_t api_run_number(struct slowwork_plugin_ctx *ctx)
{
        return run_of(ctx)->rec->run;
}

static int api_very_slow(struct slowwork_plugin_ctx *ctx)
{
        return run_of(ctx)->job->very_slow;
}

static const struct slowwork_plugin_api api = {
    .log_write = api_log_write,
    .log_vprintf = api_log_vprintf,
    .stop_reason = api_stop_reason,
    .sleep = api_sleep,
    .item_id = api_item_id,
    .run_number = api_run_number,
    .very_slow = api_very_slow,
};

void plugin_run(const struct run_context *ctx, const struct run_job *job, struct run_record *rec)
{
        struct plugin_run run = {
            .ctx.api = &api, .run_ctx = ctx, .job = job, .rec = rec, .kick_fd = -1};
        const char *reason;
        int slot;

        reason = __atomic_load_n(&ctx->stopping, __ATOMIC_ACQUIRE) ? "interrupted"
                                                                   : api_stop_reason(&run.ctx);
        if (reason) {
                /* Cancelled or shut down before it could start. */
                rec->outcome = reason;
                rec->ended = run_wall_now();
                return;
        }
        run_log_init(&run.log, ctx, rec->log);
        if (job->timeout > 0)
                run.deadline = run_mono_now() + job->timeout;
        job->started(job, rec);

        slot = inflight_enter(ctx->inflight, &(struct inflight_run){.id = job->id});
        rec->exit_code = job->plugin_entry(&run.ctx, job->plugin_arg);
        inflight_leave(ctx->inflight, slot);

        rec->ended = run_wall_now();
        reason = api_stop_reason(&run.ctx);
        rec->outcome = reason ? reason : rec->exit_code == 0 ? "succeeded" : "failed";
        if (run.kick_fd >= 0) {
                pthread_mutex_lock(job->kick_lock);
                *job->kick_fd = -1;
                pthread_mutex_unlock(job->kick_lock);
                close(run.kick_fd);
        }
        rec->log_bytes = run.log.size;
        run_log_close(&run.log);
}
