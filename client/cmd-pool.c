/* SPDX-License-Identifier: MIT */
/*
 * The pool's commands: stats, rq (the run queue as the kernel's /proc/slow_work_rq showed it,
 * formatted by libslowwork itself) and top (both, with the runs in progress, once a second).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "format.h"
#include "output.h"
#include "slowctl.h"
#include "slowwork.h"

#define TOP_REFRESH_MS   1000
#define TOP_HEADER_LINES 9 /* the lines top prints besides the queues', runs' and rq's rows */
#define TOP_RUNNING_MAX  1000

/* A row of the stats' "rq" as libslowwork describes an entry: age back in nanoseconds. */
static void rq_entry(json_object *row, struct slow_work_rq_entry *e)
{
        double age = json_double(row, "age", 0);

        memset(e, 0, sizeof(*e));
        e->thread = (int)json_int(row, "thread", -1);
        e->pid = (pid_t)json_int(row, "pid", 0);
        e->item = (const void *)(uintptr_t)json_int(row, "item", 0);
        e->flags = (unsigned long)json_int(row, "flags", 0);
        e->age_ns = age > 0 ? (uint64_t)(age * 1e9 + 0.5) : 0;
        snprintf(e->desc, sizeof(e->desc), "%s", json_str(row, "desc", ""));
}

/* The header and at most max rows (-1: all), then how many were left out; a row of a named
 * queue ends in its name. */
static void print_rq(json_object *stats, int max)
{
        json_object *rq = json_object_object_get(stats, "rq");
        size_t n = json_object_is_type(rq, json_type_array) ? json_object_array_length(rq) : 0;
        char line[SLOW_WORK_DESC_MAX + 64];
        struct slow_work_rq_entry e;
        size_t i;

        fputs(slow_work_rq_header, stdout);
        for (i = 0; i < n && (max < 0 || i < (size_t)max); i++) {
                json_object *row = json_object_array_get_idx(rq, i);
                const char *queue = json_str(row, "queue", SW_QUEUE_DEFAULT);

                rq_entry(row, &e);
                if (slow_work_rq_format(&e, line, sizeof(line)) < 0)
                        continue;
                if (strcmp(queue, SW_QUEUE_DEFAULT) != 0)
                        escape_linef(stdout, "%s  [queue %s]", line, queue);
                else
                        escape_linef(stdout, "%s", line);
        }
        if (i < n)
                printf("... %zu more\n", n - i);
}

int cmd_rq(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *stats;
        int r;

        r = ctl_call(x, NULL, "stats", ctl_queue_params(o), &stats);
        if (r)
                return r;
        if (!x->json)
                print_rq(stats, -1);
        json_object_put(stats);
        return EXIT_OK;
}

int cmd_metrics(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *result;
        int r;

        r = ctl_call(x, NULL, "metrics", NULL, &result);
        if (r)
                return r;
        /* Prometheus' text, which programs read: escaped only for a person's terminal (the
         * format has no \e, and label values may hold any character). */
        if (!x->json) {
                json_object *text = json_object_object_get(result, "text");

                if (isatty(STDOUT_FILENO))
                        escape_write(stdout, json_object_get_string(text),
                                     (size_t)json_object_get_string_len(text), ESCAPE_KEEP_LINES);
                else
                        fputs(json_object_get_string(text), stdout);
        }
        json_object_put(result);
        return EXIT_OK;
}

int cmd_stats(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *stats, *rq;
        int r;

        r = ctl_call(x, NULL, "stats", ctl_queue_params(o), &stats);
        if (r)
                return r;
        if (!x->json && output_object(stats, "rq") < 0)
                r = ctl_error(x, "out of memory");
        rq = json_object_object_get(stats, "rq");
        if (!x->json && r == 0 && json_object_is_type(rq, json_type_array) &&
            json_object_array_length(rq) > 0) {
                putchar('\n');
                print_rq(stats, -1);
        }
        json_object_put(stats);
        return r;
}

static volatile sig_atomic_t top_stop;

static void on_stop_signal(int sig)
{
        top_stop = 1;
}

/* A line for each queue: its threads, jobs and pause. */
static void print_queues(json_object *queues)
{
        json_object *list = json_object_object_get(queues, "queues");
        size_t n = json_object_is_type(list, json_type_array) ? json_object_array_length(list) : 0;

        for (size_t i = 0; i < n; i++) {
                json_object *q = json_object_array_get_idx(list, i);

                escape_linef(
                    stdout, "queue %-12s threads %lld of %lld  running %lld  queued %lld%s",
                    json_str(q, "name", "?"), (long long)json_int(q, "threads", 0),
                    (long long)json_int(q, "max-threads", 0), (long long)json_int(q, "running", 0),
                    (long long)json_int(q, "queued", 0),
                    json_object_get_boolean(json_object_object_get(q, "paused")) ? "  paused" : "");
        }
        if (n > 0)
                putchar('\n');
}

/* The jobs with a run in progress (list's reply): id, owner, queue, how long it has run, command;
 * at most max rows (-1: all), then how many were left out. The lines printed. */
