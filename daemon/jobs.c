/* SPDX-License-Identifier: MIT */
/*
 * Live jobs and the job methods: submit (with keys), enqueue, wait, cancel, release, status,
 * list, log. A job is live while it is pending, running, or held; then the manager's tables hold
 * a reference. Its runs stay in the history after it is gone.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "conn.h"
#include "handlers.h"
#include "jobs.h"
#include "log.h"
#include "manager.h"
#include "store.h"

struct waiter {
        struct waiter *next;
        struct conn *c;
        json_object *id;
};

static unsigned bucket_of_id(int64_t id)
{
        return (unsigned)((uint64_t)id % JOBS_BUCKETS);
}

static unsigned bucket_of_key(uid_t owner, const char *key)
{
        uint64_t h = 1469598103934665603ull ^ owner;

        for (; *key; key++)
                h = (h ^ (unsigned char)*key) * 1099511628211ull;
        return (unsigned)(h % JOBS_BUCKETS);
}

struct job *jobs_find(struct manager *m, int64_t id)
{
        struct job *job;

        for (job = m->jobs_by_id[bucket_of_id(id)]; job; job = job->hnext)
                if (job->id == id)
                        return job;
        return NULL;
}

static struct job *find_key(struct manager *m, uid_t owner, const char *key)
{
        struct job *job;

        for (job = m->jobs_by_key[bucket_of_key(owner, key)]; job; job = job->knext)
                if (job->owner == owner && strcmp(job->key, key) == 0)
                        return job;
        return NULL;
}

static void add(struct manager *m, struct job *job)
{
        unsigned b = bucket_of_id(job->id);

        job->hnext = m->jobs_by_id[b];
        m->jobs_by_id[b] = job;
        if (job->key) {
                b = bucket_of_key(job->owner, job->key);
                job->knext = m->jobs_by_key[b];
                m->jobs_by_key[b] = job;
        }
        job->live = true;
        m->njobs++;
}

static void unlink_from(struct job **head, struct job *job, bool by_key)
{
        struct job **p;

        for (p = head; *p; p = by_key ? &(*p)->knext : &(*p)->hnext)
                if (*p == job) {
                        *p = by_key ? job->knext : job->hnext;
                        return;
                }
}

/* Drops the tables' reference. */
static void retire(struct manager *m, struct job *job)
{
        unlink_from(&m->jobs_by_id[bucket_of_id(job->id)], job, false);
        if (job->key)
                unlink_from(&m->jobs_by_key[bucket_of_key(job->owner, job->key)], job, true);
        job->live = false;
        m->njobs--;
        /* At shutdown what leaves the tables is not done: queued and delayed jobs stay on disk. */
        if (!m->stopping)
                store_delete_job(m->store, job->id);
        job_unref(job);
}

bool jobs_may_touch(struct conn *c, uid_t owner)
{
        return c->uid == owner || conn_is_admin(c);
}

bool jobs_may_see_rq_entry(struct conn *c, const struct slow_work_rq_entry *e)
{
        struct job *job;
        char *end;
        long long id;

        if (conn_is_admin(c))
                return true;
        /* The row names the job by its description, "ID: ..." (job.c); the item may be gone. */
        id = strtoll(e->desc, &end, 10);
        if (end == e->desc || *end != ':')
                return false;
        job = jobs_find(c->m, id);
        return job && (const void *)&job->dw.work == e->item && jobs_may_touch(c, job->owner);
}

static bool may_touch(struct conn *c, const struct job *job)
{
        return jobs_may_touch(c, job->owner);
}

static struct run_record *record_dup(const struct run_record *rec)
{
        struct run_record *copy = malloc(sizeof(*copy));

        if (!copy)
                return NULL;
        *copy = *rec;
        copy->summary = strdup(rec->summary);
        copy->log = rec->log ? strdup(rec->log) : NULL;
        return copy;
}

/* Shutdown cut the run short, or kept it from starting: it runs again after a restart (a plugin
 * only when asked). */
