/* SPDX-License-Identifier: MIT */
/*
 * Uses nothing but <slowwork.h>, the kernel's names and -lslowwork, and checks that the default
 * pool keeps the kernel's promises. Exits 0 and prints "kernel-api: ok", or says what broke.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <slowwork.h>

#define NBLOCKERS 4 /* the default max-threads */

struct job {
        struct delayed_slow_work dw; /* first member: the item is the job */
        int gets, puts, runs;
        int block;       /* execute() waits while set */
        long started_ms; /* when the first run began */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int running;

static long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void fail(const char *what)
{
        fprintf(stderr, "kernel-api: FAILED: %s\n", what);
        exit(1);
}

#define CHECK(cond)                                                                                \
        do {                                                                                       \
                if (!(cond))                                                                       \
                        fail(#cond);                                                               \
        } while (0)

static int job_get_ref(struct slow_work *work)
{
        pthread_mutex_lock(&lock);
        ((struct job *)work)->gets++;
        pthread_mutex_unlock(&lock);
        return 0;
}

static void job_put_ref(struct slow_work *work)
{
        pthread_mutex_lock(&lock);
        ((struct job *)work)->puts++;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
}

static void job_execute(struct slow_work *work)
{
        struct job *job = (struct job *)work;

        pthread_mutex_lock(&lock);
        if (job->runs++ == 0)
                job->started_ms = now_ms();
        running++;
        pthread_cond_broadcast(&changed);
        while (job->block)
                pthread_cond_wait(&changed, &lock);
        running--;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
}

static const struct slow_work_ops job_ops = {
    .get_ref = job_get_ref,
    .put_ref = job_put_ref,
    .execute = job_execute,
};

static void wait_running(int n)
{
        pthread_mutex_lock(&lock);
        while (running != n)
                pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
}

static void unblock(struct job *job)
{
        pthread_mutex_lock(&lock);
        job->block = 0;
        pthread_cond_broadcast(&changed);
        pthread_mutex_unlock(&lock);
}

int main(void)
{
        struct job blockers[NBLOCKERS] = {0}, pending = {0}, busy = {0}, cancelled = {0};
        struct job later = {0};
        long t0;
        int i;

        delayed_slow_work_init(&pending.dw, &job_ops);
        CHECK(slow_work_enqueue(&pending.dw.work) < 0); /* no user yet */
        CHECK(slow_work_register_user() == 0);

        /* Fill every thread, then enqueue one item three times: it runs once. */
        for (i = 0; i < NBLOCKERS; i++) {
                slow_work_init(&blockers[i].dw.work, &job_ops);
                blockers[i].block = 1;
                CHECK(slow_work_enqueue(&blockers[i].dw.work) == 0);
        }
        wait_running(NBLOCKERS);
        slow_work_init(&pending.dw.work, &job_ops);
        for (i = 0; i < 3; i++)
                CHECK(slow_work_enqueue(&pending.dw.work) == 0);
        vslow_work_init(&cancelled.dw.work, &job_ops);
        CHECK(slow_work_enqueue(&cancelled.dw.work) == 0);
        slow_work_cancel(&cancelled.dw.work); /* pending: removed, its reference dropped */
        CHECK(cancelled.puts == 1 && cancelled.runs == 0);
        for (i = 0; i < NBLOCKERS; i++)
                unblock(&blockers[i]);

        /* Enqueued three times while running: exactly one more run. */
        slow_work_init(&busy.dw.work, &job_ops);
        busy.block = 1;
        CHECK(slow_work_enqueue(&busy.dw.work) == 0);
        pthread_mutex_lock(&lock);
        while (busy.runs != 1)
                pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        for (i = 0; i < 3; i++)
                CHECK(slow_work_enqueue(&busy.dw.work) == 0);
        unblock(&busy);

        /* A delayed item never runs early. */
        delayed_slow_work_init(&later.dw, &job_ops);
        t0 = now_ms();
        CHECK(delayed_slow_work_enqueue(&later.dw, 100) == 0);
        pthread_mutex_lock(&lock);
        while (later.runs != 1)
                pthread_cond_wait(&changed, &lock);
        pthread_mutex_unlock(&lock);
        CHECK(later.started_ms - t0 >= 100);

        slow_work_unregister_user(); /* drains: everything queued has run */
        CHECK(slow_work_enqueue(&busy.dw.work) < 0);

        CHECK(pending.runs == 1 && pending.gets == 1 && pending.puts == 1);
        CHECK(busy.runs == 2 && busy.gets == 1 && busy.puts == 1);
        CHECK(later.runs == 1 && later.gets == 1 && later.puts == 1);
        for (i = 0; i < NBLOCKERS; i++)
                CHECK(blockers[i].runs == 1 && blockers[i].gets == blockers[i].puts);
        printf("kernel-api: ok\n");
        return 0;
}
