/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORKD_CONN_H
#define SLOWWORKD_CONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "proto.h"
#include "store/envs.h"

#define CONN_OUT_SOFT (64u * 1024)        /* unsent replies beyond which requests wait */
#define CONN_READ_AHEAD (64u * 1024)      /* requests read meanwhile, at most */
#define CONN_EVENTS_MAX (1024u * 1024)    /* unsent events beyond which a client is dropped */
#define CONN_MAX 1024                   /* connections at once */
#define CONN_ADMIN_ROOM 64              /* of them, kept for admins: users share the rest */

#define CONN_BATCH_REPLY_MAX SW_REPLY_MAX /* bytes of a batch's reply line */

struct conn;
struct conn_batch;
struct store;

/* The daemon's connections, and what it asks of whoever reads their requests. */
struct clients {
        uv_loop_t *loop;
        struct store *store; /* replies that wait for a write wait for its commit */
        uid_t uid;           /* the daemon's */
        bool system;         /* every user may connect, not only the daemon's own and root */
        gid_t admin_gid;     /* members are admins; (gid_t)-1: none */
        const struct sw_settings *settings; /* in force: max-connections-per-user */
        struct envs *envs;                  /* where the connections' environments are shared */
        struct conn *head;
        unsigned n;          /* connections, but for those being refused */
        uv_timer_t held_timer;      /* while replies wait for the state database: store-timeout */
        bool held_timer_made;
        uint64_t refusal_logged;    /* uv_now() when a refusal was last logged */
        unsigned refusals_unlogged; /* refusals since, not logged */
        /* A request line came in; a connection goes (its requests get no more replies). */
        void (*on_line)(void *data, struct conn *c, const char *line, size_t len);
        void (*on_close)(void *data, struct conn *c);
        /* A line was held for a write not committed yet (server/await.c's await_held). */
        void (*on_held)(struct conn *c);
        void *data;
};

/* A reply to a request that wrote to the state database waits until the write is on disk, and
 * the replies after it on the connection wait behind it; with a shared database, a reply that
 * waited store-timeout goes out as an error (-32603, the store's failing_means(): the database
 * could not be reached, so what the request did may or may not be kept). */
struct held_line {
        char *line;
        uint64_t seq; /* the connection's barrier when it was made */
        uint64_t at;  /* uv_now() when it was made */
        bool event;   /* a notification, not a reply */
        bool part;    /* a piece of a batch's reply line: "[" or "," and a reply, or "]\n" */
};

struct conn {
        struct clients *clients;
        uv_pipe_t pipe;
        struct conn *prev, *next;
        struct sw_lines in;
        size_t out_pending; /* bytes handed to uv_write and not yet written */
        size_t events_unsent; /* of them and of the held lines, event notifications' */
        uid_t uid;          /* the peer's, from SO_PEERCRED at connect */
        gid_t gid;
        pid_t pid;
        bool admin;         /* set once at accept: see conn_is_admin() */
        bool refused;       /* over a cap: told so, and closing once that is written */
        bool relayed;       /* another node's client's (relay.c): its requests stay here */
        unsigned refs;      /* the connection's own, and one per reply still to come */
        bool closing;
        bool busy;          /* a reply is still to come: later requests wait, in order */
        bool reading;
        bool eof;           /* the client will send nothing more */
        bool finishing;     /* shutting down after the last reply */
        struct held_line *held; /* replies not yet handed to uv_write */
        uint64_t barrier;       /* the state database write later replies wait for */
        size_t nheld, held_size, held_len;
        bool batching;      /* requests are being handled: write their replies together after */
        struct conn_batch *batch; /* a JSON-RPC batch whose members are being handled */
        bool heavy;         /* has held much: the heap is trimmed when it goes */
        json_object *await_id; /* the request in progress waits for a read of the shared job
                                * database (await.h; NULL: none), since await_at (uv_now) */
        uint64_t await_at, await_token;
        struct env_block *env; /* env.set's: the environment of its submits without one */
        void *data;         /* whoever reads its requests keeps what it knows of it here */
};

/* Accepts a pending connection from the listening stream; refuses peers that may not connect. */
void conn_accept(struct clients *clients, uv_stream_t *listener);
/* A connection on fd (taken over), whose peer is as given: another node's client, whose node
 * passes its requests on (relay.c). */
void conn_open(struct clients *clients, int fd, uid_t uid, gid_t gid, bool admin);
/* Closes every connection (shutdown). */
void conn_close_all(struct clients *clients);
/* Queues one reply line (taken over). While the client leaves more than CONN_OUT_SOFT unread,
 * its later requests wait. */
void conn_send(struct conn *c, char *line);
/* Queues one event notification (taken over); drops the client when it leaves more than
 * CONN_EVENTS_MAX of them unread. */
void conn_notify(struct conn *c, char *line);
/* Later replies wait for the state database's writes up to seq. */
void conn_wait_for(struct conn *c, uint64_t seq);
/* Writes the replies the state database has caught up with. */
void conn_flush(struct conn *c);
/*
 * Whether the client is an admin: root, the daemon's own user, or a member of the admin group (its
 * primary group at connect, or a supplementary group of its user in the user database at accept).
 * Admins may change settings, and see and act on every user's items.
 */
bool conn_is_admin(const struct conn *c);
/* Ends a request whose reply was deferred with the reply's line as it is (taken over). */
void conn_reply_line(struct conn *c, char *line);
/* Goes on with the requests that came in while one was deferred (its reply sent otherwise). */
void conn_resume(struct conn *c);
/* The request in progress waits for the job database no more (server/await.h). */
void conn_await_end(struct conn *c);
/* Its socket's descriptor, -1 when it has none any more. */
int conn_fd(struct conn *c);
struct conn *conn_ref(struct conn *c);
void conn_unref(struct conn *c);
/* Sends the reply to a request: the result, or the error (id NULL: a notification, no reply). */
void conn_send_reply(struct conn *c, json_object *id, json_object *result, int code,
                     const char *message);
/* Ends a request whose reply was deferred: sends it (unless the client left) and goes on with
 * the requests that came in meanwhile. */
void conn_reply(struct conn *c, json_object *id, json_object *result, int code,
                const char *message);

#endif
