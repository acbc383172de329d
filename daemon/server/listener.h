/* SPDX-License-Identifier: MIT */
/*
 * The control socket: where it lives, replacing a dead daemon's socket file but never a live
 * daemon's (unless systemd passed it), and handing connections to the clients.
 */
#ifndef SLOWWORKD_LISTENER_H
#define SLOWWORKD_LISTENER_H

#include <stdbool.h>
#include <sys/types.h>
#include <uv.h>

#define LISTENER_SYSTEM_DIR "/run/slowwork"

struct clients;

struct listener {
        char *path;       /* the socket file's */
        int activated_fd; /* the listening socket systemd passed, or -1 */
        bool owned;       /* activated_fd is the daemon's own, handed over by its last program
                           * (reexec): its file is removed at the stop all the same */
        bool system;      /* the system instance: a socket for every user */
        gid_t socket_gid; /* system instance: the socket's group, mode 0660; (gid_t)-1: 0666 */
        uv_pipe_t pipe;
        bool listening;
        struct clients *clients;
};

/* --socket PATH, else the system instance's, else the user instance's
 * $XDG_RUNTIME_DIR/slowwork/slowworkd.sock (its folder made 0700). Errors are logged. */
int listener_resolve_path(const char *given, bool system, char **ret_path);
/* Binds l->path (unless systemd passed a socket) and accepts into l->clients. */
int listener_open(struct listener *l, uv_loop_t *loop);
/* Stops listening and removes the socket file (unless it is systemd's). */
void listener_close(struct listener *l);

#endif
