/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/deps.h"
#include "jobs/job.h"
#include "store/run-record.h"

size_t ids_count(const int64_t *ids)
{
        size_t n = 0;

        while (ids && ids[n])
                n++;
        return n;
}

/* A copy of a and b together, 0-terminated (NULL: out of memory). */
static int64_t *ids_join(const int64_t *a, const int64_t *b)
{
        size_t na = ids_count(a), nb = ids_count(b);
        int64_t *ids = calloc(na + nb + 1, sizeof(*ids));

        if (!ids)
                return NULL;
        if (na)
                memcpy(ids, a, na * sizeof(*ids));
        if (nb)
                memcpy(ids + na, b, nb * sizeof(*ids));
        return ids;
}

/* Takes id off the list: whether it was on it. */
static bool ids_remove(int64_t *ids, int64_t id)
{
        bool found = false;
        size_t i, j;

        for (i = j = 0; ids && ids[i]; i++) {
                if (ids[i] == id)
                        found = true;
                else
                        ids[j++] = ids[i];
        }
        if (ids)
                ids[j] = 0;
        return found;
}

void deps_init(struct deps *d, void (*resolved)(void *data, struct job *job, bool failed),
               void (*changed)(void *data, struct job *job), void *data)
{
        *d = (struct deps){.resolved = resolved, .changed = changed, .data = data};
}

static int push(struct job ***list, size_t *n, size_t *size, struct job *job)
{
        if (*n == *size) {
                size_t bigger = *size ? 2 * *size : 16;
                struct job **more = realloc(*list, bigger * sizeof(*more));

                if (!more)
                        return -ENOMEM;
                *list = more;
                *size = bigger;
        }
        (*list)[(*n)++] = job_ref(job);
        return 0;
}

int deps_wait(struct deps *d, struct job *job)
{
        int r = job->waiting ? 0 : push(&d->waiting, &d->n, &d->size, job);

        if (r == 0)
                job->waiting = true;
        return r;
}

bool deps_drop(struct deps *d, struct job *job)
{
        for (size_t i = 0; i < d->n; i++)
                if (d->waiting[i] == job) {
                        memmove(&d->waiting[i], &d->waiting[i + 1],
                                (d->n - i - 1) * sizeof(*d->waiting));
                        d->n--;
                        job->waiting = false;
                        job_unref(job);
                        return true;
                }
        return false;
}

/* The waiting jobs that id's end settles, taken off the list in the order they came, with
 * whether each failed. */
static void settle(struct deps *d, int64_t id, bool succeeded)
{
        size_t i, j, nsettled = 0;
        struct job **settled = NULL;
        bool *failed = NULL;

        if (d->n > 0) {
                settled = malloc(d->n * sizeof(*settled));
                failed = malloc(d->n * sizeof(*failed));
        }
        if (d->n > 0 && (!settled || !failed)) {
                free(settled);
                free(failed);
                return; /* out of memory: they wait on, and a restart looks again */
        }
        for (i = j = 0; i < d->n; i++) {
                struct job *job = d->waiting[i];
                bool in_after = ids_remove(job->after, id);
                bool fail = in_after && !succeeded;
                bool in_any = ids_remove(job->after_any, id);
                if (fail || (!ids_count(job->after) && !ids_count(job->after_any))) {
                        job->waiting = false;
                        failed[nsettled] = fail;
                        settled[nsettled++] = job;
                } else {
                        d->waiting[j++] = job;
                        if (in_after || in_any)
                                d->changed(d->data, job); /* its row keeps what is left */
                }
        }
        d->n = j;
        for (i = 0; i < nsettled; i++) {
                d->resolved(d->data, settled[i], failed[i]);
                job_unref(settled[i]);
        }
        free(settled);
        free(failed);
}

/* The ends still to tell, told (the ends of jobs they settle in turn too, not in calls below
 * this one). */
static void tell(struct deps *d)
{
        d->telling = true;
        while (d->nended > 0) {
                struct job *ended = d->ended[--d->nended];

                settle(d, ended->id,
                       ended->last && strcmp(ended->last->outcome, "succeeded") == 0);
                job_unref(ended);
        }
        d->telling = false;
}

void deps_ended(struct deps *d, struct job *job)
{
        if (d->n == 0 || push(&d->ended, &d->nended, &d->ended_size, job) < 0 || d->telling)
                return;
        tell(d);
}

static bool ids_have(const int64_t *ids, int64_t id)
{
        for (; ids && *ids; ids++)
                if (*ids == id)
                        return true;
        return false;
}

bool deps_waits_for(const struct deps *d, int64_t id)
{
        for (size_t i = 0; i < d->n; i++)
                if (ids_have(d->waiting[i]->after, id) || ids_have(d->waiting[i]->after_any, id))
                        return true;
        return false;
}

void deps_ended_elsewhere(struct deps *d, int64_t id, bool succeeded)
{
        if (d->telling) /* not from a callback of this module's */
                return;
        d->telling = true;
        settle(d, id, succeeded);
        tell(d);
}

bool deps_cycle(struct deps *d, const struct job *job, const int64_t *ids,
                struct job *(*find)(void *data, int64_t id), void *data)
{
        size_t n, size = 16;
        int64_t *stack = malloc(size * sizeof(*stack));
        bool cycle = false;

        if (!stack)
                return true; /* out of memory: refuse rather than risk a circle */
        d->walk++;
        for (; ids && *ids && !cycle; ids++) {
                n = 0;
                stack[n++] = *ids;
                while (n > 0 && !cycle) {
                        int64_t id = stack[--n];
                        struct job *dep;
                        int64_t *more;
                        size_t nmore;

                        if (id == job->id) {
                                cycle = true;
                                break;
                        }
                        dep = find(data, id);
                        if (!dep || !dep->waiting || dep->visit == d->walk)
                                continue;
                        dep->visit = d->walk;
                        more = ids_join(dep->after, dep->after_any);
                        nmore = ids_count(more);
                        if (more && n + nmore > size) {
                                int64_t *bigger = realloc(stack, (n + nmore + 16) * sizeof(*stack));

                                if (bigger) {
                                        stack = bigger;
                                        size = n + nmore + 16;
                                }
                        }
                        if (!more || n + nmore > size) {
                                free(more);
                                free(stack);
                                return true; /* out of memory: refuse rather than risk a circle */
                        }
                        memcpy(stack + n, more, nmore * sizeof(*stack));
                        n += nmore;
                        free(more);
                }
        }
        free(stack);
        return cycle;
}

void deps_free(struct deps *d)
{
        while (d->n > 0)
                deps_drop(d, d->waiting[d->n - 1]);
        while (d->nended > 0)
                job_unref(d->ended[--d->nended]);
        free(d->waiting);
        free(d->ended);
}
