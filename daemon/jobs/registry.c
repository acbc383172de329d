/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobs/answer.h"
#include "jobs/item.h"
#include "jobs/registry.h"
#include "run/run.h"
#include "store/run-record.h"
#include "store/store.h"
#include "util/log.h"
#include "util/settings.h"

static unsigned bucket_of_id(int64_t id)
{
        return (unsigned)((uint64_t)id % REGISTRY_BUCKETS);
}

static unsigned bucket_of_key(uid_t owner, const char *key)
{
        uint64_t h = 1469598103934665603ull ^ owner;

        for (; *key; key++)
                h = (h ^ (unsigned char)*key) * 1099511628211ull;
        return (unsigned)(h % REGISTRY_BUCKETS);
}

struct job *registry_find(struct registry *reg, int64_t id)
{
        struct job *job;

        for (job = reg->by_id[bucket_of_id(id)]; job; job = job->hnext)
                if (job->id == id)
                        return job;
        return NULL;
}

struct job *registry_find_key(struct registry *reg, uid_t owner, const struct queue *queue,
                              const char *key)
{
        struct job *job;

        for (job = reg->by_key[bucket_of_key(owner, key)]; job; job = job->knext)
                if (job->owner == owner && job->queue == queue && job->has_key && !job->claim &&
                    strcmp(job_key(job), key) == 0)
                        return job;
        return NULL;
}

/* The count of live jobs in the job's block of ids goes up or down by one. */
static void count_id(struct registry *reg, const struct job *job, int by)
{
        size_t b = (size_t)((uint64_t)job->id / REGISTRY_ID_BLOCK);

        if (reg->id_blocks_lost)
                return;
        if (b >= reg->nid_blocks) {
                size_t n = b + 1 > 2 * reg->nid_blocks ? b + 1 : 2 * reg->nid_blocks;
                uint32_t *blocks = realloc(reg->id_blocks, n * sizeof(*blocks));

                if (!blocks) {
                        free(reg->id_blocks);
                        reg->id_blocks = NULL;
                        reg->nid_blocks = 0;
                        reg->id_blocks_lost = true;
                        return;
                }
                memset(blocks + reg->nid_blocks, 0, (n - reg->nid_blocks) * sizeof(*blocks));
                reg->id_blocks = blocks;
                reg->nid_blocks = n;
        }
        reg->id_blocks[b] += (uint32_t)by;
}

int64_t registry_count_before(struct registry *reg, const struct job *job)
{
        size_t b = (size_t)((uint64_t)job->id / REGISTRY_ID_BLOCK);
        int64_t start = (int64_t)b * REGISTRY_ID_BLOCK, n = 0;

        if (reg->id_blocks_lost)
                return -1;
        for (size_t i = 0; i < b && i < reg->nid_blocks; i++)
                n += reg->id_blocks[i];
        for (job = job->oprev; job && job->id >= start; job = job->oprev)
                n++;
        return n;
}

void registry_add(struct registry *reg, struct job *job)
{
        unsigned b = bucket_of_id(job->id);
        struct job *after;

        job->hnext = reg->by_id[b];
        reg->by_id[b] = job;
        job->key_shared = job->has_key && store_shared(reg->store);
        if (job->has_key) {
                b = bucket_of_key(job->owner, job_key(job));
                job->knext = reg->by_key[b];
                reg->by_key[b] = job;
        }
        /* New jobs come last; restored ones mostly in the order of their ids too. */
        for (after = reg->last; after && after->id > job->id; after = after->oprev)
                ;
        job->oprev = after;
        job->onext = after ? after->onext : reg->first;
        *(job->onext ? &job->onext->oprev : &reg->last) = job;
        *(after ? &after->onext : &reg->first) = job;
        job->live = true;
        job->queue->njobs++;
        reg->njobs++;
        count_id(reg, job, 1);
        users_add(&reg->users, job);
        users_add(&job->queue->users, job);
        if (job->persist)
                job->handles++;
        metrics_job_recount(&reg->metrics, job);
}

static void unlink_from(struct job **head, struct job *job, bool by_key)
{
        struct job **p;

        for (p = head; *p; p = by_key ? &(*p)->knext : &(*p)->hnext)
                if (*p == job) {
                        *p = by_key ? job->knext : job->hnext;
                        return;
                }
}

