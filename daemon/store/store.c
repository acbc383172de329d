/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "store/envs.h"
#include "store/run-record.h"
#include "store/store.h"
#include "util/log.h"
#include "util/strv.h"

#define OP_VALUES_MAX 17

#define OP_SPARE_MAX 4096 /* ops kept for reuse: a burst's, never the heap's holes between jobs */

#define ID_BLOCK 4096 /* ids a node of a shared database reserves at once */

struct value {
        int type; /* DB_NULL, DB_INT, DB_REAL or DB_TEXT */
        int64_t i;
        double d;
        size_t text; /* where in the op's buf */
};

/* A write; made on the loop (or a pool thread), run and then kept for reuse by the store's
 * thread. One whose first row matters has it in res, and tells done once it is committed: on the
 * store's thread or on the loop (NULL res: never, the store closed first). */
struct op {
        struct op *next;
        enum db_stmt stmt;
        int n;
        struct value v[OP_VALUES_MAX];
        char *buf; /* its texts */
        size_t buf_len, buf_size;
        struct db_result res;
        void (*done)(void *data, const struct db_result *res);
        void *data;
        bool on_store; /* done on the store's thread, else on the loop */
};

struct store {
        int lock_fd; /* flock()ed: one daemon per state folder */
        struct db *db;

        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct op *head, **tail; /* under lock: queued, not yet taken */
        struct op *spare;        /* under lock: committed, for reuse */
        size_t nspare;
        struct op *finished, **finished_tail; /* under lock: committed, done to tell the loop */
        uint64_t queued;                      /* under lock: ops queued */
        bool stop;                            /* under lock */
        int64_t history_limit;                /* under lock: for pruning */
        bool runs_added;                      /* under lock: since the last prune */
        int64_t max_id;  /* under lock: the highest job id, written once a batch */
        bool max_id_new; /* under lock: since the last batch */

        uint64_t committed; /* atomic */
        uint64_t errors;    /* atomic: reads and commits that failed */
        char *failure;      /* under lock */
        double retry;       /* under lock: seconds before the next try of a failing commit */
        uv_async_t async;
        void (*on_commit)(void *data);
        void *data;
        void (*on_mail)(void *data, const struct db_mail *m); /* loop: mail from other nodes */
        void *mail_data;
        bool mail_started;

        const char *node;        /* this node's name (run_record_node()'s) */
        int64_t next_id, id_end; /* loop: the next job id, and the end of its block (0: none) */
        pthread_cond_t ids_cond;
        int64_t spare_id;       /* under lock: the first id of the block reserved next, or 0 */
        bool ids_wanted;        /* under lock: the store's thread is to reserve a block */

        double lease_renew, lease_time;
        double renew_at;        /* store thread: when the next renewal is due (monotonic) */
        double lease_until;     /* under lock: until when the lease surely holds (monotonic) */
        bool lease_lost;        /* under lock: another node took this one's place */
        bool renew_failing;     /* store thread */
        bool ids_failing;       /* under lock: the last reservation failed */
        struct db_node me;      /* under lock: what this node reports */
        struct db_node *nodes;  /* under lock: the live nodes as last seen */
        size_t nnodes;
        double nodes_at;        /* under lock: when they were seen (monotonic) */
        struct adopted *adopted, **adopted_tail; /* under lock: taken, for the loop */
};

/* A job taken from a node whose lease ran out: its row, with copies of what it points to. */
struct adopted {
        struct adopted *next;
        struct store_job_row row;
        char *strings[6]; /* payload, key, name, state, flow, node */
};

static double mono_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Two daemons on one state folder would both run its jobs, whatever their sockets. */
static int take_folder(struct store *s, const char *dir)
{
        char *path;

        if (asprintf(&path, "%s/slowworkd.lock", dir) < 0)
                return -ENOMEM;
        s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (s->lock_fd < 0) {
                log_error("Cannot open %s: %m", path);
                free(path);
                return -errno;
        }
        free(path);
        if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                int r = -errno;

                if (r == -EWOULDBLOCK)
                        log_error("Another slowworkd uses the state folder %s", dir);
                else
                        log_error_errno(r, "Cannot lock the state folder %s: %m", dir);
                return r;
        }
        return 0;
}

