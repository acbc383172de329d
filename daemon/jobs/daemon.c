/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobs/answer.h"
#include "jobs/daemon.h"
#include "jobs/item.h"
#include "jobs/spec.h"
#include "run/run.h"
#include "store/history.h"
#include "store/run-record.h"
#include "store/store.h"
#include "util/log.h"
#include "util/settings.h"

void daemon_add_job(struct daemon *d, struct job *job)
{
        job->key_shared = job->has_key && store_shared(d->store);
        registry_add(&d->registry, job);
        users_add(&d->users, job);
        users_add(&job->queue->users, job);
        metrics_job_recount(&d->metrics, job);
}

void daemon_job_resized(struct daemon *d, struct job *job)
{
        users_resized(&d->users, job);
        users_resized(&job->queue->users, job);
}

/* Drops the tables' reference. */
/* The spec of a job that leaves the tables, kept with its last run's record while that is in
 * the history: what restart makes a new job of. */
static void keep_spec(struct daemon *d, struct job *job)
{
        char *spec;

        if (!job->last || !(spec = job_spec(job)))
                return;
        store_put_run_spec(d->store, job->last, spec);
        history_set_spec(&d->history, job->id, job->last->run, spec);
}

/* The job leaves the tables, keeping the tables' reference for the caller to drop. */
static void leave(struct daemon *d, struct job *job)
{
        registry_retire(&d->registry, job);
        metrics_job_recount(&d->metrics, job);
        users_remove(&d->users, job);
        users_remove(&job->queue->users, job);
        schedule_remove(&d->schedule, job);
}

void daemon_let_go(struct daemon *d, struct job *job)
{
        leave(d, job);
        job_unref(job);
}

void daemon_retire_job(struct daemon *d, struct job *job)
{
        leave(d, job);
        /* At shutdown what leaves the tables is not done: queued and delayed jobs stay on disk.
         * A keyed row that another node's ask keeps says it is idle (pg_take_again). */
        if (!__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE)) {
                if (job->key_shared)
                        daemon_save_state(d, job, "idle");
                keep_spec(d, job);
                store_delete_job(d->store, job->id);
        }
        job_unref(job);
}

void daemon_save_job(struct daemon *d, struct job *job)
{
        struct store_job_row row;

        job_row(job, NULL, &row);
        job->saved_seq = store_put_job(d->store, &row, job->env);
        job_row_free(&row);
        free(job->payload); /* the state database has it now */
        job->payload = NULL;
}

void daemon_claim(struct daemon *d, struct job *job, bool may_again,
                  void (*done)(void *data, const struct db_result *res), void *data)
{
        struct store_job_row row;
        char *what = job_what(job);

        /* Idle until the claim is answered: a crash before that leaves nothing to run. */
        job_row(job, "idle", &row);
        job->saved_seq = store_claim_job(d->store, &row, job->env, job->queue->name,
                                         what ? what : "", may_again, done, data);
        job_row_free(&row);
        free(what);
        free(job->payload);
        job->payload = NULL;
}

void daemon_save_state(struct daemon *d, struct job *job, const char *state)
{
        struct store_job_row row;

        job_row(job, state, &row);
        job->saved_seq = store_put_job_state(d->store, &row);
        job_row_free(&row);
}

const struct run_record *daemon_last_run(const struct daemon *d, int64_t id)
{
        const struct run_record *rec = history_last(&d->history, id),
                                *learned = history_last(&d->learned, id);

        return learned && (!rec || learned->run > rec->run) ? learned : rec;
}

const struct run_record *daemon_find_run(const struct daemon *d, int64_t id, int64_t run)
{
        const struct run_record *rec = history_find(&d->history, id, run);

        return rec ? rec : history_find(&d->learned, id, run);
}

void daemon_learn_run(struct daemon *d, struct run_record *rec)
{
        const struct run_record *have = daemon_last_run(d, rec->id);

        if (have && have->run >= rec->run)
                run_record_free(rec);
        else
                history_add_any(&d->learned, rec, LEARNED_MAX); /* frees it when it fails */
}

/* Into the job's pool, now (plugged for the rest of the burst; back at the place it had there,
 * or at the tail) or after the delay. */
static int pool_enqueue(struct daemon *d, struct job *job, double delay, bool back)
{
        if (delay > 0)
                return slow_work_pool_enqueue_delayed(job->queue->pool, &job->dw,
                                                      (unsigned long)(delay * 1000.0 + 0.5));
        if (!users_admit(&job->queue->users, job))
                return 0; /* held for its turn by fair share */
        burst_add(&d->burst, job->queue->pool);
        return back ? slow_work_pool_put_back(job->queue->pool, &job->dw.work)
                    : slow_work_pool_enqueue(job->queue->pool, &job->dw.work);
}