/* Drops the tables' reference. */
void registry_retire(struct registry *reg, struct job *job)
{
        unlink_from(&reg->by_id[bucket_of_id(job->id)], job, false);
        if (job->has_key)
                unlink_from(&reg->by_key[bucket_of_key(job->owner, job_key(job))], job, true);
        *(job->oprev ? &job->oprev->onext : &reg->first) = job->onext;
        *(job->onext ? &job->onext->oprev : &reg->last) = job->oprev;
        job->onext = job->oprev = NULL;
        job->live = false;
        count_id(reg, job, -1);
        job->queue->njobs--;
        metrics_job_recount(&reg->metrics, job);
        reg->njobs--;
        users_remove(&reg->users, job);
        users_remove(&job->queue->users, job);
        schedule_remove(&reg->schedule, job);
        /* At shutdown what leaves the tables is not done: queued and delayed jobs stay on disk.
         * A keyed row that another node's ask keeps says it is idle (pg_take_again). */
        if (!__atomic_load_n(&reg->shared.run.stopping, __ATOMIC_ACQUIRE)) {
                if (job->key_shared)
                        registry_save_state(reg, job, "idle");
                store_delete_job(reg->store, job->id);
        }
        job_unref(job);
}

void registry_save_job(struct registry *reg, struct job *job)
{
        struct store_job_row row;

        job_row(job, NULL, &row);
        job->saved_seq = store_put_job(reg->store, &row, job->env);
        job_row_free(&row);
        free(job->payload); /* the state database has it now */
        job->payload = NULL;
}

void registry_claim(struct registry *reg, struct job *job, bool may_again,
                    void (*done)(void *data, const struct db_result *res), void *data)
{
        struct store_job_row row;
        char *what = job_what(job);

        /* Idle until the claim is answered: a crash before that leaves nothing to run. */
        job_row(job, "idle", &row);
        job->saved_seq = store_claim_job(reg->store, &row, job->env, job->queue->name,
                                         what ? what : "", may_again, done, data);
        job_row_free(&row);
        free(what);
        free(job->payload);
        job->payload = NULL;
}

void registry_save_state(struct registry *reg, struct job *job, const char *state)
{
        struct store_job_row row;

        job_row(job, state, &row);
        job->saved_seq = store_put_job_state(reg->store, &row);
        job_row_free(&row);
}

const struct run_record *registry_last_run(const struct registry *reg, int64_t id)
{
        const struct run_record *rec = history_last(&reg->history, id),
                                 *learned = history_last(&reg->learned, id);

        return learned && (!rec || learned->run > rec->run) ? learned : rec;
}

void registry_learn_run(struct registry *reg, struct run_record *rec)
{
        const struct run_record *have = registry_last_run(reg, rec->id);

        if (have && have->run >= rec->run)
                run_record_free(rec);
        else
                history_add(&reg->learned, rec, LEARNED_MAX); /* frees it when it fails */
}

struct job *registry_job_of_rq_entry(struct registry *reg, const struct slow_work_rq_entry *e)
{
        struct job *job;
        char *end;
        long long id;

        /* The row names the job by its description, "ID: ..." (item.c); the item may be gone. */
        id = strtoll(e->desc, &end, 10);
        if (end == e->desc || *end != ':')
                return NULL;
        job = registry_find(reg, id);
        return job && (const void *)&job->dw.work == e->item ? job : NULL;
}

json_object *registry_state_result(struct job *job, const char *extra)
{
        json_object *o = json_object_new_object();

        json_object_object_add(o, "id", json_object_new_int64(job->id));
        json_object_object_add(o, "state", json_object_new_string(job_state(job)));
        if (extra)
                json_object_object_add(o, extra, json_object_new_boolean(1));
        return o;
}

/* Into the job's pool, now (plugged for the rest of the burst) or after the delay. */
static int pool_enqueue(struct registry *reg, struct job *job, double delay)
{
        if (delay > 0)
                return slow_work_pool_enqueue_delayed(job->queue->pool, &job->dw,
                                                      (unsigned long)(delay * 1000.0 + 0.5));
        burst_add(&reg->burst, job->queue->pool);
        return slow_work_pool_enqueue(job->queue->pool, &job->dw.work);
}

int registry_queue_run(struct registry *reg, struct job *job, double delay)
{
        bool pending = slow_work_is_pending(&job->dw.work);
        int r;

        /* The pool is being freed off the loop, or is gone: nothing more is queued. */
        if (__atomic_load_n(&reg->shared.run.stopping, __ATOMIC_ACQUIRE))
                return -ESHUTDOWN;
        r = pool_enqueue(reg, job, delay);
        if (r == 0 && !pending) {
                bool saved = job->qorder != 0; /* a new job's row is written after this */

                job->qorder = ++reg->next_qorder;
                job->due = delay > 0 ? (double)time(NULL) + delay : 0;
                if (job->queued_at == 0)
                        job->queued_at = delay > 0 ? run_wall_now() + delay : run_wall_now();
                if (saved)
                        registry_save_state(reg, job, NULL);
        }
        metrics_job_recount(&reg->metrics, job);
        return r;
}

