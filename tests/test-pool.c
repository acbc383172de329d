/* SPDX-License-Identifier: MIT */
/* One case per rule of pool/RULES.md, named after the rule it checks (rule7_...). */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pool-helpers.h"
#include "run-suite.h"

static void order_is(const int *want, int n)
{
        int i;

        ev_lock();
        ck_assert_int_eq(ev_norder, n);
        for (i = 0; i < n; i++)
                ck_assert_msg(ev_order[i] == want[i], "run %d was item %d, want item %d", i,
                              ev_order[i], want[i]);
        ev_unlock();
}

/* Rule 1: no thread before the first user; then min-threads; the last user drains and stops. */
START_TEST(rule1_no_threads_before_register_then_min_threads)
{
        struct titem t;

        titem_init(&t, 1, true, NULL);
        ck_assert_int_lt(slow_work_enqueue(W(&t)), 0);
        ck_assert_int_eq(worker_threads(), 0);
        ck_assert_ptr_null(slow_work_default_pool());
        ck_assert_int_eq(slow_work_register_user(), 0);
        ck_assert_int_eq(pool_stats(slow_work_default_pool()).threads, 2);
        POLL_FOR(worker_threads() == 2);
        ck_assert_int_eq(slow_work_register_user(), 0);
        ck_assert_int_eq(worker_threads(), 2);
        slow_work_unregister_user();
        ck_assert_ptr_nonnull(slow_work_default_pool());
        slow_work_unregister_user();
        ck_assert_ptr_null(slow_work_default_pool());
        POLL_FOR(worker_threads() == 0);
}
END_TEST

START_TEST(rule1_last_unregister_runs_queued_items_first)
{
        struct titem items[20];
        int i;

        ck_assert_int_eq(slow_work_register_user(), 0);
        for (i = 0; i < 20; i++) {
                titem_init(&items[i], i, i % 3 == 0, NULL);
                ck_assert_int_eq(slow_work_enqueue(W(&items[i])), 0);
        }
        slow_work_unregister_user();
        for (i = 0; i < 20; i++) {
                ck_assert_int_eq(items[i].runs, 1);
                ck_assert_int_eq(items[i].puts, 1);
        }
}
END_TEST

/* Rule 2: get_ref before queueing, put_ref after the run; a refusal is -EAGAIN. */
START_TEST(rule2_get_ref_on_enqueue_put_ref_after_run)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem t;

        run_gated(pool, &t, 1, false, &gate);
        ev_lock();
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.puts, 0);
        ev_unlock();
        gate_open(&gate);
        WAIT_FOR(t.puts == 1);
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.runs, 1);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule2_get_ref_refusal_is_eagain_and_queues_nothing)
{
        struct slow_work_pool *pool = pool_with(1, 2, 50, 5000);
        struct titem t;

        titem_init(&t, 1, false, pool);
        t.refuse = true;
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), -EAGAIN);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &t.dw, 10), -EAGAIN);
        ck_assert_int_eq(pool_stats(pool).queued_slow, 0);
        ck_assert_int_eq(pool_stats(pool).delayed, 0);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.runs, 0);
        ck_assert_int_eq(t.gets, 0);
        ck_assert_int_eq(t.puts, 0);
}
END_TEST

/* Rule 3: enqueue of a pending item does nothing more. */
START_TEST(rule3_enqueue_while_pending_runs_once)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, t;
        int i;

        run_gated(pool, &blocker, 0, false, &gate);
        titem_init(&t, 1, false, pool);
        for (i = 0; i < 3; i++)
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        ck_assert_int_eq(pool_stats(pool).queued_slow, 1);
        gate_open(&gate);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.runs, 1);
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.puts, 1);
}
END_TEST

/* Rule 4: enqueue of a running item gives exactly one more run, at the queue's tail. */
START_TEST(rule4_enqueues_during_run_give_one_more_run)
{
        struct slow_work_pool *pool = pool_with(2, 2, 50, 5000);
        struct gate gate = {false};
        struct titem t;
        int i;

        run_gated(pool, &t, 1, false, &gate);
        for (i = 0; i < 5; i++)
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        ev_lock();
        ck_assert_int_eq(t.gets, 1);
        ev_unlock();
        gate_open(&gate);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.runs, 2);
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.puts, 1);
}
END_TEST

START_TEST(rule4_self_enqueue_requeues_at_tail)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, a, b;
        const int want[] = {0, 1, 2, 1};

        run_gated(pool, &blocker, 0, false, &gate);
        titem_init(&a, 1, false, pool);
        a.requeue_in_exec = 2;
        titem_init(&b, 2, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&a)), 0);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&b)), 0);
        gate_open(&gate);
        slow_work_pool_free(pool);
        order_is(want, 4);
        ck_assert_int_eq(a.gets, 1);
        ck_assert_int_eq(a.puts, 1);
}
END_TEST

/* Rule 5: an item never runs on two threads at once, however many threads are free. */
struct hammer {
        struct slow_work_pool *pool;
        struct titem *t;
        int n;
};

static void *hammer_main(void *arg)
{
        struct hammer *h = arg;
        int i;

        for (i = 0; i < h->n; i++)
                ck_assert_int_eq(slow_work_pool_enqueue(h->pool, W(h->t)), 0);
        return NULL;
}

START_TEST(rule5_item_never_runs_on_two_threads)
{
        struct slow_work_pool *pool = pool_with(4, 4, 50, 5000);
        struct titem t;
        struct hammer h;
        pthread_t threads[3];
        int i;

        titem_init(&t, 1, false, pool);
        h = (struct hammer){pool, &t, 20000};
        for (i = 0; i < 3; i++)
                pthread_create(&threads[i], NULL, hammer_main, &h);
        for (i = 0; i < 3; i++)
                pthread_join(threads[i], NULL);
        slow_work_pool_free(pool);
        ck_assert_int_ge(t.runs, 1);
        ck_assert_int_eq(t.max_running, 1);
        ck_assert_int_eq(t.gets, t.puts);
}
END_TEST

/* Rule 6: FIFO within a class. */
static void check_fifo(bool very_slow)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, items[10];
        int want[11], i;

        run_gated(pool, &blocker, 100, false, &gate);
        want[0] = 100;
        for (i = 0; i < 10; i++) {
                titem_init(&items[i], i, very_slow, pool);
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&items[i])), 0);
                want[i + 1] = i;
        }
        gate_open(&gate);
        slow_work_pool_free(pool);
        order_is(want, 11);
}

START_TEST(rule6_slow_items_run_in_fifo_order)
{
        check_fifo(false);
}
END_TEST

START_TEST(rule6_very_slow_items_run_in_fifo_order)
{
        check_fifo(true);
}
END_TEST

/* Rule 13: within a class, a higher priority first, then the order of queueing. */
START_TEST(rule13_higher_priority_first_then_fifo)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, items[6];
        const int prio[] = {0, 5, -3, 5, 0, 100};
        const int want[] = {100, 5, 1, 3, 0, 4, 2};
        int i;

        run_gated(pool, &blocker, 100, false, &gate);
        for (i = 0; i < 6; i++) {
                titem_init(&items[i], i, false, pool);
                slow_work_set_priority(W(&items[i]), prio[i]);
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&items[i])), 0);
        }
        gate_open(&gate);
        slow_work_pool_free(pool);
        order_is(want, 7);
}
END_TEST

