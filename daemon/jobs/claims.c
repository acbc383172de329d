/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/answer.h"
#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/job.h"
#include "store/db.h"
#include "store/history.h"
#include "store/store.h"
#include "util/log.h"
#include "util/settings.h"

/* How long after a run is due, or deferred, the node looks for it in its queue (seconds). */
#define CLAIMS_LOOK_AFTER 0.005

/* What the pool does with a job offered: its start here takes it back first. */
static void set_offered(struct slow_work *work, void *data)
{
        (void)data;
        __atomic_store_n(&((struct job *)work)->offered, true, __ATOMIC_RELEASE);
}

static size_t away_index(const struct claims *c, const struct job *job)
{
        size_t i;

        for (i = 0; i < c->naway && c->away[i] != job; i++)
                ;
        return i;
}

/* Whether the job's run may go to another node: queued now (or held here for another node),
 * nothing of this node's waits for it but requests that can be made again there (wait). */
static bool offerable(struct daemon *d, struct job *job, bool away)
{
        return job->live && !job->lost && !__atomic_load_n(&job->offered, __ATOMIC_ACQUIRE) &&
               job->handles == 0 && !job->resuming && !job->waiting && !job->stashed &&
               !job->retry_due && !job->claim && !job->cancels &&
               !__atomic_load_n(&job->cancelling, __ATOMIC_ACQUIRE) && job->due <= run_wall_now() &&
               !job_executing(job) &&
               (away || (slow_work_is_pending(&job->dw.work) &&
                         !__atomic_load_n(&job->held, __ATOMIC_ACQUIRE))) &&
               !deps_waits_for(&d->deps, job->id);
}

/* A queue's runs beyond what its threads can start now: how many of them to offer. */
struct excess {
        struct queue *queue;
        int64_t n;
};

static int64_t *excess_of(struct excess *e, size_t *ne, struct queue *q)
{
        struct slow_work_stats st;
        size_t i;

        for (i = 0; i < *ne; i++)
                if (e[i].queue == q)
                        return &e[i].n;
        slow_work_pool_stats(q->pool, &st);
        e[i] = (struct excess){q, (int64_t)st.busy + st.queued_slow + st.queued_very_slow -
                                      q->settings.max_threads};
        (*ne)++;
        return &e[i].n;
}

/* How many runs this node offers at once for want of threads: as many as the other live nodes
 * have threads. Offered runs are the last queued: its own threads seldom reach one, whose start
 * would take it back first (a database round trip). */
static int64_t budget_of(struct daemon *d)
{
        struct db_node *nodes = NULL;
        int64_t threads = 0;
        size_t n = 0;

        if (store_nodes(d->store, &nodes, &n) == 0)
                for (size_t i = 0; i < n; i++)
                        if (strcmp(nodes[i].name, store_node(d->store)) != 0)
                                threads += nodes[i].max_threads;
        free(nodes);
        return threads - d->claims->offered;
}

struct offering {
        struct excess *e;
        size_t ne;
        int64_t budget;
        bool paused, any;
        double next_due; /* the first of the delayed runs seen to fall due later (0: none) */
};

/* Offers the job's run if it may go: one held here for another node (or on a paused node's
 * gate) whatever the budget, one queued here if its queue has more than its threads can start
 * now and the budget allows. */
static void offer_one(struct daemon *d, struct offering *o, struct job *job)
{
        struct claims *c = d->claims;
        bool away = away_index(c, job) < c->naway || (o->paused && job->gate_listed);
        int64_t *n = NULL;

        if (job->due > run_wall_now() && slow_work_is_pending(&job->dw.work) &&
            (o->next_due == 0 || job->due < o->next_due))
                o->next_due = job->due;
        if (!offerable(d, job, away))
                return;
        if (away) {
                set_offered(&job->dw.work, NULL);
        } else {
                if (o->budget <= 0 ||
                    (!o->paused && *(n = excess_of(o->e, &o->ne, job->queue)) <= 0) ||
                    slow_work_call_if_queued(&job->dw.work, set_offered, NULL) < 0)
                        return;
                if (n)
                        (*n)--;
                o->budget--;
                c->offered++;
                job->offer_counted = true;
        }
        store_offer_job(d->store, job->id, job->queue->name, job->priority, job->queued_at,
                        job->x->node);
        o->any = true;
}

static void look_again_at(struct claims *c, double when);

/* The loop is about to wait: of the runs queued since (and, after room was made in the
 * budget, of all that wait here, the last queued first), those beyond what this node can start
 * now are offered to the others, which are told once. Alone, it offers only what it may not
 * run itself: when another node joins, what waits here is looked at again. */
