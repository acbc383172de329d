/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "server/activation.h"
#include "util/log.h"

/* The path of a bound Unix socket, for the logs; "@name" for an abstract one. */
static int socket_path(int fd, char **ret_path)
{
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);
        size_t n;

        memset(&sa, 0, sizeof(sa));
        if (getsockname(fd, (struct sockaddr *)&sa, &len) < 0)
                return -errno;
        n = len > offsetof(struct sockaddr_un, sun_path)
                ? len - offsetof(struct sockaddr_un, sun_path)
                : 0;
        if (n > 0 && sa.sun_path[0] == '\0')
                sa.sun_path[0] = '@';
        *ret_path = strndup(sa.sun_path, n);
        return *ret_path ? 0 : -ENOMEM;
}

int activation_taken(int fd, char **ret_path)
{
        int r = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0);

        if (r == 0)
                r = -ENOTSOCK;
        if (r < 0)
                return log_error_errno(r, "The socket the last program handed over is not a "
                                          "listening Unix stream socket: %m");
        r = socket_path(fd, ret_path);
        if (r < 0)
                return log_error_errno(r, "Failed to read the address of the socket: %m");
        return 0;
}

int activation_socket(int *ret_fd, char **ret_path)
{
        int n, fd, r;

        /* Unsets LISTEN_FDS and LISTEN_PID, so that jobs do not see them; the descriptor is made
         * close-on-exec. */
        n = sd_listen_fds(1);
        if (n < 0)
                return log_error_errno(n, "Failed to take the sockets systemd passed: %m");
        if (n == 0) {
                *ret_fd = -1;
                return 0;
        }
        if (n > 1) {
                log_error("systemd passed %d sockets, slowworkd takes exactly one "
                          "(a Unix stream socket): check the socket unit",
                          n);
                return -EINVAL;
        }
        fd = SD_LISTEN_FDS_START;
        r = sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0);
        if (r < 0)
                return log_error_errno(r, "Failed to check the socket systemd passed: %m");
        if (r == 0) {
                log_error("The socket systemd passed is not a listening Unix stream socket: "
                          "check the socket unit");
                return -EINVAL;
        }
        r = socket_path(fd, ret_path);
        if (r < 0)
                return log_error_errno(r, "Failed to read the address of the passed socket: %m");
        *ret_fd = fd;
        return 1;
}