/* Rule 13: a queued item given another priority moves, keeping its age among its new peers. */
START_TEST(rule13_a_changed_priority_moves_a_queued_item_by_its_age)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, items[5];
        const int prio[] = {0, 0, 7, 0, 7};
        const int want[] = {100, 2, 3, 4, 0, 1};
        int i;

        run_gated(pool, &blocker, 100, false, &gate);
        for (i = 0; i < 5; i++) {
                titem_init(&items[i], i, false, pool);
                slow_work_set_priority(W(&items[i]), prio[i]);
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&items[i])), 0);
        }
        /* 3 is older than 4 and younger than 2: it goes between them. */
        slow_work_set_priority(W(&items[3]), 7);
        gate_open(&gate);
        slow_work_pool_free(pool);
        order_is(want, 6);
        ck_assert_int_eq(items[3].gets, 1);
        ck_assert_int_eq(items[3].puts, 1);
}
END_TEST

/* Rule 14: an item put back goes to the place of its last enqueue on the pool; one never queued
 * there goes to the tail. */
START_TEST(rule14_an_item_put_back_keeps_its_place)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000), *other = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, items[5];
        const int want[] = {100, 0, 1, 2, 3, 4};
        int i;

        run_gated(pool, &blocker, 100, false, &gate);
        for (i = 0; i < 5; i++)
                titem_init(&items[i], i, false, pool);
        /* 4 was queued on the other pool first (plugged: no thread takes it): that place, ahead
         * of all here, means nothing here. */
        slow_work_pool_plug(other);
        ck_assert_int_eq(slow_work_pool_enqueue(other, W(&items[4])), 0);
        ck_assert(slow_work_cancel_pending(W(&items[4])));
        slow_work_pool_unplug(other);
        for (i = 0; i < 3; i++)
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&items[i])), 0);
        /* Taken out and given back, as a gate does: before 1 and 2, queued after it. */
        ck_assert(slow_work_cancel_pending(W(&items[0])));
        ck_assert_int_eq(slow_work_pool_put_back(pool, W(&items[0])), 0);
        ck_assert_int_eq(slow_work_pool_put_back(pool, W(&items[3])), 0);
        ck_assert_int_eq(slow_work_pool_put_back(pool, W(&items[4])), 0);
        /* A pending item is coalesced, not moved. */
        ck_assert_int_eq(slow_work_pool_put_back(pool, W(&items[1])), 0);
        ck_assert_int_eq(pool_stats(pool).queued_slow, 5);
        gate_open(&gate);
        slow_work_pool_free(pool);
        slow_work_pool_free(other);
        order_is(want, 6);
        for (i = 0; i < 5; i++)
                ck_assert_int_eq(items[i].gets, items[i].puts);
}
END_TEST

/* Rule 14: a running item is first until one queued before it is put back. */
START_TEST(rule14_a_running_item_is_first_until_an_older_one_is_put_back)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem older, running, younger;
        const int want[] = {1, 0, 2};

        /* Queued (plugged: no thread takes it) and taken out again: its place is before 1's. */
        titem_init(&older, 0, false, pool);
        slow_work_pool_plug(pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&older)), 0);
        ck_assert(slow_work_cancel_pending(W(&older)));
        slow_work_pool_unplug(pool);
        run_gated(pool, &running, 1, false, &gate);
        ck_assert(slow_work_is_first(W(&running)));
        titem_init(&younger, 2, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&younger)), 0);
        ck_assert(slow_work_is_first(W(&running)));
        ck_assert_int_eq(slow_work_pool_put_back(pool, W(&older)), 0);
        ck_assert(!slow_work_is_first(W(&running)));
        /* Of an item that does not run (younger waits behind older) it says nothing: true. */
        ck_assert(slow_work_is_first(W(&younger)));
        gate_open(&gate);
        slow_work_pool_free(pool);
        order_is(want, 3);
}
END_TEST

/* Rule 14: an item put back while it runs runs once more, at its place, not at the tail. */
START_TEST(rule14_an_item_put_back_while_it_runs_runs_again_at_its_place)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem running, younger;
        const int want[] = {0, 0, 1};

        run_gated(pool, &running, 0, false, &gate);
        titem_init(&younger, 1, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&younger)), 0);
        ck_assert_int_eq(slow_work_pool_put_back(pool, W(&running)), 0);
        gate_open(&gate);
        slow_work_pool_free(pool);
        order_is(want, 3);
        ck_assert_int_eq(running.gets, running.puts);
}
END_TEST

static void mark_called(struct slow_work *work, void *data)
{
        (void)work;
        *(bool *)data = true;
}

/* Rule 13: what an item runs may be changed while it waits, never while it runs. */
START_TEST(rule13_call_unless_executing_refuses_a_running_item)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, queued, idle;
        bool called = false;

        run_gated(pool, &blocker, 100, false, &gate);
        titem_init(&queued, 1, false, pool);
        titem_init(&idle, 2, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&queued)), 0);
        ck_assert_int_eq(slow_work_call_unless_executing(W(&blocker), mark_called, &called),
                         -EBUSY);
        ck_assert(!called);
        ck_assert_int_eq(slow_work_call_unless_executing(W(&queued), mark_called, &called), 0);
        ck_assert(called);
        called = false;
        ck_assert_int_eq(slow_work_call_unless_executing(W(&idle), mark_called, &called), 0);
        ck_assert(called);
        gate_open(&gate);
        slow_work_pool_free(pool);
        ck_assert_int_eq(queued.runs, 1);
}
END_TEST

/* Rule 13 too: slow_work_call_if_queued() calls only while the item waits for a thread: not
 * running, not idle, not on its delay. */
START_TEST(rule13_call_if_queued_refuses_an_item_that_is_not_waiting_for_a_thread)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, queued, idle, later;
        bool called = false;

        run_gated(pool, &blocker, 100, false, &gate);
        titem_init(&queued, 1, false, pool);
        titem_init(&idle, 2, false, pool);
        titem_init(&later, 3, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&queued)), 0);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &later.dw, 60000), 0);
        ck_assert_int_eq(slow_work_call_if_queued(W(&blocker), mark_called, &called), -EBUSY);
        ck_assert_int_eq(slow_work_call_if_queued(W(&idle), mark_called, &called), -EBUSY);
        ck_assert_int_eq(slow_work_call_if_queued(W(&later), mark_called, &called), -EBUSY);
        ck_assert(!called);
        ck_assert_int_eq(slow_work_call_if_queued(W(&queued), mark_called, &called), 0);
        ck_assert(called);
        ck_assert(slow_work_cancel_pending(W(&later)));
        gate_open(&gate);
        slow_work_pool_free(pool);
        ck_assert_int_eq(queued.runs, 1);
}
END_TEST

