/* SPDX-License-Identifier: MIT */
/* The job commands: enqueue, wait, cancel, release, status, list, log. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "format.h"
#include "output.h"
#include "slowctl.h"
#include "tail.h"

#define LOG_POLL_NS 200000000L /* between reads of a running job's log that found nothing */

int jobs_record_status(json_object *rec)
{
        const char *outcome = json_str(rec, "outcome", "");
        int64_t code = json_int(rec, "exit_code", 1), sig = json_int(rec, "signal", 0);

        if (strcmp(outcome, "succeeded") == 0)
                return EXIT_OK;
        if (strcmp(outcome, "failed") == 0)
                return code > 0 && code < 256 ? (int)code : EXIT_FAIL;
        if (strcmp(outcome, "killed") == 0 && sig > 0 && sig < 128)
                return 128 + (int)sig;
        return EXIT_FAIL; /* cancelled, timed out, interrupted, dependency-failed */
}

/* "succeeded", "failed (exit code 3)", "killed (SIGTERM)", ... */
static void describe(json_object *rec, char *buf, size_t len)
{
        const char *outcome = json_str(rec, "outcome", "?");
        int64_t sig = json_int(rec, "signal", 0);
        const char *name = sig > 0 && sig < 128 ? sigabbrev_np((int)sig) : NULL;

        if (json_int(rec, "exit_code", 0) != 0)
                snprintf(buf, len, "%s (exit code %lld)", outcome,
                         (long long)json_int(rec, "exit_code", 0));
        else if (name)
                snprintf(buf, len, "%s (SIG%s)", outcome, name);
        else if (sig)
                snprintf(buf, len, "%s (signal %lld)", outcome, (long long)sig);
        else
                snprintf(buf, len, "%s", outcome);
}

static void print_outcome(int64_t id, json_object *rec)
{
        const char *colour = output_outcome_colour(json_str(rec, "outcome", NULL));
        size_t len = strlen(json_str(rec, "outcome", "?"));
        char text[128];

        describe(rec, text, sizeof(text));
        len = len < strlen(text) ? len : strlen(text);
        printf("job %lld: %s", (long long)id, colour ? colour : "");
        escape_write(stdout, text, len, 0); /* the daemon's word */
        printf("%s%s\n", colour ? FORMAT_COLOUR_OFF : "", text + len);
}

int jobs_wait_one(struct ctl *x, int64_t id, bool quiet)
{
        struct sw_client_error err;
        json_object *rec;
        char what[64];
        int r;

        snprintf(what, sizeof(what), "wait %lld", (long long)id);
        r = ctl_ask_again(x, what, "wait", ctl_id_params(id), &rec, &err);
        if (r)
                return r;
        if (!rec)
                return ctl_error(x, "%s: %s", what, err.message);
        if (x->json)
                output_json(rec);
        if (!quiet && !x->json)
                print_outcome(id, rec);
        r = jobs_record_status(rec);
        json_object_put(rec);
        return r;
}

/* The ids on the command line; NULL after a usage message. */
static int64_t *parse_ids(struct ctl *x, int argc, char **argv)
{
        int64_t *ids = calloc((size_t)argc, sizeof(*ids));
        int i;

        if (!ids) {
                ctl_error(x, "out of memory");
                return NULL;
        }
        for (i = 0; i < argc; i++) {
                ids[i] = ctl_parse_id(x, argv[i]);
                if (ids[i] < 0) {
                        free(ids);
                        return NULL;
                }
        }
        return ids;
}

struct progress {
        bool on;
        int done, total;
};

static void progress_show(struct progress *p)
{
        if (p->on)
                fprintf(stderr, "\rwaiting: %d of %d done\033[K", p->done, p->total);
}

static void progress_hide(struct progress *p)
{
        if (p->on)
                fputs("\r\033[K", stderr);
}