/* After an enqueue that gave r: a run queued is told to the claims; the job is counted again. */
static int queued(struct daemon *d, struct job *job, int r)
{
        if (r == 0 && d->on_queued)
                d->on_queued(d, job);
        metrics_job_recount(&d->metrics, job);
        return r;
}

int daemon_queue_run(struct daemon *d, struct job *job, double delay)
{
        bool pending = slow_work_is_pending(&job->dw.work);
        int r;

        /* The pool is being freed off the loop, or is gone: nothing more is queued. */
        if (__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE))
                return -ESHUTDOWN;
        r = pool_enqueue(d, job, delay, false);
        if (r == 0 && !pending) {
                bool saved = job->qorder != 0; /* a new job's row is written after this */

                job->qorder = ++d->next_qorder;
                job->due = delay > 0 ? run_wall_now() + delay : 0;
                if (job->queued_at == 0)
                        job->queued_at = delay > 0 ? run_wall_now() + delay : run_wall_now();
                if (saved)
                        daemon_save_state(d, job, NULL);
        }
        return queued(d, job, r);
}

int daemon_restore_run(struct daemon *d, struct job *job, double due)
{
        double now = run_wall_now();
        int r;

        r = pool_enqueue(d, job, due > now ? due - now : 0, false);
        if (r == 0) {
                job->due = due > now ? due : 0;
                job->queued_at = due > now ? due : now;
        }
        return queued(d, job, r);
}

void daemon_clock_moved(struct daemon *d, struct job *job, double before)
{
        double left;

        if (job->due <= before || !slow_work_is_pending(&job->dw.work) ||
            job_executing(job) ||
            __atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE))
                return;
        /* The pool's timer counts the real clock: the delay goes again, as much as is left. */
        if (!slow_work_cancel_pending(&job->dw.work))
                return;
        left = job->due - run_wall_now();
        if (pool_enqueue(d, job, left > 0 ? left : 0, false) < 0)
                log_warning("Job %lld: cannot queue its delayed run again", (long long)job->id);
}

int daemon_enqueue(struct daemon *d, struct job *job, double delay, const char **ret_extra)
{
        bool pending = slow_work_is_pending(&job->dw.work);
        bool running = job_executing(job);
        int r;

        /* Its run is held back (free space, a pause, its owner's turn), waits for other jobs or
         * for its retry's turn, and will run then; or it is stashed, until enqueue by id. */
        if (__atomic_load_n(&job->held, __ATOMIC_ACQUIRE) || job->waiting || job->retry_due ||
            job->stashed) {
                *ret_extra = "coalesced";
                return 0;
        }
        /* A job that was done, or runs and will run once more after, starts again at its first
         * attempt. */
        if (job_idle(job) || running)
                __atomic_store_n(&job->attempt, 1, __ATOMIC_RELEASE);
        /* Its queued item is the run handed over: it is queued again once that has started. */
        if (job->resuming) {
                job->enqueued_resuming = true;
                *ret_extra = "deferred";
                return 0;
        }
        r = daemon_queue_run(d, job, delay);
        if (r == 0 && running)
                job->deferred_after = __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE);
        *ret_extra = r < 0 ? NULL : pending ? "coalesced" : running ? "deferred" : NULL;
        return r;
}

void daemon_notify(struct daemon *d, struct job *job, const char *state,
                   const struct run_record *ended)
{
        if (d->on_event)
                d->on_event(d->event_data, job, state, ended);
}

void daemon_run_again(struct daemon *d, struct job *job, const char *why)
{
        const char *extra;

        if (daemon_enqueue(d, job, 0, &extra) < 0)
                log_warning("Job %lld: cannot queue its %s", (long long)job->id, why);
        else if (!extra || strcmp(extra, "coalesced") != 0)
                daemon_notify(d, job, "pending", NULL);
        daemon_save_state(d, job, NULL);
}

/* A recurring job's tick: queued by the kernel's rules, its next tick kept. */
static void on_tick(void *data, struct job *job)
{
        struct daemon *d = data;

        if (!job->live || !job->persist) {
                schedule_remove(&d->schedule, job);
                return;
        }
        daemon_run_again(d, job, "tick");
}

int daemon_schedule(struct daemon *d, struct job *job)
{
        if (job->next_run <= 0)
                job->next_run = schedule_next(job, run_wall_now());
        return schedule_add(&d->schedule, job);
}

static void released(const struct job *job, int r)
{
        if (r < 0)
                log_warning("Job %lld: cannot queue its run again: %s", (long long)job->id,
                            strerror(-r));
}

void daemon_release_held(void *data, struct job *job)
{
        released(job, daemon_queue_run(data, job, 0));
}