/* Rule 7: very slow preferred, up to floor(max * pct / 100), at least 1, at most max - 1. */
START_TEST(rule7_cap_formula)
{
        static const unsigned cases[][3] = {
            /* max, pct, cap */
            {4, 50, 2}, {4, 1, 1}, {4, 99, 3}, {1, 99, 1}, {1, 1, 1}, {2, 50, 1},
            {2, 99, 1}, {10, 25, 2}, {10, 29, 2}, {255, 99, 252}, {255, 1, 2}, {3, 34, 1},
        };
        unsigned i;

        for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct slow_work_settings s = {1, cases[i][0], cases[i][1], 5000};

                ck_assert_msg(slow_work_very_slow_cap(&s) == cases[i][2],
                              "max %u pct %u: cap %u, want %u", cases[i][0], cases[i][1],
                              slow_work_very_slow_cap(&s), cases[i][2]);
        }
}
END_TEST

START_TEST(rule7_very_slow_preferred_over_older_slow)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, s1, s2, v1;
        const int want[] = {0, 3, 1, 2};

        run_gated(pool, &blocker, 0, false, &gate);
        titem_init(&s1, 1, false, pool);
        titem_init(&s2, 2, false, pool);
        titem_init(&v1, 3, true, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&s1)), 0);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&s2)), 0);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&v1)), 0);
        gate_open(&gate);
        slow_work_pool_free(pool);
        order_is(want, 4);
}
END_TEST

/*
 * Fills a pool with gated very slow items, then enqueues a slow one: the very slow ones take
 * exactly cap threads, and the slow one starts on a thread the cap leaves free, before the first
 * very slow item ends. cap is written out, not taken from slow_work_very_slow_cap().
 */
static void check_cap_leaves_a_thread_for_slow(unsigned max, unsigned pct, int cap)
{
        struct slow_work_pool *pool = pool_with(1, max, pct, 5000);
        struct gate gate = {false};
        struct titem v[8], s;
        struct slow_work_stats st;
        bool slow_started;
        int i;

        enqueue_gated(pool, v, 8, 0, true, &gate);
        WAIT_FOR(ev_vslow_running == cap);
        titem_init(&s, 10, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&s)), 0);
        WAIT_FOR(s.runs == 1 || ev_vslow_running > cap);
        st = pool_stats(pool);
        ev_lock();
        slow_started = s.runs == 1;
        ev_unlock();
        gate_open(&gate);
        ck_assert_msg(slow_started, "max %u pct %u: the slow item waited for a very slow one", max,
                      pct);
        ck_assert_int_eq(st.busy_very_slow, cap);
        ck_assert_int_eq(st.very_slow_cap, cap);
        ck_assert_int_eq(st.queued_very_slow, 8 - cap);
        ck_assert_int_le(st.threads, max);
        slow_work_pool_free(pool);
        ck_assert_int_eq(ev_max_vslow_running, cap);
        for (i = 0; i < 8; i++)
                ck_assert_int_eq(v[i].runs, 1);
}

START_TEST(rule7_very_slow_capped_and_slow_not_starved)
{
        /* The cap comes from max-threads (2 of 4), not from the one thread that exists. */
        check_cap_leaves_a_thread_for_slow(4, 50, 2);
}
END_TEST

START_TEST(rule7_very_slow_cap_leaves_the_last_thread_to_slow)
{
        check_cap_leaves_a_thread_for_slow(2, 50, 1);
}
END_TEST

START_TEST(rule7_very_slow_cap_rounds_down)
{
        check_cap_leaves_a_thread_for_slow(4, 25, 1);
}
END_TEST

START_TEST(rule7_very_slow_backlog_never_stalls_on_small_pool)
{
        /* The kernel's unclamped cap was 0 for pct < 50 on two threads: a stall. */
        struct slow_work_pool *pool = pool_with(2, 2, 10, 5000);
        struct titem v[8];
        int i;

        for (i = 0; i < 8; i++) {
                titem_init(&v[i], i, true, pool);
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&v[i])), 0);
        }
        WAIT_FOR(v[7].runs == 1);
        slow_work_pool_free(pool);
        ck_assert_int_eq(ev_max_vslow_running, 1);
}
END_TEST

/* Rule 8: grow on demand up to max; idle threads above min exit after idle-timeout. */
START_TEST(rule8_grows_on_demand_up_to_max)
{
        struct slow_work_pool *pool = pool_with(1, 3, 50, 5000);
        struct gate gate = {false};
        struct titem t[5];
        struct slow_work_stats st;

        ck_assert_int_eq(pool_stats(pool).threads, 1);
        enqueue_gated(pool, t, 5, 0, false, &gate);
        WAIT_FOR(ev_running == 3);
        st = pool_stats(pool);
        ck_assert_int_eq(st.threads, 3);
        ck_assert_int_eq(st.busy, 3);
        ck_assert_int_eq(st.queued_slow, 2);
        gate_open(&gate);
        slow_work_pool_free(pool);
        ck_assert_int_eq(ev_max_running, 3);
}
END_TEST

START_TEST(rule8_idle_thread_takes_work_before_a_new_one_starts)
{
        struct slow_work_pool *pool = pool_with(2, 4, 50, 5000);
        struct gate gate = {false};
        struct titem t;

        run_gated(pool, &t, 1, false, &gate);
        ck_assert_int_eq(pool_stats(pool).threads, 2);
        gate_open(&gate);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule8_a_burst_wakes_every_idle_thread)
{
        /* One wake-up is in flight at a time: each woken thread must pass it on. */
        struct slow_work_pool *pool = pool_with(4, 4, 50, 5000);
        struct gate gate = {false};
        struct titem t[4];

        POLL_FOR(pool_stats(pool).idle == 4);
        enqueue_gated(pool, t, 4, 0, false, &gate);
        WAIT_FOR(ev_running == 4);
        ck_assert_int_eq(pool_stats(pool).busy, 4);
        gate_open(&gate);
        slow_work_pool_free(pool);
}
END_TEST

/* Nothing woken or started for 100 ms: the plugged items are still queued. */
static void assert_plugged(struct slow_work_pool *pool, unsigned threads, unsigned queued)
{
        struct slow_work_stats st;

        usleep(100000);
        st = pool_stats(pool);
        ck_assert_uint_eq(st.threads, threads);
        ck_assert_uint_eq(st.busy, 0);
        ck_assert_uint_eq(st.queued_slow, queued);
        ev_lock();
        ck_assert_int_eq(ev_running, 0);
        ev_unlock();
}

