/* SPDX-License-Identifier: MIT */
/* The last lines of a text that comes piece by piece. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tail.h"

/* Where the last t->lines lines of the buffer begin. */
static size_t last_lines_start(const struct tail *t)
{
        size_t i = t->len;
        int64_t found = 0;

        if (t->lines <= 0)
                return t->len;
        if (i > 0 && t->buf[i - 1] == '\n')
                i--; /* the last line's own newline */
        while (i > 0) {
                if (t->buf[i - 1] == '\n' && ++found == t->lines)
                        return i;
                i--;
        }
        return 0;
}

int tail_add(struct tail *t, const char *data, size_t len)
{
        size_t start;

        if (t->len + len + 1 > t->size) {
                size_t size = 2 * (t->len + len + 1);
                char *buf = realloc(t->buf, size);

                if (!buf)
                        return -ENOMEM;
                t->buf = buf;
                t->size = size;
        }
        memcpy(t->buf + t->len, data, len);
        t->len += len;
        start = last_lines_start(t);
        memmove(t->buf, t->buf + start, t->len - start);
        t->len -= start;
        t->buf[t->len] = '\0';
        return 0;
}

const char *tail_text(const struct tail *t)
{
        return t->buf ? t->buf : "";
}

void tail_clear(struct tail *t)
{
        free(t->buf);
        t->buf = NULL;
        t->len = t->size = 0;
}
