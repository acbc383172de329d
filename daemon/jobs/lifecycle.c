/* SPDX-License-Identifier: MIT */
/*
 * A job's life after its submit, on the loop: what the pool's threads tell of its runs (started,
 * ended, held back), a run's end written and heard of, retries planned and queued, cancels, and
 * the job gone idle (its waits answered, a job on it told, retired unless a handle keeps it).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/answer.h"
#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/deps.h"
#include "jobs/lifecycle.h"
#include "jobs/record.h"
#include "store/history.h"
#include "store/run-record.h"
#include "store/store.h"
#include "util/log.h"

/* Shutdown cut the run short, or kept it from starting: it runs again after a restart (a plugin
 * only when asked). */
static void keep_for_restart(struct daemon *d, struct job *job, const struct run_record *rec)
{
        bool again = !job->x->plugin_entry || slow_work_is_pending(&job->dw.work);

        if (rec->started == 0)
                return;
        store_add_run(d->store, rec, d->settings.history_limit);
        if (!again)
                job->persist = true;
        daemon_save_state(d, job, again ? "pending" : "idle");
}

/* Run logs within max-log-bytes-per-user: a run ended (not in the history yet), so its owner's
 * records in the history lose their logs, file and path, oldest first, until they and its own
 * fit; a live job's last run no longer names a log gone either. A run's own log is cut at the
 * budget (run/context.c), so the log of the run that just ended always stays. */
static void keep_log_budget(struct daemon *d, const struct run_record *ended)
{
        struct history *h = &d->history;
        int64_t budget = d->settings.max_log_bytes_per_user;
        int64_t bytes = history_logged_by(h, ended->owner) + (ended->log ? ended->log_bytes : 0);

        for (size_t i = 0; i < h->n && bytes > budget; i++) {
                struct run_record *rec = history_at(h, i);
                struct job *job;

                /* Another node's run: its log is that node's (and its budget's). */
                if (rec->owner != ended->owner || !rec->log ||
                    store_other_node(d->store, rec->node))
                        continue;
                store_forget_log(d->store, rec->id, rec->run, rec->log);
                bytes -= rec->log_bytes;
                history_forget_log(h, rec);
                job = registry_find(&d->registry, rec->id);
                if (job && job->last && job->last->run == rec->run) {
                        free(job->last->log);
                        job->last->log = NULL;
                        job->last->log_bytes = 0;
                }
        }
}

/* A run that failed, was killed or timed out, with retries left, runs again after its back-off:
 * retry_delay, doubled for each attempt before, at most an hour. Queued once the pool has let go
 * of the run (lifecycle_check_idle); kept in the job's row from now. */
static void plan_retry(struct job *job, const struct run_record *rec)
{
        double delay;

        if (rec->attempt > job->x->retries || slow_work_is_pending(&job->dw.work) ||
            __atomic_load_n(&job->cancelling, __ATOMIC_ACQUIRE) ||
            (strcmp(rec->outcome, "failed") != 0 && strcmp(rec->outcome, "killed") != 0 &&
             strcmp(rec->outcome, "timed-out") != 0))
                return;
        delay = fmin(job->x->retry_delay * ldexp(1.0, (int)fmin((double)rec->attempt - 1, 62)),
                     SW_RETRY_DELAY_CAP);
        job->retry_due = true;
        job->due = run_wall_now() + delay;
        if (!job_recurs(job))
                job->next_run = job->due; /* a recurring job's next_run stays its next tick */
        __atomic_store_n(&job->attempt, rec->attempt + 1, __ATOMIC_RELEASE);
}

void lifecycle_run_ended(struct daemon *d, struct job *job, struct run_record *rec)
{
        struct run_record *copy;
        const char *on_end;

        job->runs_ended++;
        if (!rec)
                return;
        metrics_run_ended(&d->metrics, job, rec);
        /* Before the run is written: whoever hears of its end finds the logs it displaced gone. */
        keep_log_budget(d, rec);
        if (__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE) &&
            strcmp(rec->outcome, "interrupted") == 0)
                keep_for_restart(d, job, rec);
        else {
                plan_retry(job, rec);
                store_add_run(d->store, rec, d->settings.history_limit);
                daemon_save_state(d, job, record_state_after_run(job));
                rec->saved_seq = job->saved_seq;
        }
        copy = run_record_dup(rec);
        if (copy)
                history_add(&d->history, copy, (size_t)d->settings.history_limit);
        run_record_free(job->last);
        job->last = rec;
        on_end = job->x->on_end ? job->x->on_end : d->settings.on_end;
        if (on_end && on_end[0])
                on_end_after(&d->on_end, job, rec, on_end);
}