static void keep_for_restart(struct manager *m, struct job *job, const struct run_record *rec)
{
        bool again = !job->plugin_entry || slow_work_is_pending(&job->dw.work);

        if (rec->started == 0)
                return;
        store_add_run(m->store, rec, m->settings.history_limit);
        if (!again)
                job->persist = true;
        store_put_job_state(m->store, job, again ? "pending" : "idle");
}

/* The pool may not have cleared its executing flag yet: what is next is pending, or nothing. */
static const char *state_after_run(struct job *job)
{
        return slow_work_is_pending(&job->dw.work) ? "pending" : "idle";
}

void jobs_run_ended(struct manager *m, struct job *job, struct run_record *rec)
{
        struct run_record *copy;

        job->runs_ended++;
        if (!rec)
                return;
        if (m->stopping && strcmp(rec->outcome, "interrupted") == 0)
                keep_for_restart(m, job, rec);
        else {
                store_add_run(m->store, rec, m->settings.history_limit);
                store_put_job_state(m->store, job, state_after_run(job));
                rec->saved_seq = job->saved_seq;
        }
        copy = record_dup(rec);
        if (copy)
                history_add(&m->history, copy, (size_t)m->settings.history_limit);
        run_record_free(job->last);
        job->last = rec;
}

static json_object *last_record(struct manager *m, struct job *job, int64_t id)
{
        const struct run_record *rec = job ? job->last : history_last(&m->history, id);

        return rec ? run_record_to_json(rec) : NULL;
}

void jobs_check_idle(struct manager *m, struct job *job)
{
        struct waiter *w, *waiters;

        if (!job->live || !job_idle(job))
                return;
        /* A reply lets its connection go on with later requests, which may touch this job and
         * wait for it again: those wait for the next time it goes idle. */
        job_ref(job);
        waiters = job->waiters;
        job->waiters = NULL;
        while ((w = waiters)) {
                waiters = w->next;
                /* The run's end is told once it is on disk. */
                conn_wait_for(w->c, job->saved_seq);
                conn_reply(w->c, w->id, last_record(m, job, job->id), 0, NULL);
                conn_unref(w->c);
                free(w);
        }
        if (job->live && job->handles == 0 && job_idle(job))
                retire(m, job);
        job_unref(job);
}

static int hold(struct conn *c, struct job *job)
{
        int64_t *holds;

        if (c->nholds == c->holds_size) {
                size_t size = c->holds_size ? 2 * c->holds_size : 8;

                holds = realloc(c->holds, size * sizeof(*holds));
                if (!holds)
                        return -ENOMEM;
                c->holds = holds;
                c->holds_size = size;
        }
        c->holds[c->nholds++] = job->id;
        job->handles++;
        return 0;
}

/* Drops one handle the connection has on the job; false when it has none. */
static bool unhold(struct conn *c, struct job *job)
{
        size_t i;

        for (i = 0; i < c->nholds; i++)
                if (c->holds[i] == job->id) {
                        c->holds[i] = c->holds[--c->nholds];
                        job->handles--;
                        return true;
                }
        return false;
}

void jobs_drop_handles(struct manager *m, struct conn *c)
{
        while (c->nholds > 0) {
                struct job *job = jobs_find(m, c->holds[c->nholds - 1]);

                c->nholds--;
                if (job) {
                        job->handles--;
                        jobs_check_idle(m, job);
                }
        }
}

static json_object *state_result(struct job *job, const char *extra)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_int64(job->id));
        json_object_object_add(o, "state", json_object_new_string(job_state(job)));
        if (extra)
                json_object_object_add(o, extra, json_object_new_boolean(1));
        return o;
}

/* Enqueues now or after the delay; says whether a pending run took it in or a running one will
 * run again. */
