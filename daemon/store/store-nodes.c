/* SPDX-License-Identifier: MIT */
/* A node of a shared database: its ids, its lease, the jobs it takes, the live nodes. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/db.h"
#include "store/store-internal.h"
#include "store/store.h"
#include "util/log.h"
#include "util/strv.h"

/* A job taken from a node whose lease ran out: its row, with copies of what it points to. */
struct adopted {
        struct adopted *next;
        struct store_job_row row;
        char *strings[6]; /* payload, key, name, state, flow, node */
};

double store_mono_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The ids this daemon starts from: after every id the database has seen (SQLite), or a block of
 * its own (a database nodes share). */
int store_first_ids(struct store *s)
{
        const struct db_driver *d = s->db->driver;
        int64_t last;
        int r;

        if (!d->reserve_ids) {
                s->next_id = d->load_next_id(s->db) + 1;
                return 0;
        }
        r = d->reserve_ids(s->db, ID_BLOCK, &last);
        if (r < 0) {
                char *why = d->why(s->db);

                log_error("%s: cannot reserve job ids: %s", s->db->name, why ? why : "error");
                free(why);
                return r;
        }
        s->next_id = last - ID_BLOCK + 1;
        s->id_end = last + 1;
        return 0;
}

void store_adopted_free(struct adopted *a)
{
        while (a) {
                struct adopted *next = a->next;

                for (size_t i = 0; i < sizeof(a->strings) / sizeof(*a->strings); i++)
                        free(a->strings[i]);
                strv_free(a->row.env);
                free(a);
                a = next;
        }
}

static const char *keep(struct adopted *a, size_t i, const char *text)
{
        return text ? (a->strings[i] = strdup(text)) : NULL;
}

/* Store thread: a row the driver read, copied onto the list in data. */
static void collect(void *data, const struct store_job_row *row)
{
        struct adopted ***tail = data, *a = calloc(1, sizeof(*a));

        if (!a)
                goto oom;
        a->row = *row;
        a->row.payload = keep(a, 0, row->payload);
        a->row.key = keep(a, 1, row->key);
        a->row.name = keep(a, 2, row->name);
        a->row.state = keep(a, 3, row->state);
        a->row.flow = keep(a, 4, row->flow);
        a->row.node = keep(a, 5, row->node);
        a->row.env = row->env ? strv_dup(row->env) : NULL;
        if ((row->payload && !a->row.payload) || (row->key && !a->row.key) ||
            (row->name && !a->row.name) || (row->state && !a->row.state) ||
            (row->flow && !a->row.flow) || (row->node && !a->row.node) ||
            (row->env && !a->row.env)) {
                store_adopted_free(a);
                goto oom;
        }
        **tail = a;
        *tail = &a->next;
        return;
oom:
        /* Its row is this node's now: the node's next start reads it. */
        log_error("Out of memory for job %lld, taken from node %s: it waits for this node's "
                  "next start", (long long)row->id, row->node);
}

/* Store thread, under lock (let go meanwhile): the jobs of every node whose lease ran out. */
static void adopt(struct store *s)
{
        const struct db_driver *d = s->db->driver;
        struct adopted *taken, **tail;
        int r;

        do {
                taken = NULL;
                tail = &taken;
                pthread_mutex_unlock(&s->lock);
                r = d->adopt(s->db, collect, &tail);
                pthread_mutex_lock(&s->lock);
                if (r <= 0) {
                        store_adopted_free(taken);
                        break;
                }
                *s->adopted_tail = taken;
                if (taken)
                        s->adopted_tail = tail;
        } while (!s->stop);
}

/* Store thread, under lock (let go meanwhile): this node's keyed jobs that other nodes asked to
 * run again while idle, for the loop with the adopted ones. */
static void take_again(struct store *s)
{
        struct adopted *taken = NULL, **tail = &taken;
        int r;

        pthread_mutex_unlock(&s->lock);
        r = s->db->driver->take_again(s->db, collect, &tail);
        pthread_mutex_lock(&s->lock);
        if (r < 0) {
                store_adopted_free(taken); /* still asked for: taken at the next renewal */
                return;
        }
        *s->adopted_tail = taken;
        if (taken)
                s->adopted_tail = tail;
}

static void claims_free(struct db_claim *claims, size_t n)
{
        for (size_t i = 0; i < n; i++)
                free((char *)claims[i].queue);
        free(claims);
}

