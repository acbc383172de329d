/* SPDX-License-Identifier: MIT */
/*
 * Pushes N no-op items through three thread pools of 4 threads, from 1 and from 2 producer
 * threads, and reports the median time per item:
 *
 *   libslowwork  an explicit pool, min = max = 4 threads; one struct slow_work per item
 *   libuv        uv_queue_work() with UV_THREADPOOL_SIZE=4; one loop per producer thread
 *   GLib         an exclusive GThreadPool of 4 threads
 *
 * The clock runs from the first producer's start to the completion of the last item: pool
 * creation and warm-up are outside it. The runs are interleaved so that noise hits all alike.
 * The last lines divide libslowwork's median by the faster of the other two: PASS when that is at
 * most TARGET_RATIO.
 *
 * Usage: pool-bench [N [RUNS]]   (defaults: 1000000 items, 5 runs)
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib.h>
#include <uv.h>

#include <slowwork.h>

#define NTHREADS      4
#define MAX_PRODUCERS 2
#define WARMUP        1000UL
#define TARGET_RATIO  0.70 /* libslowwork at most this times the faster of the others */

enum impl { IMPL_SLOWWORK, IMPL_LIBUV, IMPL_GLIB, NIMPL };

static const char *const impl_names[NIMPL] = {"libslowwork", "libuv", "glib"};

/* Counts completed items; the one that reaches the target stamps the end time. */
static struct {
        atomic_ulong count;
        unsigned long target;
        uint64_t end_ns;
        bool done;
        pthread_mutex_t lock;
        pthread_cond_t cond;
} tally = {.lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER};

struct producer {
        pthread_t thread;
        unsigned long first, count; /* the items this producer pushes */
        uint64_t start_ns;
        void *pool; /* struct slow_work_pool or GThreadPool */
};

static pthread_barrier_t start_barrier;
static struct slow_work *sw_items;
static uv_work_t *uv_reqs;

static uint64_t now_ns(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int err)
{
        fprintf(stderr, "pool-bench: %s: %s\n", what, strerror(err < 0 ? -err : err));
        exit(1);
}

static void tally_reset(unsigned long target)
{
        pthread_mutex_lock(&tally.lock);
        atomic_store(&tally.count, 0);
        tally.target = target;
        tally.done = false;
        pthread_mutex_unlock(&tally.lock);
}

static void tally_one(void)
{
        if (atomic_fetch_add_explicit(&tally.count, 1, memory_order_acq_rel) + 1 != tally.target)
                return;
        pthread_mutex_lock(&tally.lock);
        tally.end_ns = now_ns();
        tally.done = true;
        pthread_cond_signal(&tally.cond);
        pthread_mutex_unlock(&tally.lock);
}

static uint64_t tally_wait(void)
{
        uint64_t end;

        pthread_mutex_lock(&tally.lock);
        while (!tally.done)
                pthread_cond_wait(&tally.cond, &tally.lock);
        end = tally.end_ns;
        pthread_mutex_unlock(&tally.lock);
        return end;
}

/* Splits n items over p producers and starts them; each waits on start_barrier once set up. */
static void producers_start(struct producer *prods, unsigned p, unsigned long n, void *pool,
                            void *(*fn)(void *))
{
        unsigned i;
        int r;

        r = pthread_barrier_init(&start_barrier, NULL, p);
        if (r)
                die("pthread_barrier_init", r);
        for (i = 0; i < p; i++) {
                prods[i].first = n * i / p;
                prods[i].count = n * (i + 1) / p - prods[i].first;
                prods[i].pool = pool;
                r = pthread_create(&prods[i].thread, NULL, fn, &prods[i]);
                if (r)
                        die("pthread_create", r);
        }
}

/* Joins the producers and returns the earliest start time. */
static uint64_t producers_join(struct producer *prods, unsigned p)
{
        uint64_t start = UINT64_MAX;
        unsigned i;

        for (i = 0; i < p; i++) {
                pthread_join(prods[i].thread, NULL);
                if (prods[i].start_ns < start)
                        start = prods[i].start_ns;
        }
        pthread_barrier_destroy(&start_barrier);
        return start;
}

/* libslowwork */

static int sw_get_ref(struct slow_work *work)
{
        return 0; /* the items live in sw_items until the end */
}

static void sw_put_ref(struct slow_work *work)
{
        tally_one();
}

static void sw_execute(struct slow_work *work)
{
}

static const struct slow_work_ops sw_ops = {
    .get_ref = sw_get_ref,
    .put_ref = sw_put_ref,
    .execute = sw_execute,
};

