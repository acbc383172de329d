/* SPDX-License-Identifier: MIT */
/* The last lines of a text that comes piece by piece, as tail -n keeps them (log --lines). */
#ifndef SLOWCTL_TAIL_H
#define SLOWCTL_TAIL_H

#include <stddef.h>
#include <stdint.h>

struct tail {
        int64_t lines; /* how many to keep; a last line without its newline counts */
        char *buf;     /* NUL-terminated once anything was added */
        size_t len, size;
};

/* Adds a piece, and lets go of what came before the last lines. 0 or -ENOMEM. */
int tail_add(struct tail *t, const char *data, size_t len);
/* The last lines so far ("" when none). */
const char *tail_text(const struct tail *t);
void tail_clear(struct tail *t);

#endif