static int enqueue(struct manager *m, struct job *job, double delay, const char **ret_extra)
{
        bool pending = slow_work_is_pending(&job->dw.work);
        bool running = slow_work_is_executing(&job->dw.work);
        int r;

        if (delay > 0)
                r = slow_work_pool_enqueue_delayed(m->pool, &job->dw,
                                                   (unsigned long)(delay * 1000.0 + 0.5));
        else
                r = slow_work_pool_enqueue(m->pool, &job->dw.work);
        *ret_extra = r < 0 ? NULL : pending ? "coalesced" : running ? "deferred" : NULL;
        if (r == 0 && !pending) {
                bool saved = job->qorder != 0; /* a new job's row is written after this */

                job->qorder = ++m->next_qorder;
                job->due = delay > 0 ? (double)time(NULL) + delay : 0;
                if (saved)
                        store_put_job_state(m->store, job, NULL);
        }
        return r;
}

/* The reply says the job will run: it waits until the job is on disk, whoever queued it. */
static void enqueue_reply(struct conn *c, struct job *job, double delay, struct reply *r)
{
        struct manager *m = c->m;
        const char *extra;
        int e;

        /* A cancel is on its way to the pool: what is queued now would be cancelled too. */
        e = __atomic_load_n(&job->cancelling, __ATOMIC_ACQUIRE) ? -ECANCELED
                                                                : enqueue(m, job, delay, &extra);

        if (e == -ECANCELED) {
                reply_error(r, SW_E_BUSY, "job %lld is being cancelled", (long long)job->id);
                return;
        }
        if (e < 0) {
                reply_error(r, SW_E_INTERNAL, "cannot queue job %lld: %s", (long long)job->id,
                            strerror(-e));
                return;
        }
        r->result = state_result(job, extra);
        conn_wait_for(c, job->saved_seq);
        if (!extra || strcmp(extra, "coalesced") != 0)
                jobs_notify(m, job, "pending", NULL);
}

void handle_submit(struct conn *c, union params *params, struct reply *r)
{
        struct sw_submit_params *p = &params->submit;
        struct manager *m = c->m;
        struct job *job;
        char err[256];
        int e;

        if (m->stopping) {
                reply_error(r, SW_E_BUSY, "slowworkd is shutting down");
                return;
        }
        if (store_failing(m->store, err, sizeof(err))) {
                reply_error(r, SW_E_INTERNAL, "cannot save jobs: the state database fails: %s",
                            err);
                return;
        }
        /* A plugin runs inside the daemon, with its privileges. */
        if ((p->plugin || p->entry || p->arg) && m->system && !conn_is_admin(c)) {
                reply_error(r, SW_E_PERMISSION,
                            "only admins may run plugin jobs in the system instance");
                return;
        }
        if (p->key && (job = find_key(m, c->uid, p->key))) {
                if (!job_same_payload(job, p)) {
                        reply_error(r, SW_E_CONFLICT,
                                    "key \"%s\" belongs to job %lld, which runs something else",
                                    p->key, (long long)job->id);
                        return;
                }
                if (p->hold && hold(c, job) < 0) {
                        reply_error(r, SW_E_INTERNAL, "out of memory");
                        return;
                }
                if (p->persist && !job->persist) {
                        job->persist = true;
                        job->handles++;
                        store_put_job_state(m->store, job, NULL);
                }
                enqueue_reply(c, job, p->delay, r);
                return;
        }
        e = job_new(m, c->uid, p, &job, err, sizeof(err));
        if (e == -ENOMEM) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        if (e < 0) {
                reply_error(r, e == -ENOENT ? SW_E_NOT_FOUND : SW_E_INVALID_PARAMS, "%s", err);
                return;
        }
        job->id = ++m->next_id;
        add(m, job);
        if (job->persist)
                job->handles++;
        if (p->hold && hold(c, job) < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                jobs_check_idle(m, job);
                return;
        }
        enqueue_reply(c, job, p->delay, r);
        if (r->code) {
                jobs_check_idle(m, job);
                return;
        }
        store_put_job(m->store, job);
}

