/* SPDX-License-Identifier: MIT */
/*
 * JSON by RFC 8259, read in one pass into json-c's objects: json-c's own reader, even in strict
 * mode, takes NaN, Infinity, "-01", "1.", "2.e3", single quotes and raw control characters in
 * strings, turns a lone surrogate escape into U+FFFD, and of two members with one name keeps the
 * last; it also switches the thread's locale twice per text. The scan also finds what the
 * protocol needs and json-c hides: duplicate names, at every depth, and where the top-level "id"
 * is written, so that an id json-c would change is refused. The values it makes are those
 * json-c's reader would make of the same text (numbers included: see number()), but for one
 * json-c 0.16 bug: an escaped surrogate pair for U+xD800 to U+xDFFF (U+1D800, U+2D800, ...)
 * is that character here, not U+FFFD. What reads a protocol line again reads it here too
 * (sw_json_read()), so that both readings agree.
 */
#define _GNU_SOURCE /* strtod_l */
#include <errno.h>
#include <json-c/json.h>
#include <locale.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error-internal.h"
#include "json-internal.h"
#include "proto.h"

#define DEPTH_MAX JSON_TOKENER_DEFAULT_DEPTH /* json-c's own limit: the scan goes no deeper */

size_t proto_utf8_char(const unsigned char *s, size_t n)
{
        unsigned c = s[0];
        size_t len, i;
        unsigned long cp;

        if (c < 0x80)
                return 1;
        if (c < 0xc2)
                return 0;
        if (c < 0xe0) {
                len = 2;
                cp = c & 0x1f;
        } else if (c < 0xf0) {
                len = 3;
                cp = c & 0x0f;
        } else if (c < 0xf5) {
                len = 4;
                cp = c & 0x07;
        } else {
                return 0;
        }
        if (n < len)
                return 0;
        for (i = 1; i < len; i++) {
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = cp << 6 | (s[i] & 0x3f);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff))
                return 0;
        return len;
}

/* A member name of an open object: in the text, or decoded (it had escapes) in the buffer. */
struct name {
        size_t off, len;
        size_t at; /* where its string starts in the text */
        bool decoded;
        const char *p; /* for sorting */
};

#define NO_KEY ((size_t)-1) /* an object's member name, before its first */

struct frame {
        bool object;
        size_t first_name; /* the object's names are name[first_name..nnames) */
        size_t buf_mark;
        json_object *obj; /* building: the object or array */
        size_t key;       /* building, an object: its member's name, NUL-ended, in buf */
};

/* A scanner's first storage, on its caller's stack: most texts need no more. */
struct scanner_here {
        struct name name[16];
        char buf[256];
};

struct scanner {
        const char *s;
        size_t n, pos;
        bool names;
        int names_error; /* a name the protocol refuses: reported only if the text is JSON */
        struct name *name; /* here->name until there are more */
        size_t nnames, names_size;
        char *buf; /* here->buf until it takes more */
        size_t buf_len, buf_size;
        struct scanner_here *here;
        char *errbuf;
        size_t errlen;
        bool build;        /* json-c's objects are made of the values */
        json_object *root; /* building: the value, which holds the rest */
        struct proto_json_members *members; /* building: a top-level object's members, if set */
        const char *const *member_names;    /* the names of those kept */
        json_object *discard;               /* the values of the others */
};

#define fail(sc, ...)                                                                              \
        proto_error((sc)->errbuf, (sc)->errlen, SW_E_PARSE, "invalid JSON: " __VA_ARGS__)

static void skip_space(struct scanner *sc)
{
        while (sc->pos < sc->n && (sc->s[sc->pos] == ' ' || sc->s[sc->pos] == '\t' ||
                                   sc->s[sc->pos] == '\n' || sc->s[sc->pos] == '\r'))
                sc->pos++;
}

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* The four hex digits at s[at], or -1. */
static long hex4(const struct scanner *sc, size_t at)
{
        long v = 0;
        size_t i;

        if (sc->n - at < 4)
                return -1;
        for (i = at; i < at + 4; i++) {
                char c = sc->s[i];

                v <<= 4;
                if (is_digit(c))
                        v |= c - '0';
                else if (c >= 'a' && c <= 'f')
                        v |= c - 'a' + 10;
                else if (c >= 'A' && c <= 'F')
                        v |= c - 'A' + 10;
                else
                        return -1;
        }
        return v;
}