void lifecycle_add_waiter(struct job *job, struct answer *a)
{
        a->next = job->waiters;
        job->waiters = a;
}

/* Answers each request of the list with a result made by reply (which may be NULL). The list is
 * taken first: a reply lets its connection go on with later requests, which may add to it. */
static void answer(struct answer **list, struct job *job,
                   json_object *(*reply)(struct daemon *d, struct job *job), struct daemon *d)
{
        struct answer *a, *waiters = *list;

        *list = NULL;
        while ((a = waiters)) {
                waiters = a->next;
                /* What the reply tells of is on disk first. */
                a->done(a, job->saved_seq, reply(d, job));
        }
}

static json_object *last_record(struct daemon *d, struct job *job)
{
        return job->last ? run_record_to_json(job->last) : NULL;
}

/* A planned retry is queued once the pool has let go of the run before it. */
static void start_retry(struct daemon *d, struct job *job)
{
        double now;

        /* At a stop the row keeps the retry (pending, due): the next start queues it. */
        if (!job->retry_due || job_executing(job) ||
            __atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE))
                return;
        job->retry_due = false;
        now = run_wall_now();
        if (daemon_queue_run(d, job, job->due > now ? job->due - now : 0) < 0)
                log_warning("Job %lld: cannot queue its retry", (long long)job->id);
}

void lifecycle_check_idle(struct daemon *d, struct job *job)
{
        const char *state;

        /* One that left the tables was counted out as it left (daemon_retire_job); one that
         * another node claimed leaves without ending here. */
        if (!job->live || job->lost)
                return;
        start_retry(d, job);
        state = job_state(job);
        metrics_job_count(&d->metrics, job, state);
        if (strcmp(state, "idle") != 0)
                return;
        job_ref(job);
        answer(&job->waiters, job, last_record, d);
        /* A run cut by the daemon's stop runs again at start: its end tells no one. One that
         * goes without ever having run (a recurring job released before its first tick) ends
         * the wait too: an `after` on it fails. */
        if ((job->last || job->handles == 0) &&
            !__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE))
                deps_ended(&d->deps, job);
        if (job->live && job->handles == 0 && job_idle(job))
                daemon_retire_job(d, job);
        job_unref(job);
}

static json_object *cancel_result(struct daemon *d, struct job *job)
{
        json_object *o = json_object_new_object();

        /* The run has ended: the job is idle unless queued again. */
        json_object_object_add(o, "id", json_object_new_int64(job->id));
        json_object_object_add(o, "state",
                               json_object_new_string(record_state_after_run(job)));
        return o;
}

/* A run taken off the queue (or off the space gate, or one a job waited for) before it ever
 * started: a run that never was, cancelled or dependency-failed. */
void lifecycle_ended_before_start(struct daemon *d, struct job *job, const char *outcome)
{
        int64_t run = __atomic_add_fetch(&job->runs_started, 1, __ATOMIC_ACQ_REL);
        struct run_record *rec = record_new_ended(job, run, outcome, false);

        lifecycle_run_ended(d, job, rec);
        if (rec)
                daemon_notify(d, job, record_state_after_run(job), rec);
}

/* The job's run no longer waits on the gate or for its owner's turn: whether it did. */
static bool drop_held(struct daemon *d, struct job *job)
{
        bool gated = gate_drop(&d->gate, job), queue_held = users_drop(&job->queue->users, job);
        bool away = claims_drop_away(d, job);

        return users_drop(&d->users, job) || gated || queue_held || away;
}

/* The job's cancels that waited for its run are through once the pool is done with the run. */
static void finish_cancels(struct daemon *d, struct job *job)
{
        if (!job->cancels || job_executing(job))
                return;
        for (struct answer *a = job->cancels; a; a = a->next)
                __atomic_sub_fetch(&job->cancelling, 1, __ATOMIC_ACQ_REL);
        /* The run it waited for was held back and did not start, or a retry of it was planned
         * meanwhile. */
        if (drop_held(d, job) || job->retry_due) {
                job->retry_due = false;
                lifecycle_ended_before_start(d, job, "cancelled");
        }
        answer(&job->cancels, job, cancel_result, d);
}

