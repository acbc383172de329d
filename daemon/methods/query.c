/* SPDX-License-Identifier: MIT */
/* status (of a job, or of the daemon), list, subscribe and history. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/queues.h"
#include "jobs/record.h"
#include "methods/history-nodes.h"
#include "methods/list-nodes.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "run/run.h"
#include "server/conn.h"
#include "server/relay.h"
#include "store/store.h"
#include "store/history.h"
#include "store/run-record.h"

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
        json_object_object_add(o, "node", json_object_new_string(rec->node ? rec->node : ""));
        json_object_object_add(o, "refs", json_object_new_int(0));
        json_object_object_add(o, "runs", json_object_new_int64(rec->run));
        json_object_object_add(o, "command", json_object_new_string(rec->summary));
        json_object_object_add(o, "last", run_record_to_json(rec));
        return o;
}

/* Whether its run waits on a pause (the daemon's or its queue's) or on a limit (held on the gate
 * or behind its owner's other runs), not only for a free thread. */
static bool held(struct daemon *d, struct job *job)
{
        if (__atomic_load_n(&job->held, __ATOMIC_ACQUIRE))
                return true;
        return slow_work_is_pending(&job->dw.work) && !job_executing(job) &&
               (pause_is_on(&d->pause) || pause_is_on(&job->queue->pause));
}

/* A live job: job_to_json's, its queue, whether its run is suspended, whether its run waits on
 * a pause or a limit, and whether another run is to come after the one in progress. */
static json_object *live_status(struct daemon *d, struct job *job)
{
        json_object *o = job_to_json(job);
        char *why;

        /* The log of the run in progress, once it has started. */
        if (json_object_object_get(o, "started")) {
                char *log = record_log_path(d->shared.run.log_dir, job->id,
                                            __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE));

                if (log)
                        json_object_object_add(o, "log", json_object_new_string(log));
                free(log);
        }
        json_object_object_add(o, "queue", json_object_new_string(job->queue->name));
        json_object_object_add(o, "suspended",
                               json_object_new_boolean(suspend_is_on(&job->suspend)));
        json_object_object_add(o, "held", json_object_new_boolean(held(d, job)));
        why = claims_why_away(d, job);
        if (why)
                json_object_object_add(o, "why", json_object_new_string(why));
        free(why);
        json_object_object_add(o, "deferred",
                               json_object_new_boolean(
                                   job_executing(job) &&
                                   (slow_work_is_pending(&job->dw.work) ||
                                    __atomic_load_n(&job->key_again, __ATOMIC_ACQUIRE))));
        return o;
}

