/* SPDX-License-Identifier: MIT */
/*
 * slowctl: the command table, the command line, and main. Options are declared once, with their
 * help; each command lists the ones it takes, and they are parsed here for all commands alike.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "duration.h"
#include "format.h"
#include "slowctl.h"

enum {
        OPT_FOLLOW = 'f',
        OPT_HELP = 'h',
        OPT_LIMIT = 'n',
        OPT_VERY_SLOW = 256,
        OPT_KEY,
        OPT_NAME,
        OPT_DELAY,
        OPT_TIMEOUT,
        OPT_WAIT,
        OPT_DRAIN,
        OPT_HOLD,
        OPT_PERSIST,
        OPT_CWD,
        OPT_PLUGIN,
        OPT_ENTRY,
        OPT_ARG,
        OPT_STDIN,
        OPT_MEMORY_MAX,
        OPT_TASKS_MAX,
        OPT_CPU_WEIGHT,
        OPT_NICE,
        OPT_OPEN_FILES,
        OPT_CPU_TIME,
        OPT_AFTER,
        OPT_AFTER_ANY,
        OPT_RETRIES,
        OPT_RETRY_DELAY,
        OPT_EVERY,
        OPT_CRON,
        OPT_ON_END,
        OPT_RUNTIME,
        OPT_QUEUE,
        OPT_COMMAND,
        OPT_MIN_THREADS,
        OPT_MAX_THREADS,
        OPT_VSLOW_PERCENTAGE,
        OPT_IDLE_TIMEOUT,
        OPT_MAX_QUEUED_PER_USER,
        OPT_MAX_RUNNING_PER_USER,
        OPT_FAILED,
        OPT_OUTCOME,
        OPT_SINCE,
        OPT_ALL,
        OPT_RUN,
        OPT_LINES,
        OPT_WAIT_ALL,
        OPT_WAIT_QUEUE,
        OPT_SOCKET,
        OPT_JSON,
        OPT_VERSION,
        OPT_PRIORITY,
        OPT_STASHED,
        OPT_RAW,
        OPT_NODE,
        OPT_NODE_PAUSE,
};

struct option_def {
        int code;
        const char *name;
        const char *arg; /* the argument's name, or NULL for none */
        const char *help;
};

