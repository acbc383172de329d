/* SPDX-License-Identifier: MIT */
/*
 * The client library: a socket, a line splitter for what the daemon writes, requests queued
 * until WRITE_CHUNK bytes of them are written at once, and request ids counted from 1. Writing
 * waits for the socket, and reads what the daemon sends meanwhile into the splitter, so that a
 * client pipelining many requests never deadlocks with a daemon that waits for it to read.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto.h"
#include "slowwork-client.h"

#define READ_CHUNK 65536
#define WRITE_CHUNK 65536

struct sw_client {
        int fd;
        char *socket_path;
        struct sw_lines in;
        char *out; /* requests queued, not yet written */
        size_t out_len, out_size;
        bool eof;
        bool fell_back; /* the system instance's, the user instance's not answering */
        int64_t next_id;
        unsigned outstanding;
        int64_t server_uid; /* whose process serves the socket; -1 until connected */
};

#define SYSTEM_SOCKET "/run/slowwork/slowworkd.sock"

/* The path to try; *ret_user says it is the user instance's default, which may fall back to the
 * system instance's. */
static char *resolve_path(const char *socket_path, bool *ret_user)
{
        const char *env = getenv("SLOWWORK_SOCKET");
        char *path;

        *ret_user = false;
        if (socket_path)
                return strdup(socket_path);
        if (env && *env)
                return strdup(env);
        env = getenv("XDG_RUNTIME_DIR");
        if (env && *env) {
                *ret_user = true;
                return asprintf(&path, "%s/slowwork/slowworkd.sock", env) < 0 ? NULL : path;
        }
        return strdup(SYSTEM_SOCKET);
}

static int open_socket(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        size_t len = strlen(path);
        int fd;

        if (len == 0)
                return -ENOENT;
        if (len >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, path, len + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

/*
 * Whether the daemon that took the connection is the caller's own user's or root's. A socket path
 * comes from the environment ($XDG_RUNTIME_DIR, $SLOWWORK_SOCKET), which root may have inherited
 * from a user: another user's "daemon" would get the requests (a submit carries the whole
 * environment) and could answer anything. So this comes before anything is sent.
 */
static int check_server(struct sw_client *c, int fd)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);

        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return -errno;
        c->server_uid = cred.uid;
        return cred.uid == geteuid() || cred.uid == 0 ? 0 : -EPERM;
}

int sw_client_connect(const char *socket_path, struct sw_client **ret)
{
        struct sw_client *c = calloc(1, sizeof(*c));
        bool user;
        int fd, r;

        *ret = NULL;
        if (!c)
                return -ENOMEM;
        c->fd = -1;
        c->next_id = 1;
        c->server_uid = -1;
        sw_lines_init_max(&c->in, SW_REPLY_MAX);
        c->socket_path = resolve_path(socket_path, &user);
        if (!c->socket_path) {
                free(c);
                return -ENOMEM;
        }
        /* The client comes back either way, so that a message can name its path. */
        *ret = c;
        fd = open_socket(c->socket_path);
        if (user && (fd == -ENOENT || fd == -ECONNREFUSED)) {
                int system_fd = open_socket(SYSTEM_SOCKET);
                char *system_path;

                system_path = system_fd != -ENOENT && system_fd != -ECONNREFUSED
                                  ? strdup(SYSTEM_SOCKET)
                                  : NULL;
                if (system_path) {
                        free(c->socket_path);
                        c->socket_path = system_path;
                        c->fell_back = true;
                        fd = system_fd;
                } else if (system_fd >= 0)
                        close(system_fd);
        }
        if (fd < 0)
                return fd;
        r = check_server(c, fd);
        if (r < 0) {
                close(fd);
                return r;
        }
        c->fd = fd;
        return 0;
}

int64_t sw_client_server_uid(struct sw_client *c)
{
        return c ? c->server_uid : -1;
}

bool sw_client_fell_back(struct sw_client *c)
{
        return c && c->fell_back;
}

struct sw_client *sw_client_free(struct sw_client *c)
{
        if (!c)
                return NULL;
        if (c->fd >= 0)
                close(c->fd);
        sw_lines_free(&c->in);
        free(c->out);
        free(c->socket_path);
        free(c);
        return NULL;
}

const char *sw_client_socket(struct sw_client *c)
{
        return c->socket_path;
}

unsigned sw_client_outstanding(struct sw_client *c)
{
        return c->outstanding;
}

/* Reads what is there into the splitter; blocks first when wait. 0, or -errno; EOF is noted. */
static int fill(struct sw_client *c, bool wait)
{
        char buf[READ_CHUNK];
        ssize_t n;

        if (c->eof)
                return wait ? -ECONNRESET : 0;
        do
                n = recv(c->fd, buf, sizeof(buf), wait ? 0 : MSG_DONTWAIT);
        while (n < 0 && errno == EINTR);
        if (n < 0) {
                if (!wait && (errno == EAGAIN || errno == EWOULDBLOCK))
                        return 0;
                return errno == EPIPE ? -ECONNRESET : -errno;
        }
        if (n == 0) {
                c->eof = true;
                return wait ? -ECONNRESET : 0;
        }
        return sw_lines_push(&c->in, buf, (size_t)n);
}

