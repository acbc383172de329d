/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "store/db.h"
#include "store/run-record.h"
#include "store/store.h"
#include "store/store-internal.h"
#include "util/log.h"

#define OP_SPARE_MAX 4096 /* ops kept for reuse: a burst's, never the heap's holes between jobs */

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
        snprintf(s->me.queues, sizeof(s->me.queues), "*"); /* until store_report() */
        opened = store_mono_now();
        r = s->node ? take_folder(s, config->dir) : -ENOMEM;
        if (r == 0 && config->conninfo && *config->conninfo)
                r = db_pg_open(config->conninfo, config->schema, &s->me, s->lease_time,
                               config->timeout, config->key, &s->db);
        else if (r == 0)
                r = db_sqlite_open(config->dir, &s->db);
        if (r == 0) {
                s->shared = s->db->driver->renew != NULL;
                r = store_first_ids(s);
        }
        if (r < 0) {
                store_free(s);
                return r;
        }
        /* The join was sent after opened: the lease holds at least this long. The live nodes
         * are known before the daemon serves: mail goes to the epoch of a node. */
        if (s->shared) {
                double since = store_mono_now();

                s->lease_until = opened + s->lease_time;
                if (s->db->driver->renew(s->db, &s->me, &s->nodes, &s->nnodes) == 0) {
                        s->nodes_at = store_mono_now();
                        s->nodes_since = since;
                }
        }
        s->renew_at = opened + s->lease_renew;
        *ret = s;
        return 0;
}

/* The statements that only read: they wait for no commit, and none waits for them. A node's
 * row forgotten is answered as they are (no row when its batch failed): its asker is told, and
 * asks again, rather than have it tried again. */
static bool is_read(enum db_stmt stmt)
{
        return stmt == DB_FIND_JOB || stmt == DB_LIST_JOBS || stmt == DB_FIND_RUN ||
               stmt == DB_READ_LOG || stmt == DB_LIST_RUNS || stmt == DB_SHARED_SETTINGS ||
               stmt == DB_COUNT_QUEUE_JOBS || stmt == DB_ENDED_JOBS || stmt == DB_LIST_NODES ||
               stmt == DB_FORGET_NODE || stmt == DB_PAUSE_NODE;
}

#define LOG_KEPT_MAX (64 * 1024 * 1024) /* a shared database keeps a log's first bytes */

/* Store thread: a finished run's log file (op: id, run, path, size) as the blob of its row, its
 * first LOG_KEPT_MAX bytes; 0 without a row when the file is gone (a log removed for a user's
 * budget is no more kept) or there is no memory for it (a log not kept, not a job lost). */
static int run_put_log(struct store *s, struct op *op)
{
        int64_t size = op->v[3].i < LOG_KEPT_MAX ? op->v[3].i : LOG_KEPT_MAX;
        char *data = malloc(size > 0 ? (size_t)size : 1);
        int fd = data ? open(op->buf + op->v[2].text, O_RDONLY | O_NOFOLLOW | O_CLOEXEC) : -1;
        ssize_t n = 0;
        int r = 0;

        if (fd >= 0) {
                n = pread(fd, data, (size_t)size, 0);
                close(fd);
        }
        if (n > 0)
                r = s->db->driver->run(
                        s->db, DB_PUT_LOG,
                        (struct db_value[]){{.type = DB_INT, .i = op->v[0].i},
                                            {.type = DB_INT, .i = op->v[1].i},
                                            {.type = DB_BLOB, .i = n, .text = data}},
                        3, NULL);
        free(data);
        return r;
}