/* The ids this daemon starts from: after every id the database has seen (SQLite), or a block of
 * its own (a database nodes share). */
static int first_ids(struct store *s)
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

int store_open(const struct store_config *config, struct store **ret)
{
        struct store *s = calloc(1, sizeof(*s));
        pthread_condattr_t attr;
        double opened;
        int r;

        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        /* The retry wait is on the monotonic clock: a step of the wall clock cannot stretch it. */
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&s->cond, &attr);
        pthread_cond_init(&s->ids_cond, &attr);
        pthread_condattr_destroy(&attr);
        s->tail = &s->head;
        s->finished_tail = &s->finished;
        s->adopted_tail = &s->adopted;
        s->lock_fd = -1;
        s->node = run_record_node(config->node ? config->node : "");
        s->lease_renew = config->lease_renew;
        s->lease_time = config->lease_time;
        s->lease_until = INFINITY;
        snprintf(s->me.name, sizeof(s->me.name), "%s", s->node ? s->node : "");
        gethostname(s->me.host, sizeof(s->me.host) - 1);
        s->me.pid = getpid();
        s->me.min_threads = config->min_threads;
        s->me.max_threads = config->max_threads;
        opened = mono_now();
        r = s->node ? take_folder(s, config->dir) : -ENOMEM;
        if (r == 0 && config->conninfo && *config->conninfo)
                r = db_pg_open(config->conninfo, config->schema, &s->me, s->lease_time, &s->db);
        else if (r == 0)
                r = db_sqlite_open(config->dir, &s->db);
        if (r == 0)
                r = first_ids(s);
        if (r < 0) {
                store_free(s);
                return r;
        }
        /* The join was sent after opened: the lease holds at least this long. */
        if (s->db->driver->renew)
                s->lease_until = opened + s->lease_time;
        s->renew_at = opened + s->lease_renew;
        *ret = s;
        return 0;
}

/* The statements that only read: they wait for no commit, and none waits for them. */
static bool is_read(enum db_stmt stmt)
{
        return stmt == DB_FIND_JOB || stmt == DB_LIST_JOBS;
}

/* Store thread: runs one queued write. */
static int run_op(struct store *s, struct op *op)
{
        struct db_value v[OP_VALUES_MAX];
        int i;

        for (i = 0; i < op->n; i++)
                v[i] = (struct db_value){.type = op->v[i].type,
                                         .i = op->v[i].i,
                                         .d = op->v[i].d,
                                         .text = op->v[i].type == DB_TEXT ? op->buf + op->v[i].text
                                                                          : NULL};
        return s->db->driver->run(s->db, op->stmt, v, op->n, op->done ? &op->res : NULL);
}

/* Ops that are not done yet are told they never will be. */
static void free_ops(struct op *op)
{
        while (op) {
                struct op *next = op->next;

                if (op->done)
                        op->done(op->data, NULL);
                free(op->res.text);
                free(op->buf);
                free(op);
                op = next;
        }
}

/* Under lock: ops are kept for reuse, up to OP_SPARE_MAX; the rest in *rest. */
static void spare_locked(struct store *s, struct op *batch, struct op **rest)
{
        while (batch) {
                struct op *next = batch->next;

                free(batch->res.text);
                batch->res.text = NULL;
                batch->done = NULL;
                if (s->nspare < OP_SPARE_MAX) {
                        batch->next = s->spare;
                        s->spare = batch;
                        s->nspare++;
                } else {
                        batch->next = *rest;
                        *rest = batch;
                }
                batch = next;
        }
}

/* Store thread: a committed batch tells what waits on its rows, and is kept for reuse; what the
 * loop is to tell waits on its list. */
static void spare_ops(struct store *s, struct op *batch)
{
        struct op *rest = NULL, *keep = NULL, **keep_tail = &keep;

        while (batch) {
                struct op *next = batch->next;

                batch->next = NULL;
                if (batch->done && batch->on_store) {
                        batch->done(batch->data, &batch->res);
                        batch->done = NULL;
                }
                if (batch->done) {
                        pthread_mutex_lock(&s->lock);
                        *s->finished_tail = batch;
                        s->finished_tail = &batch->next;
                        pthread_mutex_unlock(&s->lock);
                } else {
                        *keep_tail = batch;
                        keep_tail = &batch->next;
                }
                batch = next;
        }
        pthread_mutex_lock(&s->lock);
        spare_locked(s, keep, &rest);
        pthread_mutex_unlock(&s->lock);
        free_ops(rest);
}