static const struct option_def option_defs[] = {
    {OPT_VERY_SLOW, "very-slow", NULL,
     "run as very slow work, which gets a limited share of the threads"},
    {OPT_KEY, "key", "K", "coalesce with your live job of this key instead of adding one"},
    {OPT_NAME, "name", "N", "a label that list and status show"},
    {OPT_DELAY, "delay", "S|TIME",
     "queue it after S (90, 2m, 1h30m) or at TIME (09:00, 2026-12-24T18:00)"},
    {OPT_TIMEOUT, "timeout", "S", "stop a run after S (90, 2m, 1h30m)"},
    {OPT_WAIT, "wait", NULL, "wait for the job; exit with its exit status"},
    {OPT_DRAIN, "wait", NULL, "answer once no job is running any more (drain)"},
    {OPT_HOLD, "hold", NULL, "keep the job after its run while slowctl stays connected"},
    {OPT_PERSIST, "persist", NULL, "keep the job until it is released"},
    {OPT_CWD, "cwd", "D", "the directory to run in (default: the current one)"},
    {OPT_PLUGIN, "plugin", "NAME", "run a plugin instead of a command"},
    {OPT_ENTRY, "entry", "SYM", "the plugin's entry point"},
    {OPT_ARG, "arg", "JSON", "the argument for the entry point"},
    {OPT_STDIN, "stdin", NULL, "submit each line of standard input as a command; print the ids"},
    {OPT_MEMORY_MAX, "memory-max", "BYTES", "memory of a run at most (suffix K, M, G or T)"},
    {OPT_TASKS_MAX, "tasks-max", "N", "processes and threads of a run at most"},
    {OPT_CPU_WEIGHT, "cpu-weight", "N", "the run's share of CPU against others (1..10000)"},
    {OPT_NICE, "nice", "N", "the run's niceness (-20..19; below 0 for admins)"},
    {OPT_OPEN_FILES, "open-files", "N", "open files of each process at most"},
    {OPT_CPU_TIME, "cpu-time", "S", "CPU seconds of each process at most"},
    {OPT_AFTER, "after", "IDS", "wait until these jobs (12,13) have succeeded; else do not run"},
    {OPT_AFTER_ANY, "after-any", "IDS", "wait until these jobs have ended, however they did"},
    {OPT_RETRIES, "retries", "N", "run again after a failure, up to N times (0..1000)"},
    {OPT_RETRY_DELAY, "retry-delay", "S",
     "wait S before the first retry (default 1s), twice as long before each next"},
    {OPT_EVERY, "every", "S", "run every S (90, 2m, 1h30m, 1d), until released"},
    {OPT_CRON, "cron", "EXPR", "run at the times of a cron expression ('0 3 * * *', '@daily'), "
                               "until released"},
    {OPT_ON_END, "on-end", "CMD", "run this shell command after each run (SLOWWORK_JOB, "
                                  "SLOWWORK_RUN, SLOWWORK_OUTCOME, SLOWWORK_EXIT_CODE)"},
    {OPT_FOLLOW, "follow", NULL, "keep printing while the job runs"},
    {OPT_RUN, "run", "N", "the log of run N (1 the first), while the history keeps it"},
    {OPT_LINES, "lines", "N", "only the last N lines (with -f: then what follows)"},
    {OPT_RAW, "raw", NULL, "control characters as they are, on a terminal too (not escaped)"},
    {OPT_RUNTIME, "runtime", NULL, "change the running daemon only: do not store the change"},
    {OPT_QUEUE, "queue", "Q", "the named queue (default: the queue \"default\")"},
    {OPT_MIN_THREADS, "min-threads", "N", "the queue's threads at least"},
    {OPT_MAX_THREADS, "max-threads", "N", "the queue's threads at most (1: one job at a time)"},
    {OPT_VSLOW_PERCENTAGE, "vslow-percentage", "N", "the share of its threads very slow jobs get"},
    {OPT_IDLE_TIMEOUT, "idle-timeout", "S", "idle threads above min-threads go after S seconds"},
    {OPT_MAX_QUEUED_PER_USER, "max-queued-per-user", "N", "a user's jobs queued in it at most"},
    {OPT_MAX_RUNNING_PER_USER, "max-running-per-user", "N", "a user's jobs running in it at most"},
    {OPT_FAILED, "failed", NULL, "only runs that did not succeed (any outcome but succeeded)"},
    {OPT_OUTCOME, "outcome", "O", "only runs with this outcome (failed, killed, timed-out, ...)"},
    {OPT_SINCE, "since", "WHEN", "only runs that ended since: 30m, 2h, 1d ago, or a local time"},
    {OPT_LIMIT, "limit", "N", "show the last N runs (default 20, at most 10000)"},
    {OPT_ALL, "all", NULL, "show the last runs after the live jobs"},
    {OPT_WAIT_ALL, "all", NULL,
     "wait for each of your live jobs that will end (not --persist, recurring or stashed)"},
    {OPT_WAIT_QUEUE, "queue", "Q", "wait for those of queue Q only"},
    {OPT_HELP, "help", NULL, "show this help"},
    {OPT_SOCKET, "socket", "PATH", "the daemon's socket"},
    {OPT_JSON, "json", NULL, "print the daemon's replies as JSON"},
    {OPT_VERSION, "version", NULL, "print slowctl's version"},
    {OPT_PRIORITY, "priority", "N", "run before the jobs of a lower priority (-100..100, "
                                    "default 0)"},
    {OPT_STASHED, "stashed", NULL, "keep the job, not queued, until enqueue ID"},
    {OPT_NODE, "node", "NAME", "run it on this node of the cluster alone"},
    {OPT_NODE_PAUSE, "node", "NAME", "this node of the cluster alone: its queued jobs run on the "
                                     "others"},
    {OPT_COMMAND, "command", "CMD", "the shell command (for /bin/sh -c) to run instead of the "
                                    "job's own"},
};

#define N_DEFS   (sizeof(option_defs) / sizeof(option_defs[0]))
#define OPTS_MAX 32

struct command {
        const char *name;
        int min_args, max_args; /* positional arguments; max -1: any number */
        const int *options;     /* OPT_* codes, ending in 0; --help goes without saying */
        bool args_end_options;  /* the first argument ends the options (the command to run) */
        int (*run)(struct ctl *x, const struct opts *o, int argc, char **argv);
        const char *usage; /* what follows "slowctl NAME" */
        const char *summary;
};

