/* SPDX-License-Identifier: MIT */
/*
 * A job: a slowwork item with a shell or plugin payload. Reference counted: the registry's tables
 * hold one reference while the job is live, the pool one per queue entry, and work in flight its
 * own. Everything but the counters and the run in progress belongs to the loop thread.
 */
#ifndef SLOWWORKD_JOB_H
#define SLOWWORKD_JOB_H

#include <json-c/json.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "methods.h"
#include "run/run.h"
#include "slowwork-plugin.h"
#include "slowwork.h"
#include "store/envs.h"
#include "store/store.h"

struct cron;
struct queue;
struct metrics_queue;
struct run_record;
struct user;
struct users;
struct answer;

/* What every job refers to, made once by the daemon (jobs/daemon.c). */
struct job_shared {
        const struct slow_work_ops *ops; /* what the pool does with a job (item.c) */
        struct users *users;             /* the per-user limits its runs count against */
        struct envs envs;                /* loop */
        struct plugins plugins;          /* loop */
        struct run_context run;          /* the runners' */
        struct job_extra *limits_alone;  /* loop: the extras jobs share, of limits alone */
        const char *node;                /* the node's name (run_record_node()'s) */
        struct store *store;             /* where keyed runs start and end (shared database) */
};

/* A job's place in a per-user table (users.c); user is fixed while the job is live. Whether its
 * run is held back on that owner's list is a flag of the job's (users_init). */
struct job_user_link {
        struct user *user;       /* its owner's entry (NULL: not counted) */
        struct job *next, *prev; /* that owner's live jobs */
        bool grant;              /* atomic: its queued run was let go by fair share */
        bool granted_run;        /* its run in progress (or held again) came from a grant */
        int64_t bytes;           /* its job_bytes() as counted in its owner's */
};

/* What few jobs have: limits, a timeout, retries, a schedule, a plugin's payload, an on-end
 * command. Fixed at the
 * first submit; jobs with none of it share job_no_extra, jobs with the same limits and nothing
 * else one of job_shared's. */
struct job_extra {
        struct sw_limits limits; /* a shell job's, defaults applied; members may be unset */
        double timeout;
        int64_t retries;    /* runs again after failed, killed or timed-out, this often */
        double retry_delay; /* before the first retry; doubled for each next one */
        double every;       /* a recurring job's period, or */
        struct cron *cron;  /* its schedule; NULL for neither */
        char *cron_expr;    /* that schedule as given */
        struct plugin *plugin; /* a plugin job's */
        slowwork_plugin_entry *plugin_entry;
        char *entry;
        json_object *arg; /* loop: compared by later submits with its key */
        char *arg_text;   /* what the entry point gets */
        char *on_end;     /* a shell command run after each of its runs (jobs/on-end.c) */
        char *node;       /* the node it runs on alone (jobs/claims.c), or NULL: any */
        unsigned refs;    /* loop: the jobs that share it, one with limits alone; else 0 */
        struct job_extra *next; /* loop: the shared ones (job_shared) */
};


/* Its 8-byte members first, then the 4-byte ones, then the flags: no padding between them; its
 * strings last, in the same allocation. */
struct job {
        struct delayed_slow_work dw; /* first: the pool's item */
        struct job_shared *shared;
        int64_t id;
        struct queue *queue; /* its pool, its pause; the queue has it counted while it is live */
        struct job *hnext, *knext; /* the registry's tables */
        struct job *onext, *oprev; /* the registry's live jobs in the order of their ids */

        /* What it runs; fixed at the first submit (its strings last: job_argv() and others). */
        struct env_block *env; /* shared; NULL: the daemon's own environment */
        const struct job_extra *x;
        char *payload; /* JSON: the above as the state database keeps it, until its first row
                        * is written (a restored job's row has it: NULL) */

