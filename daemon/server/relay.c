/* SPDX-License-Identifier: MIT */
/*
 * Mail kinds: from the node of the client, "open" (its credentials, JSON), "line" (a request)
 * and "close"; from the node that serves it, "reply" (a line its connection wrote) and "end"
 * (that connection closed). A session is named by the node that opened it and its number there,
 * which starts at random with every start of the daemon: mail for a session of an earlier
 * start is told the session is over. Each side ends its sessions with a node that is no longer
 * live, or started again (a new epoch).
 */
#define _GNU_SOURCE
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto.h"
#include "server/conn.h"
#include "server/relay.h"
#include "store/db.h"
#include "store/store.h"
#include "util/log.h"
#include "util/random-start.h"

#define PRUNE_MS 1000 /* how often sessions look whether their other node is still live */

/* A session this node opened for a client of its own. */
struct relay_out {
        struct relay_out *next;
        int64_t id;
        char node[64];
        struct conn *c;
        char *pending; /* the id (compact JSON) of the request whose reply it awaits, or NULL */
        bool subscribing; /* its subscribe's reply, not the client's, is still to come */
        int64_t epoch; /* the other node's: as last seen at the opening (0: none seen yet),
                        * then its mail's */
        /* When the database was read that found the other node live, which the renewals had
         * not seen yet (0: they had): until a renewal begun after it, the session is not
         * ended for a node the renewals do not list. */
        double read_at;
};

/* A session another node opened here: the connection that serves it, through a socket pair. */
struct relay_in {
        struct relay_in *next;
        struct relay *relay;
        char from[64];
        int64_t id;
        uv_pipe_t pipe; /* this end */
        struct sw_lines lines;
        int64_t epoch; /* the other node's when it opened the session */
        bool ended;    /* closed here, or by the other node: no "end" goes (again) */
        char *refused; /* why its user cannot be served here (no connection then), or NULL */
};

struct write_req {
        uv_write_t req;
        char *buf;
};

/* The live nodes as last seen (a new array; n 0 when out of memory). */
static struct db_node *nodes_of(struct relay *r, size_t *n)
{
        struct db_node *nodes = NULL;

        if (store_nodes(r->store, &nodes, n) < 0)
                *n = 0;
        return nodes;
}

/* The epoch of the live node named so, or -1 when none is. */
static int64_t epoch_of(const struct db_node *nodes, size_t n, const char *name)
{
        for (size_t i = 0; i < n; i++)
                if (strcmp(nodes[i].name, name) == 0)
                        return nodes[i].epoch;
        return -1;
}

static void on_timer(uv_timer_t *timer);

static void watch(struct relay *r)
{
        if ((r->outs || r->ins) && !uv_is_active((uv_handle_t *)&r->timer))
                uv_timer_start(&r->timer, on_timer, PRUNE_MS, PRUNE_MS);
        else if (!r->outs && !r->ins)
                uv_timer_stop(&r->timer);
}

/* A line read as a request was (NULL when it is not JSON): ids compare as they were read. */
static json_object *read_json(const char *line)
{
        json_object *v = NULL;

        return sw_json_read(line, strlen(line), &v, NULL, 0) == 0 ? v : NULL;
}

/* Ends a session of this node's client: the request that awaits a reply, if one does, gets an
 * error (why) instead. Off the list first: the reply may close the client's connection. */
static void end_out(struct relay *r, struct relay_out *o, const char *why)
{
        for (struct relay_out **p = &r->outs; *p; p = &(*p)->next)
                if (*p == o) {
                        *p = o->next;
                        break;
                }
        watch(r);
        if (o->pending && why)
                conn_reply_line(o->c, sw_error_line(read_json(o->pending), SW_E_INTERNAL, why));
        free(o->pending);
        conn_unref(o->c);
        free(o);
}