START_TEST(plugged_items_wake_and_start_threads_at_the_last_unplug)
{
        struct slow_work_pool *pool = pool_with(2, 4, 50, 5000);
        struct gate gate = {false};
        struct titem t[4];

        POLL_FOR(pool_stats(pool).idle == 2);
        slow_work_pool_plug(pool);
        slow_work_pool_plug(pool);
        enqueue_gated(pool, t, 4, 0, false, &gate);
        ck_assert(slow_work_is_pending(W(&t[0])));
        assert_plugged(pool, 2, 4);
        slow_work_pool_unplug(pool); /* plugs nest */
        assert_plugged(pool, 2, 4);
        slow_work_pool_unplug(pool);
        WAIT_FOR(ev_running == 4);
        ck_assert_uint_eq(pool_stats(pool).threads, 4);
        gate_open(&gate);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(a_thread_that_ends_a_run_takes_plugged_items)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate first = {false}, next = {true};
        struct titem a, b;

        run_gated(pool, &a, 1, false, &first);
        slow_work_pool_plug(pool);
        titem_init(&b, 2, false, pool);
        b.gate = &next;
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&b)), 0);
        gate_open(&first);
        WAIT_FOR(b.runs == 1);
        slow_work_pool_unplug(pool);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule8_idle_threads_above_min_exit_after_timeout)
{
        struct slow_work_pool *pool = pool_with(1, 4, 50, 50);
        struct gate gate = {false};
        struct titem t[4];

        enqueue_gated(pool, t, 4, 0, false, &gate);
        WAIT_FOR(ev_running == 4);
        ck_assert_int_eq(pool_stats(pool).threads, 4);
        gate_open(&gate);
        POLL_FOR(pool_stats(pool).threads == 1);
        POLL_FOR(worker_threads() == 1);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule8_grows_when_every_idle_thread_is_taken)
{
        /* A and B wait for Z: only a third thread can run Z. */
        struct slow_work_pool *pool = pool_with(2, 4, 50, 5000);
        struct gate z_ran = {false};
        struct titem a, b, z;

        POLL_FOR(pool_stats(pool).idle == 2);
        titem_init(&a, 1, false, pool);
        titem_init(&b, 2, false, pool);
        titem_init(&z, 3, false, pool);
        a.gate = b.gate = &z_ran;
        z.opens = &z_ran;
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&a)), 0);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&b)), 0);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&z)), 0);
        WAIT_FOR(z.runs == 1);
        slow_work_pool_free(pool);
        ck_assert_int_eq(a.runs, 1);
        ck_assert_int_eq(b.runs, 1);
}
END_TEST

/* Rule 9: settings take effect at once without stopping running work. */
START_TEST(rule9_raising_max_starts_threads_for_queued_work)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct slow_work_settings s = {1, 3, 50, 5000};
        struct gate gate = {false};
        struct titem t[3];

        enqueue_gated(pool, t, 3, 0, false, &gate);
        WAIT_FOR(ev_running == 1);
        ck_assert_int_eq(slow_work_pool_configure(pool, &s), 0);
        WAIT_FOR(ev_running == 3);
        gate_open(&gate);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule9_lowering_max_lets_busy_threads_finish_then_caps_runs)
{
        struct slow_work_pool *pool = pool_with(1, 4, 50, 5000);
        struct slow_work_settings s = {1, 2, 50, 5000};
        struct gate old_gate = {false}, new_gate = {false};
        struct group after = {0, 0};
        struct titem old[4], fresh[4];
        int i;

        enqueue_gated(pool, old, 4, 0, false, &old_gate);
        WAIT_FOR(ev_running == 4);
        ck_assert_int_eq(slow_work_pool_configure(pool, &s), 0);
        for (i = 0; i < 4; i++) {
                titem_init(&fresh[i], 10 + i, false, pool);
                fresh[i].gate = &new_gate;
                fresh[i].group = &after;
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&fresh[i])), 0);
        }
        /* Nothing running was interrupted, and nothing new started beyond the new max. */
        ev_lock();
        ck_assert_int_eq(ev_running, 4);
        ck_assert_int_eq(after.running, 0);
        ev_unlock();
        gate_open(&old_gate);
        WAIT_FOR(after.running == 2);
        POLL_FOR(pool_stats(pool).threads == 2);
        gate_open(&new_gate);
        slow_work_pool_free(pool);
        ck_assert_int_eq(after.max_running, 2);
        for (i = 0; i < 4; i++)
                ck_assert_int_eq(fresh[i].runs, 1);
}
END_TEST

START_TEST(rule9_lowering_max_retires_idle_threads_at_once)
{
        struct slow_work_pool *pool = pool_with(4, 4, 50, 5000);
        struct slow_work_settings s = {1, 2, 50, 5000};

        POLL_FOR(pool_stats(pool).idle == 4);
        ck_assert_int_eq(slow_work_pool_configure(pool, &s), 0);
        ck_assert_int_eq(pool_stats(pool).threads, 2);
        POLL_FOR(worker_threads() == 2);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule9_raising_min_starts_threads_at_once)
{
        struct slow_work_pool *pool = pool_with(1, 4, 50, 5000);
        struct slow_work_settings s = {3, 4, 50, 5000};

        ck_assert_int_eq(pool_stats(pool).threads, 1);
        ck_assert_int_eq(slow_work_pool_configure(pool, &s), 0);
        ck_assert_int_eq(pool_stats(pool).threads, 3);
        POLL_FOR(worker_threads() == 3);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule9_raising_percentage_starts_queued_very_slow_work)
{
        struct slow_work_pool *pool = pool_with(1, 4, 25, 5000);
        struct slow_work_settings s = {1, 4, 75, 5000};
        struct gate gate = {false};
        struct titem v[4];

        enqueue_gated(pool, v, 4, 0, true, &gate);
        WAIT_FOR(ev_vslow_running == 1);
        ck_assert_int_eq(pool_stats(pool).queued_very_slow, 3);
        ck_assert_int_eq(slow_work_pool_configure(pool, &s), 0);
        WAIT_FOR(ev_vslow_running == 3);
        gate_open(&gate);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule9_lowering_max_with_idle_threads_loses_no_item)
{
        struct slow_work_pool *pool = pool_with(3, 3, 50, 5000);
        struct slow_work_settings s = {1, 2, 50, 5000};
        struct titem t;

        POLL_FOR(pool_stats(pool).idle == 3);
        titem_init(&t, 1, false, pool);
        ck_assert_int_eq(slow_work_pool_configure(pool, &s), 0);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        WAIT_FOR(t.runs == 1);
        ck_assert_int_le(pool_stats(pool).threads, 2);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule9_shorter_idle_timeout_reaches_sleeping_threads)
{
        struct slow_work_pool *pool = pool_with(1, 4, 50, SLOW_WORK_IDLE_TIMEOUT_MAX_MS);
        struct slow_work_settings s = {1, 4, 50, 20};
        struct slow_work_settings grow = {4, 4, 50, SLOW_WORK_IDLE_TIMEOUT_MAX_MS};

        ck_assert_int_eq(slow_work_pool_configure(pool, &grow), 0);
        POLL_FOR(pool_stats(pool).idle == 4);
        ck_assert_int_eq(slow_work_pool_configure(pool, &s), 0);
        POLL_FOR(pool_stats(pool).threads == 1);
        POLL_FOR(worker_threads() == 1);
        slow_work_pool_free(pool);
}
END_TEST

