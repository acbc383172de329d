/* SPDX-License-Identifier: MIT */
/* Ops whose rows matter: a keyed run's start and end, and an offered job taken back (waited for
 * on a pool thread), mail between nodes, reads of other nodes' jobs, offers. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "store/db.h"
#include "store/store-internal.h"
#include "store/store.h"

/* What a thread waits on until its op is committed: freed by the last of the two. */
struct waiter {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        int refs;
        bool done, gone; /* gone: the caller stopped waiting */
        int64_t value;   /* the first number of the first row, 0 without one */
        int64_t *out;    /* where that goes too, on the store's thread, while the caller waits */
};

void store_on_mail(struct store *s, void (*on_mail)(void *data, const struct db_mail *m),
                   void *data)
{
        s->on_mail = on_mail;
        s->mail_data = data;
}

void store_send_user_mail(struct store *s, const char *to, int64_t to_epoch, int64_t session,
                          uid_t uid, const char *kind, const char *body)
{
        struct op *op = store_op_new(s, DB_SEND_MAIL);

        store_op_text(op, to);
        store_op_int(op, to_epoch);
        store_op_int(op, session);
        store_op_text(op, kind);
        store_op_text(op, body);
        if (uid == (uid_t)-1)
                op->n++; /* NULL */
        else
                store_op_int(op, uid);
        store_op_queue(s, op);
}

void store_send_mail(struct store *s, const char *to, int64_t to_epoch, int64_t session,
                     const char *kind, const char *body)
{
        store_send_user_mail(s, to, to_epoch, session, (uid_t)-1, kind, body);
}

int64_t store_rejected_rows(struct store *s, int i, const char **ret_name)
{
        return s->db->driver->rejected_rows ? s->db->driver->rejected_rows(s->db, i, ret_name)
                                            : -1;
}

void store_send_mail_all(struct store *s, const char *kind, const char *body)
{
        struct op *op = store_op_new(s, DB_SEND_MAIL_ALL);

        store_op_text(op, kind);
        store_op_text(op, body);
        store_op_queue(s, op);
}

/* A read: done(data, res) on the loop with its row. */
static void read_op(struct store *s, struct op *op,
                    void (*done)(void *data, const struct db_result *res), void *data)
{
        op->done = done;
        op->data = data;
        store_op_queue(s, op);
}

void store_find_job(struct store *s, int64_t id,
                    void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_op_new(s, DB_FIND_JOB);

        store_op_int(op, id);
        read_op(s, op, done, data);
}

void store_find_run(struct store *s, int64_t id,
                    void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_op_new(s, DB_FIND_RUN);

        store_op_int(op, id);
        read_op(s, op, done, data);
}

void store_read_log(struct store *s, int64_t id, int64_t run, int64_t offset, int64_t max,
                    void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_op_new(s, DB_READ_LOG);

        store_op_int(op, id);
        store_op_int(op, run);
        store_op_int(op, offset);
        store_op_int(op, max);
        read_op(s, op, done, data);
}

void store_list_runs(struct store *s, int64_t before_id, int64_t before_run, int64_t owner,
                     const char *outcomes, double since, int64_t limit, int64_t page_bytes,
                     int64_t record_bytes, void (*done)(void *data, const struct db_result *res),
                     void *data)
{
        struct op *op = store_op_new(s, DB_LIST_RUNS);

        if (before_id > 0) {
                store_op_int(op, before_id);
                store_op_int(op, before_run);
        } else {
                op->n += 2; /* NULL */
        }
        store_op_int(op, owner);
        store_op_text(op, outcomes);
        store_op_real(op, since);
        store_op_int(op, limit);
        store_op_int(op, page_bytes);
        store_op_int(op, record_bytes);
        read_op(s, op, done, data);
}

void store_list_jobs(struct store *s, int64_t after_id, int64_t owner, const char *state,
                     int64_t limit, void (*done)(void *data, const struct db_result *res),
                     void *data)
{
        struct op *op = store_op_new(s, DB_LIST_JOBS);

        store_op_int(op, after_id);
        store_op_int(op, owner);
        store_op_text(op, state);
        store_op_int(op, limit);
        read_op(s, op, done, data);
}

void store_read_shared_settings(struct store *s,
                                void (*done)(void *data, const struct db_result *res), void *data)
{
        read_op(s, store_op_new(s, DB_SHARED_SETTINGS), done, data);
}

void store_ended_jobs(struct store *s, const char *ids,
                      void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_op_new(s, DB_ENDED_JOBS);

        store_op_text(op, ids);
        read_op(s, op, done, data);
}

void store_count_queue_jobs(struct store *s, const char *queue,
                            void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_op_new(s, DB_COUNT_QUEUE_JOBS);

        store_op_text(op, queue);
        read_op(s, op, done, data);
}

void store_list_nodes(struct store *s, void (*done)(void *data, const struct db_result *res),
                      void *data)
{
        read_op(s, store_op_new(s, DB_LIST_NODES), done, data);
}

void store_pause_node(struct store *s, const char *name, bool paused,
                      void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_op_new(s, DB_PAUSE_NODE);

        store_op_text(op, name);
        store_op_int(op, paused);
        read_op(s, op, done, data);
}

void store_forget_node(struct store *s, const char *name,
                       void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_op_new(s, DB_FORGET_NODE);

        store_op_text(op, name);
        read_op(s, op, done, data);
}

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
                store_out_of_memory();
        pthread_mutex_init(&w->lock, NULL);
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&w->cond, &attr);
        pthread_condattr_destroy(&attr);
        w->refs = 2;
        w->out = out;
        op = store_op_new(s, stmt);
        store_op_int(op, id);
        if (stmt == DB_KEY_END)
                store_op_int(op, arg2);
        op->done = wake;
        op->data = w;
        op->on_store = true;
        store_op_queue(s, op);
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

void store_offer_job(struct store *s, int64_t id, const char *queue, int priority,
                     double queued_at, const char *pin)
{
        struct op *op = store_op_new(s, DB_OFFER_JOB);

        store_op_int(op, id);
        store_op_text(op, queue);
        store_op_int(op, priority);
        store_op_real(op, queued_at);
        store_op_text(op, pin);
        store_op_queue(s, op);
}

int store_reclaim_job(struct store *s, int64_t id, bool (*give_up)(void *arg), void *arg)
{
        int64_t mine = 0;
        int r = call_wait(s, DB_RECLAIM_JOB, id, 0, NULL, give_up, arg, &mine);

        return r < 0 ? r : mine > 0;
}

void store_reclaim_job_then(struct store *s, int64_t id,
                            void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_op_new(s, DB_RECLAIM_JOB);

        store_op_int(op, id);
        op->done = done;
        op->data = data;
        store_op_queue(s, op);
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