int lifecycle_cancel(struct daemon *d, struct job *job, struct answer *a, json_object **ret_result)
{
        int64_t runs_before = __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE);
        bool was_queued =
            slow_work_is_pending(&job->dw.work) && !job_executing(job);
        bool dropped;

        /* A run in progress, or one that starts before the cancel is through, stops. */
        __atomic_add_fetch(&job->cancelling, 1, __ATOMIC_ACQ_REL);
        job_kick(job);
        dropped = !job->resuming && slow_work_cancel_pending(&job->dw.work);
        if (job_executing(job)) {
                a->next = job->cancels;
                job->cancels = a;
                return 1;
        }
        __atomic_sub_fetch(&job->cancelling, 1, __ATOMIC_ACQ_REL);
        /* Held back (for space, a pause, its owner's turn, other jobs, or a retry's turn), or
         * stashed: dropped like a queued run. */
        if (drop_held(d, job) || deps_drop(&d->deps, job) || job->retry_due || job->stashed) {
                job->retry_due = false;
                job->stashed = false;
                was_queued = dropped = true;
        }
        if (was_queued && dropped &&
            __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE) == runs_before)
                lifecycle_ended_before_start(d, job, "cancelled");
        *ret_result = cancel_result(d, job);
        return 0;
}

void lifecycle_on_event(void *data, struct event *e)
{
        struct daemon *d = data;
        struct job *job = e->job;
        bool cut;

        /* A run taken up has started (or could not): what the loop sees of it is its item's. */
        if (job->resuming && e->type != EVENT_RELEASED) {
                job->resuming = false;
                if (job->enqueued_resuming)
                        daemon_queue_run(d, job, 0);
                job->enqueued_resuming = false;
        }
        switch (e->type) {
        case EVENT_STARTED:
                metrics_run_started(&d->metrics, job);
                if (d->claims)
                        claims_started(d, job);
                if (!job_recurs(job))
                        job->next_run = 0; /* a retry's tick has come */
                /* A plugin's runs are marked in the inflight file, which a crash keeps. */
                if (!job->x->plugin_entry)
                        daemon_save_state(d, job, NULL);
                daemon_notify(d, job, "running", NULL);
                break;
        case EVENT_ENDED:
                /* Interrupted, but not by a stop: the node's fence cut it. It runs once more,
                 * once the node has its lease again. */
                cut = e->rec && strcmp(e->rec->outcome, "interrupted") == 0 &&
                      !__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE);
                lifecycle_run_ended(d, job, e->rec);
                if (cut)
                        daemon_queue_run(d, job, 0);
                /* Another node's submit of its key came while it ran: it runs once more, unless
                 * an enqueue here already asked for that run (it may have started by now). */
                if (__atomic_exchange_n(&job->key_again, false, __ATOMIC_ACQ_REL) &&
                    (!e->rec || job->deferred_after != e->rec->run) &&
                    !__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE))
                        daemon_run_again(d, job, "run asked for by another node");
                daemon_notify(d, job, record_state_after_run(job), job->last);
                users_run_ended(&d->users, job);
                users_run_ended(&job->queue->users, job);
                pause_run_done(&job->queue->pause);
                if (d->claims)
                        claims_run_ended(d, job); /* a thread is free */
                break;
        case EVENT_HELD:
                users_return_grant(&job->queue->users, job);
                gate_hold(&d->gate, job);
                pause_run_done(&job->queue->pause);
                claims_held(d, job); /* a paused node's go to the others */
                break;
        case EVENT_HELD_USER:
                users_hold(&d->users, job);
                pause_run_done(&job->queue->pause);
                break;
        case EVENT_HELD_QUEUE_USER:
                /* The slot it took of the daemon's limit goes back first. */
                users_run_ended(&d->users, job);
                users_hold(&job->queue->users, job);
                pause_run_done(&job->queue->pause);
                break;
        case EVENT_HELD_KEY:
                users_run_ended(&d->users, job);
                users_run_ended(&job->queue->users, job);
                gate_hold(&d->gate, job);
                pause_run_done(&job->queue->pause);
                break;
        case EVENT_HELD_AWAY:
                pause_run_done(&job->queue->pause);
                claims_hold_away(d, job);
                break;
        case EVENT_CLAIMED:
                users_run_ended(&d->users, job);
                users_run_ended(&job->queue->users, job);
                pause_run_done(&job->queue->pause);
                /* Not idle: it leaves for the node that claimed it, once that is known. */
                if (job->live && !job->lost) {
                        job->lost = true;
                        claims_lost(d, job, NULL, NULL);
                }
                break;
        case EVENT_HANDED_OVER:
                job->handed->next = d->handed;
                d->handed = job->handed;
                job->handed = NULL;
                users_run_ended(&d->users, job);
                users_run_ended(&job->queue->users, job);
                pause_run_done(&job->queue->pause);
                /* Handed over after the reexec was given up: taken up again at once. */
                if (!__atomic_load_n(&d->shared.run.handing_over, __ATOMIC_ACQUIRE))
                        daemon_take_back(d);
                break;
        case EVENT_RELEASED:
                break;
        }
        finish_cancels(d, job);
        lifecycle_check_idle(d, job);
}