static void sw_push(struct slow_work_pool *pool, unsigned long first, unsigned long count)
{
        unsigned long i;
        int r;

        for (i = first; i < first + count; i++) {
                r = slow_work_pool_enqueue(pool, &sw_items[i]);
                if (r < 0)
                        die("slow_work_pool_enqueue", r);
        }
}

static void *sw_producer(void *arg)
{
        struct producer *prod = arg;

        pthread_barrier_wait(&start_barrier);
        prod->start_ns = now_ns();
        sw_push(prod->pool, prod->first, prod->count);
        return NULL;
}

static uint64_t bench_slowwork(unsigned long n, unsigned p)
{
        const struct slow_work_settings settings = {
            .min_threads = NTHREADS,
            .max_threads = NTHREADS,
            .vslow_percentage = 50,
            .idle_timeout_ms = 5000,
        };
        struct producer prods[MAX_PRODUCERS];
        struct slow_work_pool *pool;
        unsigned long i, warm = n < WARMUP ? n : WARMUP;
        uint64_t start, end;
        int r;

        r = slow_work_pool_new(&settings, &pool);
        if (r < 0)
                die("slow_work_pool_new", r);
        for (i = 0; i < n; i++)
                slow_work_init(&sw_items[i], &sw_ops);

        tally_reset(warm);
        sw_push(pool, 0, warm);
        tally_wait();

        tally_reset(n);
        producers_start(prods, p, n, pool, sw_producer);
        start = producers_join(prods, p);
        end = tally_wait();

        slow_work_pool_free(pool);
        return end - start;
}

/* libuv: uv_queue_work() must be called on the loop's thread, so each producer has a loop. */

static void uv_work(uv_work_t *req)
{
}

static void uv_after_work(uv_work_t *req, int status)
{
        if (status)
                die("uv after_work", status);
        tally_one();
}

static void uv_push(unsigned long first, unsigned long count)
{
        uv_loop_t loop;
        unsigned long i;
        int r;

        r = uv_loop_init(&loop);
        if (r)
                die("uv_loop_init", r);
        for (i = first; i < first + count; i++) {
                r = uv_queue_work(&loop, &uv_reqs[i], uv_work, uv_after_work);
                if (r)
                        die("uv_queue_work", r);
        }
        uv_run(&loop, UV_RUN_DEFAULT);
        r = uv_loop_close(&loop);
        if (r)
                die("uv_loop_close", r);
}

static void *uv_producer(void *arg)
{
        struct producer *prod = arg;

        pthread_barrier_wait(&start_barrier);
        prod->start_ns = now_ns();
        uv_push(prod->first, prod->count);
        return NULL;
}

static uint64_t bench_libuv(unsigned long n, unsigned p)
{
        struct producer prods[MAX_PRODUCERS];
        unsigned long warm = n < WARMUP ? n : WARMUP;
        uint64_t start, end;

        /* The threadpool is process-wide and started by the first uv_queue_work(). */
        tally_reset(warm);
        uv_push(0, warm);
        tally_wait();

        tally_reset(n);
        producers_start(prods, p, n, NULL, uv_producer);
        start = producers_join(prods, p);
        end = tally_wait();
        return end - start;
}

/* GLib */

static void glib_func(gpointer data, gpointer user_data)
{
        tally_one();
}

static void glib_push(GThreadPool *pool, unsigned long first, unsigned long count)
{
        GError *err = NULL;
        unsigned long i;

        for (i = first; i < first + count; i++) {
                if (!g_thread_pool_push(pool, GSIZE_TO_POINTER(i + 1), &err)) {
                        fprintf(stderr, "pool-bench: g_thread_pool_push: %s\n", err->message);
                        exit(1);
                }
        }
}

static void *glib_producer(void *arg)
{
        struct producer *prod = arg;

        pthread_barrier_wait(&start_barrier);
        prod->start_ns = now_ns();
        glib_push(prod->pool, prod->first, prod->count);
        return NULL;
}

static uint64_t bench_glib(unsigned long n, unsigned p)
{
        struct producer prods[MAX_PRODUCERS];
        unsigned long warm = n < WARMUP ? n : WARMUP;
        GThreadPool *pool;
        GError *err = NULL;
        uint64_t start, end;

        pool = g_thread_pool_new(glib_func, NULL, NTHREADS, TRUE, &err);
        if (!pool) {
                fprintf(stderr, "pool-bench: g_thread_pool_new: %s\n", err->message);
                exit(1);
        }

        tally_reset(warm);
        glib_push(pool, 0, warm);
        tally_wait();

        tally_reset(n);
        producers_start(prods, p, n, pool, glib_producer);
        start = producers_join(prods, p);
        end = tally_wait();

        g_thread_pool_free(pool, FALSE, TRUE);
        return end - start;
}