static const int submit_options[] = {
    OPT_VERY_SLOW,  OPT_KEY,      OPT_NAME,       OPT_DELAY,    OPT_TIMEOUT,
    OPT_WAIT,       OPT_HOLD,     OPT_PERSIST,    OPT_CWD,      OPT_PLUGIN,
    OPT_ENTRY,      OPT_ARG,      OPT_STDIN,      OPT_MEMORY_MAX, OPT_TASKS_MAX,
    OPT_CPU_WEIGHT, OPT_NICE,     OPT_OPEN_FILES, OPT_CPU_TIME, OPT_AFTER,
    OPT_AFTER_ANY,  OPT_RETRIES,  OPT_RETRY_DELAY, OPT_EVERY,   OPT_CRON,     OPT_QUEUE,
    OPT_PRIORITY,   OPT_STASHED,  OPT_ON_END,     OPT_NODE,     0,
};
static const int edit_options[] = {OPT_COMMAND, OPT_NAME, OPT_PRIORITY, OPT_CWD, 0};
static const int enqueue_options[] = {OPT_KEY, OPT_QUEUE, 0};
static const int log_options[] = {OPT_FOLLOW, OPT_RUN, OPT_LINES, OPT_RAW, 0};
static const int set_options[] = {OPT_RUNTIME, OPT_QUEUE, 0};
static const int queue_only_options[] = {OPT_QUEUE, 0};
static const int queue_options[] = {OPT_MIN_THREADS,         OPT_MAX_THREADS,
                                    OPT_VSLOW_PERCENTAGE,    OPT_IDLE_TIMEOUT,
                                    OPT_MAX_QUEUED_PER_USER, OPT_MAX_RUNNING_PER_USER, 0};
static const int history_options[] = {OPT_FAILED, OPT_OUTCOME, OPT_SINCE, OPT_LIMIT, 0};
static const int list_options[] = {OPT_ALL, OPT_FAILED, OPT_OUTCOME, OPT_SINCE, OPT_LIMIT, 0};
static const int pause_options[] = {OPT_DRAIN, OPT_QUEUE, OPT_NODE_PAUSE, 0};
static const int resume_options[] = {OPT_QUEUE, OPT_NODE_PAUSE, 0};
static const int restart_options[] = {OPT_COMMAND, 0};
static const int wait_options[] = {OPT_WAIT_ALL, OPT_WAIT_QUEUE, 0};
static const int no_options[] = {0};

static int cmd_help(struct ctl *x, const struct opts *o, int argc, char **argv);