static void in_free(struct relay_in *in)
{
        struct relay *r = in->relay;

        for (struct relay_in **p = &r->ins; *p; p = &(*p)->next)
                if (*p == in) {
                        *p = in->next;
                        break;
                }
        sw_lines_free(&in->lines);
        free(in->refused);
        free(in);
        watch(r);
}

static void in_closed(uv_handle_t *handle)
{
        in_free(handle->data);
}

/* Ends a session served here; the other node hears of it unless it ended it. */
static void in_end(struct relay_in *in, bool tell)
{
        if (in->ended)
                return;
        in->ended = true;
        if (tell)
                store_send_mail(in->relay->store, in->from, in->epoch, in->id, "end", "");
        if (in->refused)
                in_free(in);
        else
                uv_close((uv_handle_t *)&in->pipe, in_closed);
}

/* Whether a session's other node is gone, or started again since its epoch (0: not known yet,
 * then it is as seen now). The epochs of a node only rise; the list may be a renewal behind. */
static bool over(const struct db_node *nodes, size_t n, const char *node, int64_t *epoch)
{
        int64_t now = epoch_of(nodes, n, node);

        if (*epoch == 0)
                *epoch = now;
        return now < 0 || now > *epoch;
}

/* Whether the session's node, found live in the database, is not yet in the renewals' list. */
static bool unseen(struct relay *r, struct relay_out *o, const struct db_node *nodes, size_t n)
{
        if (o->read_at == 0)
                return false;
        if (epoch_of(nodes, n, o->node) < 0 && store_nodes_since(r->store) <= o->read_at)
                return true;
        o->read_at = 0;
        return false;
}

/* The sessions with nodes that are gone, or started again, end. */
static void on_timer(uv_timer_t *timer)
{
        struct relay *r = timer->data;
        size_t n;
        struct db_node *nodes = nodes_of(r, &n);
        struct relay_out *o;
        struct relay_in *in;

        /* Before the first renewal this node knows of no other. */
        if (!nodes || !store_nodes_known(r->store)) {
                free(nodes);
                return;
        }
        for (;;) {
                char why[128];

                for (o = r->outs;
                     o && (unseen(r, o, nodes, n) || !over(nodes, n, o->node, &o->epoch));
                     o = o->next)
                        ;
                if (!o)
                        break;
                snprintf(why, sizeof(why), "node %s, which holds the job, %s", o->node,
                         epoch_of(nodes, n, o->node) < 0 ? "is gone" : "started again");
                end_out(r, o, why); /* the list may change meanwhile: looked at again */
        }
        for (in = r->ins; in; in = in->next)
                if (!in->ended && over(nodes, n, in->from, &in->epoch))
                        in_end(in, false);
        free(nodes);
}

int relay_init(struct relay *r, uv_loop_t *loop, struct clients *clients, struct store *store)
{
        int e;

        *r = (struct relay){.clients = clients, .store = store};
        r->timer.data = r;
        e = uv_timer_init(loop, &r->timer);
        if (e < 0)
                return e;
        r->last_session = random_start();
        return 0;
}

void relay_close(struct relay *r)
{
        while (r->outs)
                end_out(r, r->outs, "slowworkd is shutting down");
        for (struct relay_in *in = r->ins; in; in = in->next)
                in_end(in, true);
        uv_close((uv_handle_t *)&r->timer, NULL);
}

/* The compact JSON of a request's id, or NULL for a notification (or an unreadable line). */
static char *request_id(const char *line)
{
        json_object *req = read_json(line), *id = NULL;
        char *text = NULL;

        /* "id": null is a request (answered to id null), not a notification. */
        if (json_object_object_get_ex(req, "id", &id))
                text = strdup(id ? json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN)
                                 : "null");
        json_object_put(req);
        return text;
}

/* The client's session with node (opened with its credentials if need be), whose epoch is as
 * last seen (0: none seen yet); NULL when out of memory. */
static struct relay_out *session(struct relay *r, struct conn *c, const char *node, int64_t epoch)
{
        struct relay_out *o;
        char *creds;

