/* SPDX-License-Identifier: MIT */
/* A write that goes on until every byte is written. */
#ifndef SLOWWORKD_WRITE_ALL_H
#define SLOWWORKD_WRITE_ALL_H

#include <stddef.h>

/* Writes the n bytes of data to fd, again after EINTR and a short write: 0, or -errno. */
int write_all(int fd, const void *data, size_t n);

#endif