static const struct command commands[] = {
    {"submit", 0, -1, submit_options, true, cmd_submit,
     "[--very-slow] [--key K] [--name N] [--delay S] [--timeout S] [--wait] [--hold]\n"
     "                      [--persist] [--cwd D] [--priority N] [--stashed] [LIMITS] [FLOW]\n"
     "                      -- CMD [ARGS...]\n"
     "       slowctl submit --plugin NAME --entry SYM [--arg JSON] [OPTIONS]\n"
     "       slowctl submit --stdin [OPTIONS]",
     "queue a job and print its id"},
    {"enqueue", 0, 1, enqueue_options, false, cmd_enqueue, "ID | --key K [--queue Q]",
     "queue a live job again, or let a stashed one go"},
    {"edit", 1, -1, edit_options, false, cmd_edit,
     "ID [--command CMD] [--name N] [--priority N] [--cwd D] [-- PROGRAM [ARGS...]]",
     "change a job that has not started (pending, stashed or waiting)"},
    {"wait", 0, -1, wait_options, false, cmd_wait, "ID... | --all [--queue Q]",
     "wait for jobs; exit with the last one's exit status (--all: the worst)"},
    {"cancel", 1, -1, no_options, false, cmd_cancel, "ID...",
     "take jobs off the queue, or stop their runs"},
    {"release", 1, -1, no_options, false, cmd_release, "ID...",
     "drop the handle kept by --persist"},
    {"status", 0, 1, no_options, false, cmd_status, "[ID]", "show a job, or the daemon"},
    {"list", 0, 0, list_options, false, cmd_list, "[--all [HISTORY OPTIONS]]",
     "list the live jobs (--all: and then the last runs)"},
    {"history", 0, 0, history_options, false, cmd_history,
     "[--failed] [--outcome O] [--since 2h|TIME] [-n N]", "list finished runs, newest first"},
    {"log", 1, 1, log_options, false, cmd_log, "ID [-f] [--run N] [--lines N] [--raw]",
     "print a job's output (of its last run, or of run N)"},
    {"get", 0, 1, queue_only_options, false, cmd_get, "[--queue Q] [NAME]",
     "show the settings (of a queue), or one"},
    {"set", 2, -1, set_options, false, cmd_set, "[--queue Q] NAME VALUE... [--runtime]",
     "change settings (of a queue), all or nothing"},
    {"queue", 1, 2, queue_options, false, cmd_queue,
     "add Q [--max-threads N] [--min-threads N] [--vslow-percentage N] [--idle-timeout S]\n"
     "                     [--max-queued-per-user N] [--max-running-per-user N]\n"
     "       slowctl queue rm Q\n"
     "       slowctl queue ls",
     "add, remove or list the named queues"},
    {"stats", 0, 0, queue_only_options, false, cmd_stats, "[--queue Q]",
     "show the pools' statistics (of one queue)"},
    {"top", 0, 0, no_options, false, cmd_top, "",
     "a live view of the threads, the runs and the queues (q quits)"},
    {"rq", 0, 0, queue_only_options, false, cmd_rq, "[--queue Q]",
     "show the run queue as the kernel's /proc/slow_work_rq"},
    {"metrics", 0, 0, no_options, false, cmd_metrics, "",
     "print the metrics in Prometheus' text format"},
    {"pause", 0, 0, pause_options, false, cmd_pause, "[--queue Q | --node NAME] [--wait]",
     "start no new job (of a queue, or on a node) until resume (running ones go on)"},
    {"resume", 0, 0, resume_options, false, cmd_resume, "[--queue Q | --node NAME]",
     "start jobs again after pause"},
    {"suspend", 1, 1, no_options, false, cmd_suspend, "ID",
     "stop a running job's processes where they are"},
    {"continue", 1, 1, no_options, false, cmd_continue, "ID",
     "let a suspended job's processes go on"},
    {"restart", 1, -1, restart_options, false, cmd_restart,
     "ID [--command CMD | -- PROGRAM [ARGS...]]",
     "run an ended job again, as a new job; print its id"},
    {"signal", 2, 2, no_options, false, cmd_signal, "ID SIG",
     "send a signal (USR1, SIGUSR1 or a number) to a running job's processes"},
    {"reload", 0, 0, no_options, false, cmd_reload, "",
     "make the daemon read its configuration file again"},
    {"reexec", 0, 0, no_options, false, cmd_reexec, "",
     "make the daemon execute its program again in place (after an upgrade), runs going on"},
    {"nodes", 0, 2, no_options, false, cmd_nodes, "[forget NAME]",
     "list the nodes that share the job database (* marks this one), or forget an expired one"},
    {"ping", 0, 0, no_options, false, cmd_ping, "", "check that the daemon answers"},
    {"version", 0, 0, no_options, false, cmd_version, "",
     "show slowctl's and the daemon's version"},
    {"help", 0, 1, no_options, false, cmd_help, "[COMMAND]",
     "show the usage, or a command's usage and options"},
};

static const struct option_def *find_def(int code)
{
        size_t i;

        for (i = 0; i < N_DEFS; i++)
                if (option_defs[i].code == code)
                        return &option_defs[i];
        return NULL;
}

static const struct command *find_command(const char *name)
{
        size_t i;

        for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                if (strcmp(commands[i].name, name) == 0)
                        return &commands[i];
        return NULL;
}

static void print_option_help(FILE *f, const struct option_def *d)
{
        char left[40], shortopt[8] = "";

        if (d->code < 256)
                snprintf(shortopt, sizeof(shortopt), "-%c, ", d->code);
        snprintf(left, sizeof(left), "%s--%s%s%s", shortopt, d->name, d->arg ? " " : "",
                 d->arg ? d->arg : "");
        fprintf(f, "  %-18s %s\n", left, d->help);
}

