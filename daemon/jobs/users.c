/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "jobs/job.h"
#include "jobs/users.h"
#include "util/log.h"

struct user {
        struct user *next; /* in its bucket */
        uid_t uid;
        int64_t running;   /* atomic: slots taken, until the loop saw the run end */
        struct job *jobs;  /* live, through their links */
        size_t njobs;      /* how many */
        struct job **held; /* each a reference, by job id */
        size_t nheld, held_size;
};

static struct job_user_link *link_of(const struct users *u, struct job *job)
{
        return (struct job_user_link *)((char *)job + u->link);
}

static bool *listed_of(const struct users *u, struct job *job)
{
        return (bool *)((char *)job + u->listed);
}

static struct user **bucket(struct users *u, uid_t uid)
{
        return &u->buckets[uid % USERS_BUCKETS];
}

static struct user *find(const struct users *u, uid_t uid)
{
        struct user *e;

        for (e = u->buckets[uid % USERS_BUCKETS]; e; e = e->next)
                if (e->uid == uid)
                        return e;
        return NULL;
}

void users_init(struct users *u, size_t link, size_t listed, const bool *stopping,
                void (*release)(void *data, struct job *job), void *data)
{
        *u = (struct users){.link = link,
                            .listed = listed,
                            .stopping = stopping,
                            .release = release,
                            .data = data};
}

int64_t users_max_queued(const struct users *u)
{
        return __atomic_load_n(&u->max_queued, __ATOMIC_RELAXED);
}

static int64_t max_running(const struct users *u)
{
        return __atomic_load_n(&u->max_running, __ATOMIC_RELAXED);
}

/* Runs the user may start now besides those in progress. */
static size_t room(const struct users *u, struct user *e)
{
        int64_t max = max_running(u), running = __atomic_load_n(&e->running, __ATOMIC_ACQUIRE);

        if (max == 0)
                return SIZE_MAX;
        return running < max ? (size_t)(max - running) : 0;
}

/* Takes the held run of the highest priority, the oldest of those, off e's list. */
static struct job *take_first(struct user *e)
{
        size_t best = 0;
        struct job *job;

        for (size_t i = 1; i < e->nheld; i++)
                if (e->held[i]->priority > e->held[best]->priority)
                        best = i;
        job = e->held[best];
        memmove(e->held + best, e->held + best + 1, (e->nheld - best - 1) * sizeof(*e->held));
        e->nheld--;
        return job;
}

/* The user's n held runs of the highest priority, oldest first among equals, are queued
 * again. */
static void release(struct users *u, struct user *e, size_t n)
{
        struct job **jobs;

        if (n > e->nheld)
                n = e->nheld;
        if (n == 0 || __atomic_load_n(u->stopping, __ATOMIC_ACQUIRE))
                return;
        jobs = malloc(n * sizeof(*jobs));
        if (!jobs) {
                log_error("Out of memory for the runs of uid %u that may start", (unsigned)e->uid);
                return;
        }
        /* Taken off first: a run queued again may be held again, into the list. All of them go
         * in their order (the pool puts them in order of priority); some, by their priority. */
        if (n == e->nheld) {
                memcpy(jobs, e->held, n * sizeof(*jobs));
                e->nheld = 0;
        } else {
                for (size_t i = 0; i < n; i++)
                        jobs[i] = take_first(e);
        }
        u->nheld -= n;
        for (size_t i = 0; i < n; i++) {
                *listed_of(u, jobs[i]) = false;
                __atomic_store_n(&jobs[i]->held, false, __ATOMIC_RELEASE);
                u->release(u->data, jobs[i]);
                job_unref(jobs[i]);
        }
        free(jobs);
}

void users_set_limits(struct users *u, int64_t max_queued, int64_t max_running)
{
        __atomic_store_n(&u->max_queued, max_queued, __ATOMIC_RELAXED);
        __atomic_store_n(&u->max_running, max_running, __ATOMIC_RELAXED);
        for (size_t b = 0; b < USERS_BUCKETS; b++)
                for (struct user *e = u->buckets[b]; e; e = e->next)
                        release(u, e, room(u, e));
}

void users_add(struct users *u, struct job *job)
{
        struct job_user_link *l = link_of(u, job);
        struct user *e = find(u, job->owner);

        if (!e) {
                e = calloc(1, sizeof(*e));
                if (!e) {
                        log_error("Out of memory: job %lld does not count against the per-user "
                                  "limits",
                                  (long long)job->id);
                        return;
                }
                e->uid = job->owner;
                e->next = *bucket(u, job->owner);
                *bucket(u, job->owner) = e;
        }
        l->user = e;
        l->prev = NULL;
        l->next = e->jobs;
        if (e->jobs)
                link_of(u, e->jobs)->prev = job;
        e->jobs = job;
        e->njobs++;
}

