/* SPDX-License-Identifier: MIT */
/*
 * A client connection: lines in, replies out in request order, peer credentials checked on
 * accept. What a connection holds is bounded whatever its client does: while more than
 * CONN_OUT_SOFT of its replies are unsent, its next request waits and its socket is read no
 * further than CONN_READ_AHEAD (so a client that does not read its replies stops being served,
 * and costs no more); events, which no request paces, drop a client that leaves more than
 * CONN_EVENTS_MAX of them unread. A disconnect and a read or write error all end in conn_close();
 * the object is freed in the close callback.
 *
 * A JSON-RPC batch (a line holding an array of requests) is taken apart here: its members are
 * handled one after the other as if each came on a line of its own, so each counts against the
 * same limits (one request at a time, the client reading its earlier replies) as it would alone.
 * Their replies make one array line instead, written piece by piece as they come ("[" and the
 * first, "," and each next, "]\n" after the last), so that what the daemon holds of a batch's
 * replies is bounded as a line's are (gathered whole, a batch of 1 MiB of requests could hold
 * 256 MiB, and go on being handled for a client gone); events told meanwhile wait for the line's
 * end. A batch of notifications only gets no reply at all.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "methods.h"
#include "server/conn.h"
#include "store/store.h"
#include "util/credentials.h"
#include "util/heap.h"
#include "util/log.h"

#define READ_CHUNK 65536

/* A batch whose members are being handled. */
struct conn_batch {
        char *line;            /* the batch's line, NUL-ended */
        size_t len, pos;       /* its length, and where its next member is looked for */
        size_t replies;        /* the members' replies queued so far */
        size_t reply_len;      /* the bytes of its reply line they make */
        struct sw_text events; /* events told once its reply line began: after its end */
};

/* One write for the replies to all the requests one read brought in. */
struct write_req {
        uv_write_t req;
        size_t n, len, events; /* lines, bytes, bytes of events */
        char *lines[];
};

int conn_fd(struct conn *c)
{
        uv_os_fd_t fd = -1;

        return uv_fileno((uv_handle_t *)&c->pipe, &fd) == 0 ? fd : -1;
}

struct conn *conn_ref(struct conn *c)
{
        c->refs++;
        return c;
}

static void batch_free(struct conn *c)
{
        if (!c->batch)
                return;
        free(c->batch->line);
        free(c->batch->events.s);
        free(c->batch);
        c->batch = NULL;
}

static void drop_held(struct conn *c)
{
        while (c->nheld > 0)
                free(c->held[--c->nheld].line);
        c->held_len = 0;
}

void conn_unref(struct conn *c)
{
        if (--c->refs > 0)
                return;
        drop_held(c);
        batch_free(c);
        json_object_put(c->await_id);
        envs_unref(c->clients->envs, c->env);
        free(c->held);
        sw_lines_free(&c->in);
        free(c);
}

static void on_close(uv_handle_t *handle)
{
        struct conn *c = handle->data;
        bool heavy = c->heavy;

        conn_unref(c);
        /* What a busy connection's buffers and replies left in the heap goes back to the
         * system now, not at some later growth (malloc keeps freed memory). */
        if (heavy)
                heap_release();
}

/* Closes the connection; it is freed once closed and no reply is still to come. */
static void conn_close(struct conn *c, const char *why)
{
        struct clients *clients = c->clients;

        if (c->closing)
                return;
        c->closing = true;
        if (why)
                log_warning("Dropping a client with uid %u (pid %d): %s", (unsigned)c->uid,
                            (int)c->pid, why);
        if (c->prev)
                c->prev->next = c->next;
        else
                clients->head = c->next;
        if (c->next)
                c->next->prev = c->prev;
        if (!c->refused)
                clients->n--;
        batch_free(c); /* its line goes now, not when the last reference does */
        clients->on_close(clients->data, c);
        uv_close((uv_handle_t *)&c->pipe, on_close);
}