        for (o = r->outs; o && !(o->c == c && strcmp(o->node, node) == 0); o = o->next)
                ;
        if (o || !(o = calloc(1, sizeof(*o))))
                return o;
        o->id = ++r->last_session;
        o->epoch = epoch;
        snprintf(o->node, sizeof(o->node), "%s", node);
        o->c = conn_ref(c);
        o->next = r->outs;
        r->outs = o;
        /* The uid goes in the row, which the other node checks by the user's name. */
        if (asprintf(&creds, "{\"gid\":%u,\"admin\":%s}", (unsigned)c->gid,
                     conn_is_admin(c) ? "true" : "false") >= 0) {
                store_send_user_mail(r->store, node, o->epoch, o->id, c->uid, "open", creds);
                free(creds);
        }
        watch(r);
        return o;
}

/* The epoch of node as last seen: -1 when it is not live, 0 before the first renewal. */
static int64_t epoch_now(struct relay *r, const char *node)
{
        size_t n;
        struct db_node *nodes = nodes_of(r, &n);
        int64_t epoch = epoch_of(nodes, n, node);

        free(nodes);
        return store_nodes_known(r->store) ? epoch : 0;
}

/* Passes the line in the client's session with node, whose epoch is known (read_at: when the
 * database said so, 0 when the renewals did). */
static void send_line(struct relay *r, struct conn *c, const char *node, int64_t epoch,
                      double read_at, const char *line, size_t len)
{
        char *copy = strndup(line, len);
        struct relay_out *o = copy ? session(r, c, node, epoch) : NULL;

        if (!o) {
                free(copy);
                conn_reply_line(c, sw_error_line(NULL, SW_E_INTERNAL, "out of memory"));
                return;
        }
        if (read_at > o->read_at && epoch_now(r, node) < 0)
                o->read_at = read_at;
        free(o->pending);
        o->pending = request_id(copy);
        store_send_mail(r->store, node, o->epoch, o->id, "line", copy);
        free(copy);
        if (!o->pending)
                conn_resume(c); /* a notification: nothing comes back */
}

bool relay_forward(struct relay *r, struct conn *c, const char *node, const char *line,
                   size_t len)
{
        int64_t epoch = epoch_now(r, node);

        if (epoch < 0)
                return false;
        send_line(r, c, node, epoch, 0, line, len);
        return true;
}

void relay_forward_read(struct relay *r, struct conn *c, const char *node, int64_t epoch,
                        const char *line, size_t len)
{
        send_line(r, c, node, epoch, store_mono_now(), line, len);
}

#define SUBSCRIBE "{\"jsonrpc\":\"2.0\",\"id\":\"relay-subscribe\",\"method\":\"subscribe\"}"

void relay_subscribe(struct relay *r, struct conn *c)
{
        size_t n;
        struct db_node *nodes = nodes_of(r, &n);

        for (size_t i = 0; i < n; i++) {
                struct relay_out *o;

                if (strcmp(nodes[i].name, store_node(r->store)) == 0 ||
                    !(o = session(r, c, nodes[i].name, nodes[i].epoch)))
                        continue;
                o->subscribing = true;
                store_send_mail(r->store, o->node, o->epoch, o->id, "line", SUBSCRIBE);
        }
        free(nodes);
}

void relay_conn_closed(struct relay *r, struct conn *c)
{
        struct relay_out *o, *next;

        for (o = r->outs; o; o = next) {
                next = o->next;
                if (o->c == c) {
                        store_send_mail(r->store, o->node, o->epoch, o->id, "close", "");
                        end_out(r, o, NULL);
                }
        }
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf)
{
        (void)handle;
        buf->base = malloc(suggested);
        buf->len = buf->base ? suggested : 0;
}

