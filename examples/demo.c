/* SPDX-License-Identifier: MIT */
/*
 * A batch of slow and very slow items on the default pool: shows the run queue while they run,
 * then which thread ran what, and when.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <slowwork.h>

#define NJOBS 12

struct job {
        struct slow_work work; /* first member: the item is the job */
        int id;
        unsigned ms;
        char thread[16];
        long start_ms, end_ms;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_done = PTHREAD_COND_INITIALIZER;
static int done;
static long t0;

static long now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L - t0;
}

static int job_get_ref(struct slow_work *work)
{
        return 0; /* the jobs live in main()'s array until the end */
}

static void job_put_ref(struct slow_work *work)
{
        pthread_mutex_lock(&lock);
        if (++done == NJOBS)
                pthread_cond_signal(&all_done);
        pthread_mutex_unlock(&lock);
}

static void job_execute(struct slow_work *work)
{
        struct job *job = (struct job *)work;
        struct timespec pause = {.tv_sec = job->ms / 1000, .tv_nsec = (job->ms % 1000) * 1000000L};

        job->start_ms = now_ms();
        pthread_getname_np(pthread_self(), job->thread, sizeof(job->thread));
        nanosleep(&pause, NULL);
        job->end_ms = now_ms();
}

static void job_desc(struct slow_work *work, char *buf, size_t len)
{
        struct job *job = (struct job *)work;

        snprintf(buf, len, "job %d: sleep %u ms", job->id, job->ms);
}

static const struct slow_work_ops job_ops = {
    .get_ref = job_get_ref,
    .put_ref = job_put_ref,
    .execute = job_execute,
    .desc = job_desc,
};

static void show_rq(void)
{
        struct slow_work_rq_entry *rq;
        char line[160];
        size_t n, i;

        if (slow_work_pool_rq(slow_work_default_pool(), &rq, &n) < 0)
                return;
        fputs(slow_work_rq_header, stdout);
        for (i = 0; i < n; i++)
                if (slow_work_rq_format(&rq[i], line, sizeof(line)) >= 0)
                        puts(line);
        free(rq);
}

int main(void)
{
        static struct job jobs[NJOBS];
        struct slow_work_stats st;
        int i, r;

        t0 = now_ms();
        r = slow_work_register_user();
        if (r < 0) {
                fprintf(stderr, "demo: cannot start the pool: %d\n", r);
                return 1;
        }
        for (i = 0; i < NJOBS; i++) {
                jobs[i].id = i;
                if (i % 3 == 0) {
                        jobs[i].ms = 400;
                        vslow_work_init(&jobs[i].work, &job_ops);
                } else {
                        jobs[i].ms = 100;
                        slow_work_init(&jobs[i].work, &job_ops);
                }
                slow_work_enqueue(&jobs[i].work);
        }
        usleep(50000);
        printf("run queue 50 ms in (at most 2 of the 4 threads take very slow jobs):\n");
        show_rq();

        pthread_mutex_lock(&lock);
        while (done < NJOBS)
                pthread_cond_wait(&all_done, &lock);
        pthread_mutex_unlock(&lock);
        slow_work_pool_stats(slow_work_default_pool(), &st);
        slow_work_unregister_user();

        printf("\n%-4s %-10s %-9s %8s %8s\n", "JOB", "CLASS", "THREAD", "START", "END");
        for (i = 0; i < NJOBS; i++)
                printf("%-4d %-10s %-9s %6ldms %6ldms\n", jobs[i].id,
                       jobs[i].ms == 400 ? "very-slow" : "slow", jobs[i].thread, jobs[i].start_ms,
                       jobs[i].end_ms);
        printf("\n%llu runs on %u threads\n", (unsigned long long)st.items_run, st.threads);
        return 0;
}
