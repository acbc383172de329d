/* SPDX-License-Identifier: MIT */
/*
 * An op's values, and the typed writes, by table: each builds an op with its statement's values
 * in the order of the column list the drivers share (db.h), and queues it.
 */
#define _GNU_SOURCE
#include <json-c/json.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/envs.h"
#include "store/run-record.h"
#include "store/store-internal.h"
#include "store/store.h"

/* An op's values, in the order of its statement's parameters (NULL text: a null). */

void store_op_int(struct op *op, int64_t i)
{
        op->v[op->n++] = (struct value){.type = DB_INT, .i = i};
}

void store_op_real(struct op *op, double d)
{
        op->v[op->n++] = (struct value){.type = DB_REAL, .d = d};
}

void store_op_text(struct op *op, const char *text)
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
                        store_out_of_memory();
                op->buf = buf;
                op->buf_size = size;
        }
        v->type = DB_TEXT;
        v->text = op->buf_len;
        memcpy(op->buf + op->buf_len, text, len);
        op->buf_len += len;
}

/* envs */

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
        op = store_op_new(s, DB_PUT_ENV);
        store_op_int(op, env->store_id);
        store_op_text(op, json_object_to_json_string_ext(vars, JSON_C_TO_STRING_PLAIN));
        json_object_put(vars);
        store_op_queue(s, op);
}

/* jobs: DB_JOB_COLUMNS, the columns that change while a job lives (DB_JOB_STATE_COLUMNS) last */

/* The columns that change while a job lives, last in both statements. */
static void put_state(struct op *op, const struct store_job_row *row)
{
        store_op_int(op, row->persist);
        store_op_text(op, row->state);
        store_op_int(op, row->qorder);
        store_op_real(op, row->due);
        store_op_int(op, row->runs);
        store_op_text(op, row->flow);
        store_op_real(op, row->started);
}

/* A job's whole row, as DB_PUT_JOB and DB_CLAIM_JOB begin. */
struct op *store_job_op(struct store *s, enum db_stmt stmt, const struct store_job_row *row,
                         struct env_block *env)
{
        struct op *op;

        if (env)
                put_env(s, env, row->id);
        op = store_op_new(s, stmt);
        store_op_int(op, row->id);
        store_op_int(op, row->owner);
        store_op_int(op, row->very_slow);
        store_op_text(op, row->payload);
        if (env)
                store_op_int(op, env->store_id);
        else
                op->n++;
        store_op_text(op, row->key);
        store_op_text(op, row->name);
        put_state(op, row);
        return op;
}

uint64_t store_put_job(struct store *s, const struct store_job_row *row, struct env_block *env)
{
        return store_op_queue(s, store_job_op(s, DB_PUT_JOB, row, env));
}

uint64_t store_put_job_state(struct store *s, const struct store_job_row *row)
{
        struct op *op = store_op_new(s, DB_PUT_JOB_STATE);

        store_op_int(op, row->id);
        put_state(op, row);
        return store_op_queue(s, op);
}

void store_delete_job(struct store *s, int64_t id)
{
        struct op *op = store_op_new(s, DB_DELETE_JOB);

        store_op_int(op, id);
        store_op_queue(s, op);
}

uint64_t store_claim_job(struct store *s, const struct store_job_row *row, struct env_block *env,
                         const char *queue_name, const char *what, bool may_again,
                         void (*done)(void *data, const struct db_result *res), void *data)
{
        struct op *op = store_job_op(s, DB_CLAIM_JOB, row, env);

        store_op_text(op, queue_name);
        store_op_text(op, what);
        store_op_int(op, may_again);
        op->done = done;
        op->data = data;
        return store_op_queue(s, op);
}

/* runs: DB_RUN_COLUMNS, and a run's log where the database is shared */

/* Under lock: the owner's runs are pruned at the next commit. Out of memory, at a later one. */
void store_prune_owner(struct store *s, uid_t owner)
{
        uid_t *more;

        for (size_t i = 0; i < s->npruned; i++)
                if (s->pruned[i] == owner)
                        return;
        if (s->npruned == s->pruned_size) {
                size_t size = s->pruned_size ? 2 * s->pruned_size : 8;

                more = realloc(s->pruned, size * sizeof(*more));
                if (!more)
                        return;
                s->pruned = more;
                s->pruned_size = size;
        }
        s->pruned[s->npruned++] = owner;
}

void store_add_run(struct store *s, const struct run_record *rec, int64_t history_limit)
{
        struct op *op = store_op_new(s, DB_ADD_RUN);

        store_op_int(op, rec->id);
        store_op_int(op, rec->run);
        store_op_int(op, rec->very_slow);
        store_op_int(op, rec->owner);
        store_op_text(op, rec->summary ? rec->summary : ""); /* NOT NULL: a row that fails stops all */
        store_op_real(op, rec->started);
        store_op_real(op, rec->ended);
        store_op_text(op, rec->outcome);
        store_op_int(op, rec->exit_code);
        store_op_int(op, rec->signal);
        store_op_text(op, rec->log);
        store_op_int(op, rec->oom);
        if (rec->cpu_time >= 0)
                store_op_real(op, rec->cpu_time);
        else
                op->n++;
        if (rec->memory_peak >= 0)
                store_op_int(op, rec->memory_peak);
        else
                op->n++;
        store_op_int(op, rec->leftovers);
        store_op_int(op, rec->attempt > 0 ? rec->attempt : 1);
        store_op_text(op, rec->node ? rec->node : "");
        pthread_mutex_lock(&s->lock);
        s->history_limit = history_limit;
        store_prune_owner(s, rec->owner);
        pthread_mutex_unlock(&s->lock);
        store_op_queue(s, op);
        /* Where several nodes share the database, the log goes with its record: any node shows
         * it, also once this one is gone. */
        if (s->shared && rec->log && rec->log_bytes > 0) {
                op = store_op_new(s, DB_PUT_LOG);
                store_op_int(op, rec->id);
                store_op_int(op, rec->run);
                store_op_text(op, rec->log);
                store_op_int(op, rec->log_bytes);
                store_op_queue(s, op);
        }
}

void store_put_run_spec(struct store *s, const struct run_record *rec, const char *spec)
{
        struct op *op = store_op_new(s, DB_PUT_RUN_SPEC);

        store_op_int(op, rec->id);
        store_op_int(op, rec->run);
        store_op_int(op, rec->owner);
        store_op_text(op, spec);
        store_op_queue(s, op);
}

void store_forget_log(struct store *s, int64_t id, int64_t run, const char *path)
{
        struct op *op = store_op_new(s, DB_FORGET_LOG);

        store_op_int(op, id);
        store_op_int(op, run);
        store_op_text(op, path);
        store_op_queue(s, op);
}

/* settings */

void store_put_setting(struct store *s, const char *name, double value)
{
        struct op *op = store_op_new(s, DB_PUT_SETTING);

        store_op_text(op, name);
        store_op_real(op, value);
        store_op_queue(s, op);
}

void store_delete_settings(struct store *s, const char *prefix)
{
        struct op *op = store_op_new(s, DB_DELETE_SETTINGS);

        store_op_text(op, prefix);
        store_op_queue(s, op);
}

void store_put_setting_text(struct store *s, const char *name, const char *text)
{
        struct op *op = store_op_new(s, DB_PUT_SETTING);

        store_op_text(op, name);
        store_op_text(op, text);
        store_op_queue(s, op);
}