static void on_in_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf)
{
        struct relay_in *in = stream->data;
        char *line;
        size_t len;
        int r = 0;

        if (nread > 0)
                r = sw_lines_push(&in->lines, buf->base, (size_t)nread);
        free(buf->base);
        while (r == 0 && nread > 0 && (r = sw_lines_next(&in->lines, &line, &len)) != 0) {
                char *copy = r > 0 ? strndup(line, len) : NULL;

                if (copy)
                        store_send_mail(in->relay->store, in->from, in->epoch, in->id,
                                        "reply", copy);
                free(copy);
                r = 0;
        }
        if (nread < 0 || r < 0)
                in_end(in, true);
}

static void on_written(uv_write_t *req, int status)
{
        struct write_req *w = (struct write_req *)req;

        (void)status; /* a connection gone: its end comes by reading */
        free(w->buf);
        free(w);
}

static struct relay_in *find_in(struct relay *r, const char *from, int64_t id)
{
        struct relay_in *in;

        for (in = r->ins; in && !(in->id == id && strcmp(in->from, from) == 0); in = in->next)
                ;
        return in;
}

/* A session another node opened, on the list (NULL when out of memory). */
static struct relay_in *in_new(struct relay *r, const struct db_mail *m)
{
        struct relay_in *in = calloc(1, sizeof(*in));

        if (!in)
                return NULL;
        in->relay = r;
        in->id = m->session;
        in->epoch = m->epoch;
        snprintf(in->from, sizeof(in->from), "%s", m->from);
        sw_lines_init_max(&in->lines, SW_REPLY_MAX);
        in->next = r->ins;
        r->ins = in;
        watch(r);
        return in;
}

/* Another node's client: a connection of its own here, on one end of a socket pair, as the user
 * the signed row names (its uid, checked by its name), with the group and admin its node saw. A
 * user who is another here is served no request: each gets the reason as its error. */
static void open_in(struct relay *r, const struct db_mail *m)
{
        json_object *creds = json_tokener_parse(m->body), *v;
        struct relay_in *in, *old = find_in(r, m->from, m->session);
        gid_t gid = (gid_t)-1;
        bool admin = false;
        int fds[2] = {-1, -1};

        if (old)
                in_end(old, false); /* a session of an earlier start of that node */
        if (json_object_object_get_ex(creds, "gid", &v))
                gid = (gid_t)json_object_get_int64(v);
        if (json_object_object_get_ex(creds, "admin", &v))
                admin = json_object_get_boolean(v);
        json_object_put(creds);
        if (m->refused) {
                char *why = strdup(m->refused);

                log_warning("Refused the client of node %s: %s", m->from, m->refused);
                if (why && (in = in_new(r, m))) {
                        in->refused = why;
                        return;
                }
                free(why);
                store_send_mail(r->store, m->from, m->epoch, m->session, "end", "");
                return;
        }
        if (m->uid < 0 ||
            socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds) < 0 ||
            !(in = in_new(r, m))) {
                log_warning("Cannot serve a request of node %s's client: %s", m->from,
                            m->uid < 0     ? "no credentials"
                            : fds[0] < 0   ? "no socket pair"
                                           : "out of memory");
                if (fds[0] >= 0) {
                        close(fds[0]);
                        close(fds[1]);
                }
                store_send_mail(r->store, m->from, m->epoch, m->session, "end", "");
                return;
        }
        uv_pipe_init(r->clients->loop, &in->pipe, 0);
        in->pipe.data = in;
        if (uv_pipe_open(&in->pipe, fds[1]) < 0) {
                close(fds[1]);
                close(fds[0]);
                in_end(in, true);
                return;
        }
        if (uv_read_start((uv_stream_t *)&in->pipe, on_alloc, on_in_read) < 0) {
                close(fds[0]);
                in_end(in, true);
                return;
        }
        conn_open(r->clients, fds[0], (uid_t)m->uid, gid, admin);
}

/* A line as a connection sends it: with its newline (NULL: out of memory). */
static char *line_of(const char *body)
{
        char *line;

        return asprintf(&line, "%s\n", body) < 0 ? NULL : line;
}