/* Store thread: one transaction for the whole batch, with the highest id so far (so that ids go
 * on after every job and run is gone); why it failed in *why. */
static int commit(struct store *s, struct op *batch, int64_t prune_limit, int64_t max_id,
                  char **why)
{
        const struct db_driver *d = s->db->driver;
        struct op *op;
        int r = d->begin(s->db);
        char **logs = NULL;
        bool forgets = false;

        for (op = batch; r == 0 && op; op = op->next) {
                r = run_op(s, op);
                forgets |= op->stmt == DB_FORGET_LOG;
        }
        if (r == 0 && prune_limit > 0)
                r = d->prune(s->db, prune_limit, &logs);
        if (r == 0 && max_id > 0)
                r = d->run(s->db, DB_PUT_NEXT_ID, &(struct db_value){.type = DB_INT, .i = max_id},
                           1, NULL);
        if (r == 0)
                r = d->commit(s->db);
        if (r < 0) {
                *why = d->why(s->db);
                d->rollback(s->db);
        }
        for (char **l = logs; l && *l; l++) {
                if (r == 0)
                        unlink(*l);
                free(*l);
        }
        free(logs);
        /* The logs the batch forgot go once no row names them. */
        for (op = batch; r == 0 && forgets && op; op = op->next)
                if (op->stmt == DB_FORGET_LOG)
                        unlink(op->buf + op->v[2].text);
        return r;
}

/* Store thread, under lock: waits before the next try of a failing commit, the driver's first
 * delay doubling up to its last, or until the store stops. */
static void wait_to_retry(struct store *s)
{
        const struct db_driver *d = s->db->driver;
        struct timespec ts;
        double delay;

        s->retry = s->retry ? s->retry * 2 : d->retry_first;
        if (s->retry > d->retry_last)
                s->retry = d->retry_last;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        delay = ts.tv_nsec / 1e9 + s->retry;
        ts.tv_sec += (time_t)delay;
        ts.tv_nsec = (long)((delay - (time_t)delay) * 1e9);
        while (!s->stop && pthread_cond_timedwait(&s->cond, &s->lock, &ts) != ETIMEDOUT)
                ;
}

/* Store thread, under lock: waits for what is queued, the store's stop, or until the monotonic
 * time at. */
static void wait_until(struct store *s, double at)
{
        struct timespec ts = {.tv_sec = (time_t)at, .tv_nsec = (long)((at - (time_t)at) * 1e9)};

        if (at == INFINITY)
                pthread_cond_wait(&s->cond, &s->lock);
        else
                pthread_cond_timedwait(&s->cond, &s->lock, &ts);
}

static void adopted_free(struct adopted *a)
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
                adopted_free(a);
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
                        adopted_free(taken);
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
                adopted_free(taken); /* still asked for: taken at the next renewal */
                return;
        }
        *s->adopted_tail = taken;
        if (taken)
                s->adopted_tail = tail;
}

/* Store thread, under lock: whether node_duties() has something to do now. */
static bool duties_due(const struct store *s)
{
        return s->db->driver->renew && !s->lease_lost &&
               (mono_now() >= s->renew_at || (s->ids_wanted && !s->spare_id && !s->ids_failing));
}

/* Store thread, under lock (let go meanwhile): a block of ids when the loop took the last one
 * (tried again with the next renewal when it fails), and the lease renewed when that is due. A
 * renewal tells the loop, which fences the node when its lease runs out unrenewed. */
static void node_duties(struct store *s)
{
        const struct db_driver *d = s->db->driver;
        struct db_node me, *nodes = NULL;
        double sent = mono_now();
        bool renew = sent >= s->renew_at;
        size_t n = 0;
        int64_t last;
        int r;

        if (!d->renew || s->lease_lost)
                return;
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
                s->nodes_at = mono_now();
                adopt(s);
                take_again(s);
        } else if (r == -ESTALE) {
                log_error("%s: node %s lost its lease: another node took its jobs", s->db->name,
                          me.name);
                s->lease_lost = true;
                pthread_cond_broadcast(&s->ids_cond);
        }
        uv_async_send(&s->async);
}