static void print_help(void)
{
        size_t i;

        printf("Usage: slowctl [--socket PATH] [--json] COMMAND [ARGS...]\n\n"
               "Talks to slowworkd, the slow work job service.\n\nCommands:\n");
        for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
                printf("  %-8s %s\n", commands[i].name, commands[i].summary);
        printf("\nOptions:\n");
        print_option_help(stdout, find_def(OPT_SOCKET));
        print_option_help(stdout, find_def(OPT_JSON));
        print_option_help(stdout, find_def(OPT_HELP));
        print_option_help(stdout, find_def(OPT_VERSION));
        printf("\nThe socket is $SLOWWORK_SOCKET, else $XDG_RUNTIME_DIR/slowwork/slowworkd.sock "
               "(the user\ninstance's), else or when that is not there or refuses, "
               "/run/slowwork/slowworkd.sock (the\nsystem instance's). 'slowctl help COMMAND' "
               "shows a command's options.\n");
}

static void print_command_help(const struct command *cmd)
{
        const int *code;

        printf("Usage: slowctl %s%s%s\n\n%c%s.\n", cmd->name, *cmd->usage ? " " : "", cmd->usage,
               toupper((unsigned char)cmd->summary[0]), cmd->summary + 1);
        printf("\nOptions:\n");
        for (code = cmd->options; *code; code++)
                print_option_help(stdout, find_def(*code));
        print_option_help(stdout, find_def(OPT_HELP));
}

/* help [COMMAND]: what --help prints, without a daemon. */
static int cmd_help(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        const struct command *cmd;

        if (argc == 0) {
                print_help();
                return EXIT_OK;
        }
        cmd = find_command(argv[0]);
        if (!cmd)
                return ctl_usage_error(x, "no command \"%s\"; 'slowctl help' lists them", argv[0]);
        print_command_help(cmd);
        return EXIT_OK;
}

static int parse_seconds(struct ctl *x, const char *name, const char *s, double *ret)
{
        if (duration_parse(s, ret) < 0)
                return ctl_usage_error(x,
                                       "--%s takes seconds (90, 0.5) or a span with units (90s, "
                                       "2m, 1h30m, 1d), not \"%s\"",
                                       name, s);
        return 0;
}

/* --delay: a span, or the moment to start at (the next 09:00, or a local date and time). */
static int parse_delay(struct ctl *x, const char *s, double *ret)
{
        int r = duration_until(s, time(NULL), ret);

        if (r == -ERANGE)
                return ctl_usage_error(x, "--delay: %s is in the past", s);
        if (r < 0)
                return ctl_usage_error(x,
                                       "--delay takes seconds (90, 0.5), a span with units (90s, "
                                       "2m, 1h30m, 1d), a time of day (09:00) or a local date "
                                       "and time (2026-12-24T18:00), not \"%s\"",
                                       s);
        return 0;
}

/* A limit's integer: with suffix K, M, G or T (powers of 1024) where bytes allows them. */
static int parse_limit(struct ctl *x, const char *name, const char *s, bool bytes, int64_t *ret)
{
        static const char suffixes[] = "KMGT";
        const char *unit;
        long long v;
        char *end;

        errno = 0;
        v = strtoll(s, &end, 10);
        unit = bytes && *end && !end[1] ? strchr(suffixes, *end) : NULL;
        if (errno || end == s || (*end && !unit))
                return ctl_usage_error(x, "--%s takes %s, not \"%s\"", name,
                                       bytes ? "a number of bytes (suffix K, M, G or T)"
                                             : "an integer",
                                       s);
        for (int i = unit ? (int)(unit - suffixes) + 1 : 0; i > 0; i--) {
                if (v > INT64_MAX / 1024 || v < INT64_MIN / 1024)
                        return ctl_usage_error(x, "--%s: \"%s\" is too large", name, s);
                v *= 1024;
        }
        *ret = v;
        return 0;
}

/* --cpu-time: whole seconds, or a span of them (90, 2m, 1h30m). */
static int parse_cpu_time(struct ctl *x, const char *s, int64_t *ret)
{
        double v;

        if (duration_parse(s, &v) < 0 || v > 9007199254740991.0 || v != (double)(int64_t)v)
                return ctl_usage_error(x,
                                       "--cpu-time takes whole seconds (90) or a span of them "
                                       "(2m, 1h30m), not \"%s\"",
                                       s);
        *ret = (int64_t)v;
        return 0;
}

