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

/* A pause over the job (its queue's, the daemon's, the node's), the fence, or a reexec. */
static bool job_paused(const struct run_context *ctx, const struct job *job)
{
        return pause_any_on(&job->queue->pause) || run_fenced(ctx) ||
               __atomic_load_n(&ctx->handing_over, __ATOMIC_ACQUIRE);
}

static bool space_low(const struct run_context *ctx)
{
        return run_space_low(ctx->log_dir_fd,
                             __atomic_load_n(&ctx->min_free_space, __ATOMIC_RELAXED));
}

/* Runs of the job's queue given back for the gate that it has not listed yet. */
static bool coming(const struct job *job)
{
        return __atomic_load_n(&job->queue->gate_coming, __ATOMIC_ACQUIRE) > 0;
}

bool gate_holds_back(const struct run_context *ctx, const struct job *job)
{
        return job_paused(ctx, job) || coming(job) ||
               __atomic_load_n(&job->queue->gate_waiting, __ATOMIC_ACQUIRE) > 0 ||
               (job->owner != 0 && space_low(ctx));
}

void gate_coming(struct job *job)
{
        __atomic_add_fetch(&job->queue->gate_coming, 1, __ATOMIC_ACQ_REL);
}

/* Whether a pause over the job holds it, or a run of its queue is on its way here: it stays
 * listed (and counted) until a resume or that run (gate_hold), rather than going through its pool
 * to be held again. */
static bool pause_holds(const struct gate *g, const struct job *job)
{
        return job_paused(g->ctx, job) || coming(job);
}

/* Whether the listed job must wait still: held by a pause or a run on its way, or for space. */
static bool must_wait(const struct gate *g, const struct job *job)
{
        return pause_holds(g, job) || (job->owner != 0 && space_low(g->ctx));
}

static void count(struct job *job)
{
        if (!job->gate_counted)
                __atomic_add_fetch(&job->queue->gate_waiting, 1, __ATOMIC_ACQ_REL);
        job->gate_counted = true;
}

/* It no longer keeps the runs of its queue from starting. */
static void uncount(struct job *job)
{
        if (job->gate_counted)
                __atomic_sub_fetch(&job->queue->gate_waiting, 1, __ATOMIC_ACQ_REL);
        job->gate_counted = false;
}

/* Each waiting run that keep() does not keep goes back to its place in its pool, oldest first;
 * the others stay, in order. Those that go are counted until all are back: a pool thread that
 * takes one meanwhile holds it again (it comes back through an event) rather than start a run
 * queued after one still here. Returns how many went. */
static size_t let_go(struct gate *g, bool (*keep)(struct gate *g, struct job *job))
{
        struct job **jobs = g->jobs;
        size_t n = g->n, kept = 0, gone = 0;

        for (size_t i = 0; i < n; i++)
                if (!keep(g, jobs[i]))
                        jobs[i]->gate_listed = false;
        for (size_t i = 0; i < n; i++)
                if (!jobs[i]->gate_listed) {
                        __atomic_store_n(&jobs[i]->held, false, __ATOMIC_RELEASE);
                        g->release(g->data, jobs[i]);
                }
        for (size_t i = 0; i < n; i++) {
                if (jobs[i]->gate_listed) {
                        jobs[kept++] = jobs[i];
                        continue;
                }
                uncount(jobs[i]);
                job_unref(jobs[i]);
                gone++;
        }
        g->n = kept;
        if (kept == 0) {
                uv_timer_stop(&g->timer);
                free(jobs);
                g->jobs = NULL;
                g->size = 0;
        }
        return gone;
}

/* Every waiting run no pause holds goes back, oldest first (one held for space goes, and comes
 * back held again); those a pause holds stay, in order. */
static bool keep_paused(struct gate *g, struct job *job)
{
        return pause_holds(g, job);
}

static size_t release_all(struct gate *g)
{
        uv_timer_stop(&g->timer);
        return let_go(g, keep_paused);
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

/* Held for space (by nothing else): the checks start, if they have not, and it no longer keeps
 * the runs of its queue from starting (root's start whatever the free space). */
static void watch_space(struct gate *g, struct job *job)
{
        if (pause_holds(g, job) || job->owner == 0 || !space_low(g->ctx))
                return;
        uncount(job);
        if (uv_is_active((uv_handle_t *)&g->timer))
                return;
        log_warning("The state folder's file system has %.1f%% free, below min-free-space "
                    "(%lld%%): new runs of users' jobs wait",
                    free_percent(g->ctx),
                    (long long)__atomic_load_n(&g->ctx->min_free_space, __ATOMIC_RELAXED));
        uv_timer_start(&g->timer, on_check, GATE_CHECK_MS, GATE_CHECK_MS);
}

/* Kept while anything holds it back. */
static bool keep_waiting(struct gate *g, struct job *job)
{
        if (!must_wait(g, job))
                return false;
        watch_space(g, job);
        return true;
}

int gate_init(struct gate *g, uv_loop_t *loop, const struct run_context *ctx,
              void (*release)(void *data, struct job *job), void *data)
{
        *g = (struct gate){.ctx = ctx, .release = release, .data = data};
        g->timer.data = g;
        return uv_timer_init(loop, &g->timer);
}

/* Listed at the end, as the youngest, and counted: until it goes, the runs of its queue wait. */
static void list(struct gate *g, struct job *job)
{
        if (g->n == g->size) {
                size_t size = g->size ? 2 * g->size : 16;
                struct job **jobs = realloc(g->jobs, size * sizeof(*jobs));

                if (!jobs) {
                        log_error("Out of memory for a run held back");
                        __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
                        g->release(g->data, job); /* tried again at once, held again if it must */
                        return;
                }
                g->jobs = jobs;
                g->size = size;
        }
        g->jobs[g->n++] = job_ref(job);
        job->gate_listed = true;
        count(job);
}

void gate_hold(struct gate *g, struct job *job)
{
        bool last;

        /* Listed before it is no longer coming: its queue's runs never see it as neither. */
        if (__atomic_load_n(&job->held, __ATOMIC_ACQUIRE) && !job->gate_listed)
                list(g, job);
        last = __atomic_sub_fetch(&job->queue->gate_coming, 1, __ATOMIC_ACQ_REL) == 0;
        /* Those no longer held back (a resume came meanwhile, or they waited behind one on its
         * way) go back to their places, in order. */
        if (last && g->n > 0 && !__atomic_load_n(&g->ctx->stopping, __ATOMIC_ACQUIRE))
                let_go(g, keep_waiting);
}

bool gate_drop(struct gate *g, struct job *job)
{
        bool held = __atomic_exchange_n(&job->held, false, __ATOMIC_ACQ_REL);

        for (size_t i = 0; job->gate_listed && i < g->n; i++)
                if (g->jobs[i] == job) {
                        memmove(g->jobs + i, g->jobs + i + 1, (g->n - i - 1) * sizeof(*g->jobs));
                        g->n--;
                        job->gate_listed = false;
                        uncount(job);
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
                uncount(g->jobs[i]);
                job_unref(g->jobs[i]);
        }
        free(g->jobs);
        g->jobs = NULL;
        g->n = g->size = 0;
        if (g->timer.loop && !uv_is_closing((uv_handle_t *)&g->timer))
                uv_close((uv_handle_t *)&g->timer, NULL);
}
