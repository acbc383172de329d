/* SPDX-License-Identifier: MIT */
/*
 * What the store's files share, and no other: store.c (the queue of writes and its thread),
 * store-nodes.c (a node of a shared database: ids, lease, adopted jobs, the others) and
 * store-calls.c (ops whose rows matter, waited for on a thread or told to the loop).
 */
#ifndef SLOWWORKD_STORE_INTERNAL_H
#define SLOWWORKD_STORE_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "store/db.h"

struct adopted; /* store-nodes.c's */
struct env_block;
struct store_job_row;

#define OP_VALUES_MAX 17

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
        bool superseded; /* store thread: a delete later in its batch makes it moot */
};

struct store {
        int lock_fd; /* flock()ed: one daemon per state folder */
        struct db *db;
        bool shared; /* with other nodes: its driver renews leases (store_shared()) */

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
        int64_t history_limit;                /* under lock: for pruning, per owner */
        uid_t *pruned;                        /* under lock: owners with runs added since the */
        size_t npruned, pruned_size;          /* last prune, each once */
        int64_t max_id;  /* under lock: the highest job id, written once a batch */
        bool max_id_new; /* under lock: since the last batch */

        uint64_t committed; /* atomic */
        uint64_t errors;    /* atomic: reads and commits that failed */
        char *failure;      /* under lock */
        double retry;       /* under lock: seconds before the next try of a failing commit */
        uv_async_t async;
        unsigned wakes; /* atomic: enum store_wake since on_wake last ran */
        void (*on_wake)(void *data, unsigned what);
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
        double nodes_since;     /* under lock: when the renewal that saw them began */
        struct adopted *adopted, **adopted_tail; /* under lock: taken, for the loop */
        struct db_claim *claims; /* under lock: what the loop asks to claim (queues copied) */
        size_t nclaims;
        bool claiming;           /* under lock: from store_claim() until the loop is told */
        bool claim_failing;      /* store thread: the last claim failed */
};

/* store.c. An op (loop, or a pool thread; out of memory is fatal: an accepted job must not be
 * lost), queued: its sequence number. */
void store_out_of_memory(void);
struct op *store_op_new(struct store *s, enum db_stmt stmt);
uint64_t store_op_queue(struct store *s, struct op *op);
/* store-writes.c: its values, in order. */
void store_op_int(struct op *op, int64_t i);
void store_op_real(struct op *op, double d);
void store_op_text(struct op *op, const char *text);
/* Any thread: tells the loop what happened (enum store_wake), which on_wake gets. */
void store_wake_loop(struct store *s, unsigned what);
/* Under lock: the owner's runs beyond history-limit go at the next commit. */
void store_prune_owner(struct store *s, uid_t owner);

/* A job's whole row, as DB_PUT_JOB and DB_CLAIM_JOB begin (its environment's row queued). */
struct op *store_job_op(struct store *s, enum db_stmt stmt, const struct store_job_row *row,
                        struct env_block *env);

/* store-nodes.c. */
double store_mono_now(void);
/* The ids this daemon starts from (at open). */
int store_first_ids(struct store *s);
void store_adopted_free(struct adopted *a);
/* A shared store's thread, under lock: whether store_node_duties() has something to do now, and
 * doing it (the lock let go meanwhile). */
bool store_duties_due(const struct store *s);
void store_node_duties(struct store *s);

#endif