/* Store thread, under lock: the reads of a batch that failed are answered with no row (their
 * askers go on without it) rather than tried again with its writes; the writes are returned. */
static struct op *answer_reads(struct store *s, struct op *batch)
{
        struct op **p = &batch;

        while (*p) {
                struct op *op = *p;

                if (!is_read(op->stmt)) {
                        p = &op->next;
                        continue;
                }
                *p = op->next;
                op->next = NULL;
                free(op->res.text);
                op->res = (struct db_result){0};
                *s->finished_tail = op;
                s->finished_tail = &op->next;
        }
        return batch;
}

static void *store_thread(void *arg)
{
        struct store *s = arg;

        pthread_mutex_lock(&s->lock);
        for (;;) {
                struct op *batch;
                uint64_t last;
                int64_t prune_limit, max_id;
                char *why = NULL;
                int r;

                while (!s->head && !s->stop && !duties_due(s))
                        wait_until(s, s->db->driver->renew && !s->lease_lost ? s->renew_at
                                                                              : INFINITY);
                node_duties(s);
                if (!s->head && s->stop)
                        break;
                if (!s->head)
                        continue;
                batch = s->head;
                s->head = NULL;
                s->tail = &s->head;
                last = __atomic_load_n(&s->queued, __ATOMIC_RELAXED);
                prune_limit = s->runs_added ? s->history_limit : 0;
                max_id = s->max_id_new ? s->max_id : 0;
                s->max_id_new = false;
                s->runs_added = false;
                pthread_mutex_unlock(&s->lock);

                r = commit(s, batch, prune_limit, max_id, &why);

                pthread_mutex_lock(&s->lock);
                if (r < 0) {
                        /* Kept, and tried again: what was accepted is not dropped. */
                        __atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
                        if (!s->failure)
                                log_error("%s: cannot commit: %s (%s)", s->db->name,
                                          why ? why : "out of memory", s->db->driver->retrying);
                        free(s->failure);
                        s->failure = why ? why : strdup("out of memory");
                        batch = answer_reads(s, batch);
                        for (struct op *op = batch; op; op = op->next)
                                if (!op->next) {
                                        op->next = s->head;
                                        if (!s->head)
                                                s->tail = &op->next;
                                        s->head = batch;
                                        break;
                                }
                        s->runs_added |= prune_limit > 0;
                        s->max_id_new |= max_id > 0;
                        uv_async_send(&s->async); /* so that the loop sees the failure */
                        if (s->stop)
                                break; /* stopping: what could not be written stays lost */
                        wait_to_retry(s);
                        continue;
                }
                s->retry = 0;
                if (s->failure)
                        log_info("%s: writing again", s->db->name);
                free(s->failure);
                s->failure = NULL;
                __atomic_store_n(&s->committed, last, __ATOMIC_RELEASE);
                pthread_mutex_unlock(&s->lock);
                spare_ops(s, batch);
                uv_async_send(&s->async);
                pthread_mutex_lock(&s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

/* The driver's thread. */
static void mail_arrived(void *data)
{
        struct store *s = data;

        uv_async_send(&s->async);
}

/* Loop thread: the committed ops whose done is the loop's. */
static void deliver_finished(struct store *s)
{
        struct op *finished, *rest = NULL;

        pthread_mutex_lock(&s->lock);
        finished = s->finished;
        s->finished = NULL;
        s->finished_tail = &s->finished;
        pthread_mutex_unlock(&s->lock);
        for (struct op *op = finished; op; op = op->next)
                op->done(op->data, &op->res);
        pthread_mutex_lock(&s->lock);
        spare_locked(s, finished, &rest);
        pthread_mutex_unlock(&s->lock);
        free_ops(rest);
}

static void on_async(uv_async_t *async)
{
        struct store *s = async->data;

        deliver_finished(s);
        if (s->mail_started) {
                struct db_mail *mail = s->db->driver->mail_take(s->db);

                for (struct db_mail *m = mail; m && s->on_mail; m = m->next)
                        s->on_mail(s->mail_data, m);
                db_mail_free(mail);
        }
        s->on_commit(s->data);
}

int store_start(struct store *s, uv_loop_t *loop, void (*on_commit)(void *data), void *data)
{
        int r;

        s->on_commit = on_commit;
        s->data = data;
        s->async.data = s;
        r = uv_async_init(loop, &s->async, on_async);
        if (r < 0)
                return r;
        r = -pthread_create(&s->thread, NULL, store_thread, s);
        if (r < 0) {
                uv_close((uv_handle_t *)&s->async, NULL);
                return r;
        }
        s->started = true;
        if (s->db->driver->mail_start) {
                r = s->db->driver->mail_start(s->db, mail_arrived, s);
                s->mail_started = r == 0;
        }
        return r;
}

void store_stop(struct store *s)
{
        if (!s || !s->started)
                return;
        if (s->mail_started)
                s->db->driver->mail_stop(s->db);
        s->mail_started = false;
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        uv_close((uv_handle_t *)&s->async, NULL);
        s->started = false;
        /* What waits on ops hears of them now, while what it refers to still lives: committed,
         * or never (what the last commit could not write stays lost). */
        deliver_finished(s);
        free_ops(s->head);
        s->head = NULL;
        s->tail = &s->head;
}

void store_free(struct store *s)
{
        if (!s)
                return;
        free_ops(s->head);
        free_ops(s->finished);
        free_ops(s->spare);
        if (s->db)
                s->db->driver->free(s->db);
        if (s->lock_fd >= 0)
                close(s->lock_fd);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        pthread_cond_destroy(&s->ids_cond);
        free(s->nodes);
        adopted_free(s->adopted);
        free(s->failure);
        free(s);
}

uint64_t store_queued(const struct store *s)
{
        return __atomic_load_n(&s->queued, __ATOMIC_RELAXED);
}

uint64_t store_committed(const struct store *s)
{
        return __atomic_load_n(&s->committed, __ATOMIC_ACQUIRE);
}

const char *store_failing_means(const struct store *s)
{
        return s->db->driver->failing;
}

uint64_t store_errors(struct store *s)
{
        return __atomic_load_n(&s->errors, __ATOMIC_RELAXED);
}

bool store_failing(struct store *s, char *why, size_t len)
{
        bool failing;

        pthread_mutex_lock(&s->lock);
        failing = s->failure != NULL;
        if (failing)
                snprintf(why, len, "%s", s->failure);
        pthread_mutex_unlock(&s->lock);
        return failing;
}

static void out_of_memory(void)
{
        log_error("Out of memory for the state database");
        abort();
}

/* Loop thread: a new write, a spare one if there is one. Out of memory here is fatal: an
 * accepted job must not be lost. */
static struct op *op_new(struct store *s, enum db_stmt stmt)
{
        struct op *op;

        pthread_mutex_lock(&s->lock);
        op = s->spare;
        if (op) {
                s->spare = op->next;
                s->nspare--;
        }
        pthread_mutex_unlock(&s->lock);
        if (!op)
                op = calloc(1, sizeof(*op));
        if (!op)
                out_of_memory();
        op->next = NULL;
        op->stmt = stmt;
        op->done = NULL;
        op->on_store = false;
        op->res = (struct db_result){0};
        op->n = 0;
        op->buf_len = 0;
        memset(op->v, 0, sizeof(op->v));
        return op;
}

static void put_int(struct op *op, int64_t i)
{
        op->v[op->n++] = (struct value){.type = DB_INT, .i = i};
}

static void put_real(struct op *op, double d)
{
        op->v[op->n++] = (struct value){.type = DB_REAL, .d = d};
}

static void put_text(struct op *op, const char *text)
{
        struct value *v = &op->v[op->n++];
        size_t len = text ? strlen(text) + 1 : 0;

        if (!text)
                return;
        if (op->buf_len + len > op->buf_size) {
                size_t size = op->buf_size ? op->buf_size : 256;
                char *buf;

                while (size < op->buf_len + len)
                        size *= 2;
                buf = realloc(op->buf, size);
                if (!buf)
                        out_of_memory();
                op->buf = buf;
                op->buf_size = size;
        }
        v->type = DB_TEXT;
        v->text = op->buf_len;
        memcpy(op->buf + op->buf_len, text, len);
        op->buf_len += len;
}

/* Any thread: the op's sequence number. */
static uint64_t queue(struct store *s, struct op *op)
{
        uint64_t seq;

        pthread_mutex_lock(&s->lock);
        *s->tail = op;
        s->tail = &op->next;
        /* A read is no write that a reply waits for. */
        seq = is_read(op->stmt) ? __atomic_load_n(&s->queued, __ATOMIC_RELAXED)
                                : __atomic_add_fetch(&s->queued, 1, __ATOMIC_RELAXED);
        if ((op->stmt == DB_PUT_JOB || op->stmt == DB_CLAIM_JOB) && op->v[0].i > s->max_id) {
                s->max_id = op->v[0].i;
                s->max_id_new = true;
        }
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        return seq;
}

/* An environment's row is named after the first job that sent it: ids are unique among nodes. */
static void put_env(struct store *s, struct env_block *env, int64_t job_id)
{
        json_object *vars;
        struct op *op;
        char **v;

        if (env->store_id)
                return;
        env->store_id = job_id;
        vars = json_object_new_array();
        for (v = env->vars; *v; v++)
                json_object_array_add(vars, json_object_new_string(*v));
        op = op_new(s, DB_PUT_ENV);
        put_int(op, env->store_id);
        put_text(op, json_object_to_json_string_ext(vars, JSON_C_TO_STRING_PLAIN));
        json_object_put(vars);
        queue(s, op);
}

/* The columns that change while a job lives, last in both statements. */
static void put_state(struct op *op, const struct store_job_row *row)
{
        put_int(op, row->persist);
        put_text(op, row->state);
        put_int(op, row->qorder);
        put_real(op, row->due);
        put_int(op, row->runs);
        put_text(op, row->flow);
        put_real(op, row->started);
}

/* A job's whole row, as DB_PUT_JOB and DB_CLAIM_JOB begin. */
static struct op *job_op(struct store *s, enum db_stmt stmt, const struct store_job_row *row,
                         struct env_block *env)
{
        struct op *op;

        if (env)
                put_env(s, env, row->id);
        op = op_new(s, stmt);
        put_int(op, row->id);
        put_int(op, row->owner);
        put_int(op, row->very_slow);
        put_text(op, row->payload);
        if (env)
                put_int(op, env->store_id);
        else
                op->n++;
        put_text(op, row->key);
        put_text(op, row->name);
        put_state(op, row);
        return op;
}

uint64_t store_put_job(struct store *s, const struct store_job_row *row, struct env_block *env)
{
        return queue(s, job_op(s, DB_PUT_JOB, row, env));
}

void store_on_mail(struct store *s, void (*on_mail)(void *data, const struct db_mail *m),
                   void *data)
{
        s->on_mail = on_mail;
        s->mail_data = data;
}

void store_send_mail(struct store *s, const char *to, int64_t session, const char *kind,
                     const char *body)
{
        struct op *op = op_new(s, DB_SEND_MAIL);

        put_text(op, to);
        put_int(op, session);
        put_text(op, kind);
        put_text(op, body);
        queue(s, op);
}

void store_find_job(struct store *s, int64_t id,
                    void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = op_new(s, DB_FIND_JOB);

        put_int(op, id);
        op->done = done;
        op->data = data;
        queue(s, op);
}

void store_list_jobs(struct store *s, int64_t after_id, int64_t owner, const char *state,
                     int64_t limit, void (*done)(void *data, const struct db_result *res),
                     void *data)
{
        struct op *op = op_new(s, DB_LIST_JOBS);

        put_int(op, after_id);
        put_int(op, owner);
        put_text(op, state);
        put_int(op, limit);
        op->done = done;
        op->data = data;
        queue(s, op);
}

bool store_alone(struct store *s)
{
        bool alone;

        pthread_mutex_lock(&s->lock);
        alone = !s->db->driver->renew ||
                (s->nodes_at > 0 && s->nnodes == 1 && strcmp(s->nodes[0].name, s->me.name) == 0);
        pthread_mutex_unlock(&s->lock);
        return alone;
}

bool store_nodes_known(struct store *s)
{
        bool known;

        pthread_mutex_lock(&s->lock);
        known = !s->db->driver->renew || s->nodes_at > 0;
        pthread_mutex_unlock(&s->lock);
        return known;
}

bool store_shared(const struct store *s)
{
        return s->db->driver->renew != NULL;
}

uint64_t store_claim_job(struct store *s, const struct store_job_row *row, struct env_block *env,
                         const char *queue_name, const char *what, bool may_again,
                         void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = job_op(s, DB_CLAIM_JOB, row, env);

        put_text(op, queue_name);
        put_text(op, what);
        put_int(op, may_again);
        op->done = done;
        op->data = data;
        return queue(s, op);
}

/* What a thread waits on until its op is committed: freed by the last of the two. */
struct waiter {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int refs;
        bool done, gone; /* gone: the caller stopped waiting */
        int64_t value;   /* the first number of the first row, 0 without one */
        int64_t *out;    /* where that goes too, on the store's thread, while the caller waits */
};

static void waiter_unref(struct waiter *w)
{
        bool last;

        pthread_mutex_lock(&w->lock);
        last = --w->refs == 0;
        pthread_mutex_unlock(&w->lock);
        if (!last)
                return;
        pthread_mutex_destroy(&w->lock);
        pthread_cond_destroy(&w->cond);
        free(w);
}

/* Store thread (or the store's end: res NULL). */
static void wake(void *data, const struct db_result *res)
{
        struct waiter *w = data;

        pthread_mutex_lock(&w->lock);
        w->done = res != NULL;
        w->value = res && res->got ? res->i[0] : 0;
        if (w->out && w->done && !w->gone)
                __atomic_store_n(w->out, w->value, __ATOMIC_RELEASE);
        pthread_cond_signal(&w->cond);
        pthread_mutex_unlock(&w->lock);
        waiter_unref(w);
}

/* Any thread but the store's and the loop: queues stmt on id and waits until it is committed
 * (0, its first number in *ret), or until give_up(arg) says so, looked at every 50 ms
 * (-ECANCELED: it is committed later, or never). */
static int call_wait(struct store *s, enum db_stmt stmt, int64_t id, int64_t arg2,
                     int64_t *out, bool (*give_up)(void *arg), void *arg, int64_t *ret)
{
        struct waiter *w = calloc(1, sizeof(*w));
        pthread_condattr_t attr;
        struct op *op;
        int r;

        if (!w)
                out_of_memory();
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        w->refs = 2;
        w->out = out;
        op = op_new(s, stmt);
        put_int(op, id);
        if (stmt == DB_KEY_END)
                put_int(op, arg2);
        op->done = wake;
        op->data = w;
        op->on_store = true;
        queue(s, op);
        pthread_mutex_lock(&w->lock);
        while (!w->done) {
                struct timespec ts;

                clock_gettime(CLOCK_MONOTONIC, &ts);
                ts.tv_nsec += 50 * 1000 * 1000;
                if (ts.tv_nsec >= 1000 * 1000 * 1000) {
                        ts.tv_sec++;
                        ts.tv_nsec -= 1000 * 1000 * 1000;
                }
                if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) == ETIMEDOUT && !w->done &&
                    give_up(arg))
                        break;
        }
        r = w->done ? 0 : -ECANCELED;
        w->gone = true;
        *ret = w->value;
        pthread_mutex_unlock(&w->lock);
        waiter_unref(w);
        return r;
}

int store_key_start(struct store *s, int64_t id, int64_t *starts, bool (*give_up)(void *arg),
                    void *arg)
{
        int64_t ignored;

        return call_wait(s, DB_KEY_START, id, 0, starts, give_up, arg, &ignored);
}

int store_key_end(struct store *s, int64_t id, bool keep, bool (*give_up)(void *arg), void *arg,
                  bool *ret_again)
{
        int64_t again = 0;
        int r = call_wait(s, DB_KEY_END, id, !keep, NULL, give_up, arg, &again);

        *ret_again = r == 0 && again;
        return r;
}

uint64_t store_put_job_state(struct store *s, const struct store_job_row *row)
{
        struct op *op = op_new(s, DB_PUT_JOB_STATE);

        put_int(op, row->id);
        put_state(op, row);
        return queue(s, op);
}

void store_delete_job(struct store *s, int64_t id)
{
        struct op *op = op_new(s, DB_DELETE_JOB);

        put_int(op, id);
        queue(s, op);
}

void store_add_run(struct store *s, const struct run_record *rec, int64_t history_limit)
{
        struct op *op = op_new(s, DB_ADD_RUN);

        put_int(op, rec->id);
        put_int(op, rec->run);
        put_int(op, rec->very_slow);
        put_int(op, rec->owner);
        put_text(op, rec->summary ? rec->summary : ""); /* NOT NULL: a row that fails stops all */
        put_real(op, rec->started);
        put_real(op, rec->ended);
        put_text(op, rec->outcome);
        put_int(op, rec->exit_code);
        put_int(op, rec->signal);
        put_text(op, rec->log);
        put_int(op, rec->oom);
        if (rec->cpu_time >= 0)
                put_real(op, rec->cpu_time);
        else
                op->n++;
        if (rec->memory_peak >= 0)
                put_int(op, rec->memory_peak);
        else
                op->n++;
        put_int(op, rec->leftovers);
        put_int(op, rec->attempt > 0 ? rec->attempt : 1);
        put_text(op, rec->node ? rec->node : "");
        pthread_mutex_lock(&s->lock);
        s->history_limit = history_limit;
        s->runs_added = true;
        pthread_mutex_unlock(&s->lock);
        queue(s, op);
}

void store_forget_log(struct store *s, int64_t id, int64_t run, const char *path)
{
        struct op *op = op_new(s, DB_FORGET_LOG);

        put_int(op, id);
        put_int(op, run);
        put_text(op, path);
        queue(s, op);
}

void store_put_setting(struct store *s, const char *name, double value)
{
        struct op *op = op_new(s, DB_PUT_SETTING);

        put_text(op, name);
        put_real(op, value);
        queue(s, op);
}

void store_delete_settings(struct store *s, const char *prefix)
{
        struct op *op = op_new(s, DB_DELETE_SETTINGS);

        put_text(op, prefix);
        queue(s, op);
}

void store_put_setting_text(struct store *s, const char *name, const char *text)
{
        struct op *op = op_new(s, DB_PUT_SETTING);

        put_text(op, name);
        put_text(op, text);
        queue(s, op);
}

/* A read at start: its failure counts among the errors (the driver said why). */
static int counted(struct store *s, int r)
{
        if (r < 0)
                __atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
        return r;
}

int store_load_settings(struct store *s,
                        void (*cb)(void *data, const char *name, double value, const char *text),
                        void *data)
{
        return counted(s, s->db->driver->load_settings(s->db, cb, data));
}

int store_find_foreign_job(struct store *s, uid_t uid, int64_t *ret_id, uid_t *ret_owner)
{
        return counted(s, s->db->driver->find_foreign_job(s->db, uid, ret_id, ret_owner));
}

int store_load_jobs(struct store *s, void (*cb)(void *data, const struct store_job_row *row),
                    void *data)
{
        return counted(s, s->db->driver->load_jobs(s->db, cb, data));
}

int store_load_runs(struct store *s, int64_t limit, void (*cb)(void *data, struct run_record *rec),
                    void *data)
{
        return counted(s, s->db->driver->load_runs(s->db, limit, cb, data));
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

void store_report(struct store *s, int64_t running, int64_t min_threads, int64_t max_threads)
{
        pthread_mutex_lock(&s->lock);
        s->me.running = running;
        s->me.min_threads = min_threads;
        s->me.max_threads = max_threads;
        pthread_mutex_unlock(&s->lock);
}

int store_nodes(struct store *s, struct db_node **ret, size_t *ret_n)
{
        double age;
        size_t n;

        pthread_mutex_lock(&s->lock);
        n = s->db->driver->renew ? s->nnodes : 0;
        *ret = calloc(n ? n : 1, sizeof(**ret));
        if (*ret && n) {
                memcpy(*ret, s->nodes, n * sizeof(**ret));
                age = mono_now() - s->nodes_at;
                for (size_t i = 0; i < n; i++) {
                        struct db_node *node = &(*ret)[i];

                        node->lease_age += age;
                        /* This node's as it reports now. */
                        if (strcmp(node->name, s->me.name) == 0) {
                                node->running = s->me.running;
                                node->min_threads = s->me.min_threads;
                                node->max_threads = s->me.max_threads;
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
        adopted_free(taken);
}
