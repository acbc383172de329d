/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#include "jobs/job.h"
#include "jobs/run.h"
#include "jobs/space-gate.h"
#include "util/log.h"

#define SPACE_GATE_CHECK_MS 1000

/* Percent of the logs' file system free for users, for the log (-1: not known). */
static double free_percent(const struct run_context *ctx)
{
        struct statvfs st;

        if (fstatvfs(ctx->log_dir_fd, &st) < 0 || st.f_blocks == 0)
                return -1;
        return (double)st.f_bavail * 100.0 / (double)st.f_blocks;
}

static void on_check(uv_timer_t *timer)
{
        struct space_gate *g = timer->data;
        struct job **jobs = g->jobs;
        size_t n = g->n;

        if (__atomic_load_n(&g->ctx->stopping, __ATOMIC_ACQUIRE) ||
            run_space_low(g->ctx->log_dir_fd,
                          __atomic_load_n(&g->ctx->min_free_space, __ATOMIC_RELAXED)))
                return;
        log_info("The state folder's file system has %.1f%% free again: %zu waiting run%s go%s on",
                 free_percent(g->ctx), n, n == 1 ? "" : "s", n == 1 ? "es" : "");
        uv_timer_stop(&g->timer);
        /* Taken first: a job queued again may be held again, onto a new list. */
        g->jobs = NULL;
        g->n = g->size = 0;
        for (size_t i = 0; i < n; i++) {
                jobs[i]->space_listed = false;
                __atomic_store_n(&jobs[i]->space_held, false, __ATOMIC_RELEASE);
                g->release(g->data, jobs[i]);
                job_unref(jobs[i]);
        }
        free(jobs);
}

int space_gate_init(struct space_gate *g, uv_loop_t *loop, const struct run_context *ctx,
                    void (*release)(void *data, struct job *job), void *data)
{
        *g = (struct space_gate){.ctx = ctx, .release = release, .data = data};
        g->timer.data = g;
        return uv_timer_init(loop, &g->timer);
}

void space_gate_hold(struct space_gate *g, struct job *job)
{
        if (!__atomic_load_n(&job->space_held, __ATOMIC_ACQUIRE) || job->space_listed)
                return;
        if (g->n == g->size) {
                size_t size = g->size ? 2 * g->size : 16;
                struct job **jobs = realloc(g->jobs, size * sizeof(*jobs));

                if (!jobs) {
                        /* Not kept waiting: it is tried again at once, and held again. */
                        log_error("Out of memory for a run waiting for free space");
                        __atomic_store_n(&job->space_held, false, __ATOMIC_RELEASE);
                        g->release(g->data, job);
                        return;
                }
                g->jobs = jobs;
                g->size = size;
        }
        if (g->n == 0) {
                log_warning("The state folder's file system has %.1f%% free, below "
                            "min-free-space (%lld%%): new runs of users' jobs wait",
                            free_percent(g->ctx),
                            (long long)__atomic_load_n(&g->ctx->min_free_space, __ATOMIC_RELAXED));
                uv_timer_start(&g->timer, on_check, SPACE_GATE_CHECK_MS, SPACE_GATE_CHECK_MS);
        }
        g->jobs[g->n++] = job_ref(job);
        job->space_listed = true;
}

bool space_gate_drop(struct space_gate *g, struct job *job)
{
        bool held = __atomic_exchange_n(&job->space_held, false, __ATOMIC_ACQ_REL);

        for (size_t i = 0; job->space_listed && i < g->n; i++)
                if (g->jobs[i] == job) {
                        memmove(g->jobs + i, g->jobs + i + 1, (g->n - i - 1) * sizeof(*g->jobs));
                        g->n--;
                        job->space_listed = false;
                        job_unref(job); /* not the last: the caller has one */
                        break;
                }
        if (g->n == 0)
                uv_timer_stop(&g->timer);
        return held;
}

void space_gate_close(struct space_gate *g)
{
        for (size_t i = 0; i < g->n; i++) {
                g->jobs[i]->space_listed = false;
                job_unref(g->jobs[i]);
        }
        free(g->jobs);
        g->jobs = NULL;
        g->n = g->size = 0;
        if (g->timer.loop && !uv_is_closing((uv_handle_t *)&g->timer))
                uv_close((uv_handle_t *)&g->timer, NULL);
}
