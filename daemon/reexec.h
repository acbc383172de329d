/* SPDX-License-Identifier: MIT */
/*
 * The reexec method and SIGUSR2: the daemon executes its program again in place (the file at its
 * path now: an upgrade's), keeping its PID, its listening socket, its state database and every
 * shell run in progress. First the new program checks the configuration (--check-config): one
 * that fails leaves this one running, and the reply says why. Then nothing new starts, each shell
 * run hands itself over (run/handover.h) and the plugin runs and on-end commands in progress are
 * waited for (up to stop-timeout, else the reexec is given up and everything goes on), the
 * supervisor lets go, the state database is closed, and the program is executed with what it
 * takes up in a descriptor named by SLOWWORKD_REEXEC_FD: the socket, the runs, and the request to
 * answer once it serves. Connections are closed; the jobs are read back from the database as at
 * any start, the runs handed over taken up rather than recorded interrupted.
 */
#ifndef SLOWWORKD_REEXEC_H
#define SLOWWORKD_REEXEC_H

#include <json-c/json.h>
#include <stdbool.h>

#include <uv.h>

struct conn;
struct daemon;
struct listener;
struct notify;
struct run_handover;
struct store;

/* What a reexec hands over and stops. */
struct reexec_ctx {
        uv_loop_t *loop;
        struct daemon *daemon;
        struct store *store;
        struct listener *listener;
        struct notify *notify;
        const bool *stopping; /* the daemon is stopping */
};

/* Set by main() at start: the program's path then, and its arguments. */
void reexec_set_program(const char *path, char **argv);
/* The reexec method (c, id: answered by the new program, or with an error by this one), or
 * SIGUSR2 (c NULL). 0 once under way; -errno when it cannot begin, with why in err. */
int reexec_begin(struct reexec_ctx *m, struct conn *c, json_object *id, char *err, size_t len);

/* The reexec under way, if any, given up (why, for the log and the reply): the runs handed over
 * are taken up again here. Before a stop. */
void reexec_give_up(struct reexec_ctx *m, const char *why);

/* What the last program handed over, read at start. */
struct reexec_taken {
        int socket_fd;     /* the listening socket */
        bool socket_owned; /* its file is ours (not systemd's) */
        int reply_fd;      /* the connection whose request is answered, -1: none */
        json_object *reply_id;
        struct run_handover *runs;
};
/* 1 with *t filled when SLOWWORKD_REEXEC_FD names a handover (its descriptors close on exec
 * again), 0 when there is none, -errno (logged) when it cannot be read. */
int reexec_take(struct reexec_taken *t);
/* The request that asked for the reexec answered (the start went well: r 0) and closed. */
void reexec_answer(struct reexec_taken *t, int r);

#endif
