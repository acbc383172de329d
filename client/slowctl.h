/* SPDX-License-Identifier: MIT */
/*
 * slowctl's insides: the options a command line gives, the state every command shares, and the
 * commands. A command returns the process's exit status: EXIT_OK, EXIT_FAIL (with a message on
 * stderr), EXIT_USAGE, EXIT_UNAVAILABLE, or a job's code.
 */
#ifndef SLOWCTL_H
#define SLOWCTL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "methods.h"
#include "slowwork-client.h"

enum {
        EXIT_OK = 0,
        EXIT_FAIL = 1,
        EXIT_USAGE = 2,
        EXIT_UNAVAILABLE = 69, /* sysexits.h's EX_UNAVAILABLE: no daemon to talk to */
};

/* Options of all commands; each command accepts the ones its table entry lists. */
struct opts {
        bool very_slow, wait, hold, persist, from_stdin, follow, runtime;
        bool raw; /* log --raw: controls as they are, on a terminal too */
        bool failed, all, since_given; /* history, list --all */
        const char *outcome;
        double since;  /* Unix seconds */
        int64_t limit; /* -n; 0: the command's default */
        const char *key, *name, *cwd, *plugin, *entry;
        json_object *arg; /* --arg, parsed; NULL also for JSON null */
        bool arg_given;
        double delay, timeout;
        struct sw_limits limits; /* unset members: not given */
        json_object *after, *after_any; /* arrays of ids, or NULL */
        int64_t retries;
        double retry_delay, every;
        bool retry_delay_given, every_given;
        const char *cron;
        const char *on_end;          /* --on-end */
        int64_t run;                 /* log --run: 0 for the latest */
        int64_t lines;               /* log --lines, when lines_given */
        bool lines_given;
        const char *queue;           /* --queue */
        const char *node;            /* --node */
        int64_t priority;            /* --priority */
        bool priority_given, stashed;
        const char *command;         /* edit's and restart's --command */
        json_object *queue_settings; /* queue add's --max-threads and the like, or NULL */
};

struct ctl {
        const char *socket; /* --socket, or NULL for the default */
        bool json;          /* print the daemon's results as they are */
        const char *command;
        struct sw_client *client;
        const char *usage; /* the command's usage line */
        double lost_at;    /* when the daemon closed the connection, while no reply came since */
};

/* ctl.c: the daemon, and messages. Connects; a command that changes something says on stderr
 * when it goes to the system instance because no user instance answered. */
int ctl_connect(struct ctl *x);
/* Whether the command changes something (submit, set, cancel, ...), rather than only looks. */
bool ctl_changes(const char *command);
/* Once connected: says on stderr that what (a command that changes something) goes to the
 * system instance, when it does because no user instance answered. */
void ctl_tell_fallback(struct ctl *x, const char *what);
/* Calls a method: 0 with *ret_result (may be NULL) and, with --json, the result printed; or an
 * exit status with the message printed, prefixed with what (NULL: the command's name). */
/* The same without printing: 0 with *ret_result, or with *ret_result NULL and the daemon's error
 * in *err; or an exit status for a daemon that cannot be reached (the message printed). */
int ctl_try(struct ctl *x, const char *what, const char *method, json_object *params,
            json_object **ret_result, struct sw_client_error *err);
/*
 * Whether a transport failure (a negative errno) is the daemon closing the connection: a
 * restart or a re-exec of slowworkd, which the commands that only wait (wait, log -f) outlive.
 */
bool ctl_lost(int r);
/* Connects again to the socket the lost connection was on, trying while nothing is there or
 * it refuses, up to 30 s in all ($SLOWWORK_RECONNECT_TIMEOUT) from the loss: connections lost
 * again before a reply count in the same 30 s. 0, or an exit status with the message printed
 * (EXIT_UNAVAILABLE for no daemon). ctl_replied() says a reply came: the next loss is new. */
