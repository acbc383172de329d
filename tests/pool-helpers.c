/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "pool-helpers.h"

static pthread_mutex_t ev_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ev_cond = PTHREAD_COND_INITIALIZER;
int ev_running, ev_max_running, ev_vslow_running, ev_max_vslow_running;
int ev_order[4096];
int ev_norder;

uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void ev_lock(void)
{
        pthread_mutex_lock(&ev_mutex);
}

void ev_unlock(void)
{
        pthread_mutex_unlock(&ev_mutex);
}

bool ev_wait(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 20;
        return pthread_cond_timedwait(&ev_cond, &ev_mutex, &ts) == 0;
}

static void ev_changed(void)
{
        pthread_cond_broadcast(&ev_cond);
}

void gate_open(struct gate *g)
{
        ev_lock();
        g->open = true;
        ev_changed();
        ev_unlock();
}

void poll_pause(void)
{
        struct timespec ts = {.tv_nsec = 1000000};

        nanosleep(&ts, NULL);
}

/* What one of this process's threads has run, from /proc: its name and its CPU time. */
static bool task_read(const char *tid, char *comm, size_t len, uint64_t *ret_cpu_ns)
{
        char path[300];
        unsigned long long cpu = 0;
        bool ok;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", tid);
        f = fopen(path, "re");
        if (!f)
                return false; /* the thread has just exited */
        ok = fgets(comm, (int)len, f) != NULL;
        fclose(f);
        snprintf(path, sizeof(path), "/proc/self/task/%s/schedstat", tid);
        f = fopen(path, "re");
        if (!f)
                return false;
        ok = ok && fscanf(f, "%llu", &cpu) == 1;
        fclose(f);
        *ret_cpu_ns = cpu;
        return ok;
}

/* This process's pool threads (slowd...; workers alone: slowd and a digit): how many, and the
 * CPU time they have used. */
static int pool_threads(bool workers_only, uint64_t *ret_cpu_ns)
{
        DIR *d = opendir("/proc/self/task");
        struct dirent *e;
        uint64_t sum = 0;
        int n = 0;

        ck_assert_ptr_nonnull(d);
        while ((e = readdir(d))) {
                char comm[32] = "";
                uint64_t cpu;

                if (e->d_name[0] == '.' || !task_read(e->d_name, comm, sizeof(comm), &cpu) ||
                    strncmp(comm, "slowd", 5) != 0)
                        continue;
                if (workers_only && !(comm[5] >= '0' && comm[5] <= '9'))
                        continue;
                n++;
                sum += cpu;
        }
        closedir(d);
        if (ret_cpu_ns)
                *ret_cpu_ns = sum;
        return n;
}

uint64_t pool_threads_cpu_ns(void)
{
        uint64_t cpu;

        pool_threads(false, &cpu);
        return cpu;
}

int worker_threads(void)
{
        return pool_threads(true, NULL);
}

void assert_pool_idle_costs_nothing(unsigned window_ms)
{
        uint64_t before = pool_threads_cpu_ns(), after;
        struct timespec ts = {window_ms / 1000, (long)(window_ms % 1000) * 1000000L};

        nanosleep(&ts, NULL);
        after = pool_threads_cpu_ns();
        /* Under 5% of one core: a thread that spins uses twenty times that. */
        ck_assert_msg((after - before) * 20 < (uint64_t)window_ms * 1000000u,
                      "idle pool threads used %.1f ms of CPU in %u ms",
                      (double)(after - before) / 1e6, window_ms);
}

static int titem_get_ref(struct slow_work *work)
{
        struct titem *t = container_of(work, struct titem, dw.work);
        int r = 0;

        ev_lock();
        if (t->refuse)
                r = -1;
        else
                t->gets++;
        ev_changed();
        ev_unlock();
        return r;
}

static void titem_put_ref(struct slow_work *work)
{
        struct titem *t = container_of(work, struct titem, dw.work);

        ev_lock();
        t->puts++;
        ck_assert_int_le(t->puts, t->gets);
        ev_changed();
        ev_unlock();
}

static void bump(int *running, int *max_running)
{
        if (++*running > *max_running)
                *max_running = *running;
}

static void titem_execute(struct slow_work *work)
{
        struct titem *t = container_of(work, struct titem, dw.work);
        bool vslow = t->very_slow;
        int i;

        ev_lock();
        if (t->runs++ == 0)
                t->first_start_ns = now_ns();
        bump(&t->running, &t->max_running);
        bump(&ev_running, &ev_max_running);
        if (vslow)
                bump(&ev_vslow_running, &ev_max_vslow_running);
        if (t->group)
                bump(&t->group->running, &t->group->max_running);
        if (ev_norder < (int)(sizeof(ev_order) / sizeof(ev_order[0])))
                ev_order[ev_norder++] = t->id;
        if (t->opens)
                t->opens->open = true;
        ev_changed();
        while (t->gate && !t->gate->open)
                pthread_cond_wait(&ev_cond, &ev_mutex);
        t->running--;
        ev_running--;
        if (vslow)
                ev_vslow_running--;
        if (t->group)
                t->group->running--;
        i = t->requeue_in_exec;
        t->requeue_in_exec = 0;
        ev_changed();
        ev_unlock();

        while (i-- > 0)
                ck_assert_int_eq(t->pool ? slow_work_pool_enqueue(t->pool, work)
                                         : slow_work_enqueue(work),
                                 0);
}

static void titem_desc(struct slow_work *work, char *buf, size_t len)
{
        struct titem *t = container_of(work, struct titem, dw.work);

        snprintf(buf, len, "item %d", t->id);
}

const struct slow_work_ops titem_ops = {
    .get_ref = titem_get_ref,
    .put_ref = titem_put_ref,
    .execute = titem_execute,
    .desc = titem_desc,
};

void titem_init(struct titem *t, int id, bool very_slow, struct slow_work_pool *pool)
{
        memset(t, 0, sizeof(*t));
        if (very_slow)
                delayed_vslow_work_init(&t->dw, &titem_ops);
        else
                delayed_slow_work_init(&t->dw, &titem_ops);
        t->id = id;
        t->very_slow = very_slow;
        t->pool = pool;
}

void enqueue_gated(struct slow_work_pool *pool, struct titem *items, int n, int first_id,
                   bool very_slow, struct gate *gate)
{
        int i;

        for (i = 0; i < n; i++) {
                titem_init(&items[i], first_id + i, very_slow, pool);
                items[i].gate = gate;
                ck_assert_int_eq(slow_work_pool_enqueue(pool, W(&items[i])), 0);
        }
}

void run_gated(struct slow_work_pool *pool, struct titem *t, int id, bool very_slow,
               struct gate *gate)
{
        titem_init(t, id, very_slow, pool);
        t->gate = gate;
        ck_assert_int_eq(slow_work_pool_enqueue(pool, W(t)), 0);
        WAIT_FOR(t->running == 1);
}

struct slow_work_stats pool_stats(struct slow_work_pool *pool)
{
        struct slow_work_stats st;

        slow_work_pool_stats(pool, &st);
        return st;
}

struct slow_work_pool *pool_with(unsigned min, unsigned max, unsigned pct, unsigned idle_ms)
{
        struct slow_work_settings s = {min, max, pct, idle_ms};
        struct slow_work_pool *pool = NULL;

        ck_assert_int_eq(slow_work_pool_new(&s, &pool), 0);
        return pool;
}
