/* SPDX-License-Identifier: MIT */
/* submit (with keys: coalesced or deferred), enqueue, and env.set (a connection's environment). */
#include <errno.h>
#include <string.h>

#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/lifecycle.h"
#include "jobs/waits.h"
#include "methods/claim.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "methods/submit.h"
#include "run/run.h"
#include "server/conn.h"
#include "store/store.h"

/* The reply says the job will run: it waits until the job is on disk, whoever queued it. */
static void enqueue_reply(struct daemon *d, struct conn *c, struct job *job, double delay,
                          struct reply *r)
{
        const char *extra;
        int e;

        /* A cancel is under way: what is queued now would be cancelled too. */
        e = __atomic_load_n(&job->cancelling, __ATOMIC_ACQUIRE)
                ? -ECANCELED
                : daemon_enqueue(d, job, delay, &extra);
        if (e == -ECANCELED) {
                reply_error(r, SW_E_BUSY, "job %lld is being cancelled", (long long)job->id);
                return;
        }
        if (e < 0) {
                reply_error(r, SW_E_INTERNAL, "cannot queue job %lld: %s", (long long)job->id,
                            strerror(-e));
                return;
        }
        r->result = job_state_result(job, extra);
        conn_wait_for(c, job->saved_seq);
        if (!extra || strcmp(extra, "coalesced") != 0)
                daemon_notify(d, job, "pending", NULL);
}

/* Whether the owner may have one more job queued (max-queued-per-user): false with the busy
 * error in r if not. */
static bool queued_room(struct daemon *d, struct queue *queue, uid_t owner, struct reply *r)
{
        int64_t n;

        if (!users_may_queue(&d->users, owner, &n)) {
                reply_error(r, SW_E_BUSY,
                            "user %u has %lld job%s queued: max-queued-per-user is %lld",
                            (unsigned)owner, (long long)n, n == 1 ? "" : "s",
                            (long long)users_max_queued(&d->users));
                return false;
        }
        if (!users_may_queue(&queue->users, owner, &n)) {
                reply_error(r, SW_E_BUSY,
                            "user %u has %lld job%s queued in queue %s: its max-queued-per-user "
                            "is %lld",
                            (unsigned)owner, (long long)n, n == 1 ? "" : "s", queue->name,
                            (long long)users_max_queued(&queue->users));
                return false;
        }
        return true;
}

/* Whether the owner may keep one more live job (max-jobs-per-user): whatever its state, a job
 * holds memory and a row until it retires. False with the busy error in r if not. */
static bool jobs_room(struct daemon *d, struct conn *c, uid_t owner, struct reply *r)
{
        int64_t max = d->settings.max_jobs_per_user;
        size_t n;

        if (max == 0 || conn_is_admin(c))
                return true; /* no limit: the jobs are not counted */
        n = users_count(&d->users, owner);
        if (n < (size_t)max)
                return true;
        reply_error(r, SW_E_BUSY, "user %u has %zu live job%s: max-jobs-per-user is %lld",
                    (unsigned)owner, n, n == 1 ? "" : "s", (long long)max);
        return false;
}

bool submit_bytes_room(struct daemon *d, struct conn *c, uid_t owner, int64_t more, struct reply *r)
{
        int64_t max = d->settings.max_job_bytes_per_user, kept;

        if (max == 0 || more <= 0 || conn_is_admin(c))
                return true; /* no limit, or no more: the bytes kept are not counted */
        kept = users_bytes(&d->users, owner);
        if (kept + more <= max)
                return true;
        reply_error(r, SW_E_BUSY,
                    "user %u's live jobs keep %lld bytes, and this would add %lld: "
                    "max-job-bytes-per-user is %lld",
                    (unsigned)owner, (long long)kept, (long long)more, (long long)max);
        return false;
}

static int deps_code(int e)
{
        return e == -ENOENT ? SW_E_NOT_FOUND : e == -EPERM ? SW_E_PERMISSION : SW_E_INVALID_PARAMS;
}