static void offer(uv_prepare_t *h)
{
        struct daemon *d = h->data;
        struct claims *c = d->claims;
        struct offering o = {.paused = pause_is_on(&d->node_pause)};
        bool alone = store_alone(d->store);
        size_t nq = 1;

        uv_prepare_stop(h);
        for (struct queue *q = d->queues; q; q = q->next)
                nq++;
        o.e = calloc(nq, sizeof(*o.e)); /* a queue's excess each */
        o.budget = alone ? 0 : budget_of(d);
        if (o.e && !daemon_stopping(d) && !run_fenced(&d->shared.run)) {
                for (size_t i = c->n; i-- > 0;)
                        offer_one(d, &o, c->queued[i]);
                for (struct job *job = c->rescan ? d->registry.last : NULL; job && o.budget > 0;
                     job = job->oprev)
                        offer_one(d, &o, job);
        }
        if (c->rescan && o.next_due > 0)
                look_again_at(c, o.next_due);
        c->rescan = false;
        free(o.e);
        for (size_t i = 0; i < c->n; i++)
                job_unref(c->queued[i]);
        c->n = 0;
        if (o.any)
                store_send_mail_all(d->store, CLAIMS_OFFERED_MAIL, "");
}

/* What waits here is looked at again at the iteration's end. */
static void rescan(struct claims *c)
{
        c->rescan = true;
        uv_prepare_start(&c->prepare, offer);
}

/* The job's run is offered no more (started here, taken back, or gone): room in the budget. */
static void uncount(struct daemon *d, struct job *job)
{
        if (!job->offer_counted || !d->claims)
                return;
        job->offer_counted = false;
        d->claims->offered--;
        rescan(d->claims);
}

static void later(uv_timer_t *t)
{
        struct claims *c = t->data;

        c->later_at = 0;
        rescan(c);
}

/* What waits here is looked at again then, or a moment after the last look if sooner: the
 * pool's own timer queues a delayed run at its due time, and a look finds it queued after. */
static void look_again_at(struct claims *c, double when)
{
        double now = run_wall_now(), wait = when - now + CLAIMS_LOOK_AFTER;

        if (c->later_at > 0 && c->later_at <= when)
                return;
        c->later_at = when;
        uv_timer_start(&c->later, later, (uint64_t)(fmax(wait, CLAIMS_LOOK_AFTER) * 1000.0), 0);
}

static void on_queued(struct daemon *d, struct job *job)
{
        struct claims *c = d->claims;

        if (__atomic_load_n(&job->offered, __ATOMIC_ACQUIRE))
                return;
        if (job->due > run_wall_now()) {
                look_again_at(c, job->due);
                return;
        }
        if (c->n == c->size) {
                size_t size = c->size ? 2 * c->size : 64;
                struct job **more = realloc(c->queued, size * sizeof(*more));

                if (!more)
                        return; /* it runs here */
                c->queued = more;
                c->size = size;
        }
        uv_prepare_start(&c->prepare, offer);
        c->queued[c->n++] = job_ref(job);
}

int claims_init(struct claims *c, uv_loop_t *loop, struct daemon *d)
{
        int r;

        *c = (struct claims){0};
        r = uv_prepare_init(loop, &c->prepare);
        if (r < 0)
                return r;
        r = uv_timer_init(loop, &c->later);
        if (r < 0) {
                uv_close((uv_handle_t *)&c->prepare, NULL);
                return r;
        }
        c->prepare.data = d;
        c->later.data = c;
        d->claims = c;
        d->on_queued = on_queued;
        /* Its own pause as its row kept it, from before its restart. */
        if (store_node_paused(d->store))
                pause_restore(&d->node_pause, true, PAUSE_AT_START);
        return 0;
}

void claims_close(struct claims *c)
{
        for (size_t i = 0; i < c->n; i++)
                job_unref(c->queued[i]);
        for (size_t i = 0; i < c->naway; i++)
                job_unref(c->away[i]);
        free(c->queued);
        free(c->away);
        c->away = NULL;
        c->naway = c->away_size = 0;
        free(c->taken);
        c->queued = NULL;
        c->taken = NULL;
        c->n = c->size = 0;
        uv_close((uv_handle_t *)&c->prepare, NULL);
        uv_close((uv_handle_t *)&c->later, NULL);
}

void claims_hold_away(struct daemon *d, struct job *job)
{
        struct claims *c = d->claims;

        if (!c) {
                /* The daemon stops: it stays queued on disk. */
                __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
                return;
        }
        if (c->naway == c->away_size) {
                size_t size = c->away_size ? 2 * c->away_size : 16;
                struct job **more = realloc(c->away, size * sizeof(*more));

                if (!more) {
                        log_error("Job %lld: out of memory while it waits for another node",
                                  (long long)job->id);
                        __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
                        return;
                }
                c->away = more;
                c->away_size = size;
        }
        c->away[c->naway++] = job_ref(job);
        on_queued(d, job);
}

