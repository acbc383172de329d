/* SPDX-License-Identifier: MIT */
/*
 * json-c's objects as text, into one buffer: the same bytes json_object_to_json_string_ext()
 * writes with JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, without its buffer per
 * object and its printf per number. A double is json-c's own text (it keeps how it was written).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"

/* Room for n more bytes: false when there is none to be had. */
static bool reserve(struct sw_text *t, size_t n)
{
        size_t size;
        char *s;

        if (t->failed)
                return false;
        if (t->len + n <= t->size)
                return true;
        for (size = t->size ? t->size : 128; size < t->len + n; size *= 2)
                ;
        s = t->borrowed ? malloc(size) : realloc(t->s, size);
        if (!s) {
                t->failed = true;
                return false;
        }
        if (t->borrowed)
                memcpy(s, t->s, t->len);
        t->s = s;
        t->size = size;
        t->borrowed = false;
        return true;
}

void sw_text_start(struct sw_text *t, char *buf, size_t size)
{
        *t = (struct sw_text){.s = buf, .size = size, .borrowed = true};
}

void sw_text_raw(struct sw_text *t, const char *s, size_t n)
{
        if (!reserve(t, n))
                return;
        memcpy(t->s + t->len, s, n);
        t->len += n;
}

/* s[0, n) quoted as json-c quotes it: the short escapes, \u00xx for the other control bytes. */
static void quoted(struct sw_text *t, const char *s, size_t n)
{
        static const char hex[] = "0123456789abcdef";
        size_t i;
        char *p;

        if (!reserve(t, 6 * n + 2))
                return;
        p = t->s + t->len;
        *p++ = '"';
        for (i = 0; i < n; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c >= 0x20 && c != '"' && c != '\\') {
                        *p++ = (char)c;
                        continue;
                }
                *p++ = '\\';
                switch (c) {
                case '"':
                case '\\':
                        *p++ = (char)c;
                        break;
                case '\b':
                        *p++ = 'b';
                        break;
                case '\f':
                        *p++ = 'f';
                        break;
                case '\n':
                        *p++ = 'n';
                        break;
                case '\r':
                        *p++ = 'r';
                        break;
                case '\t':
                        *p++ = 't';
                        break;
                default:
                        memcpy(p, "u00", 3);
                        p[3] = hex[c >> 4];
                        p[4] = hex[c & 0xf];
                        p += 5;
                }
        }
        *p++ = '"';
        t->len = (size_t)(p - t->s);
}

/* The digits of u, after a '-' when negative. */
static void digits(struct sw_text *t, uint64_t u, bool negative)
{
        char buf[24], *p = buf + sizeof(buf);

        do
                *--p = (char)('0' + u % 10);
        while ((u /= 10) > 0);
        if (negative)
                *--p = '-';
        sw_text_raw(t, p, (size_t)(buf + sizeof(buf) - p));
}

void sw_text_int(struct sw_text *t, int64_t i)
{
        digits(t, i < 0 ? 0 - (uint64_t)i : (uint64_t)i, i < 0);
}

void sw_text_string(struct sw_text *t, const char *s)
{
        quoted(t, s, strlen(s));
}

/* An integer as json-c writes it: int64, or uint64 above INT64_MAX. */
static void integer(struct sw_text *t, json_object *v)
{
        int64_t i = json_object_get_int64(v);

        if (i == INT64_MAX)
                digits(t, json_object_get_uint64(v), false);
        else
                sw_text_int(t, i);
}

void sw_text_value(struct sw_text *t, json_object *v)
{
        const char *s;
        size_t i, n;
        bool first = true;

        switch (json_object_get_type(v)) {
        case json_type_null:
                sw_text_raw(t, "null", 4);
                break;
        case json_type_boolean:
                if (json_object_get_boolean(v))
                        sw_text_raw(t, "true", 4);
                else
                        sw_text_raw(t, "false", 5);
                break;
        case json_type_int:
                integer(t, v);
                break;
        case json_type_string:
                quoted(t, json_object_get_string(v), (size_t)json_object_get_string_len(v));
                break;
        case json_type_array:
                sw_text_raw(t, "[", 1);
                n = json_object_array_length(v);
                for (i = 0; i < n; i++) {
                        if (i > 0)
                                sw_text_raw(t, ",", 1);
                        sw_text_value(t, json_object_array_get_idx(v, i));
                }
                sw_text_raw(t, "]", 1);
                break;
        case json_type_object:
                sw_text_raw(t, "{", 1);
                json_object_object_foreach(v, key, member)
                {
                        if (!first)
                                sw_text_raw(t, ",", 1);
                        first = false;
                        quoted(t, key, strlen(key));
                        sw_text_raw(t, ":", 1);
                        sw_text_value(t, member);
                }
                sw_text_raw(t, "}", 1);
                break;
        default: /* a double: json-c's text of it */
                s = json_object_to_json_string_ext(
                    v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
                if (s)
                        sw_text_raw(t, s, strlen(s));
                else
                        t->failed = true;
        }
}

char *sw_text_end(struct sw_text *t)
{
        char *s;

        sw_text_raw(t, "", 1);
        if (t->failed) {
                if (!t->borrowed)
                        free(t->s);
                return NULL;
        }
        if (!t->borrowed)
                return t->s;
        s = malloc(t->len);
        if (s)
                memcpy(s, t->s, t->len);
        return s;
}