        int64_t qorder;   /* loop: when it was last queued, for the order after a restart */
        uint64_t saved_seq; /* loop: the state database write of its row's last change */
        double due;       /* loop: wall clock time a delayed enqueue is due, else 0 */
        double queued_at; /* loop: wall clock its next run was queued (or is due); 0: none */
        struct metrics_queue *counted_in; /* loop: where metrics count it (NULL: nowhere), */
        struct answer *waiters;   /* loop: wait requests, answered when it goes idle */
        struct answer *cancels;   /* loop: cancel requests, answered when its run ends */
        void *claim;      /* loop: the submit whose key it claims among the nodes, until told */

        /* Its flow (loop), kept in its row's flow column. */
        int64_t *after, *after_any; /* what it still waits for, 0-terminated (NULL: nothing) */
        int64_t attempt;            /* atomic: the attempt the next run is (1 after a submit) */
        double next_run;            /* wall clock: a retry's or a recurring job's next tick */
        double submitted;           /* wall clock: its submit; 0: not known (an older row) */
        int64_t key_starts; /* atomic: its runs whose start the shared database has (keyed) */

        /* The run in progress: the runner's, read by the loop. */
        int64_t runs_started; /* atomic */
        double run_started;   /* atomic: the wall clock the last run started at */
        struct job_user_link user_link;       /* loop: in the daemon's per-user limits */
        struct job_user_link queue_user_link; /* loop: in its queue's */
        struct suspend suspend; /* its run's processes stopped (suspend, continue) */
        /* A run the daemon's last program handed over (reexec): its next item takes it up; and
         * the run its item hands over now. The pool thread's, then the loop's. */
        struct run_handover *resume, *handed;

        struct run_record *last; /* loop: the last finished run */
        int64_t runs_ended;      /* loop: runs whose end the loop has seen */
        int64_t deferred_after;  /* loop: the run in progress when an enqueue here asked for
                                  * one more after it (0: none) */
        int64_t strings_size;    /* loop: the bytes of its strings' block (job_bytes()) */

        uid_t owner;
        int refs;          /* atomic */
        unsigned handles;  /* loop: hold handles, and the daemon's own for persist */
        int counted_state; /* loop: under which of metrics_states metrics count it */
        unsigned visit;    /* loop: the dependency walk that saw it last */
        pid_t pid;         /* atomic: the run's process group, 0 when none */
        int kick_fd;       /* under job_run_lock(): the run's eventfd, -1 between runs */
        unsigned cancelling; /* atomic: cancels in progress; a run seeing it stops */
        int priority;        /* loop: within its queue and class, higher first (its item's too) */

        bool very_slow;   /* fixed at the first submit */
        bool persist;
        bool live;        /* loop: in the registry's tables */
        bool waiting;     /* loop: out of the pool until what it waits for has ended */
        bool retry_due;   /* loop: a retry is queued once the pool lets go of the run */
        bool resuming;    /* loop: a run handed over (reexec) is queued to be taken up: in
                           * progress for the loop (job_executing), until it starts */
        bool enqueued_resuming; /* loop: enqueued meanwhile: queued once it is taken up */
        bool held;        /* atomic: its run waits, on the gate or for its owner's turn
                           * (pending, not queued) */
        bool gate_listed; /* loop: on the daemon's gate */
        bool gate_counted; /* loop: and counted in its queue's gate_waiting */
        bool user_listed, queue_user_listed; /* loop: its run held back on the per-user lists */
        bool own_summary, has_name, has_key; /* which of its strings it has */
        bool key_shared;  /* fixed while live: keyed, its key held among the nodes' jobs */
        bool key_again;   /* atomic: asked by another node to run once more, told at its end */
        bool stashed;     /* loop: kept out of the pool until enqueue releases it */
        bool offered;     /* atomic: offered to the other nodes (jobs/claims.c): its start here
                           * takes it back first */
        bool lost;        /* loop: another node claimed it: it leaves once that node is known */
        bool offer_counted; /* loop: offered for want of threads, in claims' budget */
        bool shell_command; /* a "command" for /bin/sh -c, not an "argv" */