/* Queues method for each id; 0, or a transport failure (a negative errno). */
static int send_ids(struct ctl *x, const int64_t *ids, size_t n, const char *method)
{
        size_t i;
        int r = 0;

        for (i = 0; i < n && r == 0; i++)
                r = sw_client_queue(x->client, method, ctl_id_params(ids[i]), NULL);
        return r;
}

/*
 * Sends method for each id at once, then takes the replies in order, calling done() for each
 * result. The daemon answers a connection's requests in order, so the i-th reply is the i-th id's.
 * With again (a method that changes nothing: wait), a connection the daemon closes (a restart)
 * is made again and the ids not answered yet are asked again.
 * Returns 0, EXIT_FAIL when an id failed (said on stderr), or an exit status.
 */
static int for_ids(struct ctl *x, const int64_t *ids, size_t n, const char *method, bool again,
                   struct progress *progress,
                   void (*done)(struct ctl *x, int64_t id, json_object *result, void *data),
                   void *data)
{
        struct sw_client_error err;
        json_object *result;
        bool failed = false;
        int64_t got;
        size_t i = 0;
        int r;

        r = ctl_connect(x);
        if (r)
                return r;
        r = send_ids(x, ids, n, method);
        progress_show(progress);
        while (i < n) {
                if (r == 0)
                        r = sw_client_receive(x->client, &result, &err, &got);
                if (r < 0 && again && ctl_lost(r)) {
                        progress_hide(progress);
                        r = ctl_reconnect(x);
                        if (r)
                                return r;
                        r = send_ids(x, ids + i, n - i, method);
                        progress_show(progress);
                        continue;
                }
                if (r < 0) {
                        progress_hide(progress);
                        ctl_transport_error(x, NULL, r);
                        return EXIT_FAIL;
                }
                ctl_replied(x);
                if (r == 0 && got < 0) {
                        json_object_put(result); /* a notification */
                        continue;
                }
                progress_hide(progress);
                if (r == 1) {
                        ctl_error(x, "%s %lld: %s", method, (long long)ids[i], err.message);
                        failed = true;
                } else {
                        if (x->json)
                                output_json(result);
                        done(x, ids[i], result, data);
                        json_object_put(result);
                }
                r = 0;
                fflush(stdout);
                progress->done++;
                progress_show(progress);
                i++;
        }
        progress_hide(progress);
        return failed ? EXIT_FAIL : 0;
}

/* for_ids() on the ids of the command line. */
static int for_each_id(struct ctl *x, int argc, char **argv, const char *method, bool again,
                       struct progress *progress,
                       void (*done)(struct ctl *x, int64_t id, json_object *result, void *data),
                       void *data)
{
        int64_t *ids = parse_ids(x, argc, argv);
        int r;

        if (!ids)
                return EXIT_USAGE;
        r = for_ids(x, ids, (size_t)argc, method, again, progress, done, data);
        free(ids);
        return r;
}

/* wait ID...: the last job's exit status. */
static void waited(struct ctl *x, int64_t id, json_object *rec, void *data)
{
        if (!x->json)
                print_outcome(id, rec);
        *(int *)data = jobs_record_status(rec);
}

/* wait --all: the worst of them all, which is the highest (a job's own code, 128 + a signal). */
static void waited_worst(struct ctl *x, int64_t id, json_object *rec, void *data)
{
        int status = jobs_record_status(rec);

        if (!x->json)
                print_outcome(id, rec);
        if (status > *(int *)data)
                *(int *)data = status;
}

static int wait_all(struct ctl *x, const struct opts *o)
{
        struct progress progress = {0};
        int status = EXIT_OK, r;
        int64_t *ids;
        size_t n;

        r = wait_all_ids(x, o->queue, &ids, &n);
        if (r)
                return r;
        progress = (struct progress){.on = n > 1 && isatty(STDERR_FILENO), .total = (int)n};
        r = for_ids(x, ids, n, "wait", true, &progress, waited_worst, &status);
        free(ids);
        return r ? r : status;
}