/* Bytes of replies and events made and not yet written to the socket. */
static size_t unsent(const struct conn *c)
{
        return c->out_pending + c->held_len;
}

static void process(struct conn *c);

static void on_write(uv_write_t *req, int status)
{
        struct write_req *w = (struct write_req *)req;
        struct conn *c = req->handle->data;
        size_t i;

        c->out_pending -= w->len;
        c->events_unsent -= w->events;
        for (i = 0; i < w->n; i++)
                free(w->lines[i]);
        free(w);
        if (status < 0)
                conn_close(c, NULL); /* gone: a read error or EOF tells the same */
        else if (!c->closing)
                process(c); /* the client read: requests that waited for that go on */
}

static void maybe_finish(struct conn *c);

void conn_flush(struct conn *c)
{
        struct write_req *w;
        uv_buf_t *bufs;
        size_t i, n, len = 0, events = 0;
        uint64_t committed;
        int r;

        if (c->closing || c->batching)
                return;
        /* The store is asked only when a reply waits for it. */
        committed = c->nheld > 0 ? store_committed(c->clients->store) : 0;
        for (n = 0; n < c->nheld && c->held[n].seq <= committed; n++) {
                size_t l = strlen(c->held[n].line);

                len += l;
                events += c->held[n].event ? l : 0;
        }
        if (n == 0) {
                maybe_finish(c);
                return;
        }
        w = malloc(sizeof(*w) + n * sizeof(w->lines[0]));
        bufs = malloc(n * sizeof(*bufs));
        if (!w || !bufs) {
                free(w);
                free(bufs);
                conn_close(c, "out of memory");
                return;
        }
        w->n = n;
        w->len = len;
        w->events = events;
        for (i = 0; i < n; i++) {
                w->lines[i] = c->held[i].line;
                bufs[i] = uv_buf_init(w->lines[i], (unsigned)strlen(w->lines[i]));
        }
        c->nheld -= n;
        memmove(c->held, c->held + n, c->nheld * sizeof(*c->held));
        c->held_len -= len;
        r = uv_write(&w->req, (uv_stream_t *)&c->pipe, bufs, (unsigned)w->n, on_write);
        free(bufs); /* libuv keeps its own copy of the list */
        if (r < 0) {
                for (i = 0; i < w->n; i++)
                        free(w->lines[i]);
                free(w);
                conn_close(c, uv_strerror(r));
                return;
        }
        c->out_pending += w->len;
        maybe_finish(c);
}

static void batch_add(struct conn *c, char *line);
static void hold(struct conn *c, char *line, bool event, bool part);

/* Whether an event finds the client past what it may leave unread: then it is dropped. */
static bool events_over(struct conn *c)
{
        char why[128];

        if (c->events_unsent <= CONN_EVENTS_MAX)
                return false;
        snprintf(why, sizeof(why), "it does not read its events (%zu bytes unsent)",
                 c->events_unsent);
        conn_close(c, why);
        return true;
}

static void queue(struct conn *c, char *line, bool event)
{
        if (c->closing || !line) {
                free(line);
                if (!c->closing)
                        conn_close(c, "out of memory");
                return;
        }
        if (!event && c->batch) {
                batch_add(c, line);
                return;
        }
        if (event && events_over(c)) {
                free(line);
                return;
        }
        /* Not inside a batch's reply line: after its end. */
        if (event && c->batch && c->batch->replies > 0) {
                size_t len = strlen(line);

                sw_text_raw(&c->batch->events, line, len);
                free(line);
                c->events_unsent += len;
                if (c->batch->events.failed)
                        conn_close(c, "out of memory");
                return;
        }
        hold(c, line, event, false);
}