void daemon_release_gated(void *data, struct job *job)
{
        struct daemon *d = data;
        int r = -ESHUTDOWN;

        /* Its qorder, due and row stay: it never left its place in the queue. */
        if (!__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE))
                r = pool_enqueue(d, job, 0, true);
        released(job, queued(d, job, r));
}

int daemon_init(struct daemon *d, const struct daemon_config *config)
{
        struct sw_queue_settings qs = settings_queue_part(config->settings);
        int r;

        d->store = config->store;
        d->shared.node = store_node(config->store);
        d->shared.store = config->store;
        d->settings = *config->settings;
        d->shared.ops = &item_ops;
        d->shared.run = (struct run_context){
            .log_dir = config->log_dir,
            .log_dir_fd = open(config->log_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
            .log_limit = config->settings->log_limit,
            .log_budget = config->settings->max_log_bytes_per_user,
            .min_free_space = config->settings->min_free_space,
            .kill_grace = config->settings->kill_grace,
            .system = config->system,
            .uid = config->uid,
            .jobs_nofile = config->jobs_nofile,
            .pause = &d->pause,
            .node_pause = &d->node_pause,
            .events = &d->events,
            .contain = &d->contain,
            .inflight = &d->inflight,
        };
        r = shell_watch_check();
        if (r < 0)
                log_warning("pidfd_open(2) fails here (%s): running jobs are checked every "
                            "100 ms instead of being watched",
                            strerror(-r));
        if (d->shared.run.log_dir_fd < 0)
                return log_error_errno(-errno, "Failed to open %s: %m", config->log_dir);
        contain_init(&d->contain, config->state_dir);
        supervisor_start(&d->supervisor, config->loop, &d->contain, config->state_dir);
        if (store_shared(d->store) &&
            fence_setup(&d->fence, supervisor_life_fd(&d->supervisor)) == 0)
                d->shared.run.fence = &d->fence;
        r = inflight_open(&d->inflight, config->state_dir, &d->crashed, &d->ncrashed);
        if (r < 0)
                return r;
        r = events_init(&d->events, config->loop, config->on_run_event, d);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the job events: %m");
        r = burst_init(&d->burst, config->loop);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the enqueue bursts: %m");
        r = gate_init(&d->gate, config->loop, &d->shared.run, daemon_release_gated, d);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the free space checks: %m");
        pause_init_node(&d->node_pause, store_node(d->store));
        pause_init(&d->pause, NULL, d->store, &d->node_pause);
        users_init(&d->users, offsetof(struct job, user_link), offsetof(struct job, user_listed),
                   &d->shared.run.stopping, daemon_release_held, d);
        users_set_limits(&d->users, config->settings->max_queued_per_user,
                         config->settings->max_running_per_user);
        d->shared.users = &d->users;
        r = schedule_init(&d->schedule, config->loop, on_tick, d);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the recurring jobs' timer: %m");
        metrics_init(&d->metrics);
        r = metrics_file_init(&d->metrics_file, config->loop);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the metrics file's timer: %m");
        r = queue_new(SW_QUEUE_DEFAULT, &qs, d->store, &d->pause, &d->shared.run.stopping, daemon_release_held,
                      d, &d->queues);
        if (r < 0)
                return log_error_errno(r, "Failed to start the thread pool: %m");
        queue_set_fair(d->queues, config->settings->fair_share);
        r = on_end_init(&d->on_end, &d->shared.run);
        if (r < 0)
                return log_error_errno(r, "Failed to start the on-end commands' thread pool: %m");
        d->file_queues = config->file_queues ? json_object_get(config->file_queues) : NULL;
        return 0;
}

void daemon_report_node(struct daemon *d)
{
        store_report(d->store, __atomic_load_n(&d->pause.runs, __ATOMIC_RELAXED),
                     d->settings.min_threads, d->settings.max_threads, d->settings.node_queues);
}

bool daemon_stopping(struct daemon *d)
{
        return __atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE);
}

void daemon_stop_starting(struct daemon *d)
{
        __atomic_store_n(&d->shared.run.stopping, true, __ATOMIC_RELEASE);
        /* Nothing is queued from here on: the pools go unplugged. */
        burst_end(&d->burst);
        /* No tick now: one missed while stopped makes its run at the next start. */
        schedule_stop(&d->schedule);
        /* The pool is freed off the loop next: nothing reads it from here on. */
        metrics_file_stop(&d->metrics_file);
        /* A suspended run would not end in stop-timeout: it is interrupted now. */
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                for (struct job *job = d->registry.by_id[i]; job; job = job->hnext)
                        if (suspend_is_on(&job->suspend))
                                job_kick(job);
}