int cmd_wait(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        struct progress progress = {.on = argc > 1 && isatty(STDERR_FILENO), .total = argc};
        int status = EXIT_OK, r;

        if ((o->all || o->queue) && argc > 0)
                return ctl_usage_error(x, "give job ids or --all (--queue), not both");
        if (o->all || o->queue)
                return wait_all(x, o);
        if (argc == 0)
                return ctl_usage_error(x, "too few arguments");
        r = for_each_id(x, argc, argv, "wait", true, &progress, waited, &status);
        return r ? r : status;
}

static void nothing(struct ctl *x, int64_t id, json_object *result, void *data)
{
}

int cmd_cancel(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        struct progress none = {0};

        return for_each_id(x, argc, argv, "cancel", false, &none, nothing, NULL);
}

int cmd_release(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        struct progress none = {0};

        return for_each_id(x, argc, argv, "release", false, &none, nothing, NULL);
}

int cmd_enqueue(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *p = json_object_new_object();
        int64_t id;

        if (!p)
                return ctl_error(x, "out of memory");
        if ((argc == 1) == !!o->key) {
                json_object_put(p);
                return ctl_usage_error(x, "give a job id or --key, not both");
        }
        if (argc == 1) {
                id = ctl_parse_id(x, argv[0]);
                if (id < 0) {
                        json_object_put(p);
                        return EXIT_USAGE;
                }
                json_object_object_add(p, "id", json_object_new_int64(id));
        } else {
                json_object_object_add(p, "key", json_object_new_string(o->key));
        }
        if (o->queue)
                json_object_object_add(p, "queue", json_object_new_string(o->queue));
        return ctl_call_print_id(x, NULL, "enqueue", p);
}

int cmd_status(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *p = NULL;
        char what[64] = "status";
        int64_t id;

        if (argc == 1) {
                id = ctl_parse_id(x, argv[0]);
                if (id < 0)
                        return EXIT_USAGE;
                p = ctl_id_params(id);
                snprintf(what, sizeof(what), "status %lld", (long long)id);
        }
        return ctl_call_print_object(x, what, "status", p);
}

/* The live jobs slowctl list shows; it says how many more there are. */
#define LIST_PAGE 1000

static double wall_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The state a user sees: a suspended run, a run held by a pause or a limit, a delayed one. */
static const char *list_state(json_object *job, double now)
{
        const char *state = json_str(job, "state", "?");

        if (strcmp(state, "running") == 0 && json_true(job, "suspended"))
                return "suspended";
        if (strcmp(state, "pending") == 0 && json_double(job, "next_run", 0) > now)
                return "delayed";
        if (strcmp(state, "pending") == 0 && json_true(job, "held"))
                return "held";
        return state;
}

/* Elapsed for a run in progress, the start to come for a delayed run, the job's age else. */
static void list_time(json_object *job, double now, char *buf, size_t len)
{
        double started = json_double(job, "started", 0), next = json_double(job, "next_run", 0),
               submitted = json_double(job, "submitted", 0);
        char d[32];

        if (started > 0)
                snprintf(buf, len, "%s", format_duration(now > started ? now - started : 0, d,
                                                         sizeof(d)));
        else if (next > now)
                snprintf(buf, len, "in %s", format_duration(next - now, d, sizeof(d)));
        else if (submitted > 0)
                snprintf(buf, len, "%s ago",
                         format_duration(now > submitted ? now - submitted : 0, d, sizeof(d)));
        else
                snprintf(buf, len, "-");
}

