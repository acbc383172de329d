/* SPDX-License-Identifier: MIT */
/* A folder only the daemon may change: where its database and the run logs live. */
#ifndef SLOWWORKD_PRIVATE_DIR_H
#define SLOWWORKD_PRIVATE_DIR_H

/*
 * Makes path (mode 0700) unless it exists, then checks it is the daemon's: a folder, not a
 * symbolic link, owned by the daemon's user, writable by nobody else. 0, or -errno (logged,
 * naming the path and the problem): -ENOTDIR, -ELOOP for a link, -EPERM for the owner or mode.
 */
int private_dir_make(const char *path);

#endif
