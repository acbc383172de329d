/* SPDX-License-Identifier: MIT */
/* A throwaway PostgreSQL (tests/pg-server) from a test: the one its suite runs under, or one of
 * its own. */
#ifndef SLOWWORK_TESTS_PG_HELPERS_H
#define SLOWWORK_TESTS_PG_HELPERS_H

#include <limits.h>
#include <stdbool.h>

struct pg_server {
        char dir[PATH_MAX];           /* the cluster's folder, with its socket */
        char conninfo[PATH_MAX + 64]; /* its database slowwork as role slowwork */
};

/* Whether this machine has PostgreSQL's server binaries (pg-server bindir). */
bool pg_available(void);
/* The cluster that `pg-server run` started for this suite (or the database that `pg-server
 * shared` made for it), from the environment; false when the suite does not run under one. */
bool pg_from_env(struct pg_server *pg);
/* A cluster of the test's own, started (pg-server setup). pg_remove stops it and removes its
 * folder. */
void pg_setup(struct pg_server *pg);
void pg_remove(struct pg_server *pg);
/* pg_ctl on the cluster. A stop is immediate, as a crash of PostgreSQL: what was committed
 * stays. */
void pg_stop(const struct pg_server *pg);
void pg_start(const struct pg_server *pg);
void pg_restart(const struct pg_server *pg);
/* A restart forked now and run by pg_restart_go, which waits for it: a test that restarts
 * beside threads of its own forks before it starts them (a fork beside running threads may
 * hang under ThreadSanitizer). */
struct pg_restart {
        int pid, go_fd, out_fd;
};
void pg_restart_ready(const struct pg_server *pg, struct pg_restart *r);
void pg_restart_go(struct pg_restart *r);
/* Runs the SQL with psql as role slowwork and returns psql's exit status; what it printed
 * (unaligned, rows only) in *ret_out when ret_out is not NULL (the caller frees it). */
int pg_query(const struct pg_server *pg, const char *sql, char **ret_out);
/* psql as role slowwork, running each statement pg_session_send gives it as it comes: a
 * transaction held open across a test's steps. pg_session_end closes its input, waits for it and
 * returns its exit status. */
struct pg_session {
        int pid, in_fd, out_fd;
};
void pg_session_start(const struct pg_server *pg, struct pg_session *s);
void pg_session_send(struct pg_session *s, const char *sql);
int pg_session_end(struct pg_session *s);
/* The pid of the cluster's postmaster, from its postmaster.pid. */
int pg_postmaster_pid(const struct pg_server *pg);

#endif