int registry_restore_run(struct registry *reg, struct job *job, double delay)
{
        int r;

        r = pool_enqueue(reg, job, delay);
        if (r == 0) {
                job->due = delay > 0 ? (double)time(NULL) + delay : 0;
                job->queued_at = delay > 0 ? run_wall_now() + delay : run_wall_now();
        }
        metrics_job_recount(&reg->metrics, job);
        return r;
}

int registry_enqueue(struct registry *reg, struct job *job, double delay, const char **ret_extra)
{
        bool pending = slow_work_is_pending(&job->dw.work);
        bool running = slow_work_is_executing(&job->dw.work);
        int r;

        /* Its run is held back (free space, a pause, its owner's turn), waits for other jobs or
         * for its retry's turn, and will run then. */
        if (__atomic_load_n(&job->held, __ATOMIC_ACQUIRE) || job->waiting ||
            job->retry_due) {
                *ret_extra = "coalesced";
                return 0;
        }
        /* A job that was done, or runs and will run once more after, starts again at its first
         * attempt. */
        if (job_idle(job) || running)
                __atomic_store_n(&job->attempt, 1, __ATOMIC_RELEASE);
        r = registry_queue_run(reg, job, delay);
        *ret_extra = r < 0 ? NULL : pending ? "coalesced" : running ? "deferred" : NULL;
        return r;
}

void registry_notify(struct registry *reg, struct job *job, const char *state,
                     const struct run_record *ended)
{
        if (reg->on_event)
                reg->on_event(reg->event_data, job, state, ended);
}

void registry_run_again(struct registry *reg, struct job *job, const char *why)
{
        const char *extra;

        if (registry_enqueue(reg, job, 0, &extra) < 0)
                log_warning("Job %lld: cannot queue its %s", (long long)job->id, why);
        else if (!extra || strcmp(extra, "coalesced") != 0)
                registry_notify(reg, job, "pending", NULL);
        registry_save_state(reg, job, NULL);
}

/* A recurring job's tick: queued by the kernel's rules, its next tick kept. */
static void on_tick(void *data, struct job *job)
{
        struct registry *reg = data;

        if (!job->live || !job->persist) {
                schedule_remove(&reg->schedule, job);
                return;
        }
        registry_run_again(reg, job, "tick");
}

int registry_schedule(struct registry *reg, struct job *job)
{
        if (job->next_run <= 0)
                job->next_run = schedule_next(job, run_wall_now());
        return schedule_add(&reg->schedule, job);
}

void registry_release_held(void *data, struct job *job)
{
        int r = registry_queue_run(data, job, 0);

        if (r < 0)
                log_warning("Job %lld: cannot queue its run again: %s", (long long)job->id,
                            strerror(-r));
}

int registry_init(struct registry *reg, const struct registry_config *config)
{
        struct sw_queue_settings qs = settings_queue_part(config->settings);
        int r;

        reg->store = config->store;
        reg->shared.node = store_node(config->store);
        reg->shared.store = config->store;
        reg->settings = *config->settings;
        reg->shared.ops = &item_ops;
        reg->shared.run = (struct run_context){
            .log_dir = config->log_dir,
            .log_dir_fd = open(config->log_dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC),
            .log_limit = config->settings->log_limit,
            .log_budget = config->settings->max_log_bytes_per_user,
            .min_free_space = config->settings->min_free_space,
            .kill_grace = config->settings->kill_grace,
            .system = config->system,
            .uid = config->uid,
            .jobs_nofile = config->jobs_nofile,
            .pause = &reg->pause,
            .events = &reg->events,
            .contain = &reg->contain,
            .inflight = &reg->inflight,
        };
        r = shell_watch_check();
        if (r < 0)
                log_warning("pidfd_open(2) fails here (%s): running jobs are checked every "
                            "100 ms instead of being watched",
                            strerror(-r));
        if (reg->shared.run.log_dir_fd < 0)
                return log_error_errno(-errno, "Failed to open %s: %m", config->log_dir);
        contain_init(&reg->contain, config->state_dir);
        supervisor_start(&reg->supervisor, config->loop, &reg->contain, config->state_dir);
        if (store_shared(reg->store) &&
            fence_setup(&reg->fence, supervisor_life_fd(&reg->supervisor)) == 0)
                reg->shared.run.fence = &reg->fence;
        r = inflight_open(&reg->inflight, config->state_dir, &reg->crashed, &reg->ncrashed);
        if (r < 0)
                return r;
        r = events_init(&reg->events, config->loop, config->on_run_event, reg);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the job events: %m");
        r = burst_init(&reg->burst, config->loop);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the enqueue bursts: %m");
        r = gate_init(&reg->gate, config->loop, &reg->shared.run, registry_release_held, reg);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the free space checks: %m");
        pause_init(&reg->pause, NULL, reg->store);
        users_init(&reg->users, offsetof(struct job, user_link), offsetof(struct job, user_listed),
                   &reg->shared.run.stopping,
                   registry_release_held, reg);
        users_set_limits(&reg->users, config->settings->max_queued_per_user,
                         config->settings->max_running_per_user);
        reg->shared.users = &reg->users;
        r = schedule_init(&reg->schedule, config->loop, on_tick, reg);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the recurring jobs' timer: %m");
        metrics_init(&reg->metrics);
        r = metrics_file_init(&reg->metrics_file, config->loop);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the metrics file's timer: %m");
        r = queue_new(SW_QUEUE_DEFAULT, &qs, reg->store, &reg->shared.run.stopping,
                      registry_release_held, reg, &reg->queues);
        if (r < 0)
                return log_error_errno(r, "Failed to start the thread pool: %m");
        reg->file_queues = config->file_queues ? json_object_get(config->file_queues) : NULL;
        return 0;
}