/* A queue's setting for queue add, as the daemon takes it: a number; idle-timeout a span. */
static int add_queue_setting(struct ctl *x, struct opts *o, const char *name, const char *s)
{
        json_object *v;
        double seconds;

        if (strcmp(name, "idle-timeout") == 0) {
                if (parse_seconds(x, name, s, &seconds))
                        return EXIT_USAGE;
                v = json_object_new_double(seconds);
        } else {
                v = ctl_parse_number(s);
        }
        if (!v)
                return ctl_usage_error(x, "--%s takes a number, not \"%s\"", name, s);
        if (!o->queue_settings)
                o->queue_settings = json_object_new_object();
        json_object_object_add(o->queue_settings, name, v);
        return 0;
}

static int parse_since(struct ctl *x, const char *s, struct opts *o)
{
        if (format_parse_since(s, time(NULL), &o->since) < 0)
                return ctl_usage_error(x,
                                       "--since takes a span back from now (30m, 2h, 1h30m, 1d) "
                                       "or a local time (\"2026-12-04 09:00\"), not \"%s\"",
                                       s);
        o->since_given = true;
        return 0;
}

static int parse_count(struct ctl *x, const char *s, int64_t *ret)
{
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < 1 || v > SW_HISTORY_LIMIT_MAX)
                return ctl_usage_error(x, "-n takes a number from 1 to %d, not \"%s\"",
                                       SW_HISTORY_LIMIT_MAX, s);
        *ret = v;
        return 0;
}

/* A whole number from min on for the option name. */
static int parse_whole(struct ctl *x, const char *name, const char *s, int64_t min, int64_t *ret)
{
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < min)
                return ctl_usage_error(x, "--%s takes a whole number from %lld on, not \"%s\"",
                                       name, (long long)min, s);
        *ret = v;
        return 0;
}

/* "12,13": an array of job ids. */
static int parse_ids(struct ctl *x, const char *name, const char *s, json_object **ret)
{
        json_object *ids = json_object_new_array();
        const char *p = s;

        do {
                char *end;
                long long v;

                errno = 0;
                v = strtoll(p, &end, 10);
                if (errno || end == p || v < 1 || (*end && *end != ',')) {
                        json_object_put(ids);
                        return ctl_usage_error(x, "--%s takes job ids separated by commas, "
                                                  "not \"%s\"",
                                               name, s);
                }
                json_object_array_add(ids, json_object_new_int64(v));
                p = *end ? end + 1 : end;
        } while (*p);
        json_object_put(*ret);
        *ret = ids;
        return 0;
}

static int parse_retries(struct ctl *x, const char *s, int64_t *ret)
{
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < 0 || v > SW_RETRIES_MAX)
                return ctl_usage_error(x, "--retries takes a number from 0 to %d, not \"%s\"",
                                       SW_RETRIES_MAX, s);
        *ret = v;
        return 0;
}

static int parse_priority(struct ctl *x, const char *s, int64_t *ret)
{
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < SW_PRIORITY_MIN || v > SW_PRIORITY_MAX)
                return ctl_usage_error(x, "--priority takes a number from %d to %d, not \"%s\"",
                                       SW_PRIORITY_MIN, SW_PRIORITY_MAX, s);
        *ret = v;
        return 0;
}

static int parse_json_arg(struct ctl *x, const char *s, json_object **ret)
{
        json_object *v = NULL;
        char err[256];

        if (sw_json_read(s, strlen(s), &v, err, sizeof(err)) != 0)
                return ctl_usage_error(x, "--arg takes JSON: %s", err);
        json_object_put(*ret);
        *ret = v;
        return 0;
}

