/* SPDX-License-Identifier: MIT */
/*
 * The way in: enqueue pushes onto a lock-free intrusive FIFO per class (Dmitry Vyukov's
 * multi-producer single-consumer queue) and never takes the pool's lock while threads are busy;
 * whoever holds the lock moves what came in onto the run queues, in arrival order. The links are
 * sequentially consistent: see ATOMIC_GET in pool-internal.h.
 */
#include "pool-internal.h"

static struct incoming *incoming_of(struct slow_work_pool *pool, struct slow_work *work)
{
        return &pool->incoming[work_is_very_slow(work)];
}

void incoming_init(struct slow_work_pool *pool)
{
        unsigned i;

        for (i = 0; i < 2; i++) {
                pool->incoming[i].head = &pool->incoming[i].stub;
                pool->incoming[i].tail = &pool->incoming[i].stub;
        }
}

static void push(struct incoming *in, struct slow_work *work)
{
        struct slow_work *prev;

        __atomic_store_n(&work->incoming_next, NULL, __ATOMIC_RELAXED);
        prev = __atomic_exchange_n(&in->tail, work, __ATOMIC_SEQ_CST);
        __atomic_store_n(&prev->incoming_next, work, __ATOMIC_SEQ_CST);
}

void incoming_push(struct slow_work_pool *pool, struct slow_work *work)
{
        push(incoming_of(pool, work), work);
}

/* The oldest item, or NULL when empty or when the next push is still half done. */
static struct slow_work *pop(struct incoming *in)
{
        struct slow_work *head = in->head;
        struct slow_work *next = __atomic_load_n(&head->incoming_next, __ATOMIC_SEQ_CST);

        if (head == &in->stub) {
                if (!next)
                        return NULL;
                in->head = head = next;
                next = __atomic_load_n(&next->incoming_next, __ATOMIC_SEQ_CST);
        }
        if (next) {
                in->head = next;
                return head;
        }
        if (head != __atomic_load_n(&in->tail, __ATOMIC_SEQ_CST))
                return NULL;
        push(in, &in->stub);
        next = __atomic_load_n(&head->incoming_next, __ATOMIC_SEQ_CST);
        if (!next)
                return NULL;
        in->head = next;
        return head;
}

struct slow_work *incoming_pop(struct slow_work_pool *pool, bool very_slow)
{
        return pop(&pool->incoming[very_slow]);
}

bool incoming_empty(struct slow_work_pool *pool, bool very_slow)
{
        struct incoming *in = &pool->incoming[very_slow];

        return in->head == &in->stub && !__atomic_load_n(&in->stub.incoming_next, __ATOMIC_SEQ_CST);
}

void pool_drain(struct slow_work_pool *pool)
{
        struct slow_work *work;

        while ((work = pop(&pool->incoming[0])))
                runq_append(&pool->slow, work);
        while ((work = pop(&pool->incoming[1])))
                runq_append(&pool->vslow, work);
}
