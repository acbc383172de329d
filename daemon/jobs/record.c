/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "jobs/job.h"
#include "jobs/record.h"
#include "run/run.h"
#include "store/run-record.h"

char *record_log_path(const char *log_dir, int64_t id, int64_t run)
{
        char *path;

        return asprintf(&path, "%s/%lld.%lld.log", log_dir, (long long)id, (long long)run) < 0
                   ? NULL
                   : path;
}

static struct run_record *record_new(struct job *job, int64_t run, bool has_log)
{
        struct run_record *rec = calloc(1, sizeof(*rec));

        if (!rec)
                return NULL;
        rec->id = job->id;
        rec->run = run;
        rec->very_slow = job->very_slow;
        rec->owner = job->owner;
        rec->node = job->shared->node;
        rec->cpu_time = -1;
        rec->memory_peak = -1;
        rec->attempt = __atomic_load_n(&job->attempt, __ATOMIC_ACQUIRE);
        rec->summary = strdup(job_summary(job));
        rec->log = has_log ? record_log_path(job->shared->run.log_dir, job->id, run) : NULL;
        if (!rec->summary || (has_log && !rec->log)) {
                run_record_free(rec);
                return NULL;
        }
        return rec;
}

struct run_record *record_new_run(struct job *job)
{
        double none = 0;

        /* Not started yet: what status shows of a run in progress waits for record_start(). */
        __atomic_store(&job->run_started, &none, __ATOMIC_RELAXED);
        return record_new(job, __atomic_add_fetch(&job->runs_started, 1, __ATOMIC_ACQ_REL), true);
}

struct run_record *record_resumed_run(struct job *job, int64_t run)
{
        double none = 0;

        __atomic_store(&job->run_started, &none, __ATOMIC_RELAXED);
        return record_new(job, run, true);
}

void record_start(struct job *job, struct run_record *rec)
{
        if (rec->started == 0) /* a run taken up after a reexec has its start */
                rec->started = run_wall_now();
        __atomic_store(&job->run_started, &rec->started, __ATOMIC_RELAXED);
}

struct run_record *record_new_ended(struct job *job, int64_t run, const char *outcome,
                                    bool has_log)
{
        struct run_record *rec = record_new(job, run, has_log);

        if (rec) {
                rec->outcome = outcome;
                rec->ended = run_wall_now();
        }
        return rec;
}

void record_measure_log(struct run_record *rec, int dir_fd)
{
        const char *name = rec->log ? strrchr(rec->log, '/') : NULL;
        struct stat st;

        rec->log_bytes = 0;
        if (name && fstatat(dir_fd, name + 1, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
                rec->log_bytes = (int64_t)st.st_size;
}

const char *record_state_after_run(struct job *job)
{
        return slow_work_is_pending(&job->dw.work) || job->retry_due ? "pending"
               : job->waiting                                         ? "waiting"
                                                                      : "idle";
}