/* Rule 8, and an idle pool costs nothing: its threads sleep, past their idle timeout too. */
START_TEST(rule8_idle_pool_at_min_threads_uses_no_cpu)
{
        struct slow_work_pool *pool = pool_with(2, 4, 50, 100);
        struct timespec past_timeout = {0, 300000000};

        /* Past the pool's idle timeout (100 ms): the span of the clock is what is looked at, the
         * pool's timers being the clock's, so it cannot be an event. */
        nanosleep(&past_timeout, NULL);
        ck_assert_int_eq(pool_stats(pool).threads, 2);
        assert_pool_idle_costs_nothing(600);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule8_idle_pool_after_a_burst_and_a_cull_uses_no_cpu)
{
        struct slow_work_pool *pool = pool_with(1, 4, 50, 100);
        struct timespec past_timeout = {0, 300000000};
        struct gate gate = {false};
        struct titem t[4], delayed;

        enqueue_gated(pool, t, 4, 0, false, &gate);
        WAIT_FOR(ev_running == 4);
        titem_init(&delayed, 9, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &delayed.dw, 10), 0);
        gate_open(&gate);
        WAIT_FOR(delayed.puts == 1);
        POLL_FOR(pool_stats(pool).threads == 1);
        /* Past the pool's idle timeout (100 ms): the span of the clock is what is looked at, the
         * pool's timers being the clock's, so it cannot be an event. */
        nanosleep(&past_timeout, NULL);
        assert_pool_idle_costs_nothing(600);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule8_idle_pool_after_a_burst_at_max_threads_uses_no_cpu)
{
        struct slow_work_pool *pool = pool_with(4, 4, 50, 100);
        struct timespec past_timeout = {0, 300000000};
        struct gate gate = {false};
        struct titem t[8];

        enqueue_gated(pool, t, 8, 0, true, &gate);
        gate_open(&gate);
        WAIT_FOR(t[7].puts == 1);
        /* Past the pool's idle timeout (100 ms): the span of the clock is what is looked at, the
         * pool's timers being the clock's, so it cannot be an event. */
        nanosleep(&past_timeout, NULL);
        ck_assert_int_eq(pool_stats(pool).threads, 4);
        assert_pool_idle_costs_nothing(600);
        slow_work_pool_free(pool);
}
END_TEST

/* Rule 10: kernel defaults; invalid settings are rejected whole. */
START_TEST(rule10_defaults_are_the_kernels)
{
        struct slow_work_pool *pool = NULL;
        struct slow_work_settings s;

        ck_assert_int_eq(slow_work_pool_new(NULL, &pool), 0);
        slow_work_pool_settings(pool, &s);
        ck_assert_uint_eq(s.min_threads, 2);
        ck_assert_uint_eq(s.max_threads, 4);
        ck_assert_uint_eq(s.vslow_percentage, 50);
        ck_assert_uint_eq(s.idle_timeout_ms, 5000);
        ck_assert_int_eq(pool_stats(pool).threads, 2);
        ck_assert_int_eq(pool_stats(pool).very_slow_cap, 2);
        slow_work_pool_free(pool);
}
END_TEST

START_TEST(rule10_invalid_settings_rejected_whole)
{
        static const struct slow_work_settings bad[] = {
            {0, 4, 50, 5000},   {5, 4, 50, 5000},   {1, 256, 50, 5000},
            {1, 4, 0, 5000},    {1, 4, 100, 5000},  {1, 4, 50, 0},
            {2, 1, 50, 5000},   {1, 4, 50, SLOW_WORK_IDLE_TIMEOUT_MAX_MS + 1},
        };
        struct slow_work_settings good = {1, 255, 99, SLOW_WORK_IDLE_TIMEOUT_MAX_MS};
        struct slow_work_pool *pool = pool_with(2, 4, 50, 5000), *other = NULL;
        struct slow_work_settings s;
        unsigned i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_int_eq(slow_work_pool_configure(pool, &bad[i]), -EINVAL);
                ck_assert_int_eq(slow_work_pool_new(&bad[i], &other), -EINVAL);
                ck_assert_ptr_null(other);
                slow_work_pool_settings(pool, &s);
                ck_assert_uint_eq(s.min_threads, 2);
                ck_assert_uint_eq(s.max_threads, 4);
                ck_assert_uint_eq(s.vslow_percentage, 50);
                ck_assert_uint_eq(s.idle_timeout_ms, 5000);
        }
        ck_assert_int_eq(slow_work_settings_validate(&good), 0);
        ck_assert_int_eq(slow_work_pool_configure(pool, &good), 0);
        slow_work_pool_settings(pool, &s);
        ck_assert_int_eq(memcmp(&s, &good, sizeof(s)), 0);
        slow_work_pool_free(pool);
}
END_TEST

/* Rule 11: cancel, delayed work, and enqueue without a user. */
START_TEST(rule11_cancel_pending_removes_without_waiting)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, t;

        run_gated(pool, &blocker, 0, false, &gate);
        titem_init(&t, 1, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        slow_work_cancel(W(&t)); /* returns although the only thread is still blocked */
        ck_assert_int_eq(t.puts, 1);
        ck_assert_int_eq(pool_stats(pool).queued_slow, 0);
        ck_assert_int_eq(blocker.running, 1);
        gate_open(&gate);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.runs, 0);
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.puts, 1);
}
END_TEST

static void *cancel_main(void *arg)
{
        slow_work_cancel(arg);
        return NULL;
}

START_TEST(rule11_cancel_running_waits_and_drops_rerun)
{
        struct slow_work_pool *pool = pool_with(1, 2, 50, 5000);
        struct gate gate = {false};
        struct titem t;
        pthread_t canceller;
        int r;

        run_gated(pool, &t, 1, false, &gate);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0); /* a re-run is due */
        pthread_create(&canceller, NULL, cancel_main, W(&t));
        /* While the cancel waits for the run, enqueue is refused. */
        do {
                r = slow_work_pool_enqueue(pool, W(&t));
                ck_assert(r == 0 || r == -ECANCELED);
                if (r == 0)
                        poll_pause();
        } while (r == 0);
        ev_lock();
        ck_assert_int_eq(t.running, 1);
        ev_unlock();
        gate_open(&gate);
        pthread_join(canceller, NULL);
        ev_lock();
        ck_assert_int_eq(t.runs, 1);
        ck_assert_int_eq(t.running, 0);
        ev_unlock();
        /* Afterwards the item can be enqueued again. */
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        WAIT_FOR(t.runs == 2);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.gets, 2);
        ck_assert_int_eq(t.puts, 2);
}
END_TEST

/* slow_work_cancel_pending(): what is pending goes, a run in progress is never waited for. */
START_TEST(cancel_pending_drops_queued_delayed_and_rerun_without_waiting)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem running, queued, delayed, idle;

        titem_init(&idle, 4, false, pool);
        ck_assert(!slow_work_cancel_pending(W(&idle)));
        run_gated(pool, &running, 1, false, &gate);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&running)), 0); /* a re-run is due */
        titem_init(&queued, 2, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&queued)), 0);
        titem_init(&delayed, 3, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &delayed.dw, 50), 0);

        /* Each returns although the only thread is still in the gated run. */
        ck_assert(slow_work_cancel_pending(W(&running)));
        ck_assert(slow_work_cancel_pending(W(&queued)));
        ck_assert(slow_work_cancel_pending(W(&delayed)));
        ck_assert(!slow_work_cancel_pending(W(&queued)));
        ev_lock();
        ck_assert_int_eq(running.running, 1);
        ck_assert_int_eq(queued.puts, 1);
        ck_assert_int_eq(delayed.puts, 1);
        ev_unlock();
        ck_assert(slow_work_is_executing(W(&running)));
        ck_assert(!slow_work_is_pending(W(&running)));
        ck_assert_int_eq(pool_stats(pool).queued_slow, 0);
        ck_assert_int_eq(pool_stats(pool).delayed, 0);

        /* Enqueues are not refused meanwhile: no cancel waits. */
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&queued)), 0);
        gate_open(&gate);
        WAIT_FOR(queued.runs == 1 && running.puts == 1);
        slow_work_pool_free(pool);
        ck_assert_int_eq(running.runs, 1); /* the dropped re-run never happened */
        ck_assert_int_eq(running.gets, 1);
        ck_assert_int_eq(delayed.runs, 0);
        ck_assert_int_eq(delayed.gets, 1);
        ck_assert_int_eq(queued.gets, 2);
        ck_assert_int_eq(queued.puts, 2);
}
END_TEST

