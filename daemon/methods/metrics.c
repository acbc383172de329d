/* SPDX-License-Identifier: MIT */
/* The metrics method, and the text it and the metrics file give. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/daemon.h"
#include "methods/method.h"
#include "methods/metrics.h"
#include "run/run.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/store.h"
#include "util/proc-stats.h"

/* A queue's pool, with the settings it runs by. */
struct pool_view {
        const char *name;
        struct slow_work_pool *pool;
        const struct sw_queue_settings *settings;
        struct metrics_queue *counted;
};

static const char *const classes[] = {"slow", "very-slow"};

/* The queues' pools (malloc'd, *n of them), or NULL. */
static struct pool_view *pools_of(struct daemon *d, size_t *n)
{
        struct pool_view *pools;
        struct queue *q;
        size_t i = 0;

        for (q = d->queues; q; q = q->next)
                i++;
        pools = calloc(i, sizeof(*pools));
        for (q = d->queues, i = 0; pools && q; q = q->next, i++)
                pools[i] = (struct pool_view){
                    .name = q->name, .pool = q->pool, .settings = &q->settings};
        *n = i;
        return pools;
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void histogram(FILE *f, const char *name, const char *labels,
                      const struct metrics_histogram *h, const double *bounds)
{
        for (size_t i = 0; bounds[i] != 0; i++)
                fprintf(f, "%s_bucket{%s,le=\"%g\"} %llu\n", name, labels, bounds[i],
                        (unsigned long long)h->le[i]);
        fprintf(f, "%s_bucket{%s,le=\"+Inf\"} %llu\n", name, labels, (unsigned long long)h->count);
        fprintf(f, "%s_sum{%s} %.9g\n", name, labels, h->sum);
        fprintf(f, "%s_count{%s} %llu\n", name, labels, (unsigned long long)h->count);
}

/* A shared database's rows that no node with the cluster key made, by table. */
static void rejected_rows(FILE *f, struct store *s)
{
        const char *table;
        int64_t n;

        if (store_rejected_rows(s, 0, &table) < 0)
                return;
        family(f, "slowwork_rejected_rows_total", "counter",
               "Rows of the shared database not acted on: their MAC did not hold.");
        for (int i = 0; (n = store_rejected_rows(s, i, &table)) >= 0; i++)
                fprintf(f, "slowwork_rejected_rows_total{table=\"%s\"} %lld\n", table,
                        (long long)n);
}

static void runs(FILE *f, const struct pool_view *pools, size_t n)
{
        char labels[256];

        family(f, "slowwork_runs_total", "counter",
               "Runs that ended, by queue, class and outcome.");
        for (size_t p = 0; p < n; p++)
                for (int c = 0; c < 2; c++)
                        for (unsigned o = 0; o < METRICS_OUTCOMES && sw_outcomes[o]; o++)
                                fprintf(f,
                                        "slowwork_runs_total{queue=\"%s\",class=\"%s\","
                                        "outcome=\"%s\"} %llu\n",
                                        pools[p].name, classes[c], sw_outcomes[o],
                                        (unsigned long long)pools[p].counted->runs[c][o]);
        family(f, "slowwork_run_seconds", "histogram",
               "Wall clock time of the runs that started, from start to end.");
        for (size_t p = 0; p < n; p++)
                for (int c = 0; c < 2; c++) {
                        snprintf(labels, sizeof(labels), "queue=\"%s\",class=\"%s\"", pools[p].name,
                                 classes[c]);
                        histogram(f, "slowwork_run_seconds", labels,
                                  &pools[p].counted->run_seconds[c], metrics_run_seconds_bounds);
                }
        family(f, "slowwork_start_delay_seconds", "histogram",
               "Time from a run's enqueue (or the end of its delay) to its start.");
        for (size_t p = 0; p < n; p++)
                for (int c = 0; c < 2; c++) {
                        snprintf(labels, sizeof(labels), "queue=\"%s\",class=\"%s\"", pools[p].name,
                                 classes[c]);
                        histogram(f, "slowwork_start_delay_seconds", labels,
                                  &pools[p].counted->start_delay[c], metrics_start_delay_bounds);
                }
}

static void jobs_and_threads(FILE *f, const struct pool_view *pools, size_t n)
{
        family(f, "slowwork_jobs", "gauge", "Live jobs, by queue, class and state.");
        for (size_t p = 0; p < n; p++)
                for (int c = 0; c < 2; c++)
                        for (int s = 0; s < METRICS_STATES; s++)
                                fprintf(f,
                                        "slowwork_jobs{queue=\"%s\",class=\"%s\",state=\"%s\"} "
                                        "%lld\n",
                                        pools[p].name, classes[c], metrics_states[s],
                                        (long long)pools[p].counted->jobs[c][s]);
        family(f, "slowwork_threads", "gauge",
               "Threads of the queue's pool: idle, running a slow job, running a very slow one.");
        for (size_t p = 0; p < n; p++) {
                struct slow_work_stats st;

                slow_work_pool_stats(pools[p].pool, &st);
                fprintf(f, "slowwork_threads{queue=\"%s\",state=\"idle\"} %u\n", pools[p].name,
                        st.idle);
                fprintf(f, "slowwork_threads{queue=\"%s\",state=\"busy_slow\"} %u\n", pools[p].name,
                        st.busy - st.busy_very_slow);
                fprintf(f, "slowwork_threads{queue=\"%s\",state=\"busy_very_slow\"} %u\n",
                        pools[p].name, st.busy_very_slow);
        }
}

/* The row of a queue's setting of that name, or NULL for one the daemon alone has. */
static const struct sw_param *pool_setting(const char *name)
{
        for (const struct sw_param *row = sw_queue_settings_params; row->name; row++)
                if (strcmp(row->name, name) == 0)
                        return row;
        return NULL;
}

/* slowwork_setting_NAME, with '_' for '-', and "_seconds" for a duration. */
static void setting_name(const struct sw_param *p, char *buf, size_t len)
{
        snprintf(buf, len, "slowwork_setting_%s%s", p->name,
                 p->type == SW_P_SECONDS ? "_seconds" : "");
        for (char *c = buf; *c; c++)
                if (*c == '-')
                        *c = '_';
}

/* The sample's value: the setting's (row p of the structure at s), then a newline. */
static void setting_value(FILE *f, const struct sw_param *p, const void *s)
{
        const char *field = (const char *)s + p->offset;

        if (p->type == SW_P_SECONDS)
                fprintf(f, " %.9g\n", *(const double *)field);
        else
                fprintf(f, " %lld\n", (long long)*(const int64_t *)field);
}

static void settings(FILE *f, const struct sw_settings *daemon, const struct pool_view *pools,
                     size_t n)
{
        char name[128], help[160];

        for (const struct sw_param *p = sw_settings_params; p->name; p++) {
                const struct sw_param *row = pool_setting(p->name);

                if (p->type != SW_P_INT && p->type != SW_P_SECONDS)
                        continue;
                setting_name(p, name, sizeof(name));
                snprintf(help, sizeof(help), "The setting %s%s.", p->name,
                         row ? ", by queue" : "");
                family(f, name, "gauge", help);
                if (!row) {
                        fputs(name, f);
                        setting_value(f, p, daemon);
                        continue;
                }
                for (size_t q = 0; q < n; q++) {
                        fprintf(f, "%s{queue=\"%s\"}", name, pools[q].name);
                        setting_value(f, row, pools[q].settings);
                }
        }
}

/* The node: its name, whether its lease ran out unrenewed, and the live nodes it sees. */
static void node(FILE *f, struct daemon *d)
{
        struct db_node *nodes;
        size_t n = 0;

        family(f, "slowwork_node_info", "gauge", "This daemon's node name, as a label.");
        fprintf(f, "slowwork_node_info{node=\"%s\"} 1\n", d->shared.node);
        family(f, "slowwork_node_fenced", "gauge",
               "1 while the node's lease runs out unrenewed: its runs are stopped, none starts.");
        fprintf(f, "slowwork_node_fenced %d\n", run_fenced(&d->shared.run) ? 1 : 0);
        if (store_nodes(d->store, &nodes, &n) == 0)
                free(nodes);
        family(f, "slowwork_nodes", "gauge", "Live nodes of the job database.");
        fprintf(f, "slowwork_nodes %zu\n", n);
}

static void process_series(FILE *f, double start_time)
{
        struct proc_stats ps;

        proc_stats_read(&ps);
        family(f, "process_cpu_seconds_total", "counter", "User and system CPU time spent.");
        fprintf(f, "process_cpu_seconds_total %.9g\n", ps.cpu_seconds);
        family(f, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
        fprintf(f, "process_resident_memory_bytes %.0f\n", ps.resident_bytes);
        family(f, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
        fprintf(f, "process_virtual_memory_bytes %.0f\n", ps.virtual_bytes);
        family(f, "process_open_fds", "gauge", "Number of open file descriptors.");
        fprintf(f, "process_open_fds %.0f\n", ps.open_fds);
        family(f, "process_max_fds", "gauge", "Maximum number of open file descriptors.");
        fprintf(f, "process_max_fds %.0f\n", ps.max_fds);
        family(f, "process_start_time_seconds", "gauge",
               "Start time of the process since unix epoch in seconds.");
        fprintf(f, "process_start_time_seconds %.0f\n", start_time);
}

char *metrics_text(struct daemon *d, const struct clients *clients, bool process)
{
        size_t n, len;
        struct pool_view *pools = pools_of(d, &n);
        char *text = NULL;
        FILE *f;

        for (size_t p = 0; pools && p < n; p++)
                if (!(pools[p].counted = metrics_queue(&d->metrics, pools[p].name))) {
                        free(pools);
                        return NULL;
                }
        f = pools ? open_memstream(&text, &len) : NULL;
        if (!f) {
                free(pools);
                return NULL;
        }
        family(f, "slowwork_submits_total", "counter", "Submits accepted.");
        fprintf(f, "slowwork_submits_total %llu\n", (unsigned long long)d->metrics.submits);
        runs(f, pools, n);
        jobs_and_threads(f, pools, n);
        settings(f, &d->settings, pools, n);
        family(f, "slowwork_database_errors_total", "counter",
               "Reads and commits of the state database that failed.");
        fprintf(f, "slowwork_database_errors_total %llu\n",
                (unsigned long long)store_errors(d->store));
        rejected_rows(f, d->store);
        family(f, "slowwork_connections", "gauge", "Client connections open.");
        fprintf(f, "slowwork_connections %u\n", clients->n);
        node(f, d);
        if (process)
                process_series(f, d->metrics.start_time);
        free(pools);
        if (ferror(f) | fclose(f)) {
                free(text);
                return NULL;
        }
        return text;
}

static void handle_metrics(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        char *text = metrics_text(d, c->clients, true);

        if (!text) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        r->result = json_object_new_object();
        json_object_object_add(r->result, "text", json_object_new_string(text));
        free(text);
}

const struct method metrics_methods[] = {
    {"metrics", sw_no_params, NULL, handle_metrics, false},
    {NULL, NULL, NULL, NULL, false},
};