static void handle_status(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        const struct run_record *rec;
        struct slow_work_stats st;
        struct job *job;
        json_object *q;

        if (params->id.id) {
                job = registry_find(&d->registry, params->id.id);
                if (job && !requests_may_touch(c, job->owner)) {
                        reply_error(r, SW_E_PERMISSION, "job %lld is not yours",
                                    (long long)job->id);
                        return;
                }
                if (job) {
                        r->result = live_status(d, job);
                        return;
                }
                rec = daemon_last_run(d, params->id.id);
                if (!rec)
                        reply_error(r, SW_E_NOT_FOUND, "no job %lld", (long long)params->id.id);
                else if (!requests_may_touch(c, rec->owner))
                        reply_error(r, SW_E_PERMISSION, "job %lld is not yours",
                                    (long long)params->id.id);
                else
                        r->result = status_from_history(rec, params->id.id);
                return;
        }
        queues_stats(d, NULL, &st);
        r->result = json_object_new_object();
        json_object_object_add(r->result, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(r->result, "pid", json_object_new_int((int)getpid()));
        json_object_object_add(r->result, "threads", json_object_new_int64(st.threads));
        json_object_object_add(r->result, "busy", json_object_new_int64(st.busy));
        q = json_object_new_object();
        json_object_object_add(q, "slow", json_object_new_int64(st.queued_slow));
        json_object_object_add(q, "very-slow", json_object_new_int64(st.queued_very_slow));
        json_object_object_add(r->result, "queued", q);
        json_object_object_add(r->result, "items",
                               json_object_new_int64((int64_t)d->registry.njobs));
        json_object_object_add(r->result, "connections", json_object_new_int64(c->clients->n));
        json_object_object_add(r->result, "node", json_object_new_string(d->shared.node));
        json_object_object_add(r->result, "fenced",
                               json_object_new_boolean(run_fenced(&d->shared.run)));
}

static bool listed(struct conn *c, const struct sw_list_params *p, struct job *job)
{
        return requests_may_touch(c, job->owner) && (p->owner < 0 || job->owner == p->owner) &&
               (!p->state || strcmp(job_state(job), p->state) == 0);
}

/* The live jobs in a state (-1: any), as the metrics count them. */
static int64_t count_in_state(struct daemon *d, int state)
{
        int64_t n = 0;

        if (state < 0)
                return (int64_t)d->registry.njobs;
        for (const struct metrics_queue *q = d->metrics.queues; q; q = q->next)
                n += q->jobs[0][state] + q->jobs[1][state];
        return n;
}

/* How many live jobs the list matches in all, from the counts kept, without a walk: -1 when no
 * count tells (a state and an owner, another than every live job's). */
static int64_t count_listed(struct daemon *d, struct conn *c, const struct sw_list_params *p,
                            int state)
{
        bool any_owner = p->owner < 0 && conn_is_admin(c);
        uid_t owner = p->owner >= 0 ? (uid_t)p->owner : c->uid;
        int64_t owned;

        if (!requests_may_touch(c, owner))
                return 0;
        if (any_owner)
                return count_in_state(d, state);
        owned = (int64_t)users_count(&d->users, owner);
        if (state < 0)
                return owned;
        return owned == (int64_t)d->registry.njobs ? count_in_state(d, state) : -1;
}

/* Whether the list shows every live job: no state asked for, and the client may see all and
 * asks for all (an admin, or everyone's jobs are the owner's). */
static bool lists_all(struct daemon *d, struct conn *c, const struct sw_list_params *p)
{
        uid_t owner = p->owner >= 0 ? (uid_t)p->owner : c->uid;

        if (p->state || !requests_may_touch(c, owner))
                return false;
        return (p->owner < 0 && conn_is_admin(c)) ||
               users_count(&d->users, owner) == d->registry.njobs;
}

/* The listed jobs from the first up to job (included), walked back from it. */
static int64_t listed_up_to(struct conn *c, const struct sw_list_params *p, struct job *job)
{
        int64_t n = 0;

        for (; job; job = job->oprev)
                n += listed(c, p, job);
        return n;
}

/* Whether the live job's id is nearer the first's than the last's. */
static bool nearer_first(struct daemon *d, const struct job *job)
{
        return (uint64_t)(job->id - d->registry.first->id) <
               (uint64_t)(d->registry.last->id - job->id);
}

/* The first live job after id: looked for from the nearer end of the list. */
static struct job *first_after(struct daemon *d, int64_t id)
{
        struct job *job = id ? registry_find(&d->registry, id) : NULL;

        if (job)
                return job->onext;
        if (!d->registry.first || id < d->registry.first->id)
                return d->registry.first;
        if (id - d->registry.first->id < d->registry.last->id - id) {
                for (job = d->registry.first; job && job->id <= id; job = job->onext)
                        ;
                return job;
        }
        for (job = d->registry.last; job && job->id > id; job = job->oprev)
                ;
        return job ? job->onext : d->registry.first;
}

/* A page of the live jobs the client may see, by id, and how many more there are: counted from
 * the counts the daemon keeps (of all, by owner, by state, by block of ids), less those up to
 * the page's end; what no count tells is walked, from the nearer end of the list. */
static void handle_list(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        const struct sw_list_params *p = &params->list;
        struct job *job = NULL, *start;
        json_object *items;
        int64_t n = 0, more = 0, total, all, before;
        int state;

        for (state = 0; p->state && metrics_states[state] &&
                        strcmp(p->state, metrics_states[state]) != 0;
             state++)
                ;
        if (p->state && !metrics_states[state]) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "parameter \"state\" must be pending, running, waiting, idle or stashed");
                return;
        }
        if (!p->state)
                state = -1;
        start = first_after(d, p->after_id);
        total = count_listed(d, c, p, state);
        /* From the first job on, the walk stops once it has found as many as are counted. */
        all = start && start->oprev ? -1 : total;
        items = json_object_new_array();
        for (job = start; job && (p->limit == 0 || n < p->limit) && (all < 0 || n < all);
             job = job->onext)
                if (listed(c, p, job)) {
                        json_object_array_add(items, live_status(d, job));
                        n++;
                }
        before = job && lists_all(d, c, p) ? registry_count_before(&d->registry, job) : -1;
        if (!job)
                more = 0;
        else if (total >= 0 && (!start || !start->oprev))
                more = total - n;
        else if (before >= 0)
                more = (int64_t)d->registry.njobs - before;
        else if (total >= 0 && nearer_first(d, job))
                more = total - listed_up_to(c, p, job->oprev);
        else
                for (; job; job = job->onext)
                        more += listed(c, p, job);
        /* The counts are the loop's: a run started on a pool thread is counted once heard of. */
        if (more < 0)
                more = 0;
        r->result = json_object_new_object();
        json_object_object_add(r->result, "items", items);
        json_object_object_add(r->result, "more", json_object_new_int64(more));
        /* A node serving another node's client answers for itself alone. */
        if (store_shared(d->store) && !c->relayed)
                list_other_nodes(d, c, p, r);
}