void users_remove(struct users *u, struct job *job)
{
        struct job_user_link *l = link_of(u, job);
        struct user *e = l->user, **p;

        if (!e)
                return;
        if (l->prev)
                link_of(u, l->prev)->next = l->next;
        else
                e->jobs = l->next;
        if (l->next)
                link_of(u, l->next)->prev = l->prev;
        *l = (struct job_user_link){0};
        e->njobs--;
        /* A run in progress or held keeps its job live: with no job left, there is none. */
        if (e->jobs)
                return;
        for (p = bucket(u, e->uid); *p != e; p = &(*p)->next)
                ;
        *p = e->next;
        free(e->held);
        free(e);
}

size_t users_count(const struct users *u, uid_t owner)
{
        const struct user *e = find(u, owner);

        return e ? e->njobs : 0;
}

bool users_may_queue(const struct users *u, uid_t owner, int64_t *ret_queued)
{
        const struct user *e = find(u, owner);
        int64_t max = users_max_queued(u), n = 0;

        if (max == 0 || !e || e->njobs < (size_t)max)
                return true;
        for (struct job *job = e->jobs; job; job = link_of(u, job)->next) {
                const char *state = job_state(job);

                n += strcmp(state, "pending") == 0 || strcmp(state, "waiting") == 0 ||
                     strcmp(state, "stashed") == 0;
        }
        if (n < max)
                return true;
        *ret_queued = n;
        return false;
}

bool users_take_run(struct users *u, struct job *job, bool always)
{
        struct user *e = link_of(u, job)->user;
        int64_t max = max_running(u), running;

        if (!e)
                return true;
        running = __atomic_load_n(&e->running, __ATOMIC_ACQUIRE);
        do {
                if (!always && max > 0 && running >= max)
                        return false;
        } while (!__atomic_compare_exchange_n(&e->running, &running, running + 1, true,
                                              __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE));
        return true;
}

void users_run_ended(struct users *u, struct job *job)
{
        struct user *e = link_of(u, job)->user;

        if (!e)
                return;
        __atomic_sub_fetch(&e->running, 1, __ATOMIC_ACQ_REL);
        release(u, e, room(u, e));
}

/* Kept in the order of the jobs' ids: a run that was let go and lost its slot to another keeps
 * its turn. */
static int add_held(struct users *u, struct user *e, struct job *job)
{
        size_t i = e->nheld;

        if (e->nheld == e->held_size) {
                size_t size = e->held_size ? 2 * e->held_size : 16;
                struct job **held = realloc(e->held, size * sizeof(*held));

                if (!held)
                        return -1;
                e->held = held;
                e->held_size = size;
        }
        while (i > 0 && e->held[i - 1]->id > job->id)
                i--;
        memmove(e->held + i + 1, e->held + i, (e->nheld - i) * sizeof(*e->held));
        e->held[i] = job_ref(job);
        e->nheld++;
        u->nheld++;
        *listed_of(u, job) = true;
        return 0;
}

void users_hold(struct users *u, struct job *job)
{
        struct user *e = link_of(u, job)->user;

        if (!__atomic_load_n(&job->held, __ATOMIC_ACQUIRE) || *listed_of(u, job))
                return;
        /* A run of the user ended, or the limit went up, since the slot was refused. */
        if (room(u, e) > 0 || add_held(u, e, job) < 0) {
                __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
                u->release(u->data, job);
        }
}

bool users_drop(struct users *u, struct job *job)
{
        struct job_user_link *l = link_of(u, job);
        bool held = __atomic_exchange_n(&job->held, false, __ATOMIC_ACQ_REL);
        struct user *e = l->user;

        for (size_t i = 0; *listed_of(u, job) && i < e->nheld; i++)
                if (e->held[i] == job) {
                        memmove(e->held + i, e->held + i + 1,
                                (e->nheld - i - 1) * sizeof(*e->held));
                        e->nheld--;
                        u->nheld--;
                        *listed_of(u, job) = false;
                        job_unref(job); /* not the last: the caller has one */
                        return true;
                }
        return held;
}

void users_close(struct users *u)
{
        for (size_t b = 0; b < USERS_BUCKETS; b++)
                for (struct user *e = u->buckets[b]; e; e = e->next) {
                        for (size_t i = 0; i < e->nheld; i++) {
                                *listed_of(u, e->held[i]) = false;
                                job_unref(e->held[i]);
                        }
                        e->nheld = 0;
                }
        u->nheld = 0;
}
