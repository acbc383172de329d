/* SPDX-License-Identifier: MIT */
/*
 * Producers enqueue a few hundred items hundreds of thousands of times, plain and delayed, while
 * other threads cancel items and change the settings. At the end every get_ref has its put_ref,
 * no item ever ran on two threads at once, and every item ran after its last enqueue.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "pool-helpers.h"
#include "run-suite.h"

#define NITEMS 300
#define NPRODUCERS 4
#define ENQUEUES_PER_PRODUCER 100000

struct sitem {
        struct delayed_slow_work dw;
        int gets, puts, runs;   /* atomics */
        int running, overlaps;  /* atomics */
        int dirty;              /* set before each enqueue, cleared as a run starts */
};

static struct sitem items[NITEMS];
static struct slow_work_pool *pool;
static int stop_changing;

static int sitem_get_ref(struct slow_work *work)
{
        struct sitem *it = container_of(work, struct sitem, dw.work);

        __atomic_add_fetch(&it->gets, 1, __ATOMIC_RELAXED);
        return 0;
}

static void sitem_put_ref(struct slow_work *work)
{
        struct sitem *it = container_of(work, struct sitem, dw.work);

        __atomic_add_fetch(&it->puts, 1, __ATOMIC_RELAXED);
}

static void sitem_execute(struct slow_work *work)
{
        struct sitem *it = container_of(work, struct sitem, dw.work);

        if (__atomic_add_fetch(&it->running, 1, __ATOMIC_ACQ_REL) != 1)
                __atomic_add_fetch(&it->overlaps, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&it->dirty, 0, __ATOMIC_SEQ_CST);
        __atomic_add_fetch(&it->runs, 1, __ATOMIC_RELAXED);
        __atomic_sub_fetch(&it->running, 1, __ATOMIC_ACQ_REL);
}

static const struct slow_work_ops sitem_ops = {
    .get_ref = sitem_get_ref,
    .put_ref = sitem_put_ref,
    .execute = sitem_execute,
};

/* Marks the item due, then enqueues it; a cancel in progress leaves it to the canceller. */
static void push(struct sitem *it, unsigned r)
{
        int ret;

        __atomic_store_n(&it->dirty, 1, __ATOMIC_SEQ_CST);
        if (r % 16 == 0)
                ret = slow_work_pool_enqueue_delayed(pool, &it->dw, 1 + r % 3);
        else
                ret = slow_work_pool_enqueue(pool, &it->dw.work);
        ck_assert_msg(ret == 0 || ret == -ECANCELED, "enqueue: %d", ret);
}

static void *producer_main(void *arg)
{
        unsigned seed = (unsigned)(uintptr_t)arg;
        int i;

        for (i = 0; i < ENQUEUES_PER_PRODUCER; i++) {
                unsigned r = (unsigned)rand_r(&seed);

                push(&items[r % NITEMS], r / NITEMS);
        }
        return NULL;
}

static void *canceller_main(void *arg)
{
        unsigned seed = 77;

        while (!__atomic_load_n(&stop_changing, __ATOMIC_ACQUIRE)) {
                struct sitem *it = &items[(unsigned)rand_r(&seed) % NITEMS];

                slow_work_cancel(&it->dw.work);
                push(it, 1); /* covers any enqueue the cancel refused or removed */
                poll_pause();
        }
        return NULL;
}

/*
 * Busy threads above a lowered max-threads or very slow cap finish their item first (rule 9); the
 * items here are short, so they soon do. From then on, while this thread (the only one changing
 * the settings) changes nothing, the pool must stay within them.
 */
static void check_settings_in_force(const struct slow_work_settings *s)
{
        unsigned cap = slow_work_very_slow_cap(s);
        struct slow_work_stats st;
        int i;

        POLL_FOR(pool_stats(pool).threads <= s->max_threads &&
                 pool_stats(pool).busy_very_slow <= cap);
        for (i = 0; i < 20; i++) {
                st = pool_stats(pool);
                ck_assert_uint_le(st.busy, st.threads);
                ck_assert_uint_le(st.threads, s->max_threads);
                ck_assert_uint_le(st.busy_very_slow, cap);
                ck_assert_uint_eq(st.very_slow_cap, cap);
        }
}

static void *changer_main(void *arg)
{
        unsigned seed = 99;

        while (!__atomic_load_n(&stop_changing, __ATOMIC_ACQUIRE)) {
                struct slow_work_settings s;

                s.min_threads = 1 + (unsigned)rand_r(&seed) % 3;
                s.max_threads = s.min_threads + (unsigned)rand_r(&seed) % 6;
                s.vslow_percentage = 1 + (unsigned)rand_r(&seed) % 99;
                s.idle_timeout_ms = 1 + (unsigned)rand_r(&seed) % 20;
                ck_assert_int_eq(slow_work_pool_configure(pool, &s), 0);
                check_settings_in_force(&s);
                poll_pause();
        }
        return NULL;
}

START_TEST(stress_producers_cancels_and_settings_changes)
{
        pthread_t producers[NPRODUCERS], changer, canceller;
        struct slow_work_stats st;
        uint64_t runs = 0;
        int i;

        for (i = 0; i < NITEMS; i++) {
                if (i % 3 == 0)
                        delayed_vslow_work_init(&items[i].dw, &sitem_ops);
                else
                        delayed_slow_work_init(&items[i].dw, &sitem_ops);
        }
        pool = pool_with(2, 4, 50, 5000);
        pthread_create(&changer, NULL, changer_main, NULL);
        pthread_create(&canceller, NULL, canceller_main, NULL);
        for (i = 0; i < NPRODUCERS; i++)
                pthread_create(&producers[i], NULL, producer_main, (void *)(uintptr_t)(i + 1));
        for (i = 0; i < NPRODUCERS; i++)
                pthread_join(producers[i], NULL);
        __atomic_store_n(&stop_changing, 1, __ATOMIC_RELEASE);
        pthread_join(changer, NULL);
        pthread_join(canceller, NULL);

        /* Let the delay timers run out: pool_free drops armed timers unrun. */
        POLL_FOR(pool_stats(pool).delayed == 0);
        POLL_FOR(pool_stats(pool).busy == 0 && pool_stats(pool).queued_slow == 0 &&
                 pool_stats(pool).queued_very_slow == 0);
        slow_work_pool_stats(pool, &st);
        slow_work_pool_free(pool);

        for (i = 0; i < NITEMS; i++) {
                ck_assert_msg(items[i].gets == items[i].puts, "item %d: %d gets, %d puts", i,
                              items[i].gets, items[i].puts);
                ck_assert_msg(items[i].overlaps == 0, "item %d ran on two threads at once", i);
                ck_assert_msg(items[i].dirty == 0, "item %d did not run after its last enqueue",
                              i);
                ck_assert_int_ge(items[i].runs, 1);
                runs += (uint64_t)items[i].runs;
        }
        ck_assert_uint_eq(runs, st.items_run);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("pool-stress");
        TCase *tc = tcase_create("stress");

        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, stress_producers_cancels_and_settings_changes);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