static void prefill_list(struct daemon *d, union params *p)
{
        p->list.owner = -1;
}

static void handle_subscribe(struct daemon *d, struct conn *c, union params *params,
                             struct reply *r)
{
        if (requests_subscribe(c) < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        r->result = json_object_new_object();
        json_object_object_add(r->result, "subscribed", json_object_new_boolean(1));
        /* Another node's client subscribes to that node alone. */
        if (d->relay && !c->relayed)
                relay_subscribe(d->relay, c);
}

static void prefill_history(struct daemon *d, union params *p)
{
        p->history.limit = 100;
        p->history.owner = -1;
}

/* What a history request asks for, checked. */
struct history_query {
        size_t start;      /* the records below it, newest first */
        unsigned outcomes; /* a mask of sw_outcomes; 0: any */
        bool any_owner;
        uid_t owner;
        struct sw_run_position before; /* id 0: none */
};

static int history_query(struct daemon *d, struct conn *c, const struct sw_history_params *p,
                         struct history_query *q, struct reply *r)
{
        *q = (struct history_query){.start = d->history.n};
        if (p->outcome &&
            sw_outcomes_parse(p->outcome, &q->outcomes, r->message, sizeof(r->message)))
                return r->code = SW_E_INVALID_PARAMS;
        if (p->owner >= 0 && !requests_may_touch(c, (uid_t)p->owner))
                return reply_error(r, SW_E_PERMISSION, "the runs of uid %lld are not yours",
                                   (long long)p->owner);
        q->any_owner = p->owner < 0 && conn_is_admin(c);
        q->owner = p->owner >= 0 ? (uid_t)p->owner : c->uid;
        if (p->before &&
            sw_run_position_parse(p->before, &q->before, r->message, sizeof(r->message)))
                return r->code = SW_E_INVALID_PARAMS;
        return 0;
}

/* Where the page starts in this node's history: below the run before, if it is there. */
static int history_start(struct daemon *d, struct history_query *q, struct reply *r)
{
        if (!q->before.id)
                return 0;
        while (q->start-- > 0) {
                const struct run_record *rec = history_at(&d->history, q->start);

                if (rec->id == q->before.id && rec->run == q->before.run)
                        return 0;
        }
        return reply_error(r, SW_E_NOT_FOUND, "run %lld/%lld is not in the history",
                           (long long)q->before.id, (long long)q->before.run);
}

static bool history_match(const struct history_query *q, const struct sw_history_params *p,
                          const struct run_record *rec)
{
        return (q->any_owner || rec->owner == q->owner) && rec->ended >= p->since &&
               (!q->outcomes || (q->outcomes & sw_outcome_bit(rec->outcome)));
}

static void handle_history(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        const struct sw_history_params *p = &params->history;
        struct history_query q;
        json_object *runs;
        bool more = false;
        size_t i, bytes = 0;

        if (history_query(d, c, p, &q, r))
                return;
        /* Nodes share their runs: every node's, from the database. */
        if (store_shared(d->store)) {
                history_of_all_nodes(d, c, p, q.any_owner ? -1 : (int64_t)q.owner, q.outcomes,
                                     &q.before, r);
                return;
        }
        if (history_start(d, &q, r))
                return;
        runs = json_object_new_array();
        r->result = json_object_new_object();
        json_object_object_add(r->result, "runs", runs);
        for (i = q.start; i-- > 0;) {
                const struct run_record *rec = history_at(&d->history, i);

                if (history_match(&q, p, rec) && !history_page_add(runs, rec, p->limit, &bytes)) {
                        more = true;
                        break;
                }
        }
        json_object_object_add(r->result, "more", json_object_new_boolean(more));
}

const struct method query_methods[] = {
    {"status", sw_status_params, NULL, handle_status, true},
    {"list", sw_list_params, prefill_list, handle_list, false},
    {"subscribe", sw_no_params, NULL, handle_subscribe, false},
    {"history", sw_history_params, prefill_history, handle_history, false},
    {NULL, NULL, NULL, NULL, false},
};