static void hold(struct conn *c, char *line, bool event, bool part)
{
        struct held_line *held;
        size_t len;

        if (c->closing) {
                free(line);
                return;
        }
        if (c->nheld == c->held_size) {
                size_t size = c->held_size ? 2 * c->held_size : 16;

                held = realloc(c->held, size * sizeof(*held));
                if (!held) {
                        free(line);
                        conn_close(c, "out of memory");
                        return;
                }
                c->held = held;
                c->held_size = size;
        }
        len = strlen(line);
        c->held[c->nheld++] =
            (struct held_line){line, c->barrier, uv_now(c->clients->loop), event, part};
        c->held_len += len;
        c->events_unsent += event ? len : 0;
        conn_flush(c);
        if (c->nheld > 0 && !c->closing && c->clients->on_held)
                c->clients->on_held(c);
}

void conn_send(struct conn *c, char *line)
{
        queue(c, line, false);
}

void conn_notify(struct conn *c, char *line)
{
        queue(c, line, true);
}

/* A member's reply (taken over): the next piece of the batch's line. */
static void batch_add(struct conn *c, char *line)
{
        struct conn_batch *b = c->batch;
        size_t len = strlen(line);
        char *piece;

        if (len > 0 && line[len - 1] == '\n')
                len--;
        /* The batch's reply is one line, which clients read up to SW_REPLY_MAX: a reply that
         * would make it longer is an error of its own (a long list, say: ask for it alone). */
        if (b->reply_len + len + 3 > CONN_BATCH_REPLY_MAX) {
                char *error = sw_error_line_for(line, len, SW_E_TOO_LARGE,
                                                "reply too long for a batch's reply of at most "
                                                "256 MiB: send the request alone");

                free(line);
                if (!error) {
                        conn_close(c, "out of memory");
                        return;
                }
                line = error;
                len = strlen(line) - 1;
        }
        piece = malloc(len + 2);
        if (!piece) {
                free(line);
                conn_close(c, "out of memory");
                return;
        }
        piece[0] = b->replies++ > 0 ? ',' : '[';
        memcpy(piece + 1, line, len);
        piece[len + 1] = '\0';
        free(line);
        b->reply_len += len + 1;
        hold(c, piece, false, true);
}

/* A line that is a batch: its members are handled next, in place of the next lines. */
static void batch_start(struct conn *c, const char *line, size_t len)
{
        struct conn_batch *b = calloc(1, sizeof(*b));

        if (!b || !(b->line = strndup(line, len))) {
                free(b);
                conn_close(c, "out of memory");
                return;
        }
        b->len = len;
        c->batch = b;
}

/* Every member has replied: the batch's line ends, unless every member was a notification (it
 * has none), and the events told meanwhile follow it. */
static void batch_end(struct conn *c)
{
        struct conn_batch *b = c->batch;
        size_t events = b->events.len;
        char *end, *told;

        if (b->replies == 0) {
                batch_free(c);
                return;
        }
        told = events ? sw_text_end(&b->events) : NULL;
        b->events = (struct sw_text){0};
        batch_free(c);
        end = strdup("]\n");
        if (!end || (events && !told)) {
                free(end);
                free(told);
                conn_close(c, "out of memory");
                return;
        }
        hold(c, end, false, true);
        if (told && !c->closing) {
                c->events_unsent -= events; /* counted once they were told; again as held */
                hold(c, told, true, false);
        } else {
                free(told);
        }
}

/* Hands the batch's next member to whoever reads requests; after the last, ends the batch. */
static void batch_step(struct conn *c)
{
        struct conn_batch *b = c->batch;
        size_t at, len;
        char *member;

        if (!sw_batch_next(b->line, b->len, &b->pos, &at, &len)) {
                batch_end(c);
                return;
        }
        /* A copy: the member's handling may end the batch (conn_resume() handles the members
         * after it at once) or the connection. */
        member = strndup(b->line + at, len);
        if (!member) {
                conn_close(c, "out of memory");
                return;
        }
        c->clients->on_line(c->clients->data, c, member, len);
        free(member);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
        static char chunk[READ_CHUNK]; /* the loop thread's; consumed before the next read */

        *buf = uv_buf_init(chunk, sizeof(chunk));
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf);