START_TEST(rule11_cancel_delayed_before_timer_fires)
{
        struct slow_work_pool *pool = pool_with(1, 2, 50, 5000);
        struct titem t, later;

        titem_init(&t, 1, false, pool);
        titem_init(&later, 2, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &t.dw, 100), 0);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &later.dw, 200), 0);
        ck_assert_int_eq(pool_stats(pool).delayed, 2);
        slow_work_cancel(W(&t));
        ck_assert_int_eq(t.puts, 1);
        ck_assert_int_eq(pool_stats(pool).delayed, 1);
        /* Timers fire in order: once the later one ran, the cancelled one would have. */
        WAIT_FOR(later.runs == 1);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.runs, 0);
        ck_assert_int_eq(t.gets, 1);
}
END_TEST

START_TEST(rule11_delayed_item_never_runs_early_and_is_not_moved)
{
        struct slow_work_pool *pool = pool_with(1, 2, 50, 5000);
        struct titem t;
        uint64_t start = now_ns();

        titem_init(&t, 1, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &t.dw, 150), 0);
        /* Enqueues while it waits neither run it now nor push it back. */
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &t.dw, 100000), 0);
        WAIT_FOR(t.runs == 1);
        ck_assert_uint_ge(t.first_start_ns - start, 150000000ull);
        ck_assert_uint_lt(t.first_start_ns - start, 100000000000ull);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.runs, 1);
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.puts, 1);
}
END_TEST

START_TEST(rule11_delay_expiring_during_run_gives_one_more_run)
{
        struct slow_work_pool *pool = pool_with(1, 2, 50, 5000);
        struct gate gate = {false};
        struct titem t;

        run_gated(pool, &t, 1, false, &gate);
        ck_assert_int_eq(slow_work_pool_enqueue_delayed(pool, &t.dw, 20), 0);
        WAIT_FOR(t.puts == 1); /* the timer fired: its reference went, the run's carries on */
        ck_assert_int_eq(pool_stats(pool).delayed, 0);
        gate_open(&gate);
        WAIT_FOR(t.runs == 2);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.runs, 2);
        ck_assert_int_eq(t.gets, 2);
        ck_assert_int_eq(t.puts, 2);
}
END_TEST

START_TEST(rule11_get_ref_refusal_leaves_item_enqueueable)
{
        struct slow_work_pool *pool = pool_with(1, 2, 50, 5000);
        struct titem t;

        titem_init(&t, 1, false, pool);
        t.refuse = true;
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), -EAGAIN);
        ev_lock();
        t.refuse = false;
        ev_unlock();
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        WAIT_FOR(t.runs == 1);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.puts, 1);
}
END_TEST

START_TEST(rule11_enqueue_without_user_rejected)
{
        struct titem t;

        titem_init(&t, 1, false, NULL);
        ck_assert_int_lt(slow_work_enqueue(W(&t)), 0);
        ck_assert_int_lt(delayed_slow_work_enqueue(&t.dw, 10), 0);
        ck_assert_int_eq(slow_work_register_user(), 0);
        ck_assert_int_eq(slow_work_enqueue(W(&t)), 0);
        slow_work_unregister_user();
        ck_assert_int_lt(slow_work_enqueue(W(&t)), 0);
        ck_assert_int_eq(t.runs, 1);
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.puts, 1);
}
END_TEST

START_TEST(rule11_unregister_cancels_armed_timers_and_drops_their_refs)
{
        struct titem t;

        ck_assert_int_eq(slow_work_register_user(), 0);
        titem_init(&t, 1, false, NULL);
        ck_assert_int_eq(delayed_slow_work_enqueue(&t.dw, 60000), 0);
        slow_work_unregister_user();
        ck_assert_int_eq(t.runs, 0);
        ck_assert_int_eq(t.gets, 1);
        ck_assert_int_eq(t.puts, 1);
}
END_TEST

START_TEST(rule11_cancel_of_idle_item_touches_no_pool)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct titem t;

        titem_init(&t, 1, false, pool);
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        WAIT_FOR(t.puts == 1);
        slow_work_pool_free(pool);
        slow_work_cancel(W(&t)); /* the pool it last ran on is gone: AddressSanitizer watches */
        pool = pool_with(1, 1, 50, 5000);
        t.pool = pool;
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        slow_work_pool_free(pool);
        ck_assert_int_eq(t.runs, 2);
        ck_assert_int_eq(t.puts, 2);
}
END_TEST

/*
 * A cancel racing an item's first enqueue: once the canceller has seen the item pending or
 * running, the item must not run after the cancel returns (only one enqueue per round).
 * slow_work_cancel_pending() may miss a run that has begun, but then the run has begun.
 */
struct race {
        pthread_barrier_t start, done;
        struct slow_work_pool *pool;
        struct titem *t;
        int over;     /* atomic: no more rounds */
        int watching; /* atomic: the canceller looks at the item */
        int enqueued; /* atomic: this round's enqueue has returned */
};

/*
 * A turn of a spin loop: every SPINS_PER_YIELD turns (about a microsecond), the core goes to
 * whoever waits for it. The two racers spin for each other; under a CPU hog (stress-ng --cpu 4 on
 * two cores) one that spun on while the other waited for a core spun out its whole time slice,
 * twice a round: 5,000 rounds took 70 to 200 s, past the case's timeout. With the yield they took
 * 12 to 25 s there, and under 1 s on a quiet machine, where most rounds still catch the item.
 */
#define SPINS_PER_YIELD 256
static void spin(unsigned *turns)
{
        if (++*turns % SPINS_PER_YIELD == 0)
                sched_yield();
}

static void *race_enqueuer(void *arg)
{
        struct race *race = arg;
        unsigned turns = 0;
        int r;

        for (;;) {
                pthread_barrier_wait(&race->start);
                if (__atomic_load_n(&race->over, __ATOMIC_ACQUIRE))
                        return NULL;
                while (!__atomic_load_n(&race->watching, __ATOMIC_ACQUIRE))
                        spin(&turns);
                r = slow_work_pool_enqueue(race->pool, W(race->t));
                ck_assert(r == 0 || r == -ECANCELED);
                __atomic_store_n(&race->enqueued, 1, __ATOMIC_RELEASE);
                pthread_barrier_wait(&race->done);
        }
}

static bool item_busy(struct slow_work *work)
{
        return slow_work_is_pending(work) || slow_work_is_executing(work);
}

/* Rounds of the race: RACE_ROUNDS, and more until the item was caught in RACE_CAUGHT of them (on a
 * quiet machine 4,000 to 4,900 of the first 5,000 are; under a CPU hog, as few as 500), up to
 * RACE_ROUNDS_MAX. */
#define RACE_ROUNDS     5000
#define RACE_CAUGHT     (RACE_ROUNDS / 10)
#define RACE_ROUNDS_MAX (4 * RACE_ROUNDS)

