/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/lifecycle.h"
#include "jobs/record.h"
#include "jobs/queues.h"
#include "jobs/restore.h"
#include "jobs/waits.h"
#include "run/run.h"
#include "store/run-record.h"
#include "store/store.h"
#include "util/heap.h"
#include "util/log.h"

/* A run of the last daemon that left processes: how many were killed, -1 when they could not
 * be stopped (then its job is not run again on its own). */
struct leftovers {
        int64_t id, run;
        int left;
};

/* What a restore knows beside the daemon. */
struct restoring {
        struct daemon *d;
        struct leftovers *leftovers;
        size_t nleftovers;
        int64_t foreign; /* a job of another user, which a user instance must not hold */
        uid_t foreign_owner;
        struct job **waiting; /* jobs that waited for others: looked at once all are back */
        size_t nwaiting;
        /* After a reexec, the queued jobs, queued once all are back: the runs taken up first. */
        struct job **queued;
        double *due;
        size_t nqueued;
        /* The last payload read, parsed: the rows of jobs that run the same share it. */
        char *payload;
        struct sw_submit_params p;
        struct sw_limits limits;
        int parsed; /* 0, or why it could not be, with err */
        char err[256];
};

static void restore_run(void *data, struct run_record *rec)
{
        struct daemon *d = ((struct restoring *)data)->d;

        record_measure_log(rec, d->shared.run.log_dir_fd);
        history_add(&d->history, rec, (size_t)d->settings.history_limit);
}

/* A run of the last daemon left processes: killed now (left >= 0), before the job runs again,
 * and said in the run's log; or they could not be (left < 0), and the job waits. */
static void leftover(void *data, int64_t id, int64_t run, int left)
{
        struct restoring *rs = data;
        char *path = record_log_path(rs->d->shared.run.log_dir, id, run);
        int fd = path ? open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC) : -1;
        struct leftovers *more;

        if (left >= 0)
                log_info("Job %lld: killed %d process%s its run %lld left when the last daemon "
                         "stopped",
                         (long long)id, left, left == 1 ? "" : "es", (long long)run);
        if (fd >= 0) {
                if (left >= 0)
                        dprintf(fd,
                                "\n[slowworkd: the daemon stopped during this run; the %d "
                                "process%s it left were killed before the job ran again]\n",
                                left, left == 1 ? "" : "es");
                else
                        dprintf(fd, "\n[slowworkd: the daemon stopped during this run, and the "
                                    "processes it left could not be stopped: the job is held, "
                                    "not run again]\n");
                close(fd);
        }
        free(path);
        if (left == 0)
                return;
        more = realloc(rs->leftovers, (rs->nleftovers + 1) * sizeof(*more));
        if (more) {
                rs->leftovers = more;
                rs->leftovers[rs->nleftovers++] = (struct leftovers){id, run, left};
        }
}

/* What the job's run left, as leftover() heard it: 0 for nothing. */
static int left_by(const struct restoring *rs, int64_t id, int64_t run)
{
        for (size_t i = 0; i < rs->nleftovers; i++)
                if (rs->leftovers[i].id == id && rs->leftovers[i].run == run)
                        return rs->leftovers[i].left;
        return 0;
}

/* Whether the last daemon died while the job's plugin ran. */
static bool plugin_crashed(const struct daemon *d, int64_t id)
{
        for (size_t i = 0; i < d->ncrashed; i++)
                if (d->crashed[i].id == id && d->crashed[i].pid == 0)
                        return true;
        return false;
}

/* A row's payload, parsed by the submit's own table, unless it is the last row's. */
static void parse_payload(struct restoring *rs, const char *payload)
{
        json_object *o;

        if (rs->payload && strcmp(rs->payload, payload) == 0)
                return;
        sw_params_clear(sw_submit_params, &rs->p);
        rs->p = (struct sw_submit_params){0};
        free(rs->payload);
        rs->payload = strdup(payload);
        snprintf(rs->err, sizeof(rs->err), "not JSON");
        o = json_tokener_parse(payload);
        rs->parsed = !rs->payload ? -ENOMEM
                     : o ? sw_params_parse(o, sw_submit_params, &rs->p, rs->err, sizeof(rs->err))
                         : -EBADMSG;
        /* As the submit resolved them: a limit left out (all of them, where the job has none)
         * is 0, no limit (jobs/job.c writes only those that ask for something). */
        rs->limits = (struct sw_limits){0};
        if (rs->parsed == 0 && rs->p.limits)
                rs->parsed = sw_limits_parse(rs->p.limits, &rs->limits, rs->err, sizeof(rs->err));
        json_object_put(o);
        if (rs->parsed) {
                free(rs->payload); /* parsed again for the next row: its error said again */
                rs->payload = NULL;
        }
}

