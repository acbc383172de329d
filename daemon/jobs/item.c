/* SPDX-License-Identifier: MIT */
/*
 * get_ref takes a job reference for each queue entry; put_ref hands it to the loop (which looks
 * whether the job went idle); execute runs the job on the pool thread with its runner and posts
 * the run's record. What execute posts needs no reference of its own: the pool holds the job
 * until put_ref, whose EVENT_RELEASED comes after, from the same thread.
 */
#include <stdio.h>
#include <string.h>

#include "jobs/events.h"
#include "jobs/gate.h"
#include "jobs/item.h"
#include "jobs/job.h"
#include "jobs/pause.h"
#include "jobs/queue.h"
#include "jobs/record.h"
#include "jobs/users.h"
#include "run/run.h"
#include "store/run-record.h"
#include "store/store.h"

static int item_get_ref(struct slow_work *work)
{
        job_ref((struct job *)work);
        return 0;
}

static void item_put_ref(struct slow_work *work)
{
        struct job *job = (struct job *)work;

        events_post(job->shared->run.events, EVENT_RELEASED, job, NULL);
}

/* A run being cancelled or stopped goes to its runner, which records that: it never waits. */
static bool must_go(struct job *job)
{
        return __atomic_load_n(&job->cancelling, __ATOMIC_ACQUIRE) ||
               __atomic_load_n(&job->shared->run.stopping, __ATOMIC_ACQUIRE);
}

/* The run waits (held is set before the pool lets go of the item: the job is never seen idle). */
static void hold(struct job *job, enum event_type why)
{
        __atomic_store_n(&job->held, true, __ATOMIC_RELEASE);
        events_post(job->shared->run.events, why, job, NULL);
}

/* A keyed run of a shared database stops waiting for its start to be committed once it is to go
 * or the node is fenced (the start is tried again once the gate lets the run go), and for its
 * end once the node is fenced or stopping. */
static bool start_give_up(void *arg)
{
        struct job *job = arg;

        return must_go(job) || run_fenced(&job->shared->run);
}

static bool end_give_up(void *arg)
{
        struct job *job = arg;

        return __atomic_load_n(&job->shared->run.stopping, __ATOMIC_ACQUIRE) ||
               run_fenced(&job->shared->run);
}

/* Whether the job runs on another node: placed there, or of a queue this node does not serve. */
static bool runs_away(const struct job *job)
{
        return (job->x->node && strcmp(job->x->node, job->shared->node) != 0) ||
               __atomic_load_n(&job->queue->away, __ATOMIC_ACQUIRE);
}

/* The run starts now: its record's start, and the loop told. */
static void run_started(const struct run_job *rj, struct run_record *rec)
{
        struct job *job = rj->data;

        record_start(job, rec);
        events_post(job->shared->run.events, EVENT_STARTED, job, NULL);
}

/* Runs the job with its runner, rec the run's record (made by record_new_run(), which counts the
 * run, or for a run taken up record_resumed_run()). */
static struct run_record *execute_run(struct job *job, struct run_record *rec)
{
        struct run_job rj = {
            .id = job->id,
            .owner = job->owner,
            .very_slow = job->very_slow,
            .timeout = job->x->timeout,
            .argv = job_argv(job),
            .cwd = job_cwd(job),
            .envp = job->env ? job->env->vars : NULL,
            .limits = &job->x->limits,
            .plugin_entry = job->x->plugin_entry,
            .plugin_arg = job->x->arg_text,
            .cancelling = &job->cancelling,
            .kick_lock = job_run_lock(job),
            .kick_fd = &job->kick_fd,
            .pid = &job->pid,
            .suspend = &job->suspend,
            .resume = job->resume,
            .handed = &job->handed,
            .started = run_started,
            .data = job,
        };

        if (rj.plugin_entry)
                plugin_run(&job->shared->run, &rj, rec);
        else if (rj.resume)
                shell_resume(&job->shared->run, &rj, rec);
        else
                shell_run(&job->shared->run, &rj, rec);
        return rec;
}

/* The run's end told to the loop, or that it was handed over (its record then goes). */
static void post_end(struct job *job, struct run_record *rec)
{
        struct events *ev = job->shared->run.events;

        if (job->handed) {
                run_record_free(rec);
                events_post(ev, EVENT_HANDED_OVER, job, NULL);
                return;
        }
        events_post(ev, EVENT_ENDED, job, rec);
}