static int store_option(struct ctl *x, struct opts *o, int code, const char *arg)
{
        switch (code) {
        case OPT_VERY_SLOW:
                o->very_slow = true;
                return 0;
        case OPT_KEY:
                o->key = arg;
                return 0;
        case OPT_NAME:
                o->name = arg;
                return 0;
        case OPT_DELAY:
                return parse_delay(x, arg, &o->delay);
        case OPT_TIMEOUT:
                return parse_seconds(x, "timeout", arg, &o->timeout);
        case OPT_WAIT:
        case OPT_DRAIN:
                o->wait = true;
                return 0;
        case OPT_HOLD:
                o->hold = true;
                return 0;
        case OPT_PERSIST:
                o->persist = true;
                return 0;
        case OPT_CWD:
                o->cwd = arg;
                return 0;
        case OPT_PLUGIN:
                o->plugin = arg;
                return 0;
        case OPT_ENTRY:
                o->entry = arg;
                return 0;
        case OPT_ARG:
                o->arg_given = true;
                return parse_json_arg(x, arg, &o->arg);
        case OPT_STDIN:
                o->from_stdin = true;
                return 0;
        case OPT_MEMORY_MAX:
                return parse_limit(x, "memory-max", arg, true, &o->limits.memory_max);
        case OPT_TASKS_MAX:
                return parse_limit(x, "tasks-max", arg, false, &o->limits.tasks_max);
        case OPT_CPU_WEIGHT:
                return parse_limit(x, "cpu-weight", arg, false, &o->limits.cpu_weight);
        case OPT_NICE:
                return parse_limit(x, "nice", arg, false, &o->limits.nice);
        case OPT_OPEN_FILES:
                return parse_limit(x, "open-files", arg, false, &o->limits.open_files);
        case OPT_CPU_TIME:
                return parse_cpu_time(x, arg, &o->limits.cpu_time);
        case OPT_AFTER:
                return parse_ids(x, "after", arg, &o->after);
        case OPT_AFTER_ANY:
                return parse_ids(x, "after-any", arg, &o->after_any);
        case OPT_RETRIES:
                return parse_retries(x, arg, &o->retries);
        case OPT_RETRY_DELAY:
                o->retry_delay_given = true;
                return parse_seconds(x, "retry-delay", arg, &o->retry_delay);
        case OPT_EVERY:
                o->every_given = true;
                return parse_seconds(x, "every", arg, &o->every);
        case OPT_CRON:
                o->cron = arg;
                return 0;
        case OPT_ON_END:
                o->on_end = arg;
                return 0;
        case OPT_FOLLOW:
                o->follow = true;
                return 0;
        case OPT_RAW:
                o->raw = true;
                return 0;
        case OPT_RUNTIME:
                o->runtime = true;
                return 0;
        case OPT_NODE:
        case OPT_NODE_PAUSE:
                o->node = arg;
                return 0;
        case OPT_QUEUE:
                o->queue = arg;
                return 0;
        case OPT_PRIORITY:
                o->priority_given = true;
                return parse_priority(x, arg, &o->priority);
        case OPT_STASHED:
                o->stashed = true;
                return 0;
        case OPT_COMMAND:
                o->command = arg;
                return 0;
        case OPT_MIN_THREADS:
        case OPT_MAX_THREADS:
        case OPT_VSLOW_PERCENTAGE:
        case OPT_IDLE_TIMEOUT:
        case OPT_MAX_QUEUED_PER_USER:
        case OPT_MAX_RUNNING_PER_USER:
                return add_queue_setting(x, o, find_def(code)->name, arg);
        case OPT_FAILED:
                o->failed = true;
                return 0;
        case OPT_OUTCOME:
                o->outcome = arg;
                return 0;
        case OPT_SINCE:
                return parse_since(x, arg, o);
        case OPT_LIMIT:
                return parse_count(x, arg, &o->limit);
        case OPT_ALL:
        case OPT_WAIT_ALL:
                o->all = true;
                return 0;
        case OPT_WAIT_QUEUE:
                o->queue = arg;
                return 0;
        case OPT_RUN:
                return parse_whole(x, "run", arg, 1, &o->run);
        case OPT_LINES:
                o->lines_given = true;
                return parse_whole(x, "lines", arg, 0, &o->lines);
        default:
                return ctl_usage_error(x, "option code %d has no meaning", code);
        }
}

static struct option getopt_option(int code)
{
        const struct option_def *d = find_def(code);

        return (struct option){d->name, d->arg ? required_argument : no_argument, NULL, d->code};
}

/* getopt's tables for a command: its options and --help. */
static void build_options(const struct command *cmd, struct option *longopts, char *shortopts)
{
        const int *code;
        size_t n = 0;
        char *s = shortopts;

        if (cmd->args_end_options)
                *s++ = '+';
        *s++ = ':';
        for (code = cmd->options; *code; code++)
                longopts[n++] = getopt_option(*code);
        longopts[n++] = getopt_option(OPT_HELP);
        longopts[n] = (struct option){0};
        for (code = cmd->options; *code; code++)
                if (*code < 256) {
                        *s++ = (char)*code;
                        if (find_def(*code)->arg)
                                *s++ = ':';
                }
        *s++ = 'h';
        *s = '\0';
}

