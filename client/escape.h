/* SPDX-License-Identifier: MIT */
/*
 * What slowctl writes of the daemon's data where a person reads it, with no byte a terminal would
 * act on: a job's name, command or output could otherwise set the window's title, clear the
 * screen or write the clipboard of whoever looks (an admin's, for the system instance's jobs).
 *
 * The rule, for every human-format output (slowctl(1), CONTROL CHARACTERS): \a \b \t \n \v \f
 * \r and ESC are shown as \a \b \t \n \v \f \r \e; the other C0 controls and DEL as \xHH (\x01,
 * \x7f); the C1 controls U+0080..U+009F as \u0080..\u009f; a byte that is not part of valid UTF-8
 * as \xHH. Everything else, backslashes too, is written as it is: this is for reading, not for
 * parsing back (--json is exact). A log and the metrics keep their newlines and tabs, and are
 * escaped only on a terminal (they are for programs too).
 */
#ifndef SLOWCTL_ESCAPE_H
#define SLOWCTL_ESCAPE_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>

enum {
        ESCAPE_KEEP_LINES = 1u << 0, /* \n and \t as they are: a log's or the metrics' text */
};

/* Writes len bytes of s to f, the controls escaped. */
void escape_write(FILE *f, const char *s, size_t len, unsigned flags);
/* The same into a new string (NULL s: "-"); NULL when out of memory. */
char *escape_dup(const char *s, unsigned flags);
/* printf's text, escaped whole (the format has no control of its own), then a newline. */
__attribute__((format(printf, 2, 3))) void escape_linef(FILE *f, const char *fmt, ...);
/* The same without the newline (error messages). */
__attribute__((format(printf, 2, 0))) void escape_vprintf(FILE *f, const char *fmt, va_list ap);

#endif
