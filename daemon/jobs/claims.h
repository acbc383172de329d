/* SPDX-License-Identifier: MIT */
/*
 * One queue across the nodes of a shared database. A run queued beyond what this node can start
 * now is offered to the others at the end of the loop iteration that queued it (the job stays
 * this node's until one claims it, and its start here takes it back first: item.c); a node with
 * free threads claims offered jobs of its queues (store_claim: one transaction, FOR UPDATE SKIP
 * LOCKED), woken by the offering node's mail or seeing offers at a renewal; a job claimed
 * elsewhere leaves this node without a write, and the requests that wait for it go where it
 * went. A job placed on another node (submit's node), or of a queue that this node's
 * node-queues leaves out, is never started here: it is held and offered until a node that may
 * run it claims it. Loop thread only.
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
#define CLAIMS_TAKEN_MAIL   "taken"   /* to every node: the jobs of the body's array were claimed */

struct claims {
        uv_prepare_t prepare; /* started while runs queued this iteration may be offered */
        struct job **queued;  /* those runs' jobs, each a reference */
        size_t n, size;
        bool offers_seen;    /* another node may offer jobs: a claim may find some */
        bool claiming;       /* a claim is under way (store_claim) */
        int64_t wanted, got; /* what it asked for, and what it got */
        char *taken;         /* the ids it got, for the mail: "[1,2" (NULL: none) */
        size_t taken_len;
        int64_t offered;   /* its runs offered for want of threads (the budget's use) */
        bool rescan;       /* all that waits here is looked at at the iteration's end */
        struct job **away; /* runs held here for another node (EVENT_HELD_AWAY): references */
        size_t naway, away_size;
        uv_timer_t later; /* what waits here is looked at again then: a delayed run falls due, */
        double later_at;  /* or a run deferred while it ran is queued again (0: not set) */
};

int claims_init(struct claims *c, uv_loop_t *loop, struct daemon *d);
void claims_close(struct claims *c);
/* The job's run did not start: it runs on another node (EVENT_HELD_AWAY). It is held here,
 * offered, until a node that may run it claims it. */
void claims_hold_away(struct daemon *d, struct job *job);
/* It is held no more (a cancel): whether it was. */
bool claims_drop_away(struct daemon *d, struct job *job);
/* node-queues changed: the runs held for a queue this node serves now are queued again. */
void claims_settings_changed(struct daemon *d);
/* Why the job waits for another node (a new string), or NULL when it runs here. */
char *claims_why_away(struct daemon *d, const struct job *job);
/* The job's run started here (EVENT_STARTED): offered before, it is no more. d->claims only. */
void claims_started(struct daemon *d, struct job *job);
/* The job, offered, was taken back (DB_RECLAIM_JOB said it is still this node's): one held
 * here for another node is offered again at the iteration's end. */
void claims_taken_back(struct daemon *d, struct job *job);
/* The run was held on the gate (EVENT_HELD): a paused node offers it. */
void claims_held(struct daemon *d, struct job *job);
/* This node's own pause (pause with node), kept in its row of nodes: paused, it starts nothing,
 * claims nothing and offers every queued run; resumed, the gate lets its runs go. */
void claims_pause_node(struct daemon *d, bool paused);
/* Whether a node of that name is this one, is live as the last renewal saw, or is the one the
 * database had for the submit being served (d->node_listed). */
bool claims_node_known(struct daemon *d, const char *name);
/* Threads may be free: a claim is made if another node may offer jobs. */
void claims_look(struct daemon *d);
/* The job's run ended here (EVENT_ENDED): a thread is free, and a run deferred while it ran is
 * queued once the pool lets go of it, to be offered then. d->claims only. */
void claims_run_ended(struct daemon *d, struct job *job);
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