/* Store thread: runs one queued write. */
static int run_op(struct store *s, struct op *op)
{
        struct db_value v[OP_VALUES_MAX];
        int i;

        if (op->stmt == DB_PUT_LOG)
                return run_put_log(s, op);
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

/* The writes of a batch that a later delete in it makes moot. */
struct deleted {
        int64_t id;
        size_t at; /* the position of its last delete in the batch */
};

static int by_id(const void *a, const void *b)
{
        const struct deleted *x = a, *y = b;

        return x->id < y->id ? -1 : x->id > y->id;
}

static int by_id_at(const void *a, const void *b)
{
        const struct deleted *x = a, *y = b;

        return by_id(a, b) ? by_id(a, b) : x->at < y->at ? -1 : x->at > y->at;
}

/* Whether the deletes are in order already: jobs end mostly in the order they were made. */
static bool in_order(const struct deleted *del, size_t n)
{
        for (size_t i = 1; i < n; i++)
                if (by_id_at(&del[i - 1], &del[i]) > 0)
                        return false;
        return true;
}

/* Store thread: marks the job writes (without done) of a batch that a delete of the job later
 * in it makes moot, where the driver says so and the batch reads nothing. */
static void mark_superseded(const struct db_driver *d, struct op *batch)
{
        struct deleted *del, key, *hit;
        size_t n = 0, at;
        struct op *op;
        bool reads = false;

        for (op = batch; op; op = op->next) {
                op->superseded = false;
                /* A read sees the rows as the batch wrote them up to it. */
                reads |= is_read(op->stmt);
                n += op->stmt == DB_DELETE_JOB && !op->done;
        }
        if (!d->delete_supersedes || reads || n == 0)
                return;
        del = malloc(n * sizeof(*del));
        if (!del)
                return; /* every write is run, as without this */
        n = 0;
        for (op = batch, at = 0; op; op = op->next, at++)
                if (op->stmt == DB_DELETE_JOB && !op->done)
                        del[n++] = (struct deleted){op->v[0].i, at};
        if (!in_order(del, n))
                qsort(del, n, sizeof(*del), by_id_at);
        for (op = batch, at = 0; op; op = op->next, at++) {
                if ((op->stmt != DB_PUT_JOB && op->stmt != DB_PUT_JOB_STATE) || op->done)
                        continue;
                key.id = op->v[0].i;
                hit = bsearch(&key, del, n, sizeof(*del), by_id);
                /* The last delete of the id. */
                while (hit && hit + 1 < del + n && hit[1].id == key.id)
                        hit++;
                op->superseded = hit && hit->at > at;
        }
        free(del);
}

/* The owners as a JSON array, "[1000,1001]", for the prune's statement; NULL when out of memory
 * (nothing is pruned this time). */
static char *owners_text(const uid_t *owners, size_t n)
{
        char *text = malloc(n * 12 + 3), *at = text;

        if (!text)
                return NULL;
        *at++ = '[';
        for (size_t i = 0; i < n; i++)
                at += sprintf(at, "%s%u", i ? "," : "", (unsigned)owners[i]);
        strcpy(at, "]");
        return text;
}

/* Store thread: one transaction for the whole batch, with the highest id so far (so that ids go
 * on after every job and run is gone), and each owner's runs beyond prune_limit dropped; why it
 * failed in *why. */
static int commit(struct store *s, struct op *batch, int64_t prune_limit, const uid_t *owners,
                  size_t nowners, int64_t max_id, char **why)
{
        const struct db_driver *d = s->db->driver;
        struct op *op;
        int r = d->begin(s->db);
        char **logs = NULL;
        bool forgets = false;

        mark_superseded(d, batch);
        for (op = batch; r == 0 && op; op = op->next) {
                if (!op->superseded)
                        r = run_op(s, op);
                forgets |= op->stmt == DB_FORGET_LOG;
        }
        if (r == 0 && prune_limit > 0 && nowners > 0) {
                char *text = owners_text(owners, nowners);

                if (text)
                        r = d->prune(s->db, prune_limit, text, &logs);
                free(text);
        }
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
                uid_t *owners;
                size_t nowners;
                char *why = NULL;
                int r;

                while (!s->head && !s->stop && !(s->shared && store_duties_due(s)))
                        wait_until(s, s->shared && !s->lease_lost ? s->renew_at : INFINITY);
                if (s->shared)
                        store_node_duties(s);
                if (!s->head && s->stop)
                        break;
                if (!s->head)
                        continue;
                batch = s->head;
                s->head = NULL;
                s->tail = &s->head;
                last = __atomic_load_n(&s->queued, __ATOMIC_RELAXED);
                prune_limit = s->history_limit;
                owners = s->pruned;
                nowners = s->npruned;
                s->pruned = NULL;
                s->npruned = s->pruned_size = 0;
                max_id = s->max_id_new ? s->max_id : 0;
                s->max_id_new = false;
                pthread_mutex_unlock(&s->lock);

                r = commit(s, batch, prune_limit, owners, nowners, max_id, &why);

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
                        for (size_t i = 0; i < nowners; i++)
                                store_prune_owner(s, owners[i]);
                        free(owners);
                        s->max_id_new |= max_id > 0;
                        store_wake_loop(s, STORE_COMMITTED); /* so that the loop sees the failure */
                        if (s->stop)
                                break; /* stopping: what could not be written stays lost */
                        wait_to_retry(s);
                        continue;
                }
                free(owners);
                s->retry = 0;
                if (s->failure)
                        log_info("%s: writing again", s->db->name);
                free(s->failure);
                s->failure = NULL;
                __atomic_store_n(&s->committed, last, __ATOMIC_RELEASE);
                pthread_mutex_unlock(&s->lock);
                spare_ops(s, batch);
                store_wake_loop(s, STORE_COMMITTED);
                pthread_mutex_lock(&s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

void store_wake_loop(struct store *s, unsigned what)
{
        __atomic_fetch_or(&s->wakes, what, __ATOMIC_RELEASE);
        uv_async_send(&s->async);
}

/* The driver's thread. */
static void mail_arrived(void *data)
{
        store_wake_loop(data, STORE_MAIL);
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
        unsigned what = __atomic_exchange_n(&s->wakes, 0, __ATOMIC_ACQUIRE);

        deliver_finished(s);
        if ((what & STORE_MAIL) && s->mail_started) {
                struct db_mail *mail = s->db->driver->mail_take(s->db);

                for (struct db_mail *m = mail; m && s->on_mail; m = m->next)
                        s->on_mail(s->mail_data, m);
                db_mail_free(mail);
        }
        if (what)
                s->on_wake(s->data, what);
}

int store_start(struct store *s, uv_loop_t *loop, void (*on_wake)(void *data, unsigned what),
                void *data)
{
        int r;

        s->on_wake = on_wake;
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
        free(s->pruned);
        store_adopted_free(s->adopted);
        for (size_t i = 0; i < s->nclaims; i++)
                free((char *)s->claims[i].queue);
        free(s->claims);
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

void store_out_of_memory(void)
{
        log_error("Out of memory for the state database");
        abort();
}

/* Loop thread: a new write, a spare one if there is one. Out of memory here is fatal: an
 * accepted job must not be lost. */
struct op *store_op_new(struct store *s, enum db_stmt stmt)
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
                store_out_of_memory();
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

/* Any thread: the op's sequence number. */
uint64_t store_op_queue(struct store *s, struct op *op)
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

