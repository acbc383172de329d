/* SPDX-License-Identifier: MIT */
/*
 * The daemon's shared state: the registry of live jobs and what waits on them (wait and cancel
 * requests as answers, the handles held on them, counted), the queues with the pools that run
 * them, the settings, the history of finished runs and the state database they are kept in.
 * Loop thread only.
 */
#ifndef SLOWWORKD_DAEMON_H
#define SLOWWORKD_DAEMON_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <uv.h>

#include "jobs/deps.h"
#include "jobs/burst.h"
#include "jobs/events.h"
#include "jobs/job.h"
#include "jobs/gate.h"
#include "jobs/metrics-file.h"
#include "jobs/metrics.h"
#include "jobs/on-end.h"
#include "jobs/pause.h"
#include "jobs/queue.h"
#include "jobs/registry.h"
#include "jobs/schedule.h"
#include "jobs/users.h"
#include "methods.h"
#include "run/run.h"
#include "store/history.h"

struct answer;
struct claims;
struct conn;
struct drain_wait;
struct live_elsewhere {
        int64_t id;
        uid_t owner;
};

struct daemon {
        struct registry registry;               /* the live jobs */
        struct queue *queues;                   /* the default queue first (jobs/queues.c) */
        json_object *file_queues, *kept_queues; /* the file's queue lines; the kept, until made */
        struct store *store;
        struct sw_settings settings;
        json_object *kept; /* settings.set's changes, as the state database keeps them */
        struct job_shared shared;
        struct events events;
        struct burst burst; /* the pools enqueued into since the loop last waited, plugged */
        struct contain contain;
        struct inflight inflight;
        struct supervisor supervisor; /* stops what the runs leave, should the daemon die */
        struct fence_context fence;   /* a shared store's: each run's, should the node die */
        struct history history;
        struct history learned; /* other nodes' runs read from a shared database since */
        struct relay *relay;    /* requests about other nodes' jobs go there (NULL: none) */
        struct gate gate;       /* runs held back: for free space, or paused */
        struct pause pause;
        struct pause node_pause; /* this node's own (a shared database's: pause with node) */
        uint64_t shared_changes;        /* this node's changes of the rows all nodes share */
        struct drain_wait *drain_waits; /* pauses with drain not answered yet (jobs/drain.c) */
        int64_t last_drain;             /* their numbers, from a random start */
        struct users users;             /* per-user limits, and runs held back by them */
        struct on_end on_end;           /* the on-end commands after runs, on a pool of theirs */
        struct deps deps;               /* jobs waiting for others to end */
        /* While a submit is served: the live jobs of other nodes that it may wait for, as the
         * database said (methods/elsewhere.c), each of its owner (NULL: none). */
        const struct live_elsewhere *live_elsewhere;
        size_t nlive_elsewhere;
        /* While a submit is served: the node it places its job on, which the database has
         * though the last renewal did not see it live (methods/elsewhere.c), or NULL. */
        const char *node_listed;
        bool reading_deps; /* the ends of other nodes' jobs are being read (deps-elsewhere.c) */
        struct schedule schedule; /* recurring jobs */
        struct metrics metrics;
        struct metrics_file metrics_file; /* its text comes from whoever sets render */
        int64_t next_qorder;              /* the order of the runs queued, the last given */
        /* Each change of a job's state, and a run's end (NULL: none): for subscribers. */
        void (*on_event)(void *data, const struct job *job, const char *state,
                         const struct run_record *ended);
        void *event_data;
        struct inflight_run *crashed; /* start: the runs the last daemon died running */
        size_t ncrashed;
        struct run_handover *handed; /* runs handed over for a reexec (jobs/lifecycle.c) */
        /* The reload method's way to the daemon's reload, which answers request id on c later:
         * 0, or -ENOMEM. */
        int (*reload)(void *data, struct conn *c, json_object *id);
        /* The reexec method's way to the daemon's reexec (reexec.h), with reload_data: 0 (the
         * request answered later), or -errno with why in err. */
        int (*reexec)(void *data, struct conn *c, json_object *id, char *err, size_t len);
        void *reload_data;
        /* A shared database's: what this node offers to and claims from the others
         * (jobs/claims.c), which hears of each run queued, now or for later (job->due), and
         * of each restored (NULL: none). */
        struct claims *claims;
        void (*on_queued)(struct daemon *d, struct job *job);
};

/* What the daemon starts from; the strings must outlive it. */
struct daemon_config {
        uv_loop_t *loop;
        struct store *store;
        const struct sw_settings *settings;
        json_object *file_queues; /* the file's "queue.NAME.SETTING" lines (config_file's) */
        const char *state_dir, *log_dir;
        bool system;
        uid_t uid;
        struct rlimit jobs_nofile; /* the open files the daemon was started with, for its runs */
        void (*on_run_event)(void *data, struct event *e); /* what the pool's threads tell */
};

/* Sets up how runs are contained, starts the supervisor, maps the inflight file and starts the
 * default queue's pool; errors are logged. */
