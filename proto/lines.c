/* SPDX-License-Identifier: MIT */
/*
 * The line splitter. From start, buf holds the complete lines not yet taken, each a tag byte,
 * its bytes and its newline, or a lone drop tag where an oversized line was; from partial, the
 * incomplete line's tag and bytes. The tags keep a dropped line in its place among the others,
 * however the stream was cut into pushes, while the dropped bytes themselves are never held.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

#define TAG_LINE    'L'
#define TAG_DROPPED 'X'
#define BUF_MIN     4096
#define BUF_KEEP    (64 * 1024) /* an empty buffer larger than this is freed */

void sw_lines_init_max(struct sw_lines *l, size_t max)
{
        memset(l, 0, sizeof(*l));
        l->max = max;
}

void sw_lines_init(struct sw_lines *l)
{
        sw_lines_init_max(l, SW_LINE_MAX);
}

void sw_lines_free(struct sw_lines *l)
{
        free(l->buf);
        sw_lines_init_max(l, l->max);
}

size_t sw_lines_pending(const struct sw_lines *l)
{
        return l->len > l->partial ? l->len - l->partial - 1 : 0;
}

/* Room for n more bytes: first by moving out what was taken, then by doubling. */
static int reserve(struct sw_lines *l, size_t n)
{
        size_t size;
        char *buf;

        if (l->size - l->len >= n)
                return 0;
        if (l->start > 0) {
                memmove(l->buf, l->buf + l->start, l->len - l->start);
                l->len -= l->start;
                l->partial -= l->start;
                l->start = 0;
                if (l->size - l->len >= n)
                        return 0;
        }
        size = l->size ? l->size : BUF_MIN;
        while (size - l->len < n) {
                if (size > SIZE_MAX / 2)
                        return -ENOMEM;
                size *= 2;
        }
        buf = realloc(l->buf, size);
        if (!buf)
                return -ENOMEM;
        l->buf = buf;
        l->size = size;
        return 0;
}

int sw_lines_push(struct sw_lines *l, const char *data, size_t n)
{
        while (n > 0) {
                const char *nl = memchr(data, '\n', n);
                size_t seg = nl ? (size_t)(nl - data) : n; /* the bytes before the newline */
                int r;

                if (l->discarding) {
                        l->discarding = !nl;
                } else if (sw_lines_pending(l) + seg > l->max) {
                        l->len = l->partial;
                        r = reserve(l, 1);
                        if (r < 0)
                                return r;
                        l->buf[l->len++] = TAG_DROPPED;
                        l->partial = l->len;
                        l->discarding = !nl;
                } else {
                        r = reserve(l, seg + 2);
                        if (r < 0)
                                return r;
                        if (l->len == l->partial)
                                l->buf[l->len++] = TAG_LINE;
                        memcpy(l->buf + l->len, data, seg);
                        l->len += seg;
                        if (nl) {
                                l->buf[l->len++] = '\n';
                                l->partial = l->len;
                        }
                }
                if (!nl)
                        break;
                data = nl + 1;
                n -= seg + 1;
        }
        return 0;
}

int sw_lines_finish(struct sw_lines *l)
{
        if (l->discarding || l->len > l->partial)
                return sw_lines_push(l, "\n", 1);
        return 0;
}

static bool blank(const char *s, size_t n)
{
        size_t i;

        for (i = 0; i < n; i++)
                if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
                        return false;
        return true;
}

int sw_lines_next(struct sw_lines *l, char **ret_line, size_t *ret_len)
{
        char *line, *nl;

        while (l->start < l->partial) {
                if (l->buf[l->start] == TAG_DROPPED) {
                        l->start++;
                        return -E2BIG;
                }
                line = l->buf + l->start + 1;
                nl = memchr(line, '\n', l->partial - l->start - 1);
                *nl = '\0';
                l->start = (size_t)(nl + 1 - l->buf);
                if (!blank(line, (size_t)(nl - line))) {
                        *ret_line = line;
                        *ret_len = (size_t)(nl - line);
                        return 1;
                }
        }
        if (l->start == l->len) {
                l->start = l->partial = l->len = 0;
                if (l->size > BUF_KEEP) {
                        free(l->buf);
                        l->buf = NULL;
                        l->size = 0;
                }
        }
        return 0;
}