/* The job a row describes, made the way its submit made it. */
static int job_from_row(struct restoring *rs, const struct store_job_row *row, struct job **ret)
{
        struct daemon *d = rs->d;
        struct sw_submit_params *p = &rs->p;
        char err[256];
        struct queue *queue;
        int r;

        parse_payload(rs, row->payload);
        r = rs->parsed;
        snprintf(err, sizeof(err), "%s", rs->err);
        if (r == 0) {
                /* Borrowed for job_new_restored(), given back before the params are cleared. */
                p->class_name = row->very_slow ? (char *)"very-slow" : NULL;
                p->env = row->env;
                p->key = (char *)row->key;
                p->name = (char *)row->name;
                p->persist = row->persist;
                queue = queues_find(d, p->queue);
                if (!queue)
                        queue = queues_restore(d, p->queue);
                if (queue)
                        r = job_new_restored(&d->shared, row->owner, queue, p, &rs->limits, ret,
                                             err, sizeof(err));
                else
                        r = snprintf(err, sizeof(err), "its queue cannot be made") < 0 ? -EIO
                                                                                     : -EINVAL;
                p->class_name = p->key = p->name = NULL;
                p->env = NULL;
        }
        if (r)
                log_error("Job %lld in the state database cannot be restored (%s); it stays "
                          "there",
                          (long long)row->id, err);
        return r ? -EINVAL : 0;
}

/* A run the daemon's end cut (started then, 0 when not known), on node (NULL: this one, else a
 * node whose lease ran out): recorded interrupted (with what it left behind), and queued once
 * more, unless held: a plugin's (one that crashed the daemon must not do it again on its own) or
 * one whose leftovers live on. A held job waits for an enqueue. */
static void restore_interrupted(struct daemon *d, struct job *job, double started, int left,
                                const char *node)
{
        bool held = job->x->plugin_entry || left < 0, here = !node || job->shared->node == node;
        const char *by = here ? "by the last daemon's end" : "by the end of its node's lease";
        struct run_record *rec;

        job->runs_ended--;
        /* What the cut run wrote stays readable, and goes with its record (not another node's). */
        rec = record_new_ended(job, job->runs_started, "interrupted", here);
        if (rec) {
                rec->started = started;
                rec->leftovers = left;
                rec->node = here ? rec->node : node;
        }
        lifecycle_run_ended(d, job, rec);
        if (!held) {
                log_warning("Job %lld: run %lld was interrupted %s, and is queued again",
                            (long long)job->id, (long long)job->runs_started, by);
                daemon_queue_run(d, job, 0);
                return;
        }
        log_warning("Job %lld: run %lld was interrupted %s, and is held until enqueued again (%s)",
                    (long long)job->id, (long long)job->runs_started, by,
                    job->x->plugin_entry ? "a plugin's run is not repeated on its own"
                                      : "the processes it left could not be stopped");
        if (!job->persist) {
                job->persist = true;
                job->handles++;
        }
        daemon_save_state(d, job, NULL);
}

/* A run the daemon's last program handed over (reexec) goes on: its job's item takes it up,
 * queued before anything else. Whether it was one. */
static bool take_up(struct daemon *d, struct job *job)
{
        struct run_handover *h =
            run_handover_find(d->contain.taken_up, job->id, job->runs_started);
        struct run_handover *copy;

        if (!h || job->x->plugin_entry || !(copy = malloc(sizeof(*copy))))
                return false;
        *copy = *h; /* the list goes once all are back */
        log_info("Job %lld: run %lld goes on", (long long)job->id, (long long)h->run);
        if (daemon_take_up(job, copy) == 0) {
                job->runs_ended--; /* its run is in progress */
                return true;
        }
        /* Its pool refuses it: nothing watches its processes, which the next start stops (a
         * leftover). */
        log_error("Job %lld: cannot take up run %lld", (long long)job->id, (long long)h->run);
        free(copy);
        return true;
}

/* A pending job, queued once every run taken up is. */
static bool queue_later(struct restoring *rs, struct job *job, double due)
{
        struct job **jobs = realloc(rs->queued, (rs->nqueued + 1) * sizeof(*jobs));
        double *dues = jobs ? realloc(rs->due, (rs->nqueued + 1) * sizeof(*dues)) : NULL;

        if (jobs)
                rs->queued = jobs;
        if (!dues) {
                daemon_restore_run(rs->d, job, due);
                return false;
        }
        rs->due = dues;
        rs->queued[rs->nqueued] = job_ref(job);
        rs->due[rs->nqueued++] = due;
        return true;
}

/* What a row's flow column kept: the jobs it waits for, its attempt, its next tick, when it was
 * submitted. */