bool claims_drop_away(struct daemon *d, struct job *job)
{
        struct claims *c = d->claims;
        size_t i = c ? away_index(c, job) : 0;

        if (!c || i == c->naway)
                return false;
        c->away[i] = c->away[--c->naway];
        __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
        job_unref(job);
        return true;
}

bool claims_node_known(struct daemon *d, const char *name)
{
        struct db_node *nodes = NULL;
        size_t n = 0;
        bool known = strcmp(name, store_node(d->store)) == 0 ||
                     (d->node_listed && strcmp(name, d->node_listed) == 0);

        if (known || !store_shared(d->store) || store_nodes(d->store, &nodes, &n) < 0)
                return known;
        for (size_t i = 0; i < n && !known; i++)
                known = strcmp(nodes[i].name, name) == 0;
        free(nodes);
        return known;
}

void claims_held(struct daemon *d, struct job *job)
{
        if (d->claims && pause_is_on(&d->node_pause))
                on_queued(d, job);
}

void claims_pause_node(struct daemon *d, bool paused)
{
        struct job *job;

        pause_set(&d->node_pause, paused);
        if (!d->claims)
                return;
        store_pause_node(d->store, store_node(d->store), paused, NULL, NULL);
        if (!paused) {
                gate_open(&d->gate);
                claims_look(d);
                return;
        }
        for (job = d->registry.first; job; job = job->onext)
                on_queued(d, job);
}

void claims_started(struct daemon *d, struct job *job)
{
        uncount(d, job);
}

void claims_taken_back(struct daemon *d, struct job *job)
{
        __atomic_store_n(&job->offered, false, __ATOMIC_RELEASE);
        uncount(d, job);
        if (d->claims && job->live && away_index(d->claims, job) < d->claims->naway)
                on_queued(d, job);
}

void claims_settings_changed(struct daemon *d)
{
        struct claims *c = d->claims;

        /* Queued again: a run still away is held again, one offered taken back as it starts. */
        for (size_t i = c ? c->naway : 0; i-- > 0;) {
                struct job *job = c->away[i];

                if (job->x->node || __atomic_load_n(&job->queue->away, __ATOMIC_ACQUIRE))
                        continue;
                job_ref(job);
                claims_drop_away(d, job);
                if (daemon_queue_run(d, job, 0) < 0)
                        log_warning("Job %lld: cannot queue it again", (long long)job->id);
                job_unref(job);
        }
        claims_look(d);
}

char *claims_why_away(struct daemon *d, const struct job *job)
{
        struct claims *c = d->claims;
        struct db_node *nodes = NULL;
        size_t n = 0, live = 0;
        char *why = NULL;
        int r = -1;

        if (!c || away_index(c, job) == c->naway || store_nodes(d->store, &nodes, &n) < 0)
                return NULL;
        for (size_t i = 0; i < n; i++)
                live += job->x->node ? strcmp(nodes[i].name, job->x->node) == 0
                                     : settings_serves(nodes[i].queues, job->queue->name);
        free(nodes);
        if (job->x->node)
                r = asprintf(&why,
                             live ? "placed on node %s, which claims it once it has a free "
                                    "thread"
                                  : "placed on node %s, which is not live",
                             job->x->node);
        else
                r = asprintf(&why,
                             live ? "queue %s is not served here: a node that serves it "
                                    "claims it once it has a free thread"
                                  : "queue %s is served by no live node (node-queues)",
                             job->queue->name);
        return r < 0 ? NULL : why;
}

void claims_look(struct daemon *d)
{
        struct claims *c = d->claims;
        struct db_claim *wants;
        size_t n = 0, nq = 0;
        int64_t total = 0;

        if (!c || !c->offers_seen || c->claiming || daemon_stopping(d) ||
            run_fenced(&d->shared.run) || pause_is_on(&d->pause) || pause_is_on(&d->node_pause))
                return;
        for (struct queue *q = d->queues; q; q = q->next)
                nq++;
        wants = calloc(nq ? nq : 1, sizeof(*wants));
        if (!wants)
                return;
        for (struct queue *q = d->queues; q; q = q->next) {
                struct slow_work_stats st;
                int64_t free_threads, very_slow;

                if (pause_is_on(&q->pause) || __atomic_load_n(&q->away, __ATOMIC_ACQUIRE))
                        continue;
                slow_work_pool_stats(q->pool, &st);
                free_threads = q->settings.max_threads - (int64_t)st.busy - st.queued_slow -
                               st.queued_very_slow;
                very_slow = (int64_t)st.very_slow_cap - st.busy_very_slow - st.queued_very_slow;
                if (free_threads <= 0)
                        continue;
                wants[n++] = (struct db_claim){q->name, free_threads,
                                               very_slow < 0              ? 0
                                               : very_slow > free_threads ? free_threads
                                                                          : very_slow};
                total += free_threads;
        }
        if (n > 0 && store_claim(d->store, wants, n)) {
                c->claiming = true;
                c->wanted = total;
                c->got = 0;
        }
        free(wants);
}

