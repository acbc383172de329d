/* SPDX-License-Identifier: MIT */
/* A TCP proxy in front of the throwaway PostgreSQL's socket that a test can cut, as Toxiproxy
 * does: every byte held both ways, nothing closed, as a network partition does; and heal. */
#ifndef SLOWWORK_TESTS_PG_PROXY_H
#define SLOWWORK_TESTS_PG_PROXY_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>

struct pg_server;

struct pg_proxy {
        int listen_fd, wake[2];
        int port;                     /* on 127.0.0.1 */
        char socket[108];             /* PostgreSQL's (a sun_path) */
        char conninfo[PATH_MAX + 64]; /* the server's database, through the proxy */
        bool cut, stop;               /* atomic */
        pthread_t thread;
};

/* Listens on a free port of 127.0.0.1 and passes each connection on to pg's socket. */
void pg_proxy_start(struct pg_proxy *x, const struct pg_server *pg);
/* Holds every byte from now on (cut), or passes them on again, what was held first. */
void pg_proxy_cut(struct pg_proxy *x, bool cut);
/* Closes every connection and stops. */
void pg_proxy_stop(struct pg_proxy *x);

#endif