/* The code point of the \u escape at pos (its backslash), and its length in *ret_len: a
 * surrogate must be the first of a pair. -1 after setting the error. */
static long unicode_escape(struct scanner *sc, size_t pos, size_t *ret_len)
{
        long hi = hex4(sc, pos + 2), lo;

        if (hi < 0) {
                fail(sc, "\\u needs four hex digits at byte %zu", pos);
                return -1;
        }
        *ret_len = 6;
        if (hi < 0xd800 || hi > 0xdfff)
                return hi;
        if (hi >= 0xdc00 || sc->n - pos < 12 || sc->s[pos + 6] != '\\' || sc->s[pos + 7] != 'u' ||
            (lo = hex4(sc, pos + 8)) < 0xdc00 || lo > 0xdfff) {
                fail(sc, "lone surrogate \\u%04lX at byte %zu", hi, pos);
                return -1;
        }
        *ret_len = 12;
        return 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
}

/* The string at pos (its quote), up to its closing quote; *ret_escaped when it has escapes. */
static int scan_string(struct scanner *sc, bool *ret_escaped)
{
        size_t start = sc->pos, k;
        bool escaped = false;

        sc->pos++;
        for (;;) {
                unsigned char c;

                if (sc->pos >= sc->n)
                        return fail(sc, "unterminated string from byte %zu", start);
                c = (unsigned char)sc->s[sc->pos];
                if (c == '"')
                        break;
                if (c < 0x20)
                        return fail(sc, "control character 0x%02x in a string at byte %zu", c,
                                    sc->pos);
                if (c >= 0x80) {
                        k = proto_utf8_char((const unsigned char *)sc->s + sc->pos,
                                            sc->n - sc->pos);
                        if (k == 0)
                                return fail(sc, "invalid UTF-8 at byte %zu", sc->pos);
                        sc->pos += k;
                        continue;
                }
                if (c != '\\') {
                        sc->pos++;
                        continue;
                }
                escaped = true;
                if (sc->pos + 1 >= sc->n)
                        return fail(sc, "unterminated string from byte %zu", start);
                switch (sc->s[sc->pos + 1]) {
                case '"':
                case '\\':
                case '/':
                case 'b':
                case 'f':
                case 'n':
                case 'r':
                case 't':
                        sc->pos += 2;
                        break;
                case 'u':
                        if (unicode_escape(sc, sc->pos, &k) < 0)
                                return SW_E_PARSE;
                        sc->pos += k;
                        break;
                default:
                        return fail(sc, "invalid escape at byte %zu", sc->pos);
                }
        }
        sc->pos++;
        *ret_escaped = escaped;
        return 0;
}

/* Storage of n bytes for *p, which holds used bytes and is here (in the scanner) or on the heap. */
static void *grow(void *p, const void *here, size_t used, size_t n)
{
        void *q = p == here ? malloc(n) : realloc(p, n);

        if (q && p == here)
                memcpy(q, p, used);
        return q;
}

static int buf_reserve(struct scanner *sc, size_t n)
{
        size_t size = sc->buf_size;
        char *buf;

        if (sc->buf_size - sc->buf_len >= n)
                return 0;
        while (size - sc->buf_len < n)
                size *= 2;
        buf = grow(sc->buf, sc->here->buf, sc->buf_len, size);
        if (!buf)
                return proto_error(sc->errbuf, sc->errlen, -ENOMEM, "out of memory");
        sc->buf = buf;
        sc->buf_size = size;
        return 0;
}