static void write_in(struct relay_in *in, const char *body)
{
        struct write_req *w = calloc(1, sizeof(*w));
        uv_buf_t buf;

        if (!w || !(w->buf = line_of(body))) {
                free(w);
                in_end(in, true);
                return;
        }
        buf = uv_buf_init(w->buf, (unsigned)strlen(w->buf));
        if (uv_write(&w->req, (uv_stream_t *)&in->pipe, &buf, 1, on_written) < 0) {
                free(w->buf);
                free(w);
                in_end(in, true);
        }
}

/* A request of a refused user: its error goes back (a notification gets none). */
static void refuse_line(struct relay_in *in, const char *body)
{
        json_object *req = read_json(body), *id = NULL;
        char *line;

        if (json_object_object_get_ex(req, "id", &id)) {
                line = sw_error_line(id ? json_object_get(id) : NULL, SW_E_PERMISSION, in->refused);
                if (line) {
                        line[strcspn(line, "\n")] = '\0';
                        store_send_mail(in->relay->store, in->from, in->epoch, in->id, "reply",
                                        line);
                }
                free(line);
        }
        json_object_put(req);
}

/* Whether the line is the reply to the request whose id is pending. */
static bool answers(const char *line, const char *pending)
{
        json_object *o = read_json(line), *id;
        bool yes = false;

        if (pending && json_object_object_get_ex(o, "id", &id) &&
            (json_object_object_get_ex(o, "result", NULL) ||
             json_object_object_get_ex(o, "error", NULL)))
                yes = strcmp(json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN),
                             pending) == 0;
        json_object_put(o);
        return yes;
}

/* Mail of a session served here. One it does not know (ended, or of an earlier start of this
 * node) is told it is over. */
static void mail_in(struct relay *r, const struct db_mail *m)
{
        struct relay_in *in = find_in(r, m->from, m->session);

        if (strcmp(m->kind, "open") == 0)
                open_in(r, m);
        else if (in && !in->ended && in->refused && strcmp(m->kind, "line") == 0)
                refuse_line(in, m->body);
        else if (in && !in->ended && strcmp(m->kind, "line") == 0)
                write_in(in, m->body);
        else if (in)
                in_end(in, false);
        else if (strcmp(m->kind, "line") == 0)
                store_send_mail(r->store, m->from, m->epoch, m->session, "end", "");
}

/* Mail of a session this node opened for its client. */
static void mail_out(struct relay *r, const struct db_mail *m)
{
        struct relay_out *o;
        char why[128];

        for (o = r->outs; o && !(o->id == m->session && strcmp(o->node, m->from) == 0);
             o = o->next)
                ;
        if (!o) {
                /* Its client went, or it is of an earlier start of this node. */
                if (strcmp(m->kind, "reply") == 0)
                        store_send_mail(r->store, m->from, m->epoch, m->session, "close", "");
                return;
        }
        /* Its epoch at the opening was as last seen: an earlier one is from before. */
        if (m->epoch < o->epoch)
                return;
        o->epoch = m->epoch;
        if (o->subscribing && answers(m->body, "\"relay-subscribe\"")) {
                o->subscribing = false; /* the client has its own */
                return;
        }
        if (strcmp(m->kind, "end") == 0) {
                snprintf(why, sizeof(why), "node %s ended the request", o->node);
                end_out(r, o, why);
        } else if (answers(m->body, o->pending)) {
                free(o->pending);
                o->pending = NULL;
                conn_reply_line(o->c, line_of(m->body));
        } else {
                conn_notify(o->c, line_of(m->body));
        }
}

void relay_on_mail(void *data, const struct db_mail *m)
{
        if (strcmp(m->kind, "reply") == 0 || strcmp(m->kind, "end") == 0)
                mail_out(data, m);
        else
                mail_in(data, m);
}