void claims_run_ended(struct daemon *d, struct job *job)
{
        /* Deferred: the pool queues it again as its thread lets go of the run, after this. */
        if (slow_work_is_pending(&job->dw.work))
                look_again_at(d->claims, run_wall_now());
        claims_look(d);
}

void claims_renewed(struct daemon *d)
{
        if (!d->claims)
                return;
        /* What waits here may go to the other nodes: more may be live than at the last
         * renewal, and what this node could not offer meanwhile (fenced) it may now. */
        rescan(d->claims);
        if (!store_offers_seen(d->store))
                return;
        d->claims->offers_seen = true;
        claims_look(d);
}

void claims_adopted(struct daemon *d, const struct store_job_row *row)
{
        struct claims *c = d->claims;
        char num[32];
        int k;
        char *more;

        if (!c)
                return;
        c->got++;
        k = snprintf(num, sizeof(num), "%c%" PRId64, c->taken ? ',' : '[', row->id);
        more = realloc(c->taken, c->taken_len + (size_t)k + 2);
        if (!more)
                return; /* its node finds out when it would start it */
        memcpy(more + c->taken_len, num, (size_t)k + 1);
        c->taken = more;
        c->taken_len += (size_t)k;
}

void claims_claimed(struct daemon *d)
{
        struct claims *c = d->claims;

        if (!c)
                return;
        if (c->taken) {
                memcpy(c->taken + c->taken_len, "]", 2);
                store_send_mail_all(d->store, CLAIMS_TAKEN_MAIL, c->taken);
                free(c->taken);
                c->taken = NULL;
                c->taken_len = 0;
        }
        c->claiming = false;
        /* Fewer than it asked for: none is left to claim, until told of more. */
        if (c->got < c->wanted)
                c->offers_seen = false;
        else
                claims_look(d);
}

void claims_let_go(struct daemon *d, struct job *job)
{
        struct answer *waiters = job->waiters, *cancels = job->cancels, *a;

        job->waiters = job->cancels = NULL;
        job_ref(job);
        uncount(d, job);
        claims_drop_away(d, job);
        slow_work_cancel_pending(&job->dw.work);
        gate_drop(&d->gate, job);
        users_drop(&job->queue->users, job);
        users_drop(&d->users, job);
        daemon_let_go(d, job);
        history_set_left(&d->history, job->id);
        while ((a = waiters)) {
                waiters = a->next;
                if (a->moved)
                        a->moved(a);
                else
                        a->drop(a);
        }
        while ((a = cancels)) {
                cancels = a->next;
                a->drop(a);
        }
        job_unref(job);
}

struct lost {
        struct daemon *d;
        struct job *job;
        void (*done)(void *data);
        void *data;
};

static void found(void *data, const struct db_result *res)
{
        struct lost *l = data;
        struct daemon *d = l->d;
        struct job *job = l->job;

        /* Still this node's (a mail of before), or not known (the read failed) unless its
         * own start found it gone (lost): it stays. No row: it ran elsewhere and is done. */
        bool mine = res && (res->got ? res->i[0] == 0 && res->text &&
                                           strcmp(res->text, store_node(d->store)) == 0
                                     : !job->lost);

        if (res && !mine && job->live)
                claims_let_go(d, job);
        /* At the store's end too: what waited goes (its connection is closed by then). */
        if (l->done)
                l->done(l->data);
        job_unref(job);
        free(l);
}

void claims_lost(struct daemon *d, struct job *job, void (*done)(void *data), void *data)
{
        struct lost *l = malloc(sizeof(*l));

        if (!l) {
                log_error("Job %lld: out of memory while it leaves for another node",
                          (long long)job->id);
                return;
        }
        *l = (struct lost){d, job_ref(job), done, data};
        store_find_job(d->store, job->id, found, l);
}

void claims_mail(struct daemon *d, const struct db_mail *m)
{
        json_object *ids;

        if (!d->claims)
                return;
        if (strcmp(m->kind, CLAIMS_OFFERED_MAIL) == 0) {
                d->claims->offers_seen = true;
                claims_look(d);
                return;
        }
        ids = json_tokener_parse(m->body);
        for (size_t i = 0;
             json_object_is_type(ids, json_type_array) && i < json_object_array_length(ids); i++) {
                struct job *job = registry_find(
                    &d->registry, json_object_get_int64(json_object_array_get_idx(ids, i)));

                if (job && __atomic_load_n(&job->offered, __ATOMIC_ACQUIRE) && !job->lost)
                        claims_lost(d, job, NULL, NULL);
        }
        json_object_put(ids);
}