/* Parses the command's options: 0 with the positional arguments from *ret_first, -1 after
 * --help, or an exit status. */
static int parse_command_line(struct ctl *x, const struct command *cmd, int argc, char **argv,
                              struct opts *o, int *ret_first)
{
        struct option longopts[OPTS_MAX];
        char shortopts[2 * OPTS_MAX];
        int c, r, nargs;

        build_options(cmd, longopts, shortopts);
        optind = 0;
        opterr = 0;
        while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
                switch (c) {
                case OPT_HELP:
                        print_command_help(cmd);
                        return -1;
                case ':':
                        return ctl_usage_error(x, "%s needs an argument", argv[optind - 1]);
                case '?':
                        if (optopt && optopt < 256)
                                return ctl_usage_error(x, "unknown option -%c", optopt);
                        return ctl_usage_error(x, "unknown option %s", argv[optind - 1]);
                default:
                        r = store_option(x, o, c, optarg);
                        if (r)
                                return r;
                }
        }
        nargs = argc - optind;
        if (nargs < cmd->min_args)
                return ctl_usage_error(x, "too few arguments");
        if (cmd->max_args >= 0 && nargs > cmd->max_args)
                return ctl_usage_error(x, "too many arguments");
        *ret_first = optind;
        return 0;
}

static int unknown_command(const char *name)
{
        fprintf(stderr,
                "slowctl: unknown command \"%s\"\n"
                "Usage: slowctl [--socket PATH] [--json] COMMAND [ARGS...]; "
                "'slowctl --help' lists the commands\n",
                name);
        return EXIT_USAGE;
}

__attribute__((format(printf, 1, 2))) static int global_usage(const char *fmt, ...)
{
        va_list ap;

        fputs("slowctl: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs("\nUsage: slowctl [--socket PATH] [--json] COMMAND [ARGS...]\n", stderr);
        return EXIT_USAGE;
}

/* The options before the command: 0 with the command's index, -1 when done, or an exit status. */
static int parse_global(struct ctl *x, int argc, char **argv, int *ret_index)
{
        const struct option longopts[] = {
            getopt_option(OPT_SOCKET),
            getopt_option(OPT_JSON),
            getopt_option(OPT_HELP),
            getopt_option(OPT_VERSION),
            {0},
        };
        int c;

        opterr = 0;
        while ((c = getopt_long(argc, argv, "+:h", longopts, NULL)) != -1) {
                switch (c) {
                case OPT_SOCKET:
                        x->socket = optarg;
                        break;
                case OPT_JSON:
                        x->json = true;
                        break;
                case OPT_HELP:
                        print_help();
                        return -1;
                case OPT_VERSION:
                        printf("slowctl %s\n", PACKAGE_VERSION);
                        return -1;
                case ':':
                        return global_usage("%s needs an argument", argv[optind - 1]);
                default:
                        return global_usage("unknown option %s", argv[optind - 1]);
                }
        }
        if (optind >= argc)
                return global_usage("no command given");
        *ret_index = optind;
        return 0;
}

static int finish_output(int status)
{
        if (fflush(stdout) != 0 || ferror(stdout)) {
                fprintf(stderr, "slowctl: cannot write the output: %s\n", strerror(errno));
                return status ? status : EXIT_FAIL;
        }
        return status;
}

int main(int argc, char **argv)
{
        const struct command *cmd;
        struct ctl x = {0};
        struct opts o = {0};
        int r, index = 0, first = 0;

        sw_limits_unset(&o.limits);
        r = parse_global(&x, argc, argv, &index);
        if (r)
                return finish_output(r < 0 ? EXIT_OK : r);
        cmd = find_command(argv[index]);
        if (!cmd)
                return unknown_command(argv[index]);
        x.command = cmd->name;
        x.usage = cmd->usage;
        argc -= index;
        argv += index;
        r = parse_command_line(&x, cmd, argc, argv, &o, &first);
        if (r == 0)
                r = cmd->run(&x, &o, argc - first, argv + first);
        else if (r < 0)
                r = EXIT_OK;
        json_object_put(o.arg);
        json_object_put(o.after);
        json_object_put(o.after_any);
        json_object_put(o.queue_settings);
        sw_client_free(x.client);
        return finish_output(r);
}
