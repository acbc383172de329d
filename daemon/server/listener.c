/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "server/conn.h"
#include "server/listener.h"
#include "util/log.h"

/* The system instance's folder is open to all: the socket's own mode says who may connect. */
static int system_path(char **ret_path)
{
        const char *dir = LISTENER_SYSTEM_DIR;

        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create %s: %m", dir);
        if (chmod(dir, 0755) < 0)
                return log_error_errno(-errno, "Failed to open up %s: %m", dir);
        if (asprintf(ret_path, "%s/slowworkd.sock", dir) < 0)
                return -ENOMEM;
        return 0;
}

int listener_resolve_path(const char *given, bool system, char **ret_path)
{
        const char *runtime = getenv("XDG_RUNTIME_DIR");
        char dir[PATH_MAX];

        if (given) {
                *ret_path = strdup(given);
                return *ret_path ? 0 : -ENOMEM;
        }
        if (system)
                return system_path(ret_path);
        if (!runtime || runtime[0] != '/') {
                log_error("XDG_RUNTIME_DIR is not set: give the socket with --socket PATH");
                return -EINVAL;
        }
        if ((size_t)snprintf(dir, sizeof(dir), "%s/slowwork", runtime) >= sizeof(dir))
                return log_error_errno(-ENAMETOOLONG, "%s/slowwork: %m", runtime);
        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create %s: %m", dir);
        if (chmod(dir, 0700) < 0)
                return log_error_errno(-errno, "Failed to make %s private: %m", dir);
        if (asprintf(ret_path, "%s/slowworkd.sock", dir) < 0)
                return -ENOMEM;
        return 0;
}

static int make_address(const char *path, struct sockaddr_un *sa)
{
        memset(sa, 0, sizeof(*sa));
        sa->sun_family = AF_UNIX;
        if (strlen(path) >= sizeof(sa->sun_path))
                return -ENAMETOOLONG;
        strcpy(sa->sun_path, path);
        return 0;
}

/* An existing socket file: a daemon answers there (-EADDRINUSE), or it is stale (removed). */
static int claim_path(const char *path, const struct sockaddr_un *sa)
{
        struct stat st;
        int fd, r;

        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISSOCK(st.st_mode))
                return -ENOTSOCK;
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
        r = r == 0 ? -EADDRINUSE : errno == ECONNREFUSED ? 0 : -errno;
        close(fd);
        if (r == 0 && unlink(path) < 0 && errno != ENOENT)
                r = -errno;
        return r;
}

/*
 * The user instance's socket stays 0600 as bound. The system instance's is for every user (0666),
 * or for the members of socket_gid (0660); it is bound 0600 all the same, so that it is never
 * more open than meant, not even for a moment.
 */
static int set_socket_mode(struct listener *l)
{
        mode_t mode = l->socket_gid != (gid_t)-1 ? 0660 : 0666;

        if (!l->system)
                return 0;
        if (l->socket_gid != (gid_t)-1 && chown(l->path, (uid_t)-1, l->socket_gid) < 0)
                return log_error_errno(-errno, "Failed to give %s to group %u: %m", l->path,
                                       (unsigned)l->socket_gid);
        if (chmod(l->path, mode) < 0)
                return log_error_errno(-errno, "Failed to make %s mode %04o: %m", l->path,
                                       (unsigned)mode);
        return 0;
}

static void on_connection(uv_stream_t *server, int status)
{
        struct listener *l = server->data;

        if (status < 0) {
                log_warning("Failed to accept a connection: %s", uv_strerror(status));
                return;
        }
        conn_accept(l->clients, server);
}

/* Binds the socket file itself, when systemd passed none. */
static int bind_path(struct listener *l, int *ret_fd)
{
        struct sockaddr_un sa;
        mode_t old_mask;
        int fd, r;

        r = make_address(l->path, &sa);
        if (r < 0)
                return log_error_errno(r, "Socket path %s: %m", l->path);
        r = claim_path(l->path, &sa);
        if (r == -EADDRINUSE) {
                log_error("A slowworkd is already running on %s", l->path);
                return r;
        }
        if (r < 0)
                return log_error_errno(r, "Failed to take over %s: %m", l->path);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return log_error_errno(-errno, "Failed to create a socket: %m");
        old_mask = umask(0177);
        r = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ? -errno : 0;
        umask(old_mask);
        if (r == 0 && listen(fd, SOMAXCONN) < 0)
                r = -errno;
        if (r < 0) {
                close(fd);
                return log_error_errno(r, "Failed to listen on %s: %m", l->path);
        }
        r = set_socket_mode(l);
        if (r < 0) {
                close(fd);
                unlink(l->path);
                return r;
        }
        *ret_fd = fd;
        return 0;
}

/* The socket file belongs to systemd when it passed the socket. */
static void remove_path(struct listener *l)
{
        if (l->activated_fd < 0 || l->owned)
                unlink(l->path);
}

int listener_open(struct listener *l, uv_loop_t *loop)
{
        int fd = l->activated_fd, r;

        if (fd < 0) {
                r = bind_path(l, &fd);
                if (r < 0)
                        return r;
        }
        uv_pipe_init(loop, &l->pipe, 0);
        l->pipe.data = l;
        r = uv_pipe_open(&l->pipe, fd);
        if (r == 0)
                r = uv_listen((uv_stream_t *)&l->pipe, SOMAXCONN, on_connection);
        if (r < 0) {
                uv_close((uv_handle_t *)&l->pipe, NULL);
                remove_path(l);
                log_error("Failed to listen on %s: %s", l->path, uv_strerror(r));
                return r;
        }
        l->listening = true;
        log_info("Listening on %s%s", l->path,
                 l->owned                ? " (kept across a reexec)"
                 : l->activated_fd >= 0 ? " (passed by systemd)"
                                        : "");
        return 0;
}

void listener_close(struct listener *l)
{
        if (!l->listening)
                return;
        l->listening = false;
        uv_close((uv_handle_t *)&l->pipe, NULL);
        remove_path(l);
}