/* Appends the value of the valid string s[from, to) (quotes excluded) to the buffer. */
static int decode(struct scanner *sc, size_t from, size_t to, bool *ret_nul)
{
        static const char plain[] = "\"\\/bfnrt", meant[] = "\"\\/\b\f\n\r\t";
        size_t i = from, k;
        char *out;
        long cp;
        int r;

        r = buf_reserve(sc, to - from); /* no escape is shorter than what it stands for */
        if (r)
                return r;
        out = sc->buf + sc->buf_len;
        while (i < to) {
                if (sc->s[i] != '\\') {
                        *out++ = sc->s[i++];
                        continue;
                }
                if (sc->s[i + 1] != 'u') {
                        *out++ = meant[strchr(plain, sc->s[i + 1]) - plain];
                        i += 2;
                        continue;
                }
                cp = unicode_escape(sc, i, &k);
                i += k;
                if (cp == 0)
                        *ret_nul = true;
                if (cp < 0x80) {
                        *out++ = (char)cp;
                } else if (cp < 0x800) {
                        *out++ = (char)(0xc0 | cp >> 6);
                        *out++ = (char)(0x80 | (cp & 0x3f));
                } else if (cp < 0x10000) {
                        *out++ = (char)(0xe0 | cp >> 12);
                        *out++ = (char)(0x80 | (cp >> 6 & 0x3f));
                        *out++ = (char)(0x80 | (cp & 0x3f));
                } else {
                        *out++ = (char)(0xf0 | cp >> 18);
                        *out++ = (char)(0x80 | (cp >> 12 & 0x3f));
                        *out++ = (char)(0x80 | (cp >> 6 & 0x3f));
                        *out++ = (char)(0x80 | (cp & 0x3f));
                }
        }
        sc->buf_len = (size_t)(out - sc->buf);
        return 0;
}

/* Notes the first name the protocol refuses, and stops looking at names: a text that is not
 * JSON must still be a parse error, whatever its names. */
