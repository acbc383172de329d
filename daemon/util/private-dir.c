/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/private-dir.h"

int private_dir_make(const char *path)
{
        struct stat st;

        if (mkdir(path, 0700) < 0 && errno != EEXIST)
                return log_error_errno(-errno, "Failed to create %s: %m", path);
        if (lstat(path, &st) < 0)
                return log_error_errno(-errno, "Failed to look at %s: %m", path);
        if (S_ISLNK(st.st_mode)) {
                log_error("%s is a symbolic link: the state folder must be a folder of the "
                          "daemon's own",
                          path);
                return -ELOOP;
        }
        if (!S_ISDIR(st.st_mode)) {
                log_error("%s is not a folder", path);
                return -ENOTDIR;
        }
        if (st.st_uid != geteuid()) {
                log_error("%s belongs to uid %u, not to the daemon's uid %u: refusing to keep jobs "
                          "in a folder someone else made",
                          path, (unsigned)st.st_uid, (unsigned)geteuid());
                return -EPERM;
        }
        if (st.st_mode & (S_IWGRP | S_IWOTH)) {
                log_error("%s may be written by other users (mode %04o): refusing to keep jobs "
                          "there (chmod go-w it, or remove it)",
                          path, (unsigned)(st.st_mode & 07777));
                return -EPERM;
        }
        return 0;
}