bool store_claim(struct store *s, const struct db_claim *wants, size_t n)
{
        struct db_claim *copy = calloc(n ? n : 1, sizeof(*copy));
        size_t i;

        for (i = 0; copy && i < n; i++) {
                copy[i] = wants[i];
                if (!(copy[i].queue = strdup(wants[i].queue)))
                        break;
        }
        if (!copy || i < n) {
                claims_free(copy, i);
                return false;
        }
        pthread_mutex_lock(&s->lock);
        if (s->claiming) {
                pthread_mutex_unlock(&s->lock);
                claims_free(copy, n);
                return false;
        }
        s->claiming = true;
        s->claims = copy;
        s->nclaims = n;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return true;
}

/* Store thread, under lock (let go meanwhile): the claim the loop asked for, its jobs with the
 * adopted ones; the loop is told even when it failed (it may ask again). */
static void claim(struct store *s)
{
        struct adopted *taken = NULL, **tail = &taken;
        struct db_claim *claims = s->claims;
        size_t n = s->nclaims;
        int r;

        s->claims = NULL;
        s->nclaims = 0;
        pthread_mutex_unlock(&s->lock);
        r = s->db->driver->claim(s->db, claims, n, collect, &tail);
        claims_free(claims, n);
        if (r < 0 && !s->claim_failing) {
                char *why = s->db->driver->why(s->db);

                log_error("%s: node %s cannot claim the jobs other nodes offer: %s (trying "
                          "again when more are offered)",
                          s->db->name, s->node, why ? why : "error");
                free(why);
        }
        s->claim_failing = r < 0;
        pthread_mutex_lock(&s->lock);
        if (r <= 0) {
                store_adopted_free(taken); /* rolled back: not this node's */
        } else {
                *s->adopted_tail = taken;
                s->adopted_tail = tail;
        }
        s->claiming = false;
        store_wake_loop(s, STORE_CLAIMED);
}

/* Store thread, under lock: whether store_node_duties() has something to do now. */
bool store_duties_due(const struct store *s)
{
        return !s->lease_lost &&
               (store_mono_now() >= s->renew_at || s->claims ||
                (s->ids_wanted && !s->spare_id && !s->ids_failing));
}

bool store_node_paused(struct store *s)
{
        bool paused = false;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->nnodes; i++)
                if (strcmp(s->nodes[i].name, s->me.name) == 0)
                        paused = s->nodes[i].paused;
        pthread_mutex_unlock(&s->lock);
        return paused;
}

bool store_offers_seen(struct store *s)
{
        bool seen = false;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->nnodes && !seen; i++)
                seen = s->nodes[i].claimable > 0 && strcmp(s->nodes[i].name, s->me.name) == 0;
        pthread_mutex_unlock(&s->lock);
        return seen;
}

/* Store thread, under lock (let go meanwhile): a block of ids when the loop took the last one
 * (tried again with the next renewal when it fails), and the lease renewed when that is due. A
 * renewal tells the loop, which fences the node when its lease runs out unrenewed. */
void store_node_duties(struct store *s)
{
        const struct db_driver *d = s->db->driver;
        struct db_node me, *nodes = NULL;
        double sent = store_mono_now();
        bool renew = sent >= s->renew_at;
        size_t n = 0;
        int64_t last;
        int r;

        if (s->lease_lost)
                return;
        if (s->claims)
                claim(s);
        if (s->ids_wanted && !s->spare_id && (!s->ids_failing || renew)) {
                pthread_mutex_unlock(&s->lock);
                r = d->reserve_ids(s->db, ID_BLOCK, &last);
                pthread_mutex_lock(&s->lock);
                s->ids_failing = r < 0;
                if (r == 0) {
                        s->spare_id = last - ID_BLOCK + 1;
                        s->ids_wanted = false;
                }
                pthread_cond_broadcast(&s->ids_cond);
        }
        if (!renew)
                return;
        s->renew_at = sent + s->lease_renew;
        me = s->me;
        pthread_mutex_unlock(&s->lock);
        r = d->renew(s->db, &me, &nodes, &n);
        if (r == -EIO && !s->renew_failing) {
                char *why = d->why(s->db);

                log_error("%s: cannot renew the lease of node %s: %s (trying again)",
                          s->db->name, me.name, why ? why : "error");
                free(why);
        } else if (r == 0 && s->renew_failing)
                log_info("%s: node %s renewed its lease again", s->db->name, me.name);
        s->renew_failing = r == -EIO;
        pthread_mutex_lock(&s->lock);
        if (r == 0) {
                s->lease_until = sent + s->lease_time;
                free(s->nodes);
                s->nodes = nodes;
                s->nnodes = n;
                s->nodes_at = store_mono_now();
                s->nodes_since = sent;
                adopt(s);
                take_again(s);
        } else if (r == -ESTALE) {
                log_error("%s: node %s lost its lease: another node took its jobs", s->db->name,
                          me.name);
                s->lease_lost = true;
                pthread_cond_broadcast(&s->ids_cond);
        }
        if (r == 0 || r == -ESTALE)
                store_wake_loop(s, STORE_RENEWED);
}