static int names_refused(struct scanner *sc, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

static int names_refused(struct scanner *sc, const char *fmt, ...)
{
        va_list ap;

        if (sc->errbuf && sc->errlen > 0) {
                va_start(ap, fmt);
                vsnprintf(sc->errbuf, sc->errlen, fmt, ap);
                va_end(ap);
        }
        sc->names = false;
        sc->names_error = SW_E_INVALID_REQUEST;
        sc->build = false; /* what was made goes with the text */
        return 0;
}

/* A member name at pos, kept among the open objects' names. */
static int scan_name(struct scanner *sc, struct name *ret)
{
        size_t at = sc->pos;
        bool escaped, nul = false;
        int r;

        r = scan_string(sc, &escaped);
        if (r || !sc->names)
                return r;
        *ret = (struct name){.off = at + 1, .len = sc->pos - at - 2, .at = at};
        if (!escaped)
                return 0;
        ret->off = sc->buf_len;
        ret->decoded = true;
        r = decode(sc, at + 1, sc->pos - 1, &nul);
        if (r)
                return r;
        ret->len = sc->buf_len - ret->off;
        if (nul)
                return names_refused(sc, "member name with a NUL byte at byte %zu", at);
        return 0;
}

static int add_name(struct scanner *sc, const struct name *name)
{
        size_t size = 2 * sc->names_size;
        struct name *names;

        if (sc->nnames == sc->names_size) {
                names = grow(sc->name, sc->here->name, sc->nnames * sizeof(*names),
                             size * sizeof(*names));
                if (!names)
                        return proto_error(sc->errbuf, sc->errlen, -ENOMEM, "out of memory");
                sc->name = names;
                sc->names_size = size;
        }
        sc->name[sc->nnames++] = *name;
        return 0;
}

static int name_cmp(const void *a, const void *b)
{
        const struct name *x = a, *y = b;
        int c = memcmp(x->p, y->p, x->len < y->len ? x->len : y->len);

        if (c)
                return c;
        if (x->len != y->len)
                return x->len < y->len ? -1 : 1;
        return x->at < y->at ? -1 : 1;
}

/* The second of two members with one name: the later one, as the sort puts it. */
static int duplicate(struct scanner *sc, const struct name *name)
{
        return names_refused(sc, "duplicate member \"%.*s\" at byte %zu",
                             (int)(name->len < 64 ? name->len : 64), name->p, name->at);
}

#define NAMES_PAIRWISE 8

/* At the end of the object whose names begin at first: no name twice. */
static int check_names(struct scanner *sc, size_t first)
{
        struct name *v = sc->name + first;
        size_t n = sc->nnames - first, i, j;

        for (i = 0; i < n; i++)
                v[i].p = v[i].decoded ? sc->buf + v[i].off : sc->s + v[i].off;
        /* A few names (a request's) are compared pairwise, sooner than sorted. */
        if (n <= NAMES_PAIRWISE) {
                for (i = 1; i < n; i++)
                        for (j = 0; j < i; j++)
                                if (v[i].len == v[j].len && memcmp(v[i].p, v[j].p, v[i].len) == 0)
                                        return duplicate(sc, &v[i]);
                return 0;
        }
        qsort(v, n, sizeof(*v), name_cmp);
        for (i = 1; i < n; i++)
                if (v[i].len == v[i - 1].len && memcmp(v[i].p, v[i - 1].p, v[i].len) == 0)
                        return duplicate(sc, &v[i]);
        return 0;
}

static int scan_number(struct scanner *sc)
{
        size_t start = sc->pos;
        const char *s = sc->s;

        if (s[sc->pos] == '-')
                sc->pos++;
        if (sc->pos < sc->n && s[sc->pos] == '0') {
                sc->pos++;
        } else if (sc->pos < sc->n && s[sc->pos] >= '1' && s[sc->pos] <= '9') {
                while (sc->pos < sc->n && is_digit(s[sc->pos]))
                        sc->pos++;
        } else {
                return fail(sc, "invalid number at byte %zu", start);
        }
        if (sc->pos < sc->n && s[sc->pos] == '.') {
                sc->pos++;
                if (sc->pos >= sc->n || !is_digit(s[sc->pos]))
                        return fail(sc, "invalid number at byte %zu", start);
                while (sc->pos < sc->n && is_digit(s[sc->pos]))
                        sc->pos++;
        }
        if (sc->pos < sc->n && (s[sc->pos] == 'e' || s[sc->pos] == 'E')) {
                sc->pos++;
                if (sc->pos < sc->n && (s[sc->pos] == '+' || s[sc->pos] == '-'))
                        sc->pos++;
                if (sc->pos >= sc->n || !is_digit(s[sc->pos]))
                        return fail(sc, "invalid number at byte %zu", start);
                while (sc->pos < sc->n && is_digit(s[sc->pos]))
                        sc->pos++;
        }
        return 0;
}

static int scan_word(struct scanner *sc)
{
        static const char *const words[] = {"true", "false", "null"};
        size_t i, k;

        for (i = 0; i < 3; i++) {
                k = strlen(words[i]);
                if (sc->n - sc->pos >= k && memcmp(sc->s + sc->pos, words[i], k) == 0) {
                        sc->pos += k;
                        return 0;
                }
        }
        return fail(sc, "unexpected character at byte %zu", sc->pos);
}

static int nomem(struct scanner *sc)
{
        return proto_error(sc->errbuf, sc->errlen, -ENOMEM, "out of memory");
}

/* The "C" locale's numbers, whatever the program's locale is (NULL: none to be had). */
static locale_t c_numeric;
static pthread_once_t c_numeric_once = PTHREAD_ONCE_INIT;

static void c_numeric_make(void)
{
        c_numeric = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* Building: the number from from to pos as json-c's reader makes it: an integer as int64, or as
 * uint64 above INT64_MAX, either clamped as strtoll() and strtoull() clamp; one with a fraction or
 * an exponent as a double that keeps its text. */
static int number(struct scanner *sc, size_t from, json_object **ret)
{
        size_t len = sc->pos - from;
        unsigned long long u;
        char *text;
        int r = buf_reserve(sc, len + 1);

        if (r)
                return r;
        text = sc->buf + sc->buf_len;
        memcpy(text, sc->s + from, len);
        text[len] = '\0';
        if (strpbrk(text, ".eE")) {
                pthread_once(&c_numeric_once, c_numeric_make);
                *ret = json_object_new_double_s(
                    c_numeric ? strtod_l(text, NULL, c_numeric) : strtod(text, NULL), text);
        } else if (text[0] == '-') {
                *ret = json_object_new_int64(strtoll(text, NULL, 10));
        } else {
                u = strtoull(text, NULL, 10);
                *ret = u <= INT64_MAX ? json_object_new_int64((int64_t)u)
                                      : json_object_new_uint64(u);
        }
        return *ret ? 0 : nomem(sc);
}

/* Building: the string from from (its quote) to pos. */
static int string_value(struct scanner *sc, size_t from, bool escaped, json_object **ret)
{
        size_t mark = sc->buf_len;
        bool nul = false;
        int r;

        if (!escaped) {
                *ret = json_object_new_string_len(sc->s + from + 1, (int)(sc->pos - from - 2));
        } else {
                r = decode(sc, from + 1, sc->pos - 1, &nul);
                if (r)
                        return r;
                *ret = json_object_new_string_len(sc->buf + mark, (int)(sc->buf_len - mark));
                sc->buf_len = mark;
        }
        return *ret ? 0 : nomem(sc);
}

/* Building: v (taken over) as the next member of the top-level object, which is not made. */
static int keep_member(struct scanner *sc, const struct frame *top, json_object *v)
{
        struct proto_json_members *m = sc->members;
        const char *name = sc->buf + top->key; /* a name with a NUL byte stops the building */
        size_t i;

        for (i = 0; sc->member_names[i] && strcmp(sc->member_names[i], name) != 0; i++)
                ;
        if (sc->member_names[i] && !m->has[i]) {
                m->has[i] = true;
                m->value[i] = v;
                return 0;
        }
        if (!sc->member_names[i] && !m->unknown) {
                m->unknown = true;
                snprintf(m->unknown_name, sizeof(m->unknown_name), "%s", name);
        }
        /* Not kept (a second of one name is refused at the object's end), but an array or
         * object is filled on as the scan goes: it goes at the end. */
        if (!sc->discard && !(sc->discard = json_object_new_array())) {
                json_object_put(v);
                return nomem(sc);
        }
        if (json_object_array_add(sc->discard, v)) {
                json_object_put(v);
                return nomem(sc);
        }
        return 0;
}

/* Building: v (taken over) as the value, or the next of the open array or object. */
static int attach(struct scanner *sc, struct frame *stack, size_t depth, json_object *v)
{
        struct frame *top;
        int r;

        if (depth == 0) {
                sc->root = v;
                return 0;
        }
        top = &stack[depth - 1];
        if (!top->obj)
                return keep_member(sc, top, v); /* only the envelope is not made */
        /* A name seen twice is refused at the object's end, and what was made with it. */
        r = top->object ? json_object_object_add_ex(top->obj, sc->buf + top->key, v,
                                                    JSON_C_OBJECT_ADD_KEY_IS_NEW)
                        : json_object_array_add(top->obj, v);
        if (r) {
                json_object_put(v);
                return nomem(sc);
        }
        return 0;
}

/* A scalar, or the opening of an array or object, at pos; building, made and attached. */
static int scan_value_start(struct scanner *sc, struct frame *stack, size_t *depth)
{
        size_t from = sc->pos;
        json_object *v = NULL;
        bool escaped = false;
        char c;
        int r;

        if (sc->pos >= sc->n)
                return fail(sc, "unexpected end of data at byte %zu", sc->pos);
        c = sc->s[sc->pos];
        /* json-c's reader takes a 32nd array or object only empty: no value is that deep. */
        if (*depth == DEPTH_MAX)
                return fail(sc, "nesting deeper than %d at byte %zu", DEPTH_MAX, sc->pos);
        if (c == '{' || c == '[') {
                if (sc->build && *depth == 0 && c == '{' && sc->members) {
                        sc->members->object = true;
                } else if (sc->build) {
                        v = c == '{' ? json_object_new_object() : json_object_new_array();
                        r = v ? attach(sc, stack, *depth, v) : nomem(sc);
                        if (r)
                                return r;
                }
                stack[(*depth)++] = (struct frame){.object = c == '{',
                                                   .first_name = sc->nnames,
                                                   .buf_mark = sc->buf_len,
                                                   .obj = v,
                                                   .key = NO_KEY};
                sc->pos++;
                return 0;
        }
        if (c == '"')
                r = scan_string(sc, &escaped);
        else if (c == '-' || is_digit(c))
                r = scan_number(sc);
        else
                r = scan_word(sc);
        if (r || !sc->build)
                return r;
        if (c == '"')
                r = string_value(sc, from, escaped, &v);
        else if (c == '-' || is_digit(c))
                r = number(sc, from, &v);
        else if (c != 'n' && !(v = json_object_new_boolean(c == 't')))
                r = nomem(sc);
        return r ? r : attach(sc, stack, *depth, v);
}

/* Building: the name, NUL-ended, at the end of the buffer (where *ret says). */
static int keep_key(struct scanner *sc, const struct name *name, size_t *ret)
{
        int r = buf_reserve(sc, name->len + 1);

        if (r)
                return r;
        memmove(sc->buf + sc->buf_len, name->decoded ? sc->buf + name->off : sc->s + name->off,
                name->len);
        sc->buf[sc->buf_len + name->len] = '\0';
        *ret = sc->buf_len;
        sc->buf_len += name->len + 1;
        return 0;
}

/* A member name and its colon; *ret_id when it is the top-level object's "id"; building, where
 * the name is kept in *ret_key. */
static int scan_member(struct scanner *sc, size_t depth, bool *ret_id, size_t *ret_key)
{
        struct name name;
        int r;

        if (sc->pos >= sc->n || sc->s[sc->pos] != '"')
                return fail(sc, "expected a member name at byte %zu", sc->pos);
        r = scan_name(sc, &name);
        if (r)
                return r;
        *ret_id = false;
        *ret_key = NO_KEY;
        if (sc->names) {
                r = add_name(sc, &name);
                if (!r && sc->build)
                        r = keep_key(sc, &name, ret_key);
                if (r)
                        return r;
                *ret_id =
                    depth == 1 && name.len == 2 &&
                    memcmp(name.decoded ? sc->buf + name.off : sc->s + name.off, "id", 2) == 0;
        }
        skip_space(sc);
        if (sc->pos >= sc->n || sc->s[sc->pos] != ':')
                return fail(sc, "expected ':' at byte %zu", sc->pos);
        sc->pos++;
        skip_space(sc);
        return 0;
}

enum step { VALUE, MEMBER, AFTER_VALUE };

static int scan(struct scanner *sc, struct proto_json_scan *ret)
{
        struct frame stack[DEPTH_MAX], *top;
        size_t depth = 0, before, id_at = 0;
        enum step step = VALUE;
        bool id_open = false;
        char close;
        int r;

        memset(ret, 0, sizeof(*ret));
        skip_space(sc);
        for (;;) {
                switch (step) {
                case VALUE:
                        if (id_open && depth == 1)
                                id_at = sc->pos;
                        before = depth;
                        r = scan_value_start(sc, stack, &depth);
                        if (r)
                                return r;
                        step = AFTER_VALUE;
                        if (depth == before)
                                break;
                        top = &stack[depth - 1];
                        skip_space(sc);
                        if (sc->pos < sc->n && sc->s[sc->pos] == (top->object ? '}' : ']')) {
                                sc->pos++; /* empty */
                                depth--;
                        } else {
                                step = top->object ? MEMBER : VALUE;
                        }
                        break;
                case MEMBER:
                        r = scan_member(sc, depth, &id_open, &stack[depth - 1].key);
                        if (r)
                                return r;
                        step = VALUE;
                        break;
                case AFTER_VALUE:
                        if (id_open && depth == 1) {
                                ret->id_at = id_at;
                                ret->id_len = sc->pos - id_at;
                                id_open = false;
                        }
                        skip_space(sc);
                        if (depth == 0) {
                                if (sc->pos < sc->n)
                                        return fail(sc, "characters after the value at byte %zu",
                                                    sc->pos);
                                return sc->names_error;
                        }
                        top = &stack[depth - 1];
                        close = top->object ? '}' : ']';
                        if (sc->pos >= sc->n)
                                return fail(sc, "unexpected end of data at byte %zu", sc->pos);
                        if (sc->s[sc->pos] == ',') {
                                sc->pos++;
                                skip_space(sc);
                                step = top->object ? MEMBER : VALUE;
                                break;
                        }
                        if (sc->s[sc->pos] != close)
                                return fail(sc, "expected ',' or '%c' at byte %zu", close, sc->pos);
                        if (top->object && sc->names) {
                                r = check_names(sc, top->first_name);
                                if (r)
                                        return r;
                                sc->nnames = top->first_name;
                                sc->buf_len = top->buf_mark;
                        }
                        sc->pos++;
                        depth--;
                        break;
                }
        }
}

static void scanner_use(struct scanner *sc, struct scanner_here *here)
{
        sc->here = here;
        sc->name = here->name;
        sc->names_size = sizeof(here->name) / sizeof(here->name[0]);
        sc->buf = here->buf;
        sc->buf_size = sizeof(here->buf);
}

static void scanner_free(struct scanner *sc)
{
        if (sc->name != sc->here->name)
                free(sc->name);
        if (sc->buf != sc->here->buf)
                free(sc->buf);
}

int proto_json_scan(const char *text, size_t len, bool names, struct proto_json_scan *ret,
                    char *errbuf, size_t errlen)
{
        struct scanner sc = {
            .s = text, .n = len, .names = names, .errbuf = errbuf, .errlen = errlen};
        struct scanner_here here;
        struct proto_json_scan info;
        int r;

        scanner_use(&sc, &here);
        r = scan(&sc, &info);
        scanner_free(&sc);
        if (r == 0 && ret)
                *ret = info;
        return r;
}

int proto_json_parse_members(const char *text, size_t len, json_object **ret,
                             const char *const *names, struct proto_json_members *members,
                             struct proto_json_scan *ret_scan, char *errbuf, size_t errlen)
{
        struct scanner sc = {.s = text,
                             .n = len,
                             .names = true,
                             .errbuf = errbuf,
                             .errlen = errlen,
                             .build = true,
                             .members = members,
                             .member_names = names};
        struct scanner_here here;
        struct proto_json_scan info;
        int r;

        if (members)
                *members = (struct proto_json_members){0};
        scanner_use(&sc, &here);
        r = scan(&sc, ret_scan ? ret_scan : &info);
        scanner_free(&sc);
        json_object_put(sc.discard);
        if (r) {
                json_object_put(sc.root);
                if (members)
                        proto_json_members_clear(members);
                return r;
        }
        *ret = sc.root;
        return 0;
}

int proto_json_parse(const char *text, size_t len, json_object **ret,
                     struct proto_json_scan *ret_scan, char *errbuf, size_t errlen)
{
        return proto_json_parse_members(text, len, ret, NULL, NULL, ret_scan, errbuf, errlen);
}

void proto_json_members_clear(struct proto_json_members *members)
{
        for (size_t i = 0; i < PROTO_MEMBERS_MAX; i++)
                json_object_put(members->value[i]);
        *members = (struct proto_json_members){0};
}

int sw_json_check(const char *text, size_t len, char *errbuf, size_t errlen)
{
        return proto_json_scan(text, len, false, NULL, errbuf, errlen);
}

int sw_json_read(const char *text, size_t len, json_object **ret, char *errbuf, size_t errlen)
{
        return proto_json_parse(text, len, ret, NULL, errbuf, errlen);
}
