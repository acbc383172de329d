/* SPDX-License-Identifier: MIT */
#include <stdio.h>
#include <string.h>

#include "util/json-text.h"

void json_text_raw(struct json_text *t, const char *s, size_t n)
{
        sw_text_raw(&t->text, s, n);
}

/* A comma, unless the value is the first of its object or array, or a member's value. */
static void separate(struct json_text *t)
{
        char last = t->text.len > 0 ? t->text.s[t->text.len - 1] : '[';

        if (last != '{' && last != '[' && last != ':')
                sw_text_raw(&t->text, ",", 1);
}

void json_text_open(struct json_text *t, char c)
{
        separate(t);
        sw_text_raw(&t->text, &c, 1);
}

void json_text_close(struct json_text *t, char c)
{
        sw_text_raw(&t->text, &c, 1);
}

void json_text_name(struct json_text *t, const char *name)
{
        size_t n = strlen(name);
        char quoted[64];

        separate(t);
        if (n + 3 > sizeof(quoted)) {
                sw_text_string(&t->text, name);
                sw_text_raw(&t->text, ":", 1);
                return;
        }
        quoted[0] = '"';
        memcpy(quoted + 1, name, n);
        memcpy(quoted + 1 + n, "\":", 2);
        sw_text_raw(&t->text, quoted, n + 3);
}

void json_text_string(struct json_text *t, const char *s)
{
        separate(t);
        sw_text_string(&t->text, s);
}

void json_text_int(struct json_text *t, int64_t v)
{
        separate(t);
        sw_text_int(&t->text, v);
}

void json_text_double(struct json_text *t, double v)
{
        char buf[32];

        separate(t);
        sw_text_raw(&t->text, buf, (size_t)snprintf(buf, sizeof(buf), "%.17g", v));
}

char *json_text_end(struct json_text *t)
{
        return sw_text_end(&t->text);
}