START_TEST(rule11_cancel_racing_a_first_enqueue_never_lets_the_item_run_after)
{
        struct slow_work_pool *pool = pool_with(2, 2, 50, 5000);
        struct titem t;
        struct race race = {.pool = pool, .t = &t};
        pthread_t enqueuer;
        int i, runs_after_cancel = 0, caught = 0;
        unsigned turns = 0;

        pthread_barrier_init(&race.start, NULL, 2);
        pthread_barrier_init(&race.done, NULL, 2);
        pthread_create(&enqueuer, NULL, race_enqueuer, &race);
        /* RACE_ROUNDS, and more while the item was caught too rarely (a CPU hog keeps the racers
         * apart): the race must have been run. */
        for (i = 0; i < RACE_ROUNDS || (caught < RACE_CAUGHT && i < RACE_ROUNDS_MAX); i++) {
                bool seen = false, waiting = i % 2 == 0;

                titem_init(&t, i, false, pool);
                __atomic_store_n(&race.enqueued, 0, __ATOMIC_RELAXED);
                __atomic_store_n(&race.watching, 0, __ATOMIC_RELAXED);
                pthread_barrier_wait(&race.start);
                __atomic_store_n(&race.watching, 1, __ATOMIC_RELEASE);
                /* Catch the item as early as possible in its enqueue. */
                while (!(seen = item_busy(W(&t))) &&
                       !__atomic_load_n(&race.enqueued, __ATOMIC_ACQUIRE))
                        spin(&turns);
                if (waiting) {
                        slow_work_cancel(W(&t));
                        ck_assert_msg(!seen || !item_busy(W(&t)),
                                      "round %d: pending or running after slow_work_cancel()", i);
                } else if (!slow_work_cancel_pending(W(&t)) && seen) {
                        /* Not pending any more although it was: its run has begun. */
                        ev_lock();
                        ck_assert_msg(slow_work_is_executing(W(&t)) || t.runs == 1,
                                      "round %d: cancel_pending missed a pending item", i);
                        ev_unlock();
                }
                ev_lock();
                runs_after_cancel = t.runs;
                ev_unlock();
                pthread_barrier_wait(&race.done);
                WAIT_FOR(t.gets == t.puts);
                ck_assert(!item_busy(W(&t)));
                caught += seen;
                if (seen && waiting)
                        ck_assert_msg(t.runs == runs_after_cancel,
                                      "round %d: the item ran after slow_work_cancel() returned",
                                      i);
                else if (seen)
                        ck_assert_msg(t.runs <= 1, "round %d: ran twice", i);
        }
        __atomic_store_n(&race.over, 1, __ATOMIC_RELEASE);
        pthread_barrier_wait(&race.start);
        pthread_join(enqueuer, NULL);
        pthread_barrier_destroy(&race.start);
        pthread_barrier_destroy(&race.done);
        slow_work_pool_free(pool);
        /* The race was run: many rounds caught the item while the enqueue was under way. */
        ck_assert_msg(caught >= RACE_CAUGHT, "the item was caught in %d rounds of %d", caught, i);
}
END_TEST

/* Rule 12: statistics and the run queue in the kernel's layout. */
START_TEST(rule12_stats_count_threads_queues_and_runs)
{
        struct slow_work_pool *pool = pool_with(2, 2, 50, 5000);
        struct gate gate = {false};
        struct titem t[5];
        struct slow_work_stats st;
        struct slow_work_rq_entry *rq;
        char line[256];
        size_t n;
        int i;

        for (i = 0; i < 5; i++) {
                titem_init(&t[i], i, i == 0 || i == 4, pool);
                t[i].gate = &gate;
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t[i])), 0);
                if (i < 2)
                        WAIT_FOR(t[i].running == 1);
        }
        st = pool_stats(pool);
        ck_assert_int_eq(st.threads, 2);
        ck_assert_int_eq(st.busy, 2);
        ck_assert_int_eq(st.busy_very_slow, 1);
        ck_assert_int_eq(st.idle, 0);
        ck_assert_int_eq(st.queued_slow, 2);
        ck_assert_int_eq(st.queued_very_slow, 1);
        ck_assert_int_eq(st.items_run, 0);

        ck_assert_int_eq(slow_work_pool_rq(pool, &rq, &n), 0);
        ck_assert_int_eq(n, 5);
        /* Executing rows first (each busy thread and what it runs), then sq, then vsq. */
        ck_assert_int_ge(rq[0].thread, 0);
        ck_assert_int_ge(rq[1].thread, 0);
        ck_assert_int_gt(rq[0].pid, 0);
        ck_assert(strcmp(rq[0].desc, "item 0") == 0 || strcmp(rq[0].desc, "item 1") == 0);
        ck_assert(strcmp(rq[1].desc, "item 0") == 0 || strcmp(rq[1].desc, "item 1") == 0);
        ck_assert_str_eq(rq[2].desc, "item 2");
        ck_assert_str_eq(rq[3].desc, "item 3");
        ck_assert_str_eq(rq[4].desc, "item 4");
        ck_assert_ptr_eq(rq[4].item, W(&t[4]));
        ck_assert_int_eq(rq[2].thread, -1);
        ck_assert_int_gt(slow_work_rq_format(&rq[2], line, sizeof(line)), 0);
        ck_assert_int_eq(strncmp(line, " sq     - ", 10), 0);
        ck_assert_int_gt(slow_work_rq_format(&rq[4], line, sizeof(line)), 0);
        ck_assert_int_eq(strncmp(line, "vsq     - ", 10), 0);
        ck_assert_str_eq(line + strlen(line) - 6, "item 4");
        free(rq);
        /* At most so many queued rows, the first ones; every executing one. */
        ck_assert_int_eq(slow_work_pool_rq_max(pool, 2, &rq, &n), 0);
        ck_assert_int_eq(n, 4);
        ck_assert_int_ge(rq[1].thread, 0);
        ck_assert_str_eq(rq[2].desc, "item 2");
        ck_assert_str_eq(rq[3].desc, "item 3");
        free(rq);
        ck_assert_int_eq(slow_work_pool_rq_max(pool, 0, &rq, &n), 0);
        ck_assert_int_eq(n, 2);
        free(rq);

        gate_open(&gate);
        slow_work_pool_free(pool);
        for (i = 0; i < 5; i++)
                ck_assert_int_eq(t[i].runs, 1);
}
END_TEST

START_TEST(rule12_item_state_is_visible)
{
        struct slow_work_pool *pool = pool_with(1, 1, 50, 5000);
        struct gate gate = {false};
        struct titem blocker, t;

        titem_init(&t, 1, false, pool);
        ck_assert(!slow_work_is_pending(W(&t)) && !slow_work_is_executing(W(&t)));
        run_gated(pool, &blocker, 0, false, &gate);
        ck_assert(!slow_work_is_pending(W(&blocker)) && slow_work_is_executing(W(&blocker)));
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&blocker)), 0);
        ck_assert(slow_work_is_pending(W(&blocker)) && slow_work_is_executing(W(&blocker)));
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&t)), 0);
        ck_assert(slow_work_is_pending(W(&t)) && !slow_work_is_executing(W(&t)));
        gate_open(&gate);
        slow_work_pool_free(pool);
        ck_assert(!slow_work_is_pending(W(&t)) && !slow_work_is_executing(W(&t)));
        ck_assert(!slow_work_is_pending(W(&blocker)));
}
END_TEST