static void on_shutdown(uv_shutdown_t *req, int status)
{
        struct conn *c = req->data;

        free(req);
        conn_close(c, NULL);
        conn_unref(c);
}

/* The client sent all it will send: once every reply is out, the connection ends. */
static void finish(struct conn *c)
{
        uv_shutdown_t *req = malloc(sizeof(*req));

        c->finishing = true;
        if (!req) {
                conn_close(c, "out of memory");
                return;
        }
        req->data = conn_ref(c);
        if (uv_shutdown(req, (uv_stream_t *)&c->pipe, on_shutdown) < 0) {
                free(req);
                conn_unref(c);
                conn_close(c, NULL);
        }
}

/* The client sent all it will send, and every request of it has its reply written or on the way:
 * the connection ends. */
static void maybe_finish(struct conn *c)
{
        if (c->eof && !c->busy && !c->batch && c->nheld == 0 && c->in.start == c->in.partial &&
            !c->finishing && !c->closing)
                finish(c);
}

/* Whether the client's next request waits: for the reply to the one before, or for the client
 * to read its replies. */
static bool stalled(const struct conn *c)
{
        return c->busy || unsent(c) > CONN_OUT_SOFT;
}

/* Handles buffered requests until one stalls the connection, then reads on: to the end of a
 * request that is not all there yet (1 MiB at most), else CONN_READ_AHEAD ahead. */
static void process(struct conn *c)
{
        bool read_on;
        size_t len;
        char *line;
        int r;

        c->batching = true;
        while (!c->closing && !stalled(c)) {
                if (c->batch) {
                        batch_step(c);
                        continue;
                }
                r = sw_lines_next(&c->in, &line, &len);
                if (r == 0)
                        break;
                if (r < 0)
                        conn_send(c, sw_error_line(NULL, SW_E_TOO_LARGE,
                                                   "request line longer than 1 MiB"));
                else if (len > 0 && sw_batch_is(line, len))
                        batch_start(c, line, len);
                else if (len > 0)
                        c->clients->on_line(c->clients->data, c, line, len);
        }
        c->batching = false;
        conn_flush(c);
        if (unsent(c) + c->in.size > CONN_OUT_SOFT)
                c->heavy = true;
        if (c->closing || c->finishing || c->eof)
                return;
        read_on = !stalled(c) || c->in.len - c->in.start < CONN_READ_AHEAD;
        if (c->reading && !read_on) {
                uv_read_stop((uv_stream_t *)&c->pipe);
                c->reading = false;
        } else if (!c->reading && read_on) {
                c->reading = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read) == 0;
        }
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
        struct conn *c = stream->data;

        if (nread == UV_EOF) {
                /* Half closed: the requests read so far still get their replies, the last one
                 * too when no newline ended it. */
                uv_read_stop(stream);
                c->reading = false;
                c->eof = true;
                if (sw_lines_finish(&c->in) < 0) {
                        conn_close(c, "out of memory");
                        return;
                }
                process(c);
                return;
        }
        if (nread < 0) {
                conn_close(c, NULL);
                return;
        }
        if (sw_lines_push(&c->in, buf->base, (size_t)nread) < 0) {
                conn_close(c, "out of memory");
                return;
        }
        process(c);
}

void conn_send_reply(struct conn *c, json_object *id, json_object *result, int code,
                     const char *message)
{
        if (c->closing || !id) {
                /* A notification gets no reply, whatever happened. */
                json_object_put(id);
                json_object_put(result);
        } else if (code) {
                json_object_put(result);
                conn_send(c, sw_error_line(id, code, message));
        } else {
                conn_send(c, sw_result_line(id, result ? result : json_object_new_object()));
        }
}

void conn_wait_for(struct conn *c, uint64_t seq)
{
        if (seq > c->barrier)
                c->barrier = seq;
}

