/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json-text.h"

void json_text_raw(struct json_text *t, const char *s, size_t n)
{
        if (t->failed)
                return;
        if (t->len + n + 1 > t->size) {
                size_t size = t->size ? t->size : 256;
                char *p;

                while (size < t->len + n + 1)
                        size *= 2;
                p = realloc(t->s, size);
                if (!p) {
                        t->failed = true;
                        return;
                }
                t->s = p;
                t->size = size;
        }
        memcpy(t->s + t->len, s, n);
        t->len += n;
        t->s[t->len] = '\0';
}

/* A comma, unless the value is the first of its object or array. */
static void separate(struct json_text *t)
{
        if (t->len > 0 && t->s[t->len - 1] != '{' && t->s[t->len - 1] != '[' &&
            t->s[t->len - 1] != ':')
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
        const char *run = s;
        char esc[8];

        json_text_raw(t, "\"", 1);
        for (; *s; s++) {
                unsigned char c = (unsigned char)*s;

                if (c >= 0x20 && c != '"' && c != '\\')
                        continue;
                json_text_raw(t, run, (size_t)(s - run));
                run = s + 1;
                if (c == '"' || c == '\\') {
                        esc[0] = '\\';
                        esc[1] = (char)c;
                        json_text_raw(t, esc, 2);
                } else if (c == '\n') {
                        json_text_raw(t, "\\n", 2);
                } else if (c == '\t') {
                        json_text_raw(t, "\\t", 2);
                } else {
                        snprintf(esc, sizeof(esc), "\\u%04x", c);
                        json_text_raw(t, esc, 6);
                }
        }
        json_text_raw(t, run, (size_t)(s - run));
        json_text_raw(t, "\"", 1);
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
        if (!t->failed && !t->s)
                json_text_raw(t, "", 0);
        if (t->failed) {
                free(t->s);
                t->s = NULL;
        }
        return t->s;
}
