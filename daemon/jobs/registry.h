/* SPDX-License-Identifier: MIT */
/*
 * The registry: the live jobs by id and by key, and what waits on them (wait and cancel
 * requests as answers, the handles held on them, counted), with the pool that runs them, the
 * history of finished runs and the state database they are kept in. A job is live while it is
 * pending, running, or held; then the tables hold a reference. Loop thread only.
 */
#ifndef SLOWWORKD_REGISTRY_H
#define SLOWWORKD_REGISTRY_H

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
#include "jobs/pause.h"
#include "jobs/queue.h"
#include "jobs/schedule.h"
#include "jobs/users.h"
#include "methods.h"
#include "run/run.h"
#include "store/history.h"

#define REGISTRY_BUCKETS 4096
#define REGISTRY_ID_BLOCK 4096 /* ids counted together, for registry_count_before() */

struct answer;
struct conn;
struct drain_wait;
struct live_elsewhere {
        int64_t id;
        uid_t owner;
};

struct registry {
        struct queue *queues; /* the default queue first (jobs/queues.c) */
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
        struct relay *relay; /* requests about other nodes' jobs go there (NULL: none) */
        struct gate gate; /* runs held back: for free space, or paused */
        struct pause pause;
        uint64_t shared_changes; /* this node's changes of the rows all nodes share */
        struct drain_wait *drain_waits; /* pauses with drain not answered yet (jobs/drain.c) */
        int64_t last_drain;             /* their numbers, from a random start */
        struct users users;       /* per-user limits, and runs held back by them */
        struct deps deps;         /* jobs waiting for others to end */
        /* While a submit is served: the live jobs of other nodes that it may wait for, as the
         * database said (methods/elsewhere.c), each of its owner (NULL: none). */
        const struct live_elsewhere *live_elsewhere;
        size_t nlive_elsewhere;
        bool reading_deps; /* the ends of other nodes' jobs are being read (deps-elsewhere.c) */
        struct schedule schedule; /* recurring jobs */
        struct metrics metrics;
        struct metrics_file metrics_file; /* its text comes from whoever sets render */
        struct job *by_id[REGISTRY_BUCKETS], *by_key[REGISTRY_BUCKETS];
        struct job *first, *last; /* the live jobs in the order of their ids */
        size_t njobs;
        uint32_t *id_blocks; /* live jobs by id / REGISTRY_ID_BLOCK (NULL: out of memory once) */
        size_t nid_blocks;
        bool id_blocks_lost;
        int64_t next_qorder;
        /* Each change of a job's state, and a run's end (NULL: none): for subscribers. */
        void (*on_event)(void *data, const struct job *job, const char *state,
                         const struct run_record *ended);
        void *event_data;
        struct inflight_run *crashed; /* start: the runs the last daemon died running */
        size_t ncrashed;
        /* The reload method's way to the daemon's reload, which answers request id on c later:
         * 0, or -ENOMEM. */
        int (*reload)(void *data, struct conn *c, json_object *id);
        void *reload_data;
};

/* What the registry starts from; the strings must outlive it. */
struct registry_config {
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
int registry_init(struct registry *reg, const struct registry_config *config);
/* Shutdown: queued runs do not start; running ones go on, but suspended ones stop. */
void registry_stop_starting(struct registry *reg);
/* Whether it was called: what a read answers at the store's stop is no longer acted on. */
bool registry_stopping(struct registry *reg);
/* The node's fence (its lease ran out unrenewed): its shell runs are killed, recorded interrupted
 * and queued again, and nothing starts until the fence is lifted (the lease renewed). */
void registry_fence(struct registry *reg, bool fenced);
/* What the other nodes of the job database see of this one: its runs and threads, now. */
void registry_report_node(struct registry *reg);
/* Stop-timeout is up: every running job is asked to stop. */
void registry_interrupt_all(struct registry *reg);
/* Frees the pools, waiting for the runs in progress to end: any thread but the loop's. */
void registry_free_pool(struct registry *reg);
/* Then, on the loop: handles what the last runs posted, and stops listening to the pool. */
void registry_close_events(struct registry *reg);
/* Frees the jobs and everything else (the pools first, if they are still there). */
void registry_free(struct registry *reg);

struct job *registry_find(struct registry *reg, int64_t id);
/* A live job by its owner's key in the queue. */
struct job *registry_find_key(struct registry *reg, uid_t owner, const struct queue *queue,
                              const char *key);
/* How many live jobs have a lower id than the live job: -1 when that is not known (out of
 * memory once). Costs a sum over the blocks of ids and a walk within the job's block. */
int64_t registry_count_before(struct registry *reg, const struct job *job);
/* The job enters the tables, which take the caller's reference (and persist's handle); retire
 * takes it out of them. */
void registry_add(struct registry *reg, struct job *job);
void registry_retire(struct registry *reg, struct job *job);
/* The live job a row of a pool's run queue stands for (its description names it), or NULL. */
struct job *registry_job_of_rq_entry(struct registry *reg, const struct slow_work_rq_entry *e);

/* Enqueues now or after the delay (seconds); says whether a pending run took it in ("coalesced")
 * or a running one will run again ("deferred"). 0 or -errno. */
int registry_enqueue(struct registry *reg, struct job *job, double delay, const char **ret_extra);
/* Into the pool as it is, the same attempt (a run a restart or the gate gives back), now or
 * after the delay; a run newly queued is kept in the job's row. 0 or -errno. */
int registry_queue_run(struct registry *reg, struct job *job, double delay);
/* A restored job whose row says pending goes back into the pool, now or after the delay, in the
 * order of its row (restored in that order), which stays as it is. 0 or -errno. */
int registry_restore_run(struct registry *reg, struct job *job, double delay);
/* A recurring job ticks from now on (its first tick from now, unless it has one). */
int registry_schedule(struct registry *reg, struct job *job);
/* A run held back (by a pause, for space, for its owner's turn) may start: it is queued again, as
 * the same attempt (the gate's and the per-user limits' release). */
void registry_release_held(void *data, struct job *job);
/* Writes the job's row, or its state (NULL: its own), and notes which write holds it. */
void registry_save_job(struct registry *reg, struct job *job);
/* The first row of a keyed job of a shared database, which claims its key among the nodes'
 * (store_claim_job(): done(data, res) on the loop once committed). */
struct db_result;
void registry_claim(struct registry *reg, struct job *job, bool may_again,
                    void (*done)(void *data, const struct db_result *res), void *data);
/* Queued by the kernel's rules (a tick, another node's ask), told and saved; why for the log. */
void registry_run_again(struct registry *reg, struct job *job, const char *why);
void registry_save_state(struct registry *reg, struct job *job, const char *state);
/* Another node's run, read from a shared database, taken over: kept apart from the history
 * (neither its length nor its users' logs count it), the last LEARNED_MAX of them. */
#define LEARNED_MAX 1024
void registry_learn_run(struct registry *reg, struct run_record *rec);
/* A job's last finished run as this node knows it (history or learned), or NULL. */
const struct run_record *registry_last_run(const struct registry *reg, int64_t id);
/* The job's state and id, as a cancel's reply and an enqueue's give them (extra: a flag). */
json_object *registry_state_result(struct job *job, const char *extra);
/* A job's state changed, or a run ended: told to on_event. */
void registry_notify(struct registry *reg, struct job *job, const char *state,
                     const struct run_record *ended);

#endif
