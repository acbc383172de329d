/* SPDX-License-Identifier: MIT */
/* Error codes: their errno-style names, and the code for a handler's negative errno. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stddef.h>

#include "error-internal.h"
#include "proto.h"

const char *sw_error_name(int code)
{
        switch (code) {
        case SW_E_PARSE:
                return "EBADMSG";
        case SW_E_INVALID_REQUEST:
                return "EPROTO";
        case SW_E_NO_METHOD:
                return "ENOSYS";
        case SW_E_INVALID_PARAMS:
                return "EINVAL";
        case SW_E_INTERNAL:
                return "EIO";
        case SW_E_NOT_FOUND:
                return "ENOENT";
        case SW_E_PERMISSION:
                return "EPERM";
        case SW_E_CONFLICT:
                return "EEXIST";
        case SW_E_BUSY:
                return "EBUSY";
        case SW_E_TOO_LARGE:
                return "E2BIG";
        default:
                return NULL;
        }
}

int sw_error_from_errno(int negative_errno)
{
        switch (negative_errno) {
        case -ENOENT:
                return SW_E_NOT_FOUND;
        case -EPERM:
        case -EACCES:
                return SW_E_PERMISSION;
        case -EEXIST:
                return SW_E_CONFLICT;
        case -EBUSY:
                return SW_E_BUSY;
        case -E2BIG:
        case -EMSGSIZE:
                return SW_E_TOO_LARGE;
        case -EINVAL:
                return SW_E_INVALID_PARAMS;
        default:
                return SW_E_INTERNAL;
        }
}

int proto_error(char *errbuf, size_t errlen, int code, const char *fmt, ...)
{
        va_list ap;

        if (errbuf && errlen > 0) {
                va_start(ap, fmt);
                vsnprintf(errbuf, errlen, fmt, ap);
                va_end(ap);
        }
        return code;
}