/* Reporting */

static int cmp_double(const void *a, const void *b)
{
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double median(const double *samples, unsigned n)
{
        double *sorted = malloc(n * sizeof(*sorted));
        double m;

        if (!sorted)
                die("malloc", ENOMEM);
        memcpy(sorted, samples, n * sizeof(*sorted));
        qsort(sorted, n, sizeof(*sorted), cmp_double);
        m = n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
        free(sorted);
        return m;
}

static unsigned long parse_arg(const char *arg, const char *what, unsigned long min)
{
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(arg, &end, 10);
        if (errno || end == arg || *end || v < min) {
                fprintf(stderr, "pool-bench: bad %s '%s' (at least %lu)\n", what, arg, min);
                fprintf(stderr, "usage: pool-bench [N [RUNS]]\n");
                exit(2);
        }
        return v;
}

int main(int argc, char **argv)
{
        static const unsigned producer_counts[MAX_PRODUCERS] = {1, 2};
        unsigned long n = argc > 1 ? parse_arg(argv[1], "N", MAX_PRODUCERS) : 1000000;
        unsigned runs = argc > 2 ? (unsigned)parse_arg(argv[2], "RUNS", 1) : 5;
        double *samples[MAX_PRODUCERS][NIMPL];
        double med[MAX_PRODUCERS][NIMPL];
        unsigned run, pi, impl, i;

        if (argc > 3) {
                fprintf(stderr, "usage: pool-bench [N [RUNS]]\n");
                return 2;
        }
        /* Before the first use of libuv: its threadpool reads this once. */
        setenv("UV_THREADPOOL_SIZE", "4", 1);

        /* Both arrays are touched here so that no run pays for their page faults. Not with memset:
         * the compiler makes malloc and memset one calloc, which leaves fresh pages untouched, and
         * libuv's first run paid for them (ten times its other runs). */
        sw_items = malloc(n * sizeof(*sw_items));
        uv_reqs = malloc(n * sizeof(*uv_reqs));
        if (!sw_items || !uv_reqs)
                die("malloc", ENOMEM);
        explicit_bzero(sw_items, n * sizeof(*sw_items));
        explicit_bzero(uv_reqs, n * sizeof(*uv_reqs));
        for (pi = 0; pi < MAX_PRODUCERS; pi++) {
                for (impl = 0; impl < NIMPL; impl++) {
                        samples[pi][impl] = calloc(runs, sizeof(double));
                        if (!samples[pi][impl])
                                die("calloc", ENOMEM);
                }
        }

        printf("pool-bench: %lu no-op items, %u threads per pool, %u runs, median ns/item\n", n,
               NTHREADS, runs);
        fflush(stdout);

        for (run = 0; run < runs; run++) {
                for (pi = 0; pi < MAX_PRODUCERS; pi++) {
                        unsigned p = producer_counts[pi];

                        samples[pi][IMPL_SLOWWORK][run] = (double)bench_slowwork(n, p) / n;
                        samples[pi][IMPL_LIBUV][run] = (double)bench_libuv(n, p) / n;
                        samples[pi][IMPL_GLIB][run] = (double)bench_glib(n, p) / n;
                }
        }

        printf("%-12s %9s %12s  %s\n", "impl", "producers", "ns/item", "samples");
        for (pi = 0; pi < MAX_PRODUCERS; pi++) {
                for (impl = 0; impl < NIMPL; impl++) {
                        med[pi][impl] = median(samples[pi][impl], runs);
                        printf("%-12s %9u %12.1f  [", impl_names[impl], producer_counts[pi],
                               med[pi][impl]);
                        for (i = 0; i < runs; i++)
                                printf("%s%.1f", i ? " " : "", samples[pi][impl][i]);
                        printf("]\n");
                }
        }

        for (pi = 0; pi < MAX_PRODUCERS; pi++) {
                double best = med[pi][IMPL_LIBUV] < med[pi][IMPL_GLIB] ? med[pi][IMPL_LIBUV]
                                                                       : med[pi][IMPL_GLIB];
                double ratio = med[pi][IMPL_SLOWWORK] / best;

                printf("producers=%u: libslowwork / min(libuv, glib) = %.1f / %.1f = %.2f "
                       "(floor: at most %.2f) %s\n",
                       producer_counts[pi], med[pi][IMPL_SLOWWORK], best, ratio, TARGET_RATIO,
                       ratio <= TARGET_RATIO ? "PASS" : "MISS");
        }

        for (pi = 0; pi < MAX_PRODUCERS; pi++)
                for (impl = 0; impl < NIMPL; impl++)
                        free(samples[pi][impl]);
        free(uv_reqs);
        free(sw_items);
        return 0;
}
