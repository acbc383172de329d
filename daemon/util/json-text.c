/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json-text.h"

/* Room for n more bytes and the NUL at the end: false when there is none to be had. */
static bool reserve(struct json_text *t, size_t n)
{
        size_t size;
        char *p;

        if (t->failed)
                return false;
        if (t->len + n + 1 <= t->size)
                return true;
        for (size = t->size ? t->size : 256; size < t->len + n + 1; size *= 2)
                ;
        p = realloc(t->s, size);
        if (!p) {
                t->failed = true;
                return false;
        }
        t->s = p;
        t->size = size;
        return true;
}

void json_text_raw(struct json_text *t, const char *s, size_t n)
{
        if (!reserve(t, n))
                return;
        memcpy(t->s + t->len, s, n);
        t->len += n;
}

/* A comma, unless the value is the first of its object or array, or a member's value. */
static void separate(struct json_text *t)
{
        char last = t->len > 0 ? t->s[t->len - 1] : '[';

        if (last != '{' && last != '[' && last != ':')
                json_text_raw(t, ",", 1);
}

void json_text_open(struct json_text *t, char c)
{
        separate(t);
        json_text_raw(t, &c, 1);
}

void json_text_close(struct json_text *t, char c)
{
        json_text_raw(t, &c, 1);
}

/* s quoted: '"', '\\' and control characters escaped, the rest (UTF-8) as it is. */
static void quoted(struct json_text *t, const char *s)
{
        size_t n = strlen(s), i;
        char *p;

        if (!reserve(t, 6 * n + 2))
                return;
        p = t->s + t->len;
        *p++ = '"';
        for (i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c >= 0x20 && c != '"' && c != '\\') {
                        *p++ = (char)c;
                } else if (c == '"' || c == '\\') {
                        *p++ = '\\';
                        *p++ = (char)c;
                } else if (c == '\n') {
                        *p++ = '\\';
                        *p++ = 'n';
                } else if (c == '\t') {
                        *p++ = '\\';
                        *p++ = 't';
                } else {
                        snprintf(p, 7, "\\u%04x", c);
                        p += 6;
                }
        }
        *p++ = '"';
        t->len = (size_t)(p - t->s);
}

void json_text_name(struct json_text *t, const char *name)
{
        separate(t);
        quoted(t, name);
        json_text_raw(t, ":", 1);
}

void json_text_string(struct json_text *t, const char *s)
{
        separate(t);
        quoted(t, s);
}

void json_text_int(struct json_text *t, int64_t v)
{
        uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
        char buf[24], *p = buf + sizeof(buf);

        do
                *--p = (char)('0' + u % 10);
        while ((u /= 10) > 0);
        if (v < 0)
                *--p = '-';
        separate(t);
        json_text_raw(t, p, (size_t)(buf + sizeof(buf) - p));
}

void json_text_double(struct json_text *t, double v)
{
        char buf[32];

        separate(t);
        json_text_raw(t, buf, (size_t)snprintf(buf, sizeof(buf), "%.17g", v));
}

char *json_text_end(struct json_text *t)
{
        if (!reserve(t, 0)) {
                free(t->s);
                t->s = NULL;
                return NULL;
        }
        t->s[t->len] = '\0';
        return t->s;
}
