/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "jobs/gate.h"
#include "jobs/job.h"
#include "jobs/pause.h"
#include "jobs/queue.h"
#include "run/run.h"
#include "util/log.h"

#define GATE_CHECK_MS 1000

/* Percent of the logs' file system free for users, for the log (-1: not known). */
static double free_percent(const struct run_context *ctx)
{
        struct statvfs st;

        if (fstatvfs(ctx->log_dir_fd, &st) < 0 || st.f_blocks == 0)
                return -1;
        return (double)st.f_bavail * 100.0 / (double)st.f_blocks;
}

/* The daemon's pause, its fence, or its reexec: nothing starts until it ends. */
static bool paused(const struct gate *g)
{
        return pause_is_on(g->ctx->pause) || pause_is_on(g->ctx->node_pause) || run_fenced(g->ctx) ||
               __atomic_load_n(&g->ctx->handing_over, __ATOMIC_ACQUIRE);
}

static bool space_low(const struct run_context *ctx)
{
        return run_space_low(ctx->log_dir_fd,
                             __atomic_load_n(&ctx->min_free_space, __ATOMIC_RELAXED));
}

bool gate_holds_back(const struct run_context *ctx, const struct job *job)
{
        return pause_any_on(&job->queue->pause) || run_fenced(ctx) ||
               __atomic_load_n(&ctx->handing_over, __ATOMIC_ACQUIRE) ||
               (job->owner != 0 && space_low(ctx));
}

/* Whether a pause, the daemon's or the job's queue's, holds the job: it stays listed until a
 * resume, rather than going through its pool (and a write of its row) to be held again. */
static bool pause_holds(const struct gate *g, const struct job *job)
{
        return paused(g) || pause_is_on(&job->queue->pause);
}

/* Every waiting run no pause holds is queued again, oldest first; those a pause holds stay, in
 * order. Returns how many went. */
static size_t release_all(struct gate *g)
{
        struct job **jobs = g->jobs;
        size_t n = g->n, kept = 0, gone = 0;

        uv_timer_stop(&g->timer);
        for (size_t i = 0; i < n; i++) {
                if (pause_holds(g, jobs[i])) {
                        jobs[kept++] = jobs[i];
                        continue;
                }
                jobs[i]->gate_listed = false;
                __atomic_store_n(&jobs[i]->held, false, __ATOMIC_RELEASE);
                /* Queued, not run: a run held again comes back through an event, later. */
                g->release(g->data, jobs[i]);
                job_unref(jobs[i]);
                gone++;
        }
        g->n = kept;
        if (kept == 0) {
                free(jobs);
                g->jobs = NULL;
                g->size = 0;
        }
        return gone;
}

static void on_check(uv_timer_t *timer)
{
        struct gate *g = timer->data;
        size_t gone;

        if (__atomic_load_n(&g->ctx->stopping, __ATOMIC_ACQUIRE) || paused(g) || space_low(g->ctx))
                return;
        gone = release_all(g);
        log_info("The state folder's file system has %.1f%% free again: %zu waiting run%s go%s on",
                 free_percent(g->ctx), gone, gone == 1 ? "" : "s", gone == 1 ? "es" : "");
}

int gate_init(struct gate *g, uv_loop_t *loop, const struct run_context *ctx,
              void (*release)(void *data, struct job *job), void *data)
{
        *g = (struct gate){.ctx = ctx, .release = release, .data = data};
        g->timer.data = g;
        return uv_timer_init(loop, &g->timer);
}

/* Not kept waiting: it is tried again at once (and held again if it must). */
static void release_one(struct gate *g, struct job *job)
{
        __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
        g->release(g->data, job);
}

void gate_hold(struct gate *g, struct job *job)
{
        if (!__atomic_load_n(&job->held, __ATOMIC_ACQUIRE) || job->gate_listed)
                return;
        /* Held while paused, and resumed since. */
        if (!gate_holds_back(g->ctx, job)) {
                release_one(g, job);
                return;
        }
        if (g->n == g->size) {
                size_t size = g->size ? 2 * g->size : 16;
                struct job **jobs = realloc(g->jobs, size * sizeof(*jobs));

                if (!jobs) {
                        log_error("Out of memory for a run held back");
                        release_one(g, job);
                        return;
                }
                g->jobs = jobs;
                g->size = size;
        }
        /* Held for space: the checks start. */
        if (!uv_is_active((uv_handle_t *)&g->timer) && !paused(g) &&
            !pause_is_on(&job->queue->pause)) {
                log_warning("The state folder's file system has %.1f%% free, below "
                            "min-free-space (%lld%%): new runs of users' jobs wait",
                            free_percent(g->ctx),
                            (long long)__atomic_load_n(&g->ctx->min_free_space, __ATOMIC_RELAXED));
                uv_timer_start(&g->timer, on_check, GATE_CHECK_MS, GATE_CHECK_MS);
        }
        g->jobs[g->n++] = job_ref(job);
        job->gate_listed = true;
}

bool gate_drop(struct gate *g, struct job *job)
{
        bool held = __atomic_exchange_n(&job->held, false, __ATOMIC_ACQ_REL);

        for (size_t i = 0; job->gate_listed && i < g->n; i++)
                if (g->jobs[i] == job) {
                        memmove(g->jobs + i, g->jobs + i + 1, (g->n - i - 1) * sizeof(*g->jobs));
                        g->n--;
                        job->gate_listed = false;
                        job_unref(job); /* not the last: the caller has one */
                        break;
                }
        if (g->n == 0)
                uv_timer_stop(&g->timer);
        return held;
}

void gate_open(struct gate *g)
{
        if (g->n > 0 && !__atomic_load_n(&g->ctx->stopping, __ATOMIC_ACQUIRE))
                release_all(g);
}

void gate_close(struct gate *g)
{
        for (size_t i = 0; i < g->n; i++) {
                g->jobs[i]->gate_listed = false;
                job_unref(g->jobs[i]);
        }
        free(g->jobs);
        g->jobs = NULL;
        g->n = g->size = 0;
        if (g->timer.loop && !uv_is_closing((uv_handle_t *)&g->timer))
                uv_close((uv_handle_t *)&g->timer, NULL);
}