/* The live job a request names, if the client may touch it; else an error reply. */
static struct job *lookup(struct conn *c, int64_t id, struct reply *r)
{
        struct job *job = jobs_find(c->m, id);

        if (!job) {
                reply_error(r, SW_E_NOT_FOUND, "no live job %lld", (long long)id);
                return NULL;
        }
        if (!may_touch(c, job)) {
                reply_error(r, SW_E_PERMISSION, "job %lld is not yours", (long long)id);
                return NULL;
        }
        return job;
}

void handle_enqueue(struct conn *c, union params *params, struct reply *r)
{
        struct sw_enqueue_params *p = &params->enqueue;
        struct job *job;

        if (!p->id == !p->key) {
                reply_error(r, SW_E_INVALID_PARAMS, "give exactly one of \"id\" and \"key\"");
                return;
        }
        if (p->key) {
                job = find_key(c->m, c->uid, p->key);
                if (!job) {
                        reply_error(r, SW_E_NOT_FOUND, "no live job with key \"%s\"", p->key);
                        return;
                }
        } else if (!(job = lookup(c, p->id, r))) {
                return;
        }
        enqueue_reply(c, job, 0, r);
}

void handle_wait(struct conn *c, union params *params, struct reply *r)
{
        struct job *job = jobs_find(c->m, params->id.id);
        struct waiter *w;

        if (!job) {
                const struct run_record *rec = history_last(&c->m->history, params->id.id);

                if (!rec)
                        reply_error(r, SW_E_NOT_FOUND, "no job %lld", (long long)params->id.id);
                else if (!jobs_may_touch(c, rec->owner))
                        reply_error(r, SW_E_PERMISSION, "job %lld is not yours",
                                    (long long)params->id.id);
                else {
                        r->result = run_record_to_json(rec);
                        conn_wait_for(c, rec->saved_seq);
                }
                return;
        }
        if (!may_touch(c, job)) {
                reply_error(r, SW_E_PERMISSION, "job %lld is not yours", (long long)job->id);
                return;
        }
        if (job_idle(job)) {
                r->result = last_record(c->m, job, job->id);
                conn_wait_for(c, job->saved_seq);
                return;
        }
        w = malloc(sizeof(*w));
        if (!w) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        w->c = conn_ref(c);
        w->id = json_object_get(r->id);
        w->next = job->waiters;
        job->waiters = w;
        r->deferred = true;
}

struct cancel {
        uv_work_t work;
        struct conn *c;
        json_object *id;
        struct job *job;
        int64_t runs_before;
        bool was_queued;
};

static void cancel_work(uv_work_t *work)
{
        struct cancel *x = work->data;

        slow_work_cancel(&x->job->dw.work);
}

static void cancel_done(uv_work_t *work, int status)
{
        struct cancel *x = work->data;
        struct job *job = x->job;
        struct manager *m = job->m;
        json_object *o;

        __atomic_sub_fetch(&job->cancelling, 1, __ATOMIC_ACQ_REL);
        m->cancels--;
        if (x->was_queued &&
            __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE) == x->runs_before) {
                /* Taken off the queue before it ever started: a run that never was. */
                struct run_record *rec = calloc(1, sizeof(*rec));

                if (!rec) {
                        /* Still counted as seen, so that the job can go idle. */
                        __atomic_add_fetch(&job->runs_started, 1, __ATOMIC_ACQ_REL);
                        jobs_run_ended(m, job, NULL);
                } else {
                        *rec = (struct run_record){
                            .id = job->id,
                            .run = __atomic_add_fetch(&job->runs_started, 1, __ATOMIC_ACQ_REL),
                            .very_slow = job->very_slow,
                            .owner = job->owner,
                            .summary = strdup(job->summary),
                            .outcome = "cancelled",
                            .ended = (double)time(NULL),
                        };
                        jobs_run_ended(m, job, rec);
                        jobs_notify(m, job,
                                    slow_work_is_pending(&job->dw.work) ? "pending" : "idle", rec);
                }
        }
        /* The run, if there was one, has ended: the job is idle unless queued again. */
        o = json_object_new_object();
        json_object_object_add(o, "id", json_object_new_int64(job->id));
        json_object_object_add(
            o, "state",
            json_object_new_string(slow_work_is_pending(&job->dw.work) ? "pending" : "idle"));
        conn_wait_for(x->c, job->saved_seq);
        conn_reply(x->c, x->id, o, 0, NULL);
        conn_unref(x->c);
        jobs_check_idle(m, job);
        job_unref(job);
        free(x);
        manager_drain(m);
}

