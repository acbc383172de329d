/* SPDX-License-Identifier: MIT */
/*
 * libslowwork-client: a blocking client for slowworkd's socket (JSON-RPC 2.0, one object per
 * line; proto/PROTOCOL.md). One call at a time with sw_client_call(), or many in flight with
 * sw_client_send() and sw_client_receive(). Functions return 0 (or 1, see sw_client_call) on
 * success and a negative errno on failure; nothing is printed. A client is not thread-safe.
 *
 *   cc prog.c $(pkg-config --cflags --libs slowwork-client)
 */
#ifndef SLOWWORK_CLIENT_H
#define SLOWWORK_CLIENT_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_client;

/* A JSON-RPC error the daemon replied with. */
struct sw_client_error {
        int code;          /* -32602 invalid params, -32001 not found, ... (proto/PROTOCOL.md) */
        char message[256]; /* for people: what failed, on what, and why */
        char name[32];     /* errno-style, for programs: "EINVAL", "ENOENT", ...; or "" */
};

/*
 * Connects to the daemon at socket_path; NULL resolves the path: $SLOWWORK_SOCKET, else
 * $XDG_RUNTIME_DIR/slowwork/slowworkd.sock (the user instance's), else
 * /run/slowwork/slowworkd.sock (the system instance's). When the user instance's socket is not
 * there or refuses the connection, the system instance's is tried; failing both, the error and
 * path are the user instance's (unless the system's socket is there and refuses otherwise).
 *
 * Only a daemon run by the caller's own user (effective uid) or by root is talked to: the
 * process that serves the socket is asked for (SO_PEERCRED) before anything is sent, and for any
 * other the connection is closed with nothing sent and -EPERM returned; sw_client_server_uid()
 * then says whose it was. (A root shell with a user's $XDG_RUNTIME_DIR would otherwise send that
 * user's socket its requests, a submit's whole environment with them, and believe its replies.)
 *
 * Returns 0 with a connected client in *ret, or a negative errno. Unlike elsewhere, *ret is set
 * also when connecting failed (-ENOENT, -ECONNREFUSED, -EACCES, -ENAMETOOLONG, -EPERM, ...): to a
 * client that is not connected, so that sw_client_socket() can name the path in a message. Its
 * calls fail with -ENOTCONN, and it is freed like any other. *ret is NULL only for -ENOMEM.
 */
int sw_client_connect(const char *socket_path, struct sw_client **ret);
/* Closes the connection and frees the client; NULL is fine. Returns NULL. */
struct sw_client *sw_client_free(struct sw_client *c);
/* The socket path the client was made for, as resolved: the one that answered. */
const char *sw_client_socket(struct sw_client *c);
/* Whether that is the system instance's because the user instance's was not there or refused the
 * connection (see sw_client_connect). */
bool sw_client_fell_back(struct sw_client *c);
/* The uid of the process that serves the socket, once the connection was made (also when
 * sw_client_connect() refused it with -EPERM); -1 before, or for NULL. */
int64_t sw_client_server_uid(struct sw_client *c);

/*
 * Calls a method and waits for its reply. params is an object or NULL, and is taken over (put) in
 * every case. Returns 0 with the result in *ret_result (the caller puts it); 1 when the daemon
 * replied with an error, described in *ret_error; or a negative errno when the exchange failed:
 * -ENOTCONN, -ECONNRESET (the daemon went away), -EBADMSG (a reply that is not JSON-RPC), -E2BIG
 * (a reply over 256 MiB), -EBUSY (requests sent with sw_client_send() still await their replies),
 * -ENOMEM. Notifications that arrive meanwhile are dropped. ret_result and ret_error may be NULL.
 */
int sw_client_call(struct sw_client *c, const char *method, json_object *params,
                   json_object **ret_result, struct sw_client_error *ret_error);

/*
 * Pipelining. sw_client_send() writes one request (params taken over, as above) and returns at
 * once with the request's id in *ret_id (may be NULL); replies it finds waiting while the socket is
 * full are kept for sw_client_receive(). sw_client_receive() reads the next message: 0 with a
 * result and its request's id, 1 with an error (id -1 when the daemon could not read the
 * request's id), or, for a notification (after "subscribe"), 0 with id -1 and the notification's
 * params as the result. The daemon answers a connection's requests in the order they were sent.
 * Errors as for sw_client_call(); after -E2BIG the reply that was too large is lost.
 */
int sw_client_send(struct sw_client *c, const char *method, json_object *params, int64_t *ret_id);
/*
 * The same, but the request may wait in the client, with others, until 64 KiB of them are
 * written at once, or until sw_client_flush(), sw_client_send() or a sw_client_receive() that
 * finds no reply waiting writes them: fewer writes for a client sending many requests. Requests
 * still queued when the client is freed are not sent.
 */
int sw_client_queue(struct sw_client *c, const char *method, json_object *params, int64_t *ret_id);
int sw_client_flush(struct sw_client *c);
int sw_client_receive(struct sw_client *c, json_object **ret_result,
                      struct sw_client_error *ret_error, int64_t *ret_id);
/* Requests sent and not yet answered. */
unsigned sw_client_outstanding(struct sw_client *c);

#ifdef __cplusplus
}
#endif

#endif
