/* SPDX-License-Identifier: MIT */
/*
 * One queue across the nodes of a shared database. A run queued beyond what this node can start
 * now is offered to the others at the end of the loop iteration that queued it (the job stays
 * this node's until one claims it, and its start here takes it back first: item.c); a node with
 * free threads claims offered jobs of its queues (store_claim: one transaction, FOR UPDATE SKIP
 * LOCKED), woken by the offering node's mail or seeing offers at a renewal; a job claimed
 * elsewhere leaves this node without a write, and the requests that wait for it go where it
 * went. Loop thread only.
 */
#ifndef SLOWWORKD_CLAIMS_H
#define SLOWWORKD_CLAIMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

struct daemon;
struct db_mail;
struct job;
struct store_job_row;

#define CLAIMS_OFFERED_MAIL "offered" /* to every node: jobs were offered */
#define CLAIMS_TAKEN_MAIL "taken"     /* to every node: the jobs of the body's array were claimed */

struct claims {
        uv_prepare_t prepare;  /* started while runs queued this iteration may be offered */
        struct job **queued;   /* those runs' jobs, each a reference */
        size_t n, size;
        bool offers_seen;      /* another node may offer jobs: a claim may find some */
        bool claiming;         /* a claim is under way (store_claim) */
        int64_t wanted, got;   /* what it asked for, and what it got */
        char *taken;           /* the ids it got, for the mail: "[1,2" (NULL: none) */
        size_t taken_len;
};

int claims_init(struct claims *c, uv_loop_t *loop, struct daemon *d);
void claims_close(struct claims *c);
/* The job's run was queued now (not delayed): it may be offered at the iteration's end. */
void claims_queued(struct daemon *d, struct job *job);
/* Threads may be free: a claim is made if another node may offer jobs. */
void claims_look(struct daemon *d);
/* Mail of CLAIMS_OFFERED_MAIL or CLAIMS_TAKEN_MAIL from another node. */
void claims_mail(struct daemon *d, const struct db_mail *m);
/* The renewal saw what the nodes offer. */
void claims_renewed(struct daemon *d);
/* A claimed row was restored (restore.c): counted, and its id told to its node. */
void claims_adopted(struct daemon *d, const struct store_job_row *row);
/* The claim under way was made (STORE_CLAIMED): its jobs are restored first, by the caller. */
void claims_claimed(struct daemon *d);
/* The job leaves this node (another node claimed it): its run out of the pool and off the lists
 * that hold runs back, the tables without a write (its row is the other node's), and the
 * requests that wait for it made again there. */
void claims_let_go(struct daemon *d, struct job *job);
/* The job, offered, was claimed by another node: once the database says which, it leaves this
 * node and the requests waiting for it go there; then done(data) (done may be NULL). */
void claims_lost(struct daemon *d, struct job *job, void (*done)(void *data), void *data);

#endif