/* The run handed over by the daemon's last program, taken up: it is past every gate already. */
static void resume_run(struct job *job)
{
        struct run_record *rec;

        users_take_run(job->shared->users, job, true);
        users_take_run(&job->queue->users, job, true);
        rec = record_resumed_run(job, job->resume->run);
        if (rec)
                rec = execute_run(job, rec);
        run_handover_free(job->resume);
        job->resume = NULL;
        post_end(job, rec);
}

/* Counted first, then the pause looked at: a pause either is seen here, or sees the count. A
 * keyed job of a shared database starts once the database knows (another node's ask to run it
 * before then is answered by this run), and tells the loop at its end whether one came while it
 * ran (at a stop the ask stays for the next start). */
static void item_execute(struct slow_work *work)
{
        struct job *job = (struct job *)work;
        struct run_context *ctx = &job->shared->run;
        struct run_record *rec;
        bool again, stopping;
        int r;

        pause_run_started(&job->queue->pause);
        if (job->resume) {
                resume_run(job);
                return;
        }
        if (!must_go(job) && runs_away(job)) {
                hold(job, EVENT_HELD_AWAY);
                return;
        }
        /* Held back; or a run that goes before it came back to the queue (from the gate, which
         * counts those on their way and listed until they are back) since the pool gave it this
         * thread: it goes back to its place behind that one. */
        if (!must_go(job) && (gate_holds_back(ctx, job) || !slow_work_is_first(&job->dw.work))) {
                gate_coming(job);
                hold(job, EVENT_HELD);
                return;
        }
        if (!users_take_run(job->shared->users, job, must_go(job))) {
                hold(job, EVENT_HELD_USER);
                return;
        }
        if (!users_take_run(&job->queue->users, job, must_go(job))) {
                hold(job, EVENT_HELD_QUEUE_USER);
                return;
        }
        /* Offered to the other nodes: taken back before it starts here, unless one claimed
         * it first (it is theirs then); when that cannot be known before the fence, it waits,
         * as a keyed start does. */
        if (__atomic_load_n(&job->offered, __ATOMIC_ACQUIRE) && !must_go(job)) {
                r = store_reclaim_job(job->shared->store, job->id, start_give_up, job);
                if (r == 0) {
                        events_post(job->shared->run.events, EVENT_CLAIMED, job, NULL);
                        return;
                }
                if (r < 0 && !must_go(job)) {
                        gate_coming(job);
                        hold(job, EVENT_HELD_KEY);
                        return;
                }
                __atomic_store_n(&job->offered, false, __ATOMIC_RELEASE);
        }
        if (job->key_shared && !must_go(job) &&
            store_key_start(job->shared->store, job->id, &job->key_starts, start_give_up, job) <
                0 &&
            !must_go(job)) {
                gate_coming(job);
                hold(job, EVENT_HELD_KEY);
                return;
        }
        rec = record_new_run(job);
        if (rec)
                rec = execute_run(job, rec);
        if (job->key_shared && !job->handed) {
                stopping = __atomic_load_n(&ctx->stopping, __ATOMIC_ACQUIRE);
                r = store_key_end(job->shared->store, job->id, stopping, end_give_up, job, &again);
                /* Not known whether an ask came: it runs once more, to be sure. */
                if (!stopping && (r < 0 || again))
                        __atomic_store_n(&job->key_again, true, __ATOMIC_RELEASE);
        }
        post_end(job, rec);
}

/* "ID: NAME or COMMAND", cut at the buffer's end, never inside a character. */
static void item_desc(struct slow_work *work, char *buf, size_t len)
{
        struct job *job = (struct job *)work;
        size_t n;

        snprintf(buf, len, "%lld: %s", (long long)job->id, job->has_name ? job_name(job) : job_summary(job));
        n = strlen(buf);
        if (n > 0 && ((unsigned char)buf[n - 1] & 0x80)) {
                while (n > 0 && ((unsigned char)buf[n - 1] & 0xc0) == 0x80)
                        n--;
                if (n > 0 && ((unsigned char)buf[n - 1] & 0xc0) == 0xc0)
                        n--;
                buf[n] = '\0';
        }
}

const struct slow_work_ops item_ops = {
    .get_ref = item_get_ref,
    .put_ref = item_put_ref,
    .execute = item_execute,
    .desc = item_desc,
};
