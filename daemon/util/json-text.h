/* SPDX-License-Identifier: MIT */
/*
 * JSON text written piece by piece, without json-c's objects (each of which costs a hash table):
 * for the texts made for every job. proto's sw_text (strings escaped as json-c escapes them)
 * with the commas put in. A failed allocation is remembered, and json_text_end() returns NULL
 * then.
 */
#ifndef SLOWWORKD_JSON_TEXT_H
#define SLOWWORKD_JSON_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

struct json_text {
        struct sw_text text;
};

void json_text_raw(struct json_text *t, const char *s, size_t n);
/* "{" or "[" open, and "}" or "]" close; a member's name (with the comma before it if needed):
 * one of the daemon's own, written as it is (nothing in it to escape). */
void json_text_open(struct json_text *t, char c);
void json_text_close(struct json_text *t, char c);
void json_text_name(struct json_text *t, const char *name);
/* Values; in an array, with the comma before them if needed. */
void json_text_string(struct json_text *t, const char *s);
void json_text_int(struct json_text *t, int64_t v);
void json_text_double(struct json_text *t, double v);
/* The text (malloc'd, the caller frees it), or NULL when an allocation failed. */
char *json_text_end(struct json_text *t);

#endif