int cmd_list(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        json_object *result = NULL, *items, *p = json_object_new_object();
        struct table t;
        bool nodes = false;
        double now = wall_now();
        int64_t more;
        size_t i, n;
        int r;

        if (!o->all && (o->failed || o->outcome || o->since_given || o->limit)) {
                json_object_put(p);
                return ctl_usage_error(x, "--failed, --outcome, --since and -n go with --all");
        }
        json_object_object_add(p, "limit", json_object_new_int(LIST_PAGE));
        r = ctl_call(x, NULL, "list", p, &result);
        if (r || x->json) {
                json_object_put(result);
                return r || !o->all ? r : history_show(x, o);
        }
        items = json_object_object_get(result, "items");
        n = json_object_is_type(items, json_type_array) ? json_object_array_length(items) : 0;
        nodes = output_several_nodes(items);
        table_init(&t, 8 + nodes, 1u << 0 | 1u << 5);
        r = table_add_row(&t, (const char *[]){"ID", "CLASS", "QUEUE", "STATE", "TIME", "RUNS",
                                               "NAME", nodes ? "NODE" : "COMMAND", "COMMAND"});
        for (i = 0; i < n && r == 0; i++) {
                json_object *job = json_object_array_get_idx(items, i);
                const char *node = json_str(job, "node", ""), *command = json_str(job, "command", "");
                char id[24], runs[32], when[48];

                snprintf(id, sizeof(id), "%lld", (long long)json_int(job, "id", 0));
                /* A run to come after the one in progress: +1. */
                snprintf(runs, sizeof(runs), "%lld%s", (long long)json_int(job, "runs", 0),
                         json_true(job, "deferred") ? "+1" : "");
                list_time(job, now, when, sizeof(when));
                r = table_add_row(&t, (const char *[]){id, json_str(job, "class", "?"),
                                                       json_str(job, "queue", "?"),
                                                       list_state(job, now), when, runs,
                                                       json_str(job, "name", NULL),
                                                       nodes ? node : command, command});
        }
        if (r == 0)
                table_print(&t, stdout);
        else
                r = ctl_error(x, "out of memory");
        more = json_int(result, "more", 0);
        if (r == 0 && more > 0)
                printf("... %lld more live job%s\n", (long long)more, more == 1 ? "" : "s");
        table_clear(&t);
        json_object_put(result);
        if (r == 0 && o->all) {
                printf("\n");
                r = history_show(x, o);
        }
        return r;
}

static json_object *log_params(int64_t id, int64_t run, int64_t offset)
{
        json_object *p = ctl_id_params(id);

        json_object_object_add(p, "offset", json_object_new_int64(offset));
        if (run)
                json_object_object_add(p, "run", json_object_new_int64(run));
        return p;
}

/* Whether the job is still to run or running: a log that does not exist yet will. */
static void pause_a_little(void)
{
        struct timespec ts = {.tv_nsec = LOG_POLL_NS};

        nanosleep(&ts, NULL);
}

/* What log prints: each read as it comes, or, with --lines, the last lines once the reads have
 * caught up with the log, and each read after them. */
struct log_out {
        bool json;
        bool escape;  /* controls shown escaped: a terminal's, without --raw */
        bool tailing; /* --lines, not caught up yet */
        struct tail tail;
};

/* Text of the log for a person (not --json). */
static void log_print(const struct log_out *out, const char *data)
{
        if (out->escape)
                escape_write(stdout, data, strlen(data), ESCAPE_KEEP_LINES);
        else
                fputs(data, stdout);
}

/* A read's data (result the read's reply); 0, or an exit status. */
static int log_take(struct ctl *x, struct log_out *out, json_object *result)
{
        const char *data = json_str(result, "data", "");

        if (out->tailing)
                return tail_add(&out->tail, data, strlen(data)) < 0 ? ctl_error(x, "out of memory")
                                                                    : 0;
        if (out->json && (*data || json_object_get_boolean(json_object_object_get(result, "eof"))))
                output_json(result);
        else if (!out->json)
                log_print(out, data);
        fflush(stdout);
        return 0;
}

