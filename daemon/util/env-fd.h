/* SPDX-License-Identifier: MIT */
/* A file descriptor that whoever started the daemon named in an environment variable. */
#ifndef SLOWWORKD_ENV_FD_H
#define SLOWWORKD_ENV_FD_H

/* The descriptor the variable name holds, taken out of the environment (so that jobs do not see
 * it) and made close-on-exec: 0 when it is not set, -EINVAL when it names no open descriptor
 * above 2. */
int env_fd(const char *name);

#endif