static int write_all(struct sw_client *c, const char *data, size_t len)
{
        int r;

        while (len > 0) {
                struct pollfd p = {.fd = c->fd, .events = POLLOUT | (c->eof ? 0 : POLLIN)};
                ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);

                if (n >= 0) {
                        data += n;
                        len -= (size_t)n;
                        continue;
                }
                if (errno == EINTR)
                        continue;
                if (errno != EAGAIN && errno != EWOULDBLOCK)
                        return errno == EPIPE ? -ECONNRESET : -errno;
                /* Full: the daemon may be waiting for us to read its replies. */
                if (poll(&p, 1, -1) < 0 && errno != EINTR)
                        return -errno;
                if (p.revents & POLLIN) {
                        r = fill(c, false);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

int sw_client_flush(struct sw_client *c)
{
        int r;

        if (c->fd < 0)
                return -ENOTCONN;
        r = write_all(c, c->out, c->out_len);
        c->out_len = 0;
        return r;
}

int sw_client_queue(struct sw_client *c, const char *method, json_object *params, int64_t *ret_id)
{
        int64_t id = c->next_id;
        size_t len;
        char *line;

        if (c->fd < 0) {
                json_object_put(params);
                return -ENOTCONN;
        }
        line = sw_request_line(method, params, id);
        if (!line)
                return -ENOMEM;
        len = strlen(line);
        if (c->out_len + len > c->out_size) {
                size_t size = c->out_len + len > WRITE_CHUNK ? c->out_len + len : WRITE_CHUNK;
                char *out = realloc(c->out, size);

                if (!out) {
                        free(line);
                        return -ENOMEM;
                }
                c->out = out;
                c->out_size = size;
        }
        memcpy(c->out + c->out_len, line, len);
        c->out_len += len;
        free(line);
        c->next_id++;
        c->outstanding++;
        if (ret_id)
                *ret_id = id;
        return c->out_len >= WRITE_CHUNK ? sw_client_flush(c) : 0;
}

int sw_client_send(struct sw_client *c, const char *method, json_object *params, int64_t *ret_id)
{
        int r = sw_client_queue(c, method, params, ret_id);

        return r < 0 ? r : sw_client_flush(c);
}

static void set_error(struct sw_client_error *e, const struct sw_reply *reply)
{
        if (!e)
                return;
        e->code = reply->code;
        snprintf(e->message, sizeof(e->message), "%s", reply->message ? reply->message : "");
        snprintf(e->name, sizeof(e->name), "%s", reply->data ? reply->data : "");
}

/* The next message the daemon sent, parsed. */
static int next_reply(struct sw_client *c, struct sw_reply *ret)
{
        size_t len;
        char *line;
        int r;

        if (c->fd < 0)
                return -ENOTCONN;
        for (;;) {
                r = sw_lines_next(&c->in, &line, &len);
                if (r < 0)
                        return r;
                if (r == 0) {
                        r = c->out_len > 0 ? sw_client_flush(c) : 0;
                        if (r == 0)
                                r = fill(c, true);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (len == 0)
                        continue;
                r = sw_reply_parse(line, len, ret);
                if (r == -ENOMEM)
                        return r;
                if (r == SW_E_TOO_LARGE)
                        return -E2BIG;
                return r ? -EBADMSG : 0;
        }
}

int sw_client_receive(struct sw_client *c, json_object **ret_result,
                      struct sw_client_error *ret_error, int64_t *ret_id)
{
        struct sw_reply reply;
        json_object *result;
        int r;

        r = next_reply(c, &reply);
        if (r == -E2BIG && c->outstanding > 0)
                c->outstanding--;
        if (r < 0)
                return r;
        if (reply.method) {
                result = reply.params ? json_object_get(reply.params) : json_object_new_object();
                if (!result) {
                        sw_reply_clear(&reply);
                        return -ENOMEM;
                }
        } else {
                if (c->outstanding > 0)
                        c->outstanding--;
                result = json_object_get(reply.result);
        }
        if (ret_id)
                *ret_id = reply.method ? -1 : reply.id;
        if (reply.code) {
                set_error(ret_error, &reply);
                sw_reply_clear(&reply);
                return 1;
        }
        if (ret_result)
                *ret_result = result;
        else
                json_object_put(result);
        sw_reply_clear(&reply);
        return 0;
}

int sw_client_call(struct sw_client *c, const char *method, json_object *params,
                   json_object **ret_result, struct sw_client_error *ret_error)
{
        json_object *result;
        int64_t id, got;
        int r;

        if (c->outstanding > 0) {
                json_object_put(params);
                return -EBUSY;
        }
        r = sw_client_send(c, method, params, &id);
        if (r < 0)
                return r;
        for (;;) {
                r = sw_client_receive(c, &result, ret_error, &got);
                if (r < 0)
                        return r;
                /* With one request in flight, an error without an id is its error. */
                if (got == id || r == 1) {
                        if (r == 0 && ret_result)
                                *ret_result = result;
                        else if (r == 0)
                                json_object_put(result);
                        return got == id || got == -1 ? r : -EBADMSG;
                }
                json_object_put(result);
                if (got != -1)
                        return -EBADMSG; /* a reply to a request this client did not send */
                /* else a notification: not what a call waits for */
        }
}