        /* A shell job's argv (the array, then its strings) and cwd; its summary (unless that
         * is argv's last: a command, or a program alone), its name and key, if given: in
         * strings_own, or, once edited, a block of its own (changed only while no thread can
         * start the job: job_strings_swap()). */
        char *strings;
        _Alignas(char *) char strings_own[];
};

/* Its strings: a shell job's argv and cwd (a plugin job's: NULL), the summary status and
 * records show, its name and key (NULL: none). */
char **job_argv(const struct job *job);
const char *job_cwd(const struct job *job);
const char *job_summary(const struct job *job);
const char *job_name(const struct job *job);
const char *job_key(const struct job *job);

/* In queue (p->queue names it); limits: a shell job's, with the defaults applied (NULL: none). */
int job_new(struct job_shared *shared, uid_t owner, struct queue *queue,
            const struct sw_submit_params *p, const struct sw_limits *limits, struct job **ret,
            char *err, size_t errlen);
/* The same for a job of the state database, whose row is written already. */
int job_new_restored(struct job_shared *shared, uid_t owner, struct queue *queue,
                     const struct sw_submit_params *p, const struct sw_limits *limits,
                     struct job **ret, char *err, size_t errlen);
struct job *job_ref(struct job *job);
/* The lock kick_fd is under: one of a few that jobs share (taken alone, never two at once). */
pthread_mutex_t *job_run_lock(const struct job *job);
void job_unref(struct job *job);
/* Whether a resubmit under the same key asks for the same work. */
bool job_same_payload(const struct job *job, const struct sw_submit_params *p);
/* That work as a text two nodes compare (a new string; NULL: out of memory). */
char *job_what(const struct job *job);
/* What an edit changes; NULL: kept. */
struct job_change {
        const char *command, *name, *cwd;
        char *const *argv;
};
/* A job's strings as a change makes them, until swapped in. */
struct job_strings {
        char *block;
        size_t size; /* of block */
        bool own_summary, has_name, has_key, shell_command;
};
/* The strings the change makes of the job's: 0, -ENOMEM, or -EINVAL with err said (a command
 * for an argv job or argv for a command's, a relative cwd, a plugin job's command). */
int job_strings_new(const struct job *job, const struct job_change *change,
                    struct job_strings *ret, char *err, size_t errlen);
/* The job takes them, and s gets the ones it had, for job_strings_free(). Only while no thread
 * can start the job (slow_work_call_unless_executing()). */
void job_strings_swap(struct job *job, struct job_strings *s);
void job_strings_free(const struct job *job, struct job_strings *s);
/* What the job runs as the state database keeps it (the payload of its row), in queue (its
 * queue's name), for a row written again after an edit: a new string, or NULL when out of
 * memory. */
char *job_payload(const struct job *job, const char *queue);
/* The bytes the job keeps for what it runs, which max-job-bytes-per-user bounds: its strings
 * (argv or command, cwd, summary, name, key), its environment (shared or not), a plugin's
 * argument and its on-end command. */
int64_t job_bytes(const struct job *job);
/* Wakes the job's run, if one is in progress, to look at why it should stop. */
void job_kick(struct job *job);
const char *job_state(struct job *job); /* pending, running, waiting, stashed or idle */
/* Whether a run of it is in progress: its item executes, or a run handed over waits for it to
 * (loop thread). */
bool job_executing(struct job *job);
/* Neither pending, running, waiting, stashed nor due to retry, and the loop has seen the end of
 * every run (loop thread). */
bool job_idle(struct job *job);
json_object *job_to_json(struct job *job);
/* The job's state and id, as a cancel's reply and an enqueue's give them (extra: a flag). */
json_object *job_state_result(struct job *job, const char *extra);
/* Whether the job recurs (every or cron). */
bool job_recurs(const struct job *job);
/* Its row in the state database, with state (NULL: its own); job_row_free() once written. */
void job_row(struct job *job, const char *state, struct store_job_row *ret);
void job_row_free(struct store_job_row *row);

#endif