int ctl_reconnect(struct ctl *x);
void ctl_replied(struct ctl *x);
/* ctl_try for a request that changes nothing, so that it may be sent again: when the daemon
 * closes the connection, ctl_ask connects again and returns CTL_RECONNECTED (the request is not
 * sent on the new connection: the caller may ask something else first), and ctl_ask_again sends
 * the request again, as often as the connection is lost and made again. Never for a request that
 * changes something: the daemon may have done it before closing. */
#define CTL_RECONNECTED (-1)
int ctl_ask(struct ctl *x, const char *what, const char *method, json_object *params,
            json_object **ret_result, struct sw_client_error *err);
int ctl_ask_again(struct ctl *x, const char *what, const char *method, json_object *params,
                  json_object **ret_result, struct sw_client_error *err);
int ctl_call(struct ctl *x, const char *what, const char *method, json_object *params,
             json_object **ret_result);
/* ctl_call, then the result's "id" printed (a job's: submit-like methods), or the result shown as
 * status shows an object; with --json, the result as it is. An exit status. */
int ctl_call_print_id(struct ctl *x, const char *what, const char *method, json_object *params);
int ctl_call_print_object(struct ctl *x, const char *what, const char *method,
                          json_object *params);
/* Queues a request, pipelined (written at the next ctl_receive() at the latest); 0 or an exit
 * status, the message printed. */
int ctl_send(struct ctl *x, const char *method, json_object *params, int64_t *ret_id);
/* Receives a reply as sw_client_receive() does; a transport failure's message is printed. */
int ctl_receive(struct ctl *x, json_object **ret_result, struct sw_client_error *err,
                int64_t *ret_id);
/* A transport failure: the message, and the exit status. */
int ctl_transport_error(struct ctl *x, const char *what, int r);
__attribute__((format(printf, 2, 3))) int ctl_error(struct ctl *x, const char *fmt, ...);
__attribute__((format(printf, 2, 3))) int ctl_usage_error(struct ctl *x, const char *fmt, ...);
/* A job id from the command line, or -1 with a usage message printed. */
int64_t ctl_parse_id(struct ctl *x, const char *s);
json_object *ctl_id_params(int64_t id);
/* A program and its arguments as a JSON array of strings (a job's argv), or NULL. */
json_object *ctl_argv_array(int argc, char **argv);
/* {"queue": Q} for --queue, or NULL. */
json_object *ctl_queue_params(const struct opts *o);
/* A setting's value: a JSON number, or NULL. */
json_object *ctl_parse_number(const char *s);

/* The commands: cmd-submit.c, cmd-jobs.c, cmd-settings.c, cmd-pool.c, cmd-flow.c. */
int cmd_submit(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_edit(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_enqueue(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_wait(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_cancel(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_release(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_status(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_list(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_log(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_get(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_set(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_stats(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_top(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_rq(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_metrics(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_history(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_pause(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_resume(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_suspend(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_continue(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_signal(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_restart(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_queue(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_reload(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_reexec(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_nodes(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_ping(struct ctl *x, const struct opts *o, int argc, char **argv);
int cmd_version(struct ctl *x, const struct opts *o, int argc, char **argv);

/* cmd-history.c: the last runs as a table (history, list --all). */
int history_show(struct ctl *x, const struct opts *o);

/* wait-all.c: the caller's live jobs that wait --all waits for (those of queue, when not NULL):
 * neither persist nor recurring. 0 with the ids (the caller frees them), or an exit status. */
int wait_all_ids(struct ctl *x, const char *queue, int64_t **ret_ids, size_t *ret_n);

/* cmd-jobs.c: waits for a job and says how it ended; the exit status is the job's. */
int jobs_wait_one(struct ctl *x, int64_t id, bool quiet);
/* The exit status a run record stands for: the exit code, 128 + signal, or 1. */
int jobs_record_status(json_object *rec);

#endif