static int print_running(json_object *running, int max)
{
        json_object *items = json_object_object_get(running, "items");
        size_t n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
        struct timespec ts;
        struct table t;
        double now;
        size_t i;
        int shown = 0, lines;

        clock_gettime(CLOCK_REALTIME, &ts);
        now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
        table_init(&t, 5, 1u << 0 | 1u << 3);
        table_add(&t, "ID", "OWNER", "QUEUE", "ELAPSED", "COMMAND");
        for (i = 0; i < n && (max < 0 || shown < max); i++) {
                json_object *job = json_object_array_get_idx(items, i);
                double started = json_double(job, "started", 0);
                char id[24], elapsed[32];

                snprintf(id, sizeof(id), "%lld", (long long)json_int(job, "id", 0));
                format_duration(started > 0 && now > started ? now - started : 0, elapsed,
                                sizeof(elapsed));
                if (table_add(&t, id, output_user(json_int(job, "owner", -1)),
                              json_str(job, "queue", "?"), started > 0 ? elapsed : "-",
                              json_str(job, "command", "")) < 0)
                        break;
                shown++;
        }
        table_print(&t, stdout);
        table_clear(&t);
        lines = shown + 1;
        if (i < n || json_int(running, "more", 0) > 0) {
                printf("... %lld more running\n",
                       (long long)(n - i) + (long long)json_int(running, "more", 0));
                lines++;
        }
        putchar('\n');
        return lines + 1;
}

static void top_screen(struct ctl *x, json_object *stats, json_object *queues,
                       json_object *running, bool live)
{
        json_object *list = json_object_object_get(queues, "queues");
        int header = TOP_HEADER_LINES + (json_object_is_type(list, json_type_array)
                                             ? (int)json_object_array_length(list) + 1
                                             : 0);
        struct winsize ws = {0};
        char now[16];
        time_t t = time(NULL);
        int rows = -1;

        strftime(now, sizeof(now), "%H:%M:%S", localtime(&t));
        if (live) {
                fputs("\033[H\033[2J", stdout);
                if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row > header)
                        rows = ws.ws_row - header;
        }
        escape_linef(stdout, "slowworkd on %s at %s%s", sw_client_socket(x->client), now,
                     live ? "    (q quits)" : "");
        putchar('\n');
        printf("threads %lld  busy %lld  idle %lld  very slow busy %lld of at most %lld\n",
               (long long)json_int(stats, "threads", 0), (long long)json_int(stats, "busy", 0),
               (long long)json_int(stats, "idle", 0),
               (long long)json_int(stats, "busy_very_slow", 0),
               (long long)json_int(stats, "very_slow_cap", 0));
        printf("queued  slow %lld  very slow %lld  delayed %lld  waiting for turn %lld  "
               "waiting for space %lld\n",
               (long long)json_int(stats, "queued_slow", 0),
               (long long)json_int(stats, "queued_very_slow", 0),
               (long long)json_int(stats, "delayed", 0),
               (long long)json_int(stats, "waiting_for_turn", 0),
               (long long)json_int(stats, "waiting_for_space", 0));
        printf("runs done %lld%s\n\n", (long long)json_int(stats, "items_run", 0),
               json_object_get_boolean(json_object_object_get(stats, "paused"))
                   ? "  paused: no new run starts"
                   : "");
        print_queues(queues);
        if (rows < 0) {
                print_running(running, -1);
                print_rq(stats, -1);
        } else {
                /* Half of what the terminal has left for the runs, the rest for the run queue. */
                rows -= print_running(running, rows / 2 > 0 ? rows / 2 : 1);
                print_rq(stats, rows > 0 ? rows : 0);
        }
        fflush(stdout);
}

/* Waits for the next refresh; true when the user asked to quit (q, or a signal). */
static bool top_pause(bool keys)
{
        struct pollfd p = {.fd = STDIN_FILENO, .events = POLLIN};
        struct timespec ts = {.tv_sec = TOP_REFRESH_MS / 1000};
        char c;

        if (!keys) {
                nanosleep(&ts, NULL);
                return top_stop;
        }
        if (poll(&p, 1, TOP_REFRESH_MS) > 0 && read(STDIN_FILENO, &c, 1) == 1)
                return c == 'q' || c == 'Q';
        return top_stop;
}

/* list's params for the jobs with a run in progress, the first TOP_RUNNING_MAX of them. */
static json_object *running_params(void)
{
        json_object *p = json_object_new_object();

        json_object_object_add(p, "state", json_object_new_string("running"));
        json_object_object_add(p, "limit", json_object_new_int(TOP_RUNNING_MAX));
        return p;
}

int cmd_top(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        struct sigaction sa = {.sa_handler = on_stop_signal}, old_int, old_term;
        bool live = isatty(STDOUT_FILENO), keys = live && isatty(STDIN_FILENO);
        struct termios saved, raw;
        struct sw_client_error err;
        json_object *stats, *queues, *running;
        int r;

        if (keys && tcgetattr(STDIN_FILENO, &saved) == 0) {
                raw = saved;
                raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
                raw.c_cc[VMIN] = 1;
                raw.c_cc[VTIME] = 0;
                tcsetattr(STDIN_FILENO, TCSANOW, &raw);
        } else {
                keys = false;
        }
        /* No SA_RESTART: Ctrl-C cuts a pause short. */
        sigaction(SIGINT, &sa, &old_int);
        sigaction(SIGTERM, &sa, &old_term);
        do {
                r = ctl_call(x, NULL, "stats", NULL, &stats);
                if (r)
                        break;
                /* A daemon from before queues has no queue lines to show. */
                r = ctl_try(x, NULL, "queue.list", NULL, &queues, &err);
                if (r) {
                        json_object_put(stats);
                        break;
                }
                r = ctl_call(x, NULL, "list", running_params(), &running);
                if (r) {
                        json_object_put(stats);
                        json_object_put(queues);
                        break;
                }
                if (!x->json)
                        top_screen(x, stats, queues, running, live);
                fflush(stdout);
                json_object_put(stats);
                json_object_put(queues);
                json_object_put(running);
        } while (live && !top_stop && !top_pause(keys));
        if (keys)
                tcsetattr(STDIN_FILENO, TCSANOW, &saved);
        sigaction(SIGINT, &old_int, NULL);
        sigaction(SIGTERM, &old_term, NULL);
        return r;
}
