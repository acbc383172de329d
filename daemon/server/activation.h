/* SPDX-License-Identifier: MIT */
/* Socket activation: the listening socket systemd passes (sd_listen_fds), exactly one. */
#ifndef SLOWWORKD_ACTIVATION_H
#define SLOWWORKD_ACTIVATION_H

/* 1 with the listening socket systemd passed and its path, 0 when it passed none (*ret_fd is
 * -1), or -errno (logged) when it passed anything but one Unix stream socket. */
int activation_socket(int *ret_fd, char **ret_path);

/* The listening socket the daemon's last program handed over (reexec), checked as one, and its
 * path: 0, or -errno (logged). */
int activation_taken(int fd, char **ret_path);

#endif