void handle_cancel(struct conn *c, union params *params, struct reply *r)
{
        struct job *job = lookup(c, params->id.id, r);
        struct cancel *x;

        if (!job)
                return;
        x = calloc(1, sizeof(*x));
        if (!x) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        x->work.data = x;
        x->job = job_ref(job);
        x->c = conn_ref(c);
        x->id = json_object_get(r->id);
        x->runs_before = __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE);
        x->was_queued =
            slow_work_is_pending(&job->dw.work) && !slow_work_is_executing(&job->dw.work);
        /* A run in progress, or one that starts before the cancel is through, stops. */
        __atomic_add_fetch(&job->cancelling, 1, __ATOMIC_ACQ_REL);
        job_kick(job);
        /* slow_work_cancel() waits for a run to end: not on the loop. */
        c->m->cancels++;
        uv_queue_work(c->m->loop, &x->work, cancel_work, cancel_done);
        r->deferred = true;
}

void handle_release(struct conn *c, union params *params, struct reply *r)
{
        struct job *job = lookup(c, params->id.id, r);

        if (!job)
                return;
        if (!unhold(c, job)) {
                if (!job->persist) {
                        reply_error(r, SW_E_NOT_FOUND,
                                    "this connection holds no handle on job %lld",
                                    (long long)job->id);
                        return;
                }
                job->persist = false;
                job->handles--;
                store_put_job_state(c->m->store, job, NULL);
        }
        r->result = json_object_new_object();
        json_object_object_add(r->result, "id", json_object_new_int64(job->id));
        json_object_object_add(r->result, "handles", json_object_new_int((int)job->handles));
        jobs_check_idle(c->m, job);
}

/* A job that is gone: idle for good, its last run from the history. */
static json_object *status_from_history(const struct run_record *rec, int64_t id)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_int64(id));
        json_object_object_add(o, "class",
                               json_object_new_string(rec->very_slow ? "very-slow" : "slow"));
        json_object_object_add(o, "state", json_object_new_string("idle"));
        json_object_object_add(o, "live", json_object_new_boolean(0));
        json_object_object_add(o, "owner", json_object_new_int64(rec->owner));
        json_object_object_add(o, "refs", json_object_new_int(0));
        json_object_object_add(o, "runs", json_object_new_int64(rec->run));
        json_object_object_add(o, "command", json_object_new_string(rec->summary));
        json_object_object_add(o, "last", run_record_to_json(rec));
        return o;
}

