/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "jobs/job.h"
#include "jobs/users.h"
#include "util/log.h"

struct user {
        struct user *next; /* in its bucket */
        uid_t uid;
        int64_t running;   /* atomic: slots taken, until the loop saw the run end */
        struct job *jobs;  /* live, through their links */
        size_t njobs;      /* how many */
        int64_t bytes;     /* their links' bytes */
        struct job **held; /* each a reference, by job id */
        size_t nheld, held_size;
        size_t granted;    /* fair share: its runs let go and not ended */
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

static bool fair(const struct users *u)
{
        return __atomic_load_n(&u->fair, __ATOMIC_ACQUIRE);
}

/* Fair share: whether a held run of the job's class may be let go besides those let go. */
static bool class_room(const struct users *u, const struct job *job)
{
        return !job->very_slow || u->granted_vslow < u->vslow_cap;
}

/* The index of e's held run of the highest priority, the oldest of those (the list is in the
 * order of ids), among those that may go (all, or by fair share those whose class has room);
 * -1: none. */
static ssize_t first_held(const struct users *u, const struct user *e, bool by_class)
{
        ssize_t best = -1;

        for (size_t i = 0; i < e->nheld; i++)
                if ((!by_class || class_room(u, e->held[i])) &&
                    (best < 0 || e->held[i]->priority > e->held[best]->priority))
                        best = (ssize_t)i;
        return best;
}

/* Takes e's held run at index i off its list. */
static struct job *take_at(struct user *e, size_t i)
{
        struct job *job = e->held[i];