static void restore_flow(struct job *job, const char *text)
{
        json_object *o = text ? json_tokener_parse(text) : NULL, *v;
        struct sw_submit_params p = {0};
        char err[8];

        if (!o)
                return;
        /* The lists are read back by the submit's own table. */
        if (json_object_object_get_ex(o, "after", &v) || json_object_object_get_ex(o, "after_any", &v)) {
                json_object *lists = json_object_new_object();

                if (json_object_object_get_ex(o, "after", &v))
                        json_object_object_add(lists, "after", json_object_get(v));
                if (json_object_object_get_ex(o, "after_any", &v))
                        json_object_object_add(lists, "after_any", json_object_get(v));
                if (sw_params_parse(lists, sw_submit_params, &p, err, sizeof(err)) == 0) {
                        job->after = p.after;
                        job->after_any = p.after_any;
                        p.after = p.after_any = NULL;
                }
                sw_params_clear(sw_submit_params, &p);
                json_object_put(lists);
        }
        if (json_object_object_get_ex(o, "attempt", &v) && json_object_get_int64(v) > 0)
                job->attempt = json_object_get_int64(v);
        if (json_object_object_get_ex(o, "next_run", &v))
                job->next_run = json_object_get_double(v);
        if (json_object_object_get_ex(o, "submitted", &v))
                job->submitted = json_object_get_double(v);
        json_object_put(o);
}

/* A recurring job ticks again; a tick it missed while the daemon was down makes one run now,
 * unless it runs at start anyway (it was queued, or its run was cut). */
static void restore_schedule(struct daemon *d, struct job *job, double now, bool queued)
{
        const char *extra;

        if (job->next_run > 0 && job->next_run <= now && !queued) {
                log_info("Job %lld missed its tick while the daemon was down: it runs once now",
                         (long long)job->id);
                daemon_enqueue(d, job, 0, &extra);
        }
        if (job->next_run <= now)
                job->next_run = 0; /* the next one from now */
        if (daemon_schedule(d, job) < 0)
                log_warning("Job %lld: cannot schedule its ticks", (long long)job->id);
        daemon_save_state(d, job, NULL);
}

/* A job that waited for others: those that ended meanwhile count now. */
static void restore_waiting(struct daemon *d, struct job *job)
{
        int64_t *after = job->after, *after_any = job->after_any;
        const char *extra;
        int w;

        job->after = job->after_any = NULL;
        job->waiting = false; /* not yet on deps' list */
        w = waits_add(d, job, after, after_any);
        if (w == 0)
                daemon_enqueue(d, job, 0, &extra);
        if (w < 0)
                log_error("Job %lld: out of memory while restoring what it waits for",
                          (long long)job->id);
        daemon_save_state(d, job, NULL);
        free(after);
        free(after_any);
        lifecycle_check_idle(d, job);
}

static void restore_job(void *data, const struct store_job_row *row)
{
        struct restoring *rs = data;
        struct daemon *d = rs->d;
        double now = run_wall_now();
        bool later = false;
        struct job *job;

        /* Another node asked one of this node's keyed jobs to run again while none of its runs
         * was under way, or after it went (its row stayed for this). A run whose start was
         * committed since came after the ask: it answers it. */
        if (row->again && (job = registry_find(&d->registry, row->id))) {
                if (__atomic_load_n(&job->key_starts, __ATOMIC_ACQUIRE) <= row->key_starts)
                        daemon_run_again(d, job, "run asked for by another node");
                return;
        }
        /* Claimed back from a node that had claimed it from here: what is left of it here
         * goes first (claims.c). */
        if (row->claimed && (job = registry_find(&d->registry, row->id)))
                claims_let_go(d, job);
        if (job_from_row(rs, row, &job) < 0)
                return;
        if (row->claimed)
                claims_adopted(d, row);
        job->id = row->id;
        if (job->env && !job->env->store_id)
                job->env->store_id = row->env_id;
        job->qorder = row->qorder;
        if (row->qorder > d->next_qorder)
                d->next_qorder = row->qorder;
        job->runs_started = job->runs_ended = row->runs;
        job->key_starts = row->key_starts;
        if (history_last(&d->history, job->id))
                job->last = run_record_dup(history_last(&d->history, job->id));
        restore_flow(job, row->flow);
        daemon_add_job(d, job);
        /* The last daemon died during a run whose start never reached the database (its row may
         * still say pending): the job's plugin's, or a run that left processes. That run is
         * counted too, and recorded. */
        if (strcmp(row->state, "running") != 0 &&
            (plugin_crashed(d, job->id) || left_by(rs, job->id, job->runs_started + 1) != 0)) {
                job->runs_started++;
                job->runs_ended++;
                restore_interrupted(d, job, 0, left_by(rs, job->id, job->runs_started), NULL);
        } else if (strcmp(row->state, "running") == 0 && take_up(d, job))
                ;
        else if (strcmp(row->state, "running") == 0)
                restore_interrupted(d, job, row->started, left_by(rs, job->id, job->runs_started),
                                    row->node ? run_record_node(row->node) : NULL);
        else if (strcmp(row->state, "pending") == 0 && d->contain.taken_up)
                later = queue_later(rs, job, row->due);
        else if (strcmp(row->state, "pending") == 0)
                daemon_restore_run(d, job, row->due);
        else if (strcmp(row->state, "stashed") == 0) {
                job->stashed = true; /* until enqueue */
                metrics_job_recount(&d->metrics, job);
        } else if (strcmp(row->state, "waiting") == 0) {
                struct job **more = realloc(rs->waiting, (rs->nwaiting + 1) * sizeof(*more));

                /* Until it is looked at again it still waits: the waiting jobs restored
                 * before it must not count it as ended by its last run. */
                job->waiting = true;
                if (more) {
                        rs->waiting = more;
                        rs->waiting[rs->nwaiting++] = job_ref(job);
                }
                return;
        }
        if (job_recurs(job))
                restore_schedule(d, job, now, strcmp(row->state, "idle") != 0);
        if (row->again)
                daemon_run_again(d, job, "run asked for by another node");
        if (!later) /* not idle: queued in a moment */
                lifecycle_check_idle(d, job);
}

