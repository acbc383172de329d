/* SPDX-License-Identifier: MIT */
/* The daemon's data made safe for a terminal: one rule for all of slowctl's human output. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"

/* Length of the valid UTF-8 sequence at s (2..4; no overlong form, surrogate or code point past
 * U+10FFFF), or 0. */
static size_t utf8_length(const unsigned char *s, size_t n)
{
        unsigned char lo = 0x80, hi = 0xbf;
        size_t len;

        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4;
        else
                return 0;
        if (s[0] == 0xe0)
                lo = 0xa0;
        else if (s[0] == 0xed)
                hi = 0x9f;
        else if (s[0] == 0xf0)
                lo = 0x90;
        else if (s[0] == 0xf4)
                hi = 0x8f;
        if (n < len || s[1] < lo || s[1] > hi)
                return 0;
        for (size_t i = 2; i < len; i++)
                if (s[i] < 0x80 || s[i] > 0xbf)
                        return 0;
        return len;
}

/* The escape for the C0 control or DEL c into buf. */
static const char *control_escape(unsigned char c, char buf[8])
{
        static const char named[] = {['\a'] = 'a', ['\b'] = 'b', ['\t'] = 't', ['\n'] = 'n',
                                     ['\v'] = 'v', ['\f'] = 'f', ['\r'] = 'r', [0x1b] = 'e'};

        if (c < sizeof(named) && named[c])
                snprintf(buf, 8, "\\%c", named[c]);
        else
                snprintf(buf, 8, "\\x%02x", c);
        return buf;
}

void escape_write(FILE *f, const char *s, size_t len, unsigned flags)
{
        const unsigned char *p = (const unsigned char *)s, *plain = p, *end = p + len;
        char buf[8];

        while (p < end) {
                const char *esc = NULL;
                size_t n = 1;

                if (*p < 0x20 || *p == 0x7f) {
                        if (!(flags & ESCAPE_KEEP_LINES) || (*p != '\n' && *p != '\t'))
                                esc = control_escape(*p, buf);
                } else if (*p >= 0x80) {
                        n = utf8_length(p, (size_t)(end - p));
                        if (n == 0) {
                                n = 1;
                                esc = control_escape(*p, buf); /* \xHH */
                        } else if (p[0] == 0xc2 && p[1] <= 0x9f) {
                                snprintf(buf, sizeof(buf), "\\u%04x", p[1]);
                                esc = buf;
                        }
                }
                if (esc) {
                        fwrite(plain, 1, (size_t)(p - plain), f);
                        fputs(esc, f);
                        plain = p + n;
                }
                p += n;
        }
        fwrite(plain, 1, (size_t)(p - plain), f);
}

char *escape_dup(const char *s, unsigned flags)
{
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);

        if (!f)
                return NULL;
        s = s ? s : "-";
        escape_write(f, s, strlen(s), flags);
        if (fclose(f) != 0) {
                free(out);
                return NULL;
        }
        return out;
}

void escape_vprintf(FILE *f, const char *fmt, va_list ap)
{
        char *text;
        int n = vasprintf(&text, fmt, ap);

        if (n < 0) {
                fputs("(out of memory)", f);
                return;
        }
        escape_write(f, text, (size_t)n, 0);
        free(text);
}

void escape_linef(FILE *f, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        escape_vprintf(f, fmt, ap);
        va_end(ap);
        fputc('\n', f);
}