void handle_status(struct conn *c, union params *params, struct reply *r)
{
        struct manager *m = c->m;
        const struct run_record *rec;
        struct slow_work_stats st;
        struct job *job;
        json_object *q;

        if (params->id.id) {
                job = jobs_find(m, params->id.id);
                if (job && !may_touch(c, job)) {
                        reply_error(r, SW_E_PERMISSION, "job %lld is not yours",
                                    (long long)job->id);
                        return;
                }
                if (job) {
                        r->result = job_to_json(job);
                        return;
                }
                rec = history_last(&m->history, params->id.id);
                if (!rec)
                        reply_error(r, SW_E_NOT_FOUND, "no job %lld", (long long)params->id.id);
                else if (!jobs_may_touch(c, rec->owner))
                        reply_error(r, SW_E_PERMISSION, "job %lld is not yours",
                                    (long long)params->id.id);
                else
                        r->result = status_from_history(rec, params->id.id);
                return;
        }
        slow_work_pool_stats(m->pool, &st);
        r->result = json_object_new_object();
        json_object_object_add(r->result, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(r->result, "pid", json_object_new_int((int)getpid()));
        json_object_object_add(r->result, "threads", json_object_new_int64(st.threads));
        json_object_object_add(r->result, "busy", json_object_new_int64(st.busy));
        q = json_object_new_object();
        json_object_object_add(q, "slow", json_object_new_int64(st.queued_slow));
        json_object_object_add(q, "very-slow", json_object_new_int64(st.queued_very_slow));
        json_object_object_add(r->result, "queued", q);
        json_object_object_add(r->result, "items", json_object_new_int64(m->njobs));
        json_object_object_add(r->result, "connections", json_object_new_int64(m->nconns));
}

static int by_id(const void *a, const void *b)
{
        int64_t x = (*(struct job *const *)a)->id, y = (*(struct job *const *)b)->id;

        return x < y ? -1 : x > y;
}

void handle_list(struct conn *c, union params *params, struct reply *r)
{
        struct manager *m = c->m;
        struct job **all = malloc((m->njobs + 1) * sizeof(*all)), *job;
        json_object *items;
        size_t n = 0, i;

        if (!all) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        for (i = 0; i < JOBS_BUCKETS; i++)
                for (job = m->jobs_by_id[i]; job; job = job->hnext)
                        if (may_touch(c, job))
                                all[n++] = job;
        qsort(all, n, sizeof(*all), by_id);
        items = json_object_new_array_ext((int)n);
        for (i = 0; i < n; i++)
                json_object_array_add(items, job_to_json(all[i]));
        free(all);
        r->result = json_object_new_object();
        json_object_object_add(r->result, "items", items);
}

void jobs_notify(struct manager *m, struct job *job, const char *state,
                 const struct run_record *ended)
{
        struct conn *c;

        for (c = m->conns; c; c = c->next) {
                json_object *o;

                if (!c->subscribed || !may_touch(c, job))
                        continue;
                o = json_object_new_object();
                json_object_object_add(o, "id", json_object_new_int64(job->id));
                json_object_object_add(o, "state", json_object_new_string(state));
                if (ended) {
                        json_object_object_add(o, "run", json_object_new_int64(ended->run));
                        json_object_object_add(o, "outcome",
                                               json_object_new_string(ended->outcome));
                }
                conn_send(c, sw_notification_line("event", o));
        }
}

void handle_subscribe(struct conn *c, union params *params, struct reply *r)
{
        c->subscribed = true;
        r->result = json_object_new_object();
        json_object_object_add(r->result, "subscribed", json_object_new_boolean(1));
}

void jobs_interrupt_all(struct manager *m)
{
        struct job *job;
        size_t i;

        for (i = 0; i < JOBS_BUCKETS; i++)
                for (job = m->jobs_by_id[i]; job; job = job->hnext)
                        job_kick(job);
}

void jobs_free_all(struct manager *m)
{
        size_t i;

        for (i = 0; i < JOBS_BUCKETS; i++)
                while (m->jobs_by_id[i]) {
                        struct job *job = m->jobs_by_id[i];
                        struct waiter *w;

                        while ((w = job->waiters)) {
                                job->waiters = w->next;
                                json_object_put(w->id);
                                conn_unref(w->c);
                                free(w);
                        }
                        retire(m, job);
                }
}

static void restore_run(void *data, struct run_record *rec)
{
        struct manager *m = data;

        history_add(&m->history, rec, (size_t)m->settings.history_limit);
}

/* The job a row describes, made the way its submit made it. */
static int job_from_row(struct manager *m, const struct store_job_row *row, struct job **ret)
{
        struct sw_submit_params p = {0};
        json_object *o = json_tokener_parse(row->payload);
        char err[256] = "not JSON";
        int r = o ? sw_params_parse(o, sw_submit_params, &p, err, sizeof(err)) : -EBADMSG;

        if (r == 0) {
                /* Borrowed for job_new(), given back before the params are cleared. */
                p.class_name = row->very_slow ? (char *)"very-slow" : NULL;
                p.env = row->env;
                p.key = (char *)row->key;
                p.name = (char *)row->name;
                p.persist = row->persist;
                r = job_new(m, row->owner, &p, ret, err, sizeof(err));
                p.class_name = p.key = p.name = NULL;
                p.env = NULL;
        }
        sw_params_clear(sw_submit_params, &p);
        json_object_put(o);
        if (r)
                log_error("Job %lld in the state database cannot be restored (%s); it stays "
                          "there",
                          (long long)row->id, err);
        return r ? -EINVAL : 0;
}

/* A run the daemon's end cut: recorded interrupted, and queued once more (not a plugin's:
 * one that crashed the daemon must not do it again on its own; it waits, held, for an enqueue). */
static void restore_interrupted(struct manager *m, struct job *job)
{
        struct run_record *rec = calloc(1, sizeof(*rec));
        const char *extra;

        job->runs_ended--;
        if (rec) {
                *rec = (struct run_record){
                    .id = job->id,
                    .run = job->runs_started,
                    .very_slow = job->very_slow,
                    .owner = job->owner,
                    .summary = strdup(job->summary),
                    .outcome = "interrupted",
                    .ended = (double)time(NULL),
                };
                /* What the cut run wrote stays readable, and goes with its record. */
                if (asprintf(&rec->log, "%s/%lld.%lld.log", m->log_dir, (long long)job->id,
                             (long long)job->runs_started) < 0)
                        rec->log = NULL;
                if (!rec->summary) {
                        run_record_free(rec);
                        rec = NULL;
                }
        }
        jobs_run_ended(m, job, rec);
        if (!job->plugin_entry) {
                enqueue(m, job, 0, &extra);
                return;
        }
        if (!job->persist) {
                job->persist = true;
                job->handles++;
        }
        store_put_job_state(m->store, job, NULL);
}

/* Whether the last daemon died while the job's plugin ran (its row may still say pending). */
static bool crashed_in(struct manager *m, int64_t id)
{
        for (size_t i = 0; i < m->ncrashed; i++)
                if (m->crashed[i] == id)
                        return true;
        return false;
}

static void restore_job(void *data, const struct store_job_row *row)
{
        struct manager *m = data;
        const char *extra;
        struct job *job;
        double now = (double)time(NULL);

        if (job_from_row(m, row, &job) < 0)
                return;
        job->id = row->id;
        if (job->env && !job->env->store_id)
                job->env->store_id = row->env_id;
        job->qorder = row->qorder;
        if (row->qorder > m->next_qorder)
                m->next_qorder = row->qorder;
        job->runs_started = job->runs_ended = row->runs;
        if (history_last(&m->history, job->id))
                job->last = record_dup(history_last(&m->history, job->id));
        add(m, job);
        if (job->persist)
                job->handles++;
        if (strcmp(row->state, "running") != 0 && crashed_in(m, job->id)) {
                /* Its start never reached the database: count that run too. */
                job->runs_started++;
                job->runs_ended++;
                restore_interrupted(m, job);
        } else if (strcmp(row->state, "running") == 0)
                restore_interrupted(m, job);
        else if (strcmp(row->state, "pending") == 0)
                enqueue(m, job, row->due > now ? row->due - now : 0, &extra);
        jobs_check_idle(m, job);
}

int jobs_restore(struct manager *m)
{
        int r;

        m->next_id = store_load_next_id(m->store);
        r = store_load_runs(m->store, m->settings.history_limit, restore_run, m);
        if (r == 0)
                r = store_load_jobs(m->store, restore_job, m);
        free(m->crashed); /* the start's alone */
        m->crashed = NULL;
        m->ncrashed = 0;
        if (r == 0 && m->njobs > 0)
                log_info("Restored %zu jobs from the state database", m->njobs);
        return r;
}
