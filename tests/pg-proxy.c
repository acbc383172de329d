/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "pg-helpers.h"
#include "pg-proxy.h"

enum { PAIRS_MAX = 64 };

/* Each connection and PostgreSQL's end of it. */
struct pair {
        int fd[2];
};

static int connect_server(const struct pg_proxy *x)
{
        struct sockaddr_un a = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        memcpy(a.sun_path, x->socket, sizeof(x->socket));
        if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
                close(fd);
                fd = -1;
        }
        return fd;
}

/* What one end has, written to the other: false once either is done (a closed one raises no
 * SIGPIPE, which would end the test). */
static bool pass(int from, int to)
{
        char buf[65536];
        ssize_t n = read(from, buf, sizeof(buf));

        for (ssize_t done = 0, k; n > 0 && done < n; done += k)
                if ((k = send(to, buf + done, (size_t)(n - done), MSG_NOSIGNAL)) <= 0)
                        return false;
        return n > 0;
}

static void *serve(void *arg)
{
        struct pg_proxy *x = arg;
        struct pair pairs[PAIRS_MAX];
        struct pollfd p[2 + 2 * PAIRS_MAX];
        int n = 0, polled;

        while (!__atomic_load_n(&x->stop, __ATOMIC_ACQUIRE)) {
                bool cut = __atomic_load_n(&x->cut, __ATOMIC_ACQUIRE);
                int k = 0;

                p[k++] = (struct pollfd){.fd = x->wake[0], .events = POLLIN};
                /* Cut: nothing is read, so every byte stays where it is. */
                p[k++] = (struct pollfd){.fd = cut ? -1 : x->listen_fd, .events = POLLIN};
                for (int i = 0; i < n; i++)
                        for (int e = 0; e < 2; e++)
                                p[k++] = (struct pollfd){.fd = cut ? -1 : pairs[i].fd[e],
                                                         .events = POLLIN};
                if (poll(p, (nfds_t)k, -1) < 0 && errno != EINTR)
                        break;
                if (p[0].revents) {
                        char c;

                        if (read(x->wake[0], &c, 1) < 0)
                                break;
                        continue;
                }
                polled = n;
                if (p[1].revents && n < PAIRS_MAX) {
                        int a = accept4(x->listen_fd, NULL, NULL, SOCK_CLOEXEC), b;

                        if (a >= 0 && (b = connect_server(x)) >= 0)
                                pairs[n++] = (struct pair){{a, b}};
                        else if (a >= 0)
                                close(a);
                }
                for (int i = polled - 1; i >= 0; i--) {
                        struct pollfd *q = &p[2 + 2 * i];
                        bool open = true;

                        for (int e = 0; e < 2 && open; e++)
                                if (q[e].revents)
                                        open = pass(pairs[i].fd[e], pairs[i].fd[1 - e]);
                        if (!open) {
                                close(pairs[i].fd[0]);
                                close(pairs[i].fd[1]);
                                pairs[i] = pairs[--n];
                        }
                }
        }
        for (int i = 0; i < n; i++) {
                close(pairs[i].fd[0]);
                close(pairs[i].fd[1]);
        }
        return NULL;
}

static void wake(struct pg_proxy *x)
{
        ck_assert_int_eq(write(x->wake[1], "x", 1), 1);
}

void pg_proxy_start(struct pg_proxy *x, const struct pg_server *pg)
{
        struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t len = sizeof(a);
        const char *db = strstr(pg->conninfo, ":///"), *end;

        *x = (struct pg_proxy){0};
        ck_assert_msg(strlen(pg->dir) + sizeof("/.s.PGSQL.5432") <= sizeof(x->socket),
                      "PostgreSQL's folder %s is too long for a socket's path", pg->dir);
        strcpy(x->socket, pg->dir);
        strcat(x->socket, "/.s.PGSQL.5432");
        x->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(x->listen_fd, 0);
        ck_assert_int_eq(bind(x->listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
        ck_assert_int_eq(listen(x->listen_fd, 16), 0);
        ck_assert_int_eq(getsockname(x->listen_fd, (struct sockaddr *)&a, &len), 0);
        x->port = ntohs(a.sin_port);
        /* postgresql:///DB?host=DIR&user=slowwork: the same database, over TCP. */
        ck_assert_ptr_nonnull(db);
        db += 4;
        end = strchr(db, '?');
        snprintf(x->conninfo, sizeof(x->conninfo), "postgresql://127.0.0.1:%d/%.*s?user=slowwork",
                 x->port, (int)(end ? end - db : (long)strlen(db)), db);
        ck_assert_int_eq(pipe2(x->wake, O_CLOEXEC), 0);
        ck_assert_int_eq(pthread_create(&x->thread, NULL, serve, x), 0);
}

void pg_proxy_cut(struct pg_proxy *x, bool cut)
{
        __atomic_store_n(&x->cut, cut, __ATOMIC_RELEASE);
        wake(x);
}

void pg_proxy_stop(struct pg_proxy *x)
{
        if (!x->thread)
                return;
        __atomic_store_n(&x->stop, true, __ATOMIC_RELEASE);
        wake(x);
        pthread_join(x->thread, NULL);
        close(x->listen_fd);
        close(x->wake[0]);
        close(x->wake[1]);
        x->thread = 0;
}