START_TEST(rule12_rq_rows_use_the_kernel_layout)
{
        static const struct {
                uint64_t age_ns;
                const char *mark;
        } marks[] = {
            {5, "  5ns "},
            {999, "999ns "},
            {1000, "  1us "},
            {250000, "250us "},
            {12000000, " 12ms "},
            {1500000000ull, "   1s "},
            {42000000000ull, "  42s "},
            {150000000000ull, "   2m "},
            {7300000000000ull, "   2h "},
            {90000000000000ull, "exces "},
        };
        struct slow_work_rq_entry e = {
            .thread = 3, .pid = 4242, .item = (void *)0x1234, .flags = 0x2, .desc = "copy"};
        char line[256], want[256];
        unsigned i;

        ck_assert_str_eq(slow_work_rq_header, "THR PID   ITEM ADDR        FL MARK  DESC\n"
                                              "=== ===== ================ == ===== ==========\n");
        for (i = 0; i < sizeof(marks) / sizeof(marks[0]); i++) {
                e.age_ns = marks[i].age_ns;
                ck_assert_int_gt(slow_work_rq_format(&e, line, sizeof(line)), 0);
                snprintf(want, sizeof(want), "  3  4242 0000000000001234  2 %scopy", marks[i].mark);
                ck_assert_str_eq(line, want);
        }
        e.thread = -1;
        e.pid = 0;
        e.flags = SLOW_WORK_PENDING | SLOW_WORK_VERY_SLOW;
        e.age_ns = 5;
        ck_assert_int_gt(slow_work_rq_format(&e, line, sizeof(line)), 0);
        ck_assert_str_eq(line, "vsq     - 0000000000001234  9   5ns copy");
        ck_assert_int_eq(slow_work_rq_format(&e, line, 10), -ENOBUFS);
}
END_TEST

static Suite *pool_suite(void)
{
        Suite *s = suite_create("pool");
        TCase *tc = tcase_create("rules");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, rule1_no_threads_before_register_then_min_threads);
        tcase_add_test(tc, rule1_last_unregister_runs_queued_items_first);
        tcase_add_test(tc, rule2_get_ref_on_enqueue_put_ref_after_run);
        tcase_add_test(tc, rule2_get_ref_refusal_is_eagain_and_queues_nothing);
        tcase_add_test(tc, rule3_enqueue_while_pending_runs_once);
        tcase_add_test(tc, rule4_enqueues_during_run_give_one_more_run);
        tcase_add_test(tc, rule4_self_enqueue_requeues_at_tail);
        tcase_add_test(tc, rule5_item_never_runs_on_two_threads);
        tcase_add_test(tc, rule6_slow_items_run_in_fifo_order);
        tcase_add_test(tc, rule6_very_slow_items_run_in_fifo_order);
        tcase_add_test(tc, rule7_cap_formula);
        tcase_add_test(tc, rule7_very_slow_preferred_over_older_slow);
        tcase_add_test(tc, rule7_very_slow_capped_and_slow_not_starved);
        tcase_add_test(tc, rule7_very_slow_cap_leaves_the_last_thread_to_slow);
        tcase_add_test(tc, rule7_very_slow_cap_rounds_down);
        tcase_add_test(tc, rule7_very_slow_backlog_never_stalls_on_small_pool);
        tcase_add_test(tc, rule8_grows_on_demand_up_to_max);
        tcase_add_test(tc, rule8_idle_thread_takes_work_before_a_new_one_starts);
        tcase_add_test(tc, rule8_a_burst_wakes_every_idle_thread);
        tcase_add_test(tc, plugged_items_wake_and_start_threads_at_the_last_unplug);
        tcase_add_test(tc, a_thread_that_ends_a_run_takes_plugged_items);
        tcase_add_test(tc, rule8_idle_threads_above_min_exit_after_timeout);
        tcase_add_test(tc, rule8_grows_when_every_idle_thread_is_taken);
        tcase_add_test(tc, rule8_idle_pool_at_min_threads_uses_no_cpu);
        tcase_add_test(tc, rule8_idle_pool_after_a_burst_and_a_cull_uses_no_cpu);
        tcase_add_test(tc, rule8_idle_pool_after_a_burst_at_max_threads_uses_no_cpu);
        tcase_add_test(tc, rule9_raising_max_starts_threads_for_queued_work);
        tcase_add_test(tc, rule9_lowering_max_lets_busy_threads_finish_then_caps_runs);
        tcase_add_test(tc, rule9_lowering_max_retires_idle_threads_at_once);
        tcase_add_test(tc, rule9_raising_min_starts_threads_at_once);
        tcase_add_test(tc, rule9_raising_percentage_starts_queued_very_slow_work);
        tcase_add_test(tc, rule9_lowering_max_with_idle_threads_loses_no_item);
        tcase_add_test(tc, rule9_shorter_idle_timeout_reaches_sleeping_threads);
        tcase_add_test(tc, rule10_defaults_are_the_kernels);
        tcase_add_test(tc, rule10_invalid_settings_rejected_whole);
        tcase_add_test(tc, rule11_cancel_pending_removes_without_waiting);
        tcase_add_test(tc, rule11_cancel_running_waits_and_drops_rerun);
        tcase_add_test(tc, rule11_cancel_delayed_before_timer_fires);
        tcase_add_test(tc, cancel_pending_drops_queued_delayed_and_rerun_without_waiting);
        tcase_add_test(tc, rule11_delayed_item_never_runs_early_and_is_not_moved);
        tcase_add_test(tc, rule11_delay_expiring_during_run_gives_one_more_run);
        tcase_add_test(tc, rule11_get_ref_refusal_leaves_item_enqueueable);
        tcase_add_test(tc, rule11_enqueue_without_user_rejected);
        tcase_add_test(tc, rule11_unregister_cancels_armed_timers_and_drops_their_refs);
        tcase_add_test(tc, rule11_cancel_of_idle_item_touches_no_pool);
        tcase_add_test(tc, rule11_cancel_racing_a_first_enqueue_never_lets_the_item_run_after);
        tcase_add_test(tc, rule12_stats_count_threads_queues_and_runs);
        tcase_add_test(tc, rule12_item_state_is_visible);
        tcase_add_test(tc, rule12_rq_rows_use_the_kernel_layout);
        tcase_add_test(tc, rule13_higher_priority_first_then_fifo);
        tcase_add_test(tc, rule13_a_changed_priority_moves_a_queued_item_by_its_age);
        tcase_add_test(tc, rule13_call_unless_executing_refuses_a_running_item);
        tcase_add_test(tc, rule13_call_if_queued_refuses_an_item_that_is_not_waiting_for_a_thread);
        tcase_add_test(tc, rule14_an_item_put_back_keeps_its_place);
        tcase_add_test(tc, rule14_a_running_item_is_first_until_an_older_one_is_put_back);
        tcase_add_test(tc, rule14_an_item_put_back_while_it_runs_runs_again_at_its_place);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(pool_suite());
}