int daemon_init(struct daemon *d, const struct daemon_config *config);
/* A reexec: no run starts, and each shell run in progress hands itself over (d->handed). */
void daemon_hand_over(struct daemon *d);
/* Whether every run has been handed over or has ended, and no on-end command runs or waits. */
bool daemon_handed_over(struct daemon *d);
/* A run handed over (h, taken over on success) taken up by the job's item, queued now and in
 * progress for the loop until it starts: 0, or -errno (h then stays the caller's). */
int daemon_take_up(struct job *job, struct run_handover *h);
/* A reexec given up: the runs handed over are taken up again here, and held runs start. */
void daemon_take_back(struct daemon *d);
/* Shutdown: queued runs do not start; running ones go on, but suspended ones stop. */
void daemon_stop_starting(struct daemon *d);
/* Whether it was called: what a read answers at the store's stop is no longer acted on. */
bool daemon_stopping(struct daemon *d);
/* The node's fence (its lease ran out unrenewed): its shell runs are killed, recorded interrupted
 * and queued again, and nothing starts until the fence is lifted (the lease renewed). */
void daemon_fence(struct daemon *d, bool fenced);
/* What the other nodes of the job database see of this one: its runs and threads, now. */
void daemon_report_node(struct daemon *d);
/* Stop-timeout is up: every running job is asked to stop. */
void daemon_interrupt_all(struct daemon *d);
/* Frees the pools, waiting for the runs in progress to end: any thread but the loop's. */
void daemon_free_pool(struct daemon *d);
/* Then, on the loop: handles what the last runs posted, and stops listening to the pool. */
void daemon_close_events(struct daemon *d);
/* Frees the jobs and everything else (the pools first, if they are still there). */
void daemon_free(struct daemon *d);

/* A new or restored job enters the registry's tables (which take the caller's reference and
 * persist's handle) and its owner's counts; retired, it leaves them, and its row is deleted. */
void daemon_add_job(struct daemon *d, struct job *job);
void daemon_retire_job(struct daemon *d, struct job *job);
/* The same for a job that another node claimed: its rows are that node's, none is written. */
void daemon_let_go(struct daemon *d, struct job *job);
/* A live job's strings changed (an edit): its owner's counts take its bytes as they are now. */
void daemon_job_resized(struct daemon *d, struct job *job);
/* Enqueues now or after the delay (seconds); says whether a pending run took it in ("coalesced")
 * or a running one will run again ("deferred"). 0 or -errno. */
int daemon_enqueue(struct daemon *d, struct job *job, double delay, const char **ret_extra);
/* The test hook moved the clocks forward from before (wall clock seconds): a run queued after a
 * delay that had not passed by then is queued again with what is left of it now (none: now). */
void daemon_clock_moved(struct daemon *d, struct job *job, double before);
/* Into the pool as it is, the same attempt (a run a restart gives back), now or after the
 * delay; a run newly queued is kept in the job's row. 0 or -errno. */
int daemon_queue_run(struct daemon *d, struct job *job, double delay);
/* A restored job whose row says pending goes back into the pool, now or at due (wall clock; kept
 * as it was), in the order of its row (restored in that order), which stays as it is. 0 or
 * -errno. */
int daemon_restore_run(struct daemon *d, struct job *job, double due);
/* A recurring job ticks from now on (its first tick from now, unless it has one). */
int daemon_schedule(struct daemon *d, struct job *job);
/* A run held back for its owner's turn may start: it is queued again, as the same attempt (the
 * per-user limits' release). */
void daemon_release_held(void *data, struct job *job);
/* A run the gate held back (a pause, space, a fence) may start: it goes back to the place it had
 * in its pool, its row as it was (the gate's release). */
void daemon_release_gated(void *data, struct job *job);
/* Writes the job's row, or its state (NULL: its own), and notes which write holds it. */
void daemon_save_job(struct daemon *d, struct job *job);
/* The first row of a keyed job of a shared database, which claims its key among the nodes'
 * (store_claim_job(): done(data, res) on the loop once committed). */
struct db_result;
void daemon_claim(struct daemon *d, struct job *job, bool may_again,
                  void (*done)(void *data, const struct db_result *res), void *data);
/* Queued by the kernel's rules (a tick, another node's ask), told and saved; why for the log. */
void daemon_run_again(struct daemon *d, struct job *job, const char *why);
void daemon_save_state(struct daemon *d, struct job *job, const char *state);
/* Another node's run, read from a shared database, taken over: kept apart from the history
 * (neither its length nor its users' logs count it), the last LEARNED_MAX of them. */
#define LEARNED_MAX 1024
void daemon_learn_run(struct daemon *d, struct run_record *rec);
/* A job's last finished run as this node knows it (history or learned), or NULL. */
const struct run_record *daemon_last_run(const struct daemon *d, int64_t id);
/* A job's run number run, finished, as this node knows it (history or learned), or NULL. */
const struct run_record *daemon_find_run(const struct daemon *d, int64_t id, int64_t run);
/* A job's state changed, or a run ended: told to on_event. */
void daemon_notify(struct daemon *d, struct job *job, const char *state,
                   const struct run_record *ended);

#endif
