/* SPDX-License-Identifier: MIT */
#include <stdlib.h>
#include <string.h>

#include "jobs/job.h"
#include "jobs/queue.h"
#include "jobs/registry.h"

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
        if (job->persist)
                job->handles++;
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
        reg->njobs--;
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

void registry_free(struct registry *reg)
{
        free(reg->id_blocks);
}