        memmove(e->held + i, e->held + i + 1, (e->nheld - i - 1) * sizeof(*e->held));
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
                        jobs[i] = take_at(e, (size_t)first_held(u, e, false));
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

/* A grant is over: its run ended, or it went back unused. */
static void grant_over(struct users *u, struct user *e, const struct job *job)
{
        e->granted--;
        u->granted--;
        if (job->very_slow)
                u->granted_vslow--;
}

/* Whether e may have one more run let go by fair share: below max-running-per-user, counting
 * the runs let go that have not started yet. */
static bool fair_room(const struct users *u, struct user *e)
{
        int64_t max = max_running(u);

        return room(u, e) > 0 && (max == 0 || e->granted < (size_t)max);
}

/* Fair share: while the queue has threads for them, held runs are let go, each of the user with
 * the fewest let go and not ended, the oldest job among equals. self, when let go, is not
 * queued here but told: whether it was. */
static bool fair_release_but(struct users *u, const struct job *self)
{
        bool self_goes = false;

        if (!fair(u) || __atomic_load_n(u->stopping, __ATOMIC_ACQUIRE))
                return false;
        while (u->granted < u->threads && u->nheld > 0) {
                struct user *best = NULL;
                ssize_t best_i = -1;
                struct job *job;

                for (size_t b = 0; b < USERS_BUCKETS; b++)
                        for (struct user *e = u->buckets[b]; e; e = e->next) {
                                ssize_t i = e->nheld && fair_room(u, e) ? first_held(u, e, true)
                                                                        : -1;

                                if (i >= 0 &&
                                    (!best || e->granted < best->granted ||
                                     (e->granted == best->granted &&
                                      e->held[i]->id < best->held[best_i]->id))) {
                                        best = e;
                                        best_i = i;
                                }
                        }
                if (!best)
                        return self_goes;
                job = take_at(best, (size_t)best_i);
                u->nheld--;
                *listed_of(u, job) = false;
                __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
                best->granted++;
                u->granted++;
                u->granted_vslow += job->very_slow;
                __atomic_store_n(&link_of(u, job)->grant, true, __ATOMIC_RELEASE);
                if (job == self)
                        self_goes = true;
                else
                        u->release(u->data, job);
                job_unref(job);
        }
        return self_goes;
}

static void fair_release(struct users *u)
{
        fair_release_but(u, NULL);
}

/* Held runs that may start now go: every user's within its room, or by fair share. */
static void release_all(struct users *u)
{
        if (fair(u)) {
                fair_release(u);
                return;
        }
        for (size_t b = 0; b < USERS_BUCKETS; b++)
                for (struct user *e = u->buckets[b]; e; e = e->next)
                        release(u, e, room(u, e));
}

void users_set_limits(struct users *u, int64_t max_queued, int64_t max_running)
{
        __atomic_store_n(&u->max_queued, max_queued, __ATOMIC_RELAXED);
        __atomic_store_n(&u->max_running, max_running, __ATOMIC_RELAXED);
        release_all(u);
}

void users_set_fair(struct users *u, bool on, size_t threads, size_t vslow_cap)
{
        __atomic_store_n(&u->fair, on, __ATOMIC_RELEASE);
        u->threads = threads;
        u->vslow_cap = vslow_cap;
        release_all(u);
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
        l->bytes = job_bytes(job);
        e->bytes += l->bytes;
}

void users_resized(struct users *u, struct job *job)
{
        struct job_user_link *l = link_of(u, job);
        int64_t bytes = job_bytes(job);

        if (!l->user)
                return;
        l->user->bytes += bytes - l->bytes;
        l->bytes = bytes;
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
        e->bytes -= l->bytes;
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

int64_t users_bytes(const struct users *u, uid_t owner)
{
        const struct user *e = find(u, owner);

        return e ? e->bytes : 0;
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
        struct job_user_link *l = link_of(u, job);
        struct user *e = l->user;
        int64_t max = max_running(u), running;

        if (!e)
                return true;
        /* A grant is used once; the loop sees granted_run after the run's event. */
        if (__atomic_exchange_n(&l->grant, false, __ATOMIC_ACQ_REL))
                l->granted_run = true;
        else if (!always && fair(u))
                return false;
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
        struct job_user_link *l = link_of(u, job);
        struct user *e = l->user;

        if (!e)
                return;
        __atomic_sub_fetch(&e->running, 1, __ATOMIC_ACQ_REL);
        if (l->granted_run) {
                /* The thread is free, but the run that ended still counts for its owner while
                 * the next is chosen: with one thread, the owners take turns. */
                l->granted_run = false;
                u->granted--;
                u->granted_vslow -= job->very_slow;
                fair_release(u);
                e->granted--;
        }
        if (fair(u))
                fair_release(u);
        else
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

bool users_admit(struct users *u, struct job *job)
{
        struct job_user_link *l = link_of(u, job);

        if (!fair(u) || !l->user || __atomic_load_n(&l->grant, __ATOMIC_ACQUIRE))
                return true;
        if (*listed_of(u, job))
                return false; /* held already: one run to come */
        __atomic_store_n(&job->held, true, __ATOMIC_RELEASE);
        if (add_held(u, l->user, job) < 0) {
                __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
                return true;
        }
        return fair_release_but(u, job);
}

void users_hold(struct users *u, struct job *job)
{
        struct user *e = link_of(u, job)->user;

        if (!__atomic_load_n(&job->held, __ATOMIC_ACQUIRE) || *listed_of(u, job))
                return;
        /* Let go but over max-running-per-user (a run that had to go took the slot): its turn
         * comes again. */
        if (link_of(u, job)->granted_run) {
                link_of(u, job)->granted_run = false;
                grant_over(u, e, job);
        }
        if (fair(u) && add_held(u, e, job) == 0) {
                fair_release(u);
                return;
        }
        /* A run of the user ended, or the limit went up, since the slot was refused. */
        if (room(u, e) > 0 || add_held(u, e, job) < 0) {
                __atomic_store_n(&job->held, false, __ATOMIC_RELEASE);
                u->release(u->data, job);
        }
}

void users_return_grant(struct users *u, struct job *job)
{
        struct job_user_link *l = link_of(u, job);

        if (l->user && __atomic_exchange_n(&l->grant, false, __ATOMIC_ACQ_REL)) {
                grant_over(u, l->user, job);
                fair_release(u);
        }
}

bool users_drop(struct users *u, struct job *job)
{
        struct job_user_link *l = link_of(u, job);
        bool held = __atomic_exchange_n(&job->held, false, __ATOMIC_ACQ_REL);
        struct user *e = l->user;

        for (size_t i = 0; *listed_of(u, job) && i < e->nheld; i++)
                if (e->held[i] == job) {
                        take_at(e, i);
                        u->nheld--;
                        *listed_of(u, job) = false;
                        job_unref(job); /* not the last: the caller has one */
                        held = true;
                }
        /* Let go, but taken off the pool's queue before a thread used the grant. */
        users_return_grant(u, job);
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
