/* SPDX-License-Identifier: MIT */
/*
 * The registry: the live jobs' tables, by id, by key and in the order of their ids, with the
 * live jobs counted by blocks of ids. A job is live while it is pending, running, or held; then
 * the tables hold a reference. Loop thread only.
 */
#ifndef SLOWWORKD_REGISTRY_H
#define SLOWWORKD_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define REGISTRY_BUCKETS 4096
#define REGISTRY_ID_BLOCK 4096 /* ids counted together, for registry_count_before() */

struct job;
struct queue;
struct slow_work_rq_entry;

struct registry {
        struct job *by_id[REGISTRY_BUCKETS], *by_key[REGISTRY_BUCKETS];
        struct job *first, *last; /* the live jobs in the order of their ids */
        size_t njobs;
        uint32_t *id_blocks; /* live jobs by id / REGISTRY_ID_BLOCK (NULL: out of memory once) */
        size_t nid_blocks;
        bool id_blocks_lost;
};

struct job *registry_find(struct registry *reg, int64_t id);
/* A live job by its owner's key in the queue. */
struct job *registry_find_key(struct registry *reg, uid_t owner, const struct queue *queue,
                              const char *key);
/* How many live jobs have a lower id than the live job: -1 when that is not known (out of
 * memory once). Costs a sum over the blocks of ids and a walk within the job's block. */
int64_t registry_count_before(struct registry *reg, const struct job *job);
/* The job enters the tables, which take the caller's reference (and persist's handle), and is
 * counted in its queue; retire takes it out of them, and the reference back to the caller. */
void registry_add(struct registry *reg, struct job *job);
void registry_retire(struct registry *reg, struct job *job);
/* The live job a row of a pool's run queue stands for (its description names it), or NULL. */
struct job *registry_job_of_rq_entry(struct registry *reg, const struct slow_work_rq_entry *e);
/* Frees the tables, once every job has left them. */
void registry_free(struct registry *reg);

#endif