const char *store_node(const struct store *s)
{
        return s->node;
}

int64_t store_new_id(struct store *s)
{
        struct timespec ts;
        int64_t id = 0;

        if (!s->id_end)
                return s->next_id++;
        /* Half the block gone: the next one is reserved before it is needed. */
        if (s->next_id == s->id_end - ID_BLOCK / 2) {
                pthread_mutex_lock(&s->lock);
                s->ids_wanted = true;
                pthread_cond_signal(&s->cond);
                pthread_mutex_unlock(&s->lock);
        }
        if (s->next_id < s->id_end)
                return s->next_id++;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 2;
        pthread_mutex_lock(&s->lock);
        s->ids_wanted = true;
        pthread_cond_signal(&s->cond);
        while (!s->spare_id && !s->lease_lost && !s->ids_failing &&
               pthread_cond_timedwait(&s->ids_cond, &s->lock, &ts) != ETIMEDOUT)
                ;
        if (s->spare_id && !s->lease_lost) {
                s->next_id = s->spare_id;
                s->id_end = s->spare_id + ID_BLOCK;
                s->spare_id = 0;
                id = s->next_id++;
        }
        pthread_mutex_unlock(&s->lock);
        return id ? id : -EAGAIN;
}

void store_report(struct store *s, int64_t running, int64_t min_threads, int64_t max_threads,
                  const char *queues)
{
        pthread_mutex_lock(&s->lock);
        s->me.running = running;
        s->me.min_threads = min_threads;
        s->me.max_threads = max_threads;
        snprintf(s->me.queues, sizeof(s->me.queues), "%s", queues);
        pthread_mutex_unlock(&s->lock);
}

int store_nodes(struct store *s, struct db_node **ret, size_t *ret_n)
{
        double age;
        size_t n;

        pthread_mutex_lock(&s->lock);
        n = s->shared ? s->nnodes : 0;
        *ret = calloc(n ? n : 1, sizeof(**ret));
        if (*ret && n) {
                memcpy(*ret, s->nodes, n * sizeof(**ret));
                age = store_mono_now() - s->nodes_at;
                for (size_t i = 0; i < n; i++) {
                        struct db_node *node = &(*ret)[i];

                        node->lease_age += age;
                        /* This node's as it reports now. */
                        if (strcmp(node->name, s->me.name) == 0) {
                                node->running = s->me.running;
                                node->min_threads = s->me.min_threads;
                                node->max_threads = s->me.max_threads;
                                memcpy(node->queues, s->me.queues, sizeof(node->queues));
                        }
                }
        } else if (*ret) {
                (*ret)[0] = s->me;
                n = 1;
        }
        pthread_mutex_unlock(&s->lock);
        *ret_n = n;
        return *ret ? 0 : -ENOMEM;
}

double store_nodes_since(struct store *s)
{
        double since;

        pthread_mutex_lock(&s->lock);
        since = s->nodes_since;
        pthread_mutex_unlock(&s->lock);
        return since;
}

bool store_lease(struct store *s, double *ret_until)
{
        bool lost;

        pthread_mutex_lock(&s->lock);
        *ret_until = s->lease_until;
        lost = s->lease_lost;
        pthread_mutex_unlock(&s->lock);
        return lost;
}

void store_take_adopted(struct store *s, void (*cb)(void *data, const struct store_job_row *row),
                        void *data)
{
        struct adopted *taken;

        pthread_mutex_lock(&s->lock);
        taken = s->adopted;
        s->adopted = NULL;
        s->adopted_tail = &s->adopted;
        pthread_mutex_unlock(&s->lock);
        for (struct adopted *a = taken; a; a = a->next)
                cb(data, &a->row);
        store_adopted_free(taken);
}

bool store_alone(struct store *s)
{
        bool alone;

        pthread_mutex_lock(&s->lock);
        alone = !s->shared ||
                (s->nodes_at > 0 && s->nnodes == 1 && strcmp(s->nodes[0].name, s->me.name) == 0);
        pthread_mutex_unlock(&s->lock);
        return alone;
}

bool store_nodes_known(struct store *s)
{
        bool known;

        pthread_mutex_lock(&s->lock);
        known = !s->shared || s->nodes_at > 0;
        pthread_mutex_unlock(&s->lock);
        return known;
}

bool store_shared(const struct store *s)
{
        return s->shared;
}

bool store_other_node(const struct store *s, const char *node)
{
        return s->shared && node != s->node;
}
