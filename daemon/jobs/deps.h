/* SPDX-License-Identifier: MIT */
/*
 * Jobs that wait for others to end (submit's after and after_any): out of the pool, in state
 * waiting, until every job they name has ended. The daemon tells of each job that ends; a
 * waiting job whose `after` job ended otherwise than succeeded fails without running, and its
 * own end is told in turn, without recursion however long the chain. Loop thread only.
 */
#ifndef SLOWWORKD_DEPS_H
#define SLOWWORKD_DEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct job;

struct deps {
        struct job **waiting; /* each a reference */
        size_t n, size;
        struct job **ended; /* ends still to tell: references */
        size_t nended, ended_size;
        bool telling;
        unsigned walk; /* the last cycle check's number */
        /* What a waiting job does once its jobs have ended: run, or fail (dependency-failed). */
        void (*resolved)(void *data, struct job *job, bool failed);
        /* A waiting job waits on, for fewer jobs. */
        void (*changed)(void *data, struct job *job);
        void *data;
};

void deps_init(struct deps *d, void (*resolved)(void *data, struct job *job, bool failed),
               void (*changed)(void *data, struct job *job), void *data);
/* The job (job->after and job->after_any set) waits: 0 or -ENOMEM. */
int deps_wait(struct deps *d, struct job *job);
/* It no longer does (a cancel): whether it did. */
bool deps_drop(struct deps *d, struct job *job);
/* The job ended (went idle; its last run says how): each job waiting for it hears of it. */
void deps_ended(struct deps *d, struct job *job);
/* Whether a waiting job waits for the job of that id. */
bool deps_waits_for(const struct deps *d, int64_t id);
/* The same of a job of another node, by its id. */
void deps_ended_elsewhere(struct deps *d, int64_t id, bool succeeded);
/* Whether waiting for ids would close a circle through job (which waits for them, or would):
 * some id is job's, or waits, directly or through others, for job. find looks a live job up. */
bool deps_cycle(struct deps *d, const struct job *job, const int64_t *ids,
                struct job *(*find)(void *data, int64_t id), void *data);
void deps_free(struct deps *d);

/* A 0-terminated list of ids: how many. */
size_t ids_count(const int64_t *ids);

#endif