void conn_await_end(struct conn *c)
{
        if (!c->await_id)
                return;
        json_object_put(c->await_id);
        c->await_id = NULL;
        c->await_token++;
}

void conn_resume(struct conn *c)
{
        conn_await_end(c);
        c->busy = false;
        if (!c->closing)
                process(c);
}

void conn_reply(struct conn *c, json_object *id, json_object *result, int code, const char *message)
{
        conn_send_reply(c, id, result, code, message);
        conn_resume(c);
}

void conn_reply_line(struct conn *c, char *line)
{
        conn_send(c, line);
        conn_resume(c);
}

bool conn_is_admin(const struct conn *c)
{
        return c->admin;
}

/* The peer's credentials; the user instance serves only its own user and root. */
static int peer_allowed(struct clients *clients, struct conn *c)
{
        struct ucred cred;
        socklen_t len = sizeof(cred);
        uv_os_fd_t fd;

        if (uv_fileno((uv_handle_t *)&c->pipe, &fd) < 0 ||
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
                return -errno;
        c->uid = cred.uid;
        c->gid = cred.gid;
        c->pid = cred.pid;
        return clients->system || cred.uid == clients->uid || cred.uid == 0 ? 0 : -EPERM;
}

static void start_reading(struct conn *c)
{
        int r = uv_read_start((uv_stream_t *)&c->pipe, on_alloc, on_read);

        if (r < 0)
                conn_close(c, uv_strerror(r));
        c->reading = r == 0;
}

/* The user database may block (LDAP, sssd): a client's groups are looked up off the loop, and
 * its requests wait for the answer. */
struct group_lookup {
        uv_work_t work;
        struct conn *c;
        uid_t uid;
        gid_t gid, group;
        int r;
};

static void group_lookup_work(uv_work_t *work)
{
        struct group_lookup *x = work->data;

        x->r = credentials_user_in_group(x->uid, x->gid, x->group);
}

static void group_lookup_done(uv_work_t *work, int status)
{
        struct group_lookup *x = work->data;
        struct conn *c = x->c;

        if (x->r < 0) {
                errno = -x->r;
                log_warning("Cannot look up the groups of uid %u (pid %d), not an admin: %m",
                            (unsigned)x->uid, (int)c->pid);
        }
        c->admin = x->r > 0;
        if (!c->closing)
                start_reading(c);
        conn_unref(c);
        free(x);
}

/* Reads the client's requests once it is known whether it is an admin. */
static void classify(struct clients *clients, struct conn *c)
{
        struct group_lookup *x;

        if (c->admin || clients->admin_gid == (gid_t)-1) {
                start_reading(c);
                return;
        }
        x = calloc(1, sizeof(*x));
        if (!x) {
                conn_close(c, "out of memory");
                return;
        }
        x->work.data = x;
        x->c = conn_ref(c);
        x->uid = c->uid;
        x->gid = c->gid;
        x->group = clients->admin_gid;
        if (uv_queue_work(clients->loop, &x->work, group_lookup_work, group_lookup_done) < 0) {
                conn_unref(c);
                free(x);
                conn_close(c, "cannot look up its groups");
        }
}

/* Tells the client why it may not stay (an error addressed to id null), then closes the
 * connection once that is written; its requests are never read. A flood of refusals is logged
 * once a second. */
static void refuse(struct conn *c, const char *why)
{
        struct clients *clients = c->clients;
        uint64_t now = uv_now(clients->loop);

        if (now - clients->refusal_logged >= 1000) {
                if (clients->refusals_unlogged > 0)
                        log_warning("Refused %u more client%s the same way or another",
                                    clients->refusals_unlogged,
                                    clients->refusals_unlogged == 1 ? "" : "s");
                log_warning("Refused a client with uid %u (pid %d): %s", (unsigned)c->uid,
                            (int)c->pid, why);
                clients->refusal_logged = now;
                clients->refusals_unlogged = 0;
        } else {
                clients->refusals_unlogged++;
        }
        c->refused = true;
        clients->n--;  /* not one of the daemon's connections, though still open a moment */
        c->eof = true; /* so that the connection ends after the line */
        conn_send(c, sw_error_line(NULL, SW_E_BUSY, why));
}

/*
 * Admins may use every connection, up to CONN_MAX; users share what admins leave them
 * (CONN_ADMIN_ROOM is always the admins'), each uid at most max-connections-per-user at once. A
 * connection whose groups are still being looked up counts as a user's, unless another one of its
 * uid is known to be an admin's. A refused client is told why.
 */
static bool has_room(struct clients *clients, struct conn *c)
{
        unsigned all = 0, users = 0, same = 0,
                 max = (unsigned)clients->settings->max_connections_per_user;
        bool admin = c->admin;
        char why[160];
        struct conn *x;

        for (x = clients->head; x; x = x->next) {
                if (x == c || x->refused)
                        continue;
                all++;
                admin |= x->admin && x->uid == c->uid;
                if (x->admin)
                        continue;
                users++;
                same += x->uid == c->uid;
        }
        if (all >= CONN_MAX)
                snprintf(why, sizeof(why), "too many connections: %u already", CONN_MAX);
        else if (!admin && users >= CONN_MAX - CONN_ADMIN_ROOM)
                snprintf(why, sizeof(why), "too many connections: the last %u are kept for admins",
                         CONN_ADMIN_ROOM);
        else if (!admin && same >= max)
                snprintf(why, sizeof(why),
                         "too many connections of uid %u: %u already (max-connections-per-user)",
                         (unsigned)c->uid, max);
        else
                return true;
        refuse(c, why);
        return false;
}

/* A new connection, on the clients' list. */
static struct conn *conn_new(struct clients *clients)
{
        struct conn *c = calloc(1, sizeof(*c));

        if (!c) {
                log_warning("Out of memory for a new connection");
                return NULL;
        }
        c->clients = clients;
        c->refs = 1;
        sw_lines_init(&c->in);
        uv_pipe_init(clients->loop, &c->pipe, 0);
        c->pipe.data = c;
        c->next = clients->head;
        if (clients->head)
                clients->head->prev = c;
        clients->head = c;
        clients->n++;
        return c;
}

void conn_accept(struct clients *clients, uv_stream_t *listener)
{
        struct conn *c = conn_new(clients);
        int r;

        if (!c)
                return;
        r = uv_accept(listener, (uv_stream_t *)&c->pipe);
        if (r < 0) {
                conn_close(c, uv_strerror(r));
                return;
        }
        if (peer_allowed(clients, c) < 0) {
                log_warning("Refused a client with uid %u (pid %d): not this daemon's user",
                            (unsigned)c->uid, (int)c->pid);
                conn_close(c, NULL);
                return;
        }
        /* Known at once; a member of the admin group by a supplementary group is found later,
         * and counts as a user until then. */
        c->admin = c->uid == 0 || c->uid == clients->uid ||
                   (clients->admin_gid != (gid_t)-1 && c->gid == clients->admin_gid);
        if (!has_room(clients, c))
                return;
        classify(clients, c);
}

void conn_open(struct clients *clients, int fd, uid_t uid, gid_t gid, bool admin)
{
        struct conn *c = conn_new(clients);
        int r;

        if (!c) {
                close(fd);
                return;
        }
        c->uid = uid;
        c->gid = gid;
        c->admin = admin;
        c->relayed = true;
        r = uv_pipe_open(&c->pipe, fd);
        if (r < 0) {
                close(fd);
                conn_close(c, uv_strerror(r));
                return;
        }
        if (has_room(clients, c))
                start_reading(c);
}

void conn_close_all(struct clients *clients)
{
        while (clients->head)
                conn_close(clients->head, NULL);
        if (clients->held_timer_made) {
                uv_close((uv_handle_t *)&clients->held_timer, NULL);
                clients->held_timer_made = false;
        }
}
