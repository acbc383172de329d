/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORK_PROTO_ERROR_INTERNAL_H
#define SLOWWORK_PROTO_ERROR_INTERNAL_H

#include <stddef.h>

/* Writes the message into errbuf (when there is one) and returns code. */
int proto_error(char *errbuf, size_t errlen, int code, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)));

#endif
