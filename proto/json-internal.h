/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORK_PROTO_JSON_INTERNAL_H
#define SLOWWORK_PROTO_JSON_INTERNAL_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length of the valid UTF-8 character at s, or 0: no overlong forms, no surrogates. */
size_t proto_utf8_char(const unsigned char *s, size_t n);

/* What a scan found out for the protocol, beyond "this is JSON". */
struct proto_json_scan {
        size_t id_at, id_len; /* the top-level object's "id" value, as written; id_len 0: none */
};

/* A top-level object's members, made without the object around them: a message's envelope
 * (request, reply, notification), read without the cost of one more object. Kept: the first
 * member of each name asked for (by its place among the names), and the name of the first member
 * of another name. */
#define PROTO_MEMBERS_MAX 8
#define PROTO_MEMBER_NAME_MAX 64 /* a longer unknown name is kept cut */

struct proto_json_members {
        bool object; /* the text was an object: its members are here, not in *ret */
        bool has[PROTO_MEMBERS_MAX];
        json_object *value[PROTO_MEMBERS_MAX]; /* NULL for JSON null */
        bool unknown; /* it had a member of another name, the first of which is: */
        char unknown_name[PROTO_MEMBER_NAME_MAX + 1];
};

/* The scan behind sw_json_check(). With names set, also SW_E_INVALID_REQUEST for two members of
 * one object with the same name, or a name with a NUL byte (json-c cuts names there, so two such
 * names would read as one), and *ret is filled in. */
int proto_json_scan(const char *text, size_t len, bool names, struct proto_json_scan *ret,
                    char *errbuf, size_t errlen);
/* The scan with names, and the value as json-c's objects in *ret (NULL for JSON null): the
 * values json-c's reader would make of the text, its surrogate pair bug aside (json.c); ret_scan
 * may be NULL. */
int proto_json_parse(const char *text, size_t len, json_object **ret,
                     struct proto_json_scan *ret_scan, char *errbuf, size_t errlen);
/* proto_json_parse(), but a top-level object's members of the names in names (NULL-ended, at
 * most PROTO_MEMBERS_MAX) go to *members (their values taken over: proto_json_members_clear()
 * puts them), and *ret is NULL. */
int proto_json_parse_members(const char *text, size_t len, json_object **ret,
                             const char *const *names, struct proto_json_members *members,
                             struct proto_json_scan *ret_scan, char *errbuf, size_t errlen);
void proto_json_members_clear(struct proto_json_members *members);

#endif