void registry_report_node(struct registry *reg)
{
        store_report(reg->store, __atomic_load_n(&reg->pause.runs, __ATOMIC_RELAXED),
                     reg->settings.min_threads, reg->settings.max_threads);
}

bool registry_stopping(struct registry *reg)
{
        return __atomic_load_n(&reg->shared.run.stopping, __ATOMIC_ACQUIRE);
}

void registry_stop_starting(struct registry *reg)
{
        __atomic_store_n(&reg->shared.run.stopping, true, __ATOMIC_RELEASE);
        /* Nothing is queued from here on: the pools go unplugged. */
        burst_end(&reg->burst);
        /* No tick now: one missed while stopped makes its run at the next start. */
        schedule_stop(&reg->schedule);
        /* The pool is freed off the loop next: nothing reads it from here on. */
        metrics_file_set(&reg->metrics_file, NULL, 0);
        /* A suspended run would not end in stop-timeout: it is interrupted now. */
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                for (struct job *job = reg->by_id[i]; job; job = job->hnext)
                        if (suspend_is_on(&job->suspend))
                                job_kick(job);
}

void registry_fence(struct registry *reg, bool fenced)
{
        if (__atomic_load_n(&reg->shared.run.fenced, __ATOMIC_ACQUIRE) == fenced)
                return;
        __atomic_store_n(&reg->shared.run.fenced, fenced, __ATOMIC_RELEASE);
        if (!fenced) {
                gate_open(&reg->gate);
                return;
        }
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                for (struct job *job = reg->by_id[i]; job; job = job->hnext)
                        job_kick(job);
}

void registry_interrupt_all(struct registry *reg)
{
        __atomic_store_n(&reg->shared.run.interrupting, true, __ATOMIC_RELEASE);
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                for (struct job *job = reg->by_id[i]; job; job = job->hnext)
                        job_kick(job);
}

void registry_free_pool(struct registry *reg)
{
        for (struct queue *q = reg->queues; q; q = q->next)
                if (q->pool)
                        queue_free_pool(q);
}

void registry_close_events(struct registry *reg)
{
        events_flush(&reg->events);
        events_close(&reg->events);
        burst_close(&reg->burst);
        gate_close(&reg->gate);
        users_close(&reg->users);
        pause_close(&reg->pause);
        for (struct queue *q = reg->queues; q; q = q->next) {
                pause_close(&q->pause);
                users_close(&q->users);
        }
        schedule_close(&reg->schedule);
        metrics_file_close(&reg->metrics_file);
        supervisor_unwatch(&reg->supervisor);
}

static void drop_answers(struct answer **list)
{
        struct answer *a;

        while ((a = *list)) {
                *list = a->next;
                a->drop(a);
        }
}

void registry_free(struct registry *reg)
{
        registry_stop_starting(reg);
        registry_free_pool(reg);
        deps_free(&reg->deps);
        schedule_close(&reg->schedule);
        users_close(&reg->users);
        for (struct queue *q = reg->queues; q; q = q->next)
                users_close(&q->users);
        metrics_file_close(&reg->metrics_file);
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                while (reg->by_id[i]) {
                        struct job *job = reg->by_id[i];

                        drop_answers(&job->waiters);
                        drop_answers(&job->cancels);
                        registry_retire(reg, job);
                }
        inflight_close(&reg->inflight);
        contain_free(&reg->contain);
        supervisor_stop(&reg->supervisor);
        if (reg->shared.run.log_dir && reg->shared.run.log_dir_fd >= 0)
                close(reg->shared.run.log_dir_fd);
        free(reg->crashed);
        json_object_put(reg->kept);
        while (reg->queues) {
                struct queue *q = reg->queues;

                reg->queues = q->next;
                queue_free(q);
        }
        json_object_put(reg->file_queues);
        json_object_put(reg->kept_queues);
        history_free(&reg->history);
        history_free(&reg->learned);
        free(reg->id_blocks);
        plugins_free(&reg->shared.plugins);
        metrics_free(&reg->metrics);
}