/* Whether the submit's after and after_any may be waited for by job (NULL: a new one). */
static bool deps_ok(struct daemon *d, struct conn *c, const struct job *job,
                    const struct sw_submit_params *p, struct reply *r)
{
        char err[256];
        int e;

        if (!p->after && !p->after_any)
                return true; /* it waits for none */
        e = waits_check(d, c->uid, job, "after", p->after, err, sizeof(err));
        if (e == 0)
                e = waits_check(d, c->uid, job, "after_any", p->after_any, err, sizeof(err));
        if (e < 0)
                reply_error(r, deps_code(e), "%s", err);
        return e == 0;
}

/* The job waits for the submit's after and after_any jobs, or is queued when none is left. */
static void wait_reply(struct daemon *d, struct conn *c, struct job *job,
                       const struct sw_submit_params *p, struct reply *r)
{
        int w = waits_add(d, job, p->after, p->after_any);

        if (w < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        if (w == 0) {
                enqueue_reply(d, c, job, p->delay, r);
                return;
        }
        r->result = job_state_result(job, NULL);
        daemon_save_state(d, job, NULL);
        if (w == 1)
                daemon_notify(d, job, "waiting", NULL);
}

/* A submit whose key names a live job of the same owner: that job is enqueued instead; with
 * after or after_any, a job that waits or is done waits for them (too). */
static void submit_again(struct daemon *d, struct conn *c, struct job *job,
                         const struct sw_submit_params *p, struct reply *r)
{
        bool deps = p->after || p->after_any;

        if (deps && !job->waiting && !job_idle(job)) {
                reply_error(r, SW_E_CONFLICT,
                            "job %lld (key \"%s\") is %s: only a job that waits or is done can "
                            "be given jobs to wait for",
                            (long long)job->id, p->key, job_state(job));
                return;
        }
        if (!deps_ok(d, c, job, p, r))
                return;
        if (!job_same_payload(job, p)) {
                reply_error(r, SW_E_CONFLICT,
                            "key \"%s\" belongs to job %lld, which runs something else", p->key,
                            (long long)job->id);
                return;
        }
        /* One that is not idle coalesces, or runs once more: it is queued already, or running. */
        if (job_idle(job) && !queued_room(d, job->queue, job->owner, r))
                return;
        if (p->hold && requests_hold(c, job) < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        if (p->persist && !job->persist) {
                job->persist = true;
                job->handles++;
                daemon_save_state(d, job, NULL);
        }
        if (deps) {
                wait_reply(d, c, job, p, r);
                lifecycle_check_idle(d, job); /* it may have ended at once: dependency-failed */
        } else {
                enqueue_reply(d, c, job, p->delay, r);
        }
}

/* The limits a shell job gets: its own over the default-* settings, under the ceilings of its
 * queue unless an admin asks, if this daemon can enforce them; false with the error in r if not.
 * A restart's are the ended job's, which its owner cannot change: they are brought under the
 * ceilings, not refused. */
static bool job_limits(struct daemon *d, struct conn *c, struct queue *queue,
                       const struct sw_submit_params *p, bool restart, struct sw_limits *ret,
                       struct reply *r)
{
        struct limits_ceilings ceilings;
        const char *from[SW_LIMITS_COUNT];
        struct sw_limits asked;
        bool admin = conn_is_admin(c);
        char err[256];
        int e;

        sw_limits_unset(&asked);
        /* A plugin's runs are the daemon's own threads: none applies (job_new refuses "limits"). */
        if (p->plugin || p->entry || p->arg) {
                *ret = asked;
                return true;
        }
        if (p->limits && (e = sw_limits_parse(p->limits, &asked, err, sizeof(err))) != 0) {
                reply_error(r, e == -ENOMEM ? SW_E_INTERNAL : SW_E_INVALID_PARAMS, "%s", err);
                return false;
        }
        limits_ceilings(&d->settings.ceilings,
                        queue == d->queues ? NULL : &queue->settings.ceilings, queue->name,
                        &ceilings);
        e = limits_resolve(&asked, &d->settings.limits, admin ? NULL : &ceilings, restart, ret,
                           from, err, sizeof(err));
        if (e == 0)
                e = limits_check(ret, from, &d->contain, admin, err, sizeof(err));
        if (e < 0) {
                reply_error(r, e == -EPERM ? SW_E_PERMISSION : SW_E_INVALID_PARAMS, "%s", err);
                return false;
        }
        return true;
}

/* A new job (added): held, scheduled, waiting or queued as the submit says, and saved. */
static void fresh(struct daemon *d, struct conn *c, struct job *job,
                  const struct sw_submit_params *p, struct reply *r)
{
        if (p->hold && requests_hold(c, job) < 0)
                reply_error(r, SW_E_INTERNAL, "out of memory");
        else if (job_recurs(job)) {
                if (daemon_schedule(d, job) < 0)
                        reply_error(r, SW_E_INTERNAL, "out of memory");
                else
                        r->result = job_state_result(job, NULL); /* it runs at its ticks */
        } else if (job->stashed) {
                r->result = job_state_result(job, NULL); /* it runs once enqueued */
                daemon_notify(d, job, "stashed", NULL);
        } else if (p->after || p->after_any)
                wait_reply(d, c, job, p, r);
        else
                enqueue_reply(d, c, job, p->delay, r);
        if (r->code) {
                lifecycle_check_idle(d, job);
                return;
        }
        /* A claimed key's row is written already. */
        if (job->payload)
                daemon_save_job(d, job);
        else
                daemon_save_state(d, job, NULL);
        /* One that ended at once (an after job had failed) goes, unless held; one in its pool's
         * queue has not ended, and daemon_queue_run counted it so. */
        if (!slow_work_is_pending(&job->dw.work))
                lifecycle_check_idle(d, job);
}

void submit_as(struct daemon *d, struct conn *c, uid_t owner, bool restart,
               struct sw_submit_params *p, struct reply *r)
{
        struct sw_limits limits;
        struct queue *queue;
        struct job *job;
        char err[256];
        int e;

        if (__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE)) {
                reply_error(r, SW_E_BUSY, "slowworkd is shutting down");
                return;
        }
        if (store_failing(d->store, err, sizeof(err))) {
                reply_error(r, SW_E_INTERNAL, "cannot save jobs: %s: %s",
                            store_failing_means(d->store), err);
                return;
        }
        /* A user's own instance runs that user's jobs; root's go to the system instance. */
        if (!d->shared.run.system && owner != d->shared.run.uid) {
                reply_error(r, SW_E_PERMISSION,
                            "this is the instance of uid %u, which runs only its own jobs: "
                            "submit to the system instance, or as uid %u",
                            (unsigned)d->shared.run.uid, (unsigned)d->shared.run.uid);
                return;
        }
        if (p->node && !claims_node_known(d, p->node)) {
                reply_error(r, SW_E_INVALID_PARAMS, "parameter \"node\": no node is named %s",
                            p->node);
                return;
        }
        /* A plugin runs inside the daemon, with its privileges: root's, which admin-group's
         * members do not have. */
        if ((p->plugin || p->entry || p->arg) && d->shared.run.system && c->uid != 0 &&
            c->uid != d->shared.run.uid) {
                reply_error(r, SW_E_PERMISSION,
                            "only root may run plugin jobs in the system instance (they run "
                            "inside the daemon, as root)");
                return;
        }
        if (!(queue = method_lookup_queue(d, "queue", p->queue, r)) ||
            !job_limits(d, c, queue, p, restart, &limits, r))
                return;
        if (p->key && (job = registry_find_key(&d->registry, owner, queue, p->key))) {
                if (job == r->claimed)
                        fresh(d, c, job, p, r);
                else
                        submit_again(d, c, job, p, r);
                return;
        }
        if (!queued_room(d, queue, owner, r) || !jobs_room(d, c, owner, r))
                return;
        e = job_new(&d->shared, owner, queue, p, &limits, &job, err, sizeof(err));
        if (e == -ENOMEM) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        if (e < 0) {
                reply_error(r, e == -ENOENT ? SW_E_NOT_FOUND : SW_E_INVALID_PARAMS, "%s", err);
                return;
        }
        if (!deps_ok(d, c, NULL, p, r)) {
                job_unref(job);
                return;
        }
        if (!restart && !job->x->plugin && !p->env && c->env)
                job->env = envs_ref(c->env);
        if (!submit_bytes_room(d, c, owner, job_bytes(job), r)) {
                job_unref(job);
                return;
        }
        job->id = store_new_id(d->store);
        if (job->id < 0) {
                job_unref(job);
                reply_error(r, SW_E_INTERNAL, "cannot save jobs: %s: no job ids to be had",
                            store_failing_means(d->store));
                return;
        }
        daemon_add_job(d, job);
        if (p->key && store_shared(d->store))
                claim_submit(d, c, job, p, r);
        else
                fresh(d, c, job, p, r);
}

static void handle_submit(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        submit_as(d, c, c->uid, false, &params->submit, r);
        if (!r->code)
                metrics_submitted(&d->metrics);
}

/* A stashed job is queued as a new submit's would be (its place from now on), and kept so. */
static void release_stash(struct daemon *d, struct conn *c, struct job *job, struct reply *r)
{
        job->stashed = false;
        enqueue_reply(d, c, job, 0, r);
        if (r->code) {
                job->stashed = true;
                return;
        }
        daemon_save_state(d, job, NULL);
        conn_wait_for(c, job->saved_seq);
}

static void handle_enqueue(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        struct sw_enqueue_params *p = &params->enqueue;
        struct queue *queue;
        struct job *job;

        if (!p->id == !p->key) {
                reply_error(r, SW_E_INVALID_PARAMS, "give exactly one of \"id\" and \"key\"");
                return;
        }
        queue = method_lookup_queue(d, "queue", p->queue, r);
        if (!queue)
                return;
        if (p->key) {
                job = registry_find_key(&d->registry, c->uid, queue, p->key);
                if (!job) {
                        reply_error(r, SW_E_NOT_FOUND, "no live job with key \"%s\" in queue %s",
                                    p->key, queue->name);
                        return;
                }
        } else if (!(job = method_lookup_job(d, c, p->id, r))) {
                return;
        } else if (p->queue && job->queue != queue) {
                reply_error(r, SW_E_INVALID_PARAMS, "parameter \"queue\": job %lld is in queue %s",
                            (long long)p->id, job->queue->name);
                return;
        }
        if (job->stashed) {
                release_stash(d, c, job, r);
                return;
        }
        if (job_idle(job) && !queued_room(d, job->queue, job->owner, r))
                return;
        enqueue_reply(d, c, job, 0, r);
}

static void handle_env_set(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        char **vars = params->env_set.env;
        struct env_block *env = envs_intern(&d->shared.envs, vars);
        size_t n = 0;

        if (!env) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        envs_unref(&d->shared.envs, c->env);
        c->env = env;
        while (vars[n])
                n++;
        r->result = json_object_new_object();
        json_object_object_add(r->result, "vars", json_object_new_int64((int64_t)n));
}

static void submit_prefill(struct daemon *d, union params *params)
{
        (void)d;
        params->submit.retry_delay = SW_RETRY_DELAY_DEFAULT;
}

const struct method submit_methods[] = {
    {"submit", sw_submit_params, submit_prefill, handle_submit, false},
    {"enqueue", sw_enqueue_params, NULL, handle_enqueue, true},
    {"env.set", sw_env_set_params, NULL, handle_env_set, false},
    {NULL, NULL, NULL, NULL, false},
};