/* The jobs that waited for others are looked at once all are back. */
static void restored(struct restoring *rs)
{
        for (size_t i = 0; i < rs->nqueued; i++) {
                daemon_restore_run(rs->d, rs->queued[i], rs->due[i]);
                lifecycle_check_idle(rs->d, rs->queued[i]);
                job_unref(rs->queued[i]);
        }
        free(rs->queued);
        free(rs->due);
        for (size_t i = 0; i < rs->nwaiting; i++) {
                restore_waiting(rs->d, rs->waiting[i]);
                job_unref(rs->waiting[i]);
        }
        free(rs->waiting);
        free(rs->leftovers);
        free(rs->payload);
        sw_params_clear(sw_submit_params, &rs->p);
}

/* The runs the last program handed over are no leftovers of a crash. */
static void keep_taken_up(struct daemon *d)
{
        size_t kept = 0;

        for (size_t i = 0; i < d->ncrashed; i++)
                if (d->crashed[i].pid <= 0 ||
                    !run_handover_find(d->contain.taken_up, d->crashed[i].id, d->crashed[i].run))
                        d->crashed[kept++] = d->crashed[i];
        d->ncrashed = kept;
}

void restore_adopted(struct daemon *d)
{
        struct restoring rs = {.d = d};

        store_take_adopted(d->store, restore_job, &rs);
        restored(&rs);
}

int restore(struct daemon *d)
{
        struct restoring rs = {.d = d};
        int r;

        /* Only the system instance runs jobs of other users (as them): a user instance that
         * finds one refuses the database before anything of it runs. */
        if (!d->shared.run.system) {
                r = store_find_foreign_job(d->store, d->shared.run.uid, &rs.foreign,
                                           &rs.foreign_owner);
                if (r == 0 && rs.foreign) {
                        log_error("The state database holds job %lld of uid %u, another user: "
                                  "it is a system instance's (start slowworkd with --system), "
                                  "not uid %u's own",
                                  (long long)rs.foreign, (unsigned)rs.foreign_owner,
                                  (unsigned)d->shared.run.uid);
                        return -EPERM;
                }
                if (r < 0)
                        return r;
        }

        supervisor_report(&d->supervisor, leftover, &rs);
        contain_stop_leftovers(&d->contain, leftover, &rs);
        keep_taken_up(d);
        contain_stop_group_leftovers(d->crashed, d->ncrashed, leftover, &rs);
        r = store_load_runs(d->store, d->settings.history_limit, restore_run, &rs);
        if (r == 0)
                r = store_load_jobs(d->store, restore_job, &rs);
        restored(&rs);
        free(d->crashed); /* the start's alone */
        d->crashed = NULL;
        d->ncrashed = 0;
        run_handover_free(d->contain.taken_up); /* those taken up have their copies */
        d->contain.taken_up = NULL;
        /* What the reading took (rows, their JSON) goes back to the system, not kept as holes. */
        heap_release();
        if (r == 0 && d->registry.njobs > 0)
                log_info("Restored %zu job%s from the state database", d->registry.njobs,
                         d->registry.njobs == 1 ? "" : "s");
        return r;
}