void daemon_hand_over(struct daemon *d)
{
        __atomic_store_n(&d->shared.run.handing_over, true, __ATOMIC_RELEASE);
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                for (struct job *job = d->registry.by_id[i]; job; job = job->hnext)
                        job_kick(job);
}

bool daemon_handed_over(struct daemon *d)
{
        return __atomic_load_n(&d->pause.runs, __ATOMIC_ACQUIRE) == 0 && !on_end_busy(&d->on_end);
}

int daemon_take_up(struct job *job, struct run_handover *h)
{
        if (job->resume)
                return -EBUSY;
        h->next = NULL;
        job->resume = h;
        job->resuming = true;
        suspend_expect(&job->suspend, h->suspended, h->since, h->total);
        if (slow_work_pool_enqueue(job->queue->pool, &job->dw.work) == 0)
                return 0;
        job->resume = NULL;
        job->resuming = false;
        return -ENOMEM;
}

void daemon_take_back(struct daemon *d)
{
        __atomic_store_n(&d->shared.run.handing_over, false, __ATOMIC_RELEASE);
        while (d->handed) {
                struct run_handover *h = d->handed;
                struct job *job = registry_find(&d->registry, h->id);

                d->handed = h->next;
                if (job && daemon_take_up(job, h) == 0)
                        continue;
                log_error("Job %lld: cannot take up run %lld again: it goes on unwatched until "
                          "the next start stops it",
                          (long long)h->id, (long long)h->run);
                run_handover_free(h);
        }
        gate_open(&d->gate);
}

void daemon_fence(struct daemon *d, bool fenced)
{
        if (__atomic_load_n(&d->shared.run.fenced, __ATOMIC_ACQUIRE) == fenced)
                return;
        __atomic_store_n(&d->shared.run.fenced, fenced, __ATOMIC_RELEASE);
        if (!fenced) {
                gate_open(&d->gate);
                return;
        }
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                for (struct job *job = d->registry.by_id[i]; job; job = job->hnext)
                        job_kick(job);
        on_end_kick(&d->on_end);
}

void daemon_interrupt_all(struct daemon *d)
{
        __atomic_store_n(&d->shared.run.interrupting, true, __ATOMIC_RELEASE);
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                for (struct job *job = d->registry.by_id[i]; job; job = job->hnext)
                        job_kick(job);
        on_end_kick(&d->on_end);
}

void daemon_free_pool(struct daemon *d)
{
        for (struct queue *q = d->queues; q; q = q->next)
                if (q->pool)
                        queue_free_pool(q);
        /* After the runs: none starts an on-end command from here on (the daemon stops). */
        if (d->on_end.pool)
                on_end_free_pool(&d->on_end);
}

void daemon_close_events(struct daemon *d)
{
        events_flush(&d->events);
        events_close(&d->events);
        burst_close(&d->burst);
        gate_close(&d->gate);
        users_close(&d->users);
        pause_close(&d->pause);
        pause_close(&d->node_pause);
        for (struct queue *q = d->queues; q; q = q->next) {
                pause_close(&q->pause);
                users_close(&q->users);
        }
        schedule_close(&d->schedule);
        metrics_file_close(&d->metrics_file);
        supervisor_unwatch(&d->supervisor);
}

static void drop_answers(struct answer **list)
{
        struct answer *a;

        while ((a = *list)) {
                *list = a->next;
                a->drop(a);
        }
}

void daemon_free(struct daemon *d)
{
        daemon_stop_starting(d);
        daemon_free_pool(d);
        deps_free(&d->deps);
        schedule_close(&d->schedule);
        users_close(&d->users);
        for (struct queue *q = d->queues; q; q = q->next)
                users_close(&q->users);
        metrics_file_close(&d->metrics_file);
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                while (d->registry.by_id[i]) {
                        struct job *job = d->registry.by_id[i];

                        drop_answers(&job->waiters);
                        drop_answers(&job->cancels);
                        daemon_retire_job(d, job);
                }
        on_end_close(&d->on_end);
        inflight_close(&d->inflight);
        contain_free(&d->contain);
        supervisor_stop(&d->supervisor);
        if (d->shared.run.log_dir && d->shared.run.log_dir_fd >= 0)
                close(d->shared.run.log_dir_fd);
        free(d->crashed);
        json_object_put(d->kept);
        while (d->queues) {
                struct queue *q = d->queues;

                d->queues = q->next;
                queue_free(q);
        }
        json_object_put(d->file_queues);
        json_object_put(d->kept_queues);
        history_free(&d->history);
        history_free(&d->learned);
        registry_free(&d->registry);
        plugins_free(&d->shared.plugins);
        metrics_free(&d->metrics);
}