/* The reads have caught up (result the last, which read nothing): the last lines, at once. */
static void log_caught_up(struct log_out *out, json_object *result)
{
        if (!out->tailing)
                return;
        out->tailing = false;
        if (out->json) {
                json_object_object_add(result, "data",
                                       json_object_new_string(tail_text(&out->tail)));
                output_json(result);
        } else {
                log_print(out, tail_text(&out->tail));
        }
        fflush(stdout);
        tail_clear(&out->tail);
}

/* Where log is in the job's logs. */
struct follow {
        int64_t id;
        int64_t run;      /* the run asked for: --run's, or the one being read once the daemon
                           * closed the connection; 0: the daemon's choice (the run in progress,
                           * else the last) */
        int64_t seen_run; /* the run of the log the last read came from; 0: none yet */
        int64_t offset;   /* the next byte to read: every one before it was printed */
        bool carried;     /* run pinned after a lost connection: the daemon's choice may differ */
        char what[64];
};

/* The run a log path names: the daemon's logs are STATE/logs/ID.RUN.log; 0 for another. */
static int64_t run_of_path(const char *path, int64_t id)
{
        const char *base = path ? strrchr(path, '/') : NULL;
        long long got_id, run;
        char tail[8];

        if (base && sscanf(base, "/%lld.%lld.%7s", &got_id, &run, tail) == 3 && got_id == id &&
            run > 0 && strcmp(tail, "log") == 0)
                return run;
        return 0;
}

/* The job's status, NULL after a message; asked again over a restart. */
static json_object *follow_status(struct ctl *x, struct follow *f, int *ret)
{
        struct sw_client_error err;
        json_object *st;

        *ret = ctl_ask_again(x, f->what, "status", ctl_id_params(f->id), &st, &err);
        if (*ret == 0 && !st)
                *ret = ctl_error(x, "%s: %s", f->what, err.message);
        return *ret ? NULL : st;
}

/*
 * The daemon closed the connection while log read (a restart, a re-exec): from now on the run
 * being read is asked for by number, so that a run that starts meanwhile is not read from the
 * offset reached in another. When nothing was read yet and the job's last run was interrupted
 * (it was the run in progress: a restart stops it), that run is the one. 0, or an exit status.
 */
static int follow_carry(struct ctl *x, struct follow *f)
{
        json_object *st, *last;
        int r;

        if (f->run)
                return 0;
        f->run = f->seen_run;
        if (!f->run) {
                st = follow_status(x, f, &r);
                if (!st)
                        return r;
                last = json_object_object_get(st, "last");
                if (strcmp(json_str(last, "outcome", ""), "interrupted") == 0)
                        f->run = json_int(last, "run", 0);
                json_object_put(st);
        }
        f->carried = f->run > 0;
        return 0;
}

/* Whether run of the job ended interrupted: its record in the history (the job's last run is in
 * its status; an earlier one among the interrupted runs). 0, or an exit status. */
static int follow_interrupted(struct ctl *x, struct follow *f, json_object *st, bool *ret)
{
        json_object *last = json_object_object_get(st, "last"), *p, *res, *runs;
        struct sw_client_error err;
        size_t i, n;
        int r;

        *ret = false;
        if (json_int(last, "run", 0) <= f->run) {
                *ret = json_int(last, "run", 0) == f->run &&
                       strcmp(json_str(last, "outcome", ""), "interrupted") == 0;
                return 0;
        }
        p = json_object_new_object();
        json_object_object_add(p, "outcome", json_object_new_string("interrupted"));
        json_object_object_add(p, "limit", json_object_new_int(10000));
        r = ctl_ask_again(x, f->what, "history", p, &res, &err);
        if (r || !res)
                return r ? r : ctl_error(x, "%s: %s", f->what, err.message);
        runs = json_object_object_get(res, "runs");
        n = json_object_is_type(runs, json_type_array) ? json_object_array_length(runs) : 0;
        for (i = 0; i < n && !*ret; i++) {
                json_object *rec = json_object_array_get_idx(runs, i);

                *ret = json_int(rec, "id", 0) == f->id && json_int(rec, "run", 0) == f->run;
        }
        json_object_put(res);
        return 0;
}

/*
 * The end of the run read after a lost connection: had the restart interrupted it, the job runs
 * again (an interrupted run is queued again), and log goes on with that run from its start,
 * once it has started. *ret_more says whether to go on. 0, or an exit status.
 */
static int follow_next_run(struct ctl *x, struct follow *f, bool *ret_more)
{
        json_object *st, *last;
        bool interrupted;
        int r;

        *ret_more = false;
        st = follow_status(x, f, &r);
        if (!st)
                return r;
        r = follow_interrupted(x, f, st, &interrupted);
        while (r == 0 && interrupted) {
                last = json_object_object_get(st, "last");
                if (json_int(st, "runs", 0) > f->run &&
                    (json_int(last, "run", 0) <= f->run || json_double(last, "started", 0) > 0)) {
                        *ret_more = true; /* the next run started (it may have ended since) */
                        break;
                }
                if (!json_true(st, "live") || strcmp(json_str(st, "state", ""), "idle") == 0)
                        break; /* not to run again (cancelled while queued, say) */
                json_object_put(st);
                pause_a_little();
                st = follow_status(x, f, &r);
        }
        json_object_put(st);
        if (*ret_more) {
                f->run++;
                f->seen_run = f->run;
                f->offset = 0;
        }
        return r;
}

static int follow_log(struct ctl *x, const struct opts *o, struct follow *f, struct log_out *out)
{
        struct sw_client_error err;
        json_object *result;
        bool eof, empty, more;
        int64_t next;
        int r;

        for (;;) {
                /* Only -f outlives a restart: log alone fails as any command does. */
                if (o->follow)
                        r = ctl_ask(x, f->what, "log", log_params(f->id, f->run, f->offset),
                                    &result, &err);
                else
                        r = ctl_try(x, f->what, "log", log_params(f->id, f->run, f->offset),
                                    &result, &err);
                if (r == CTL_RECONNECTED) {
                        r = follow_carry(x, f);
                        if (r)
                                return r;
                        continue;
                }
                if (r)
                        return r;
                if (!result)
                        return ctl_error(x, "%s: %s", f->what, err.message);
                if (!f->run && run_of_path(json_str(result, "log", NULL), f->id))
                        f->seen_run = run_of_path(json_str(result, "log", NULL), f->id);
                next = json_int(result, "offset", f->offset);
                eof = json_object_get_boolean(json_object_object_get(result, "eof"));
                empty = !*json_str(result, "data", "");
                r = log_take(x, out, result);
                /* A finished run's log may take more than one read: go on until nothing comes. */
                if (r == 0 && empty && next == f->offset)
                        log_caught_up(out, result);
                json_object_put(result);
                if (r)
                        return r;
                if (empty && next == f->offset) {
                        if (eof && f->carried) {
                                r = follow_next_run(x, f, &more);
                                if (r || !more)
                                        return r;
                                continue;
                        }
                        if (eof || !o->follow)
                                return EXIT_OK;
                        pause_a_little();
                }
                f->offset = next;
        }
}

int cmd_log(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        int64_t id = ctl_parse_id(x, argv[0]);
        struct follow f = {.id = id, .run = o->run};
        struct log_out out = {.json = x->json,
                              .escape = !o->raw && isatty(STDOUT_FILENO),
                              .tailing = o->lines_given,
                              .tail = {.lines = o->lines}};
        int r;

        if (id < 0)
                return EXIT_USAGE;
        if (o->run)
                snprintf(f.what, sizeof(f.what), "log %lld --run %lld", (long long)id,
                         (long long)o->run);
        else
                snprintf(f.what, sizeof(f.what), "log %lld", (long long)id);
        r = follow_log(x, o, &f, &out);
        tail_clear(&out.tail);
        return r;
}
