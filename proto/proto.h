/* SPDX-License-Identifier: MIT */
/*
 * The wire format shared by slowworkd and its clients: JSON-RPC 2.0, one object per line.
 * No sockets, no logging, no globals: bytes in, messages out, and back.
 */
#ifndef SLOWWORK_PROTO_H
#define SLOWWORK_PROTO_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SW_PROTO_VERSION 1
#define SW_LINE_MAX (1024 * 1024) /* bytes in one request, newline excluded */
#define SW_REPLY_MAX (256u * 1024 * 1024) /* bytes in one reply: a list of many items is long */

/* Error codes: JSON-RPC's, then the project's. Each has an errno-style name for "data". */
enum {
        SW_E_PARSE = -32700,
        SW_E_INVALID_REQUEST = -32600,
        SW_E_NO_METHOD = -32601,
        SW_E_INVALID_PARAMS = -32602,
        SW_E_INTERNAL = -32603,
        SW_E_NOT_FOUND = -32001,  /* ENOENT */
        SW_E_PERMISSION = -32002, /* EPERM */
        SW_E_CONFLICT = -32003,   /* EEXIST */
        SW_E_BUSY = -32004,       /* EBUSY */
        SW_E_TOO_LARGE = -32005,  /* E2BIG */
};

/* "EBADMSG" for SW_E_PARSE, "ENOENT" for SW_E_NOT_FOUND, ...; NULL for an unknown code. */
const char *sw_error_name(int code);
/* The code for a negative errno a handler failed with (-ENOENT -> SW_E_NOT_FOUND, ...). */
int sw_error_from_errno(int negative_errno);

/* Splits a byte stream into lines of at most max bytes. The fields are private. */
struct sw_lines {
        char *buf;
        size_t max;
        size_t len, size;
        size_t start;     /* where the next line begins */
        size_t partial;   /* where the incomplete line begins: [start, partial) are complete */
        bool discarding;  /* inside an oversized line: drop bytes up to its newline */
};
void sw_lines_init(struct sw_lines *l); /* lines of at most SW_LINE_MAX: requests */
void sw_lines_init_max(struct sw_lines *l, size_t max); /* replies: SW_REPLY_MAX */
void sw_lines_free(struct sw_lines *l);
int sw_lines_push(struct sw_lines *l, const char *data, size_t n); /* 0 or -ENOMEM */
/* 1 with *ret_line (NUL-terminated, no newline, valid until the next call) and *ret_len;
 * 0 when no complete line is buffered; -E2BIG once for each oversized line (it is dropped).
 * Lines of JSON whitespace only (spaces, tabs, "\r"; empty ones too) are skipped. */
int sw_lines_next(struct sw_lines *l, char **ret_line, size_t *ret_len);
/* The stream ended (EOF): an incomplete last line becomes a line, as if "\n" followed it, for
 * sw_lines_next() to give. 0 or -ENOMEM. */
int sw_lines_finish(struct sw_lines *l);
size_t sw_lines_pending(const struct sw_lines *l); /* bytes of an incomplete line */

/* 0 when text is one JSON value by RFC 8259 (whitespace around it allowed), else SW_E_PARSE with
 * a message in errbuf. Stricter than json-c: no NaN, Infinity, "-01", "1.", "2.e3", quotes other
 * than '"', comments, raw control characters in strings, invalid UTF-8 or escapes, lone
 * surrogates in \u escapes (RFC 8259 leaves them open; they are refused), a value nested 32
 * deep (json-c takes a 32nd array or object only empty). Duplicate member names are valid JSON
 * (RFC 8259 says they SHOULD NOT occur); the message parsers below refuse them. */
int sw_json_check(const char *text, size_t len, char *errbuf, size_t errlen);
/* A JSON text read as the protocol reads a line: 0 with the value in *ret (NULL for null), or
 * what sw_json_check() refuses, SW_E_INVALID_REQUEST for a member name twice in an object or
 * with a NUL byte, -ENOMEM. errbuf may be NULL. */
int sw_json_read(const char *text, size_t len, json_object **ret, char *errbuf, size_t errlen);

/* JSON text written piece by piece into one buffer (json-write.c): values of json-c's objects
 * as json-c writes them in plain form without escaping '/', or raw pieces, strings and integers
 * written the same way. A text starts zeroed; after a failed allocation sw_text_end() gives
 * NULL. */
struct sw_text {
        char *s;
        size_t len, size;
        bool failed;
        bool borrowed; /* s is the caller's buffer (sw_text_start()) until the text outgrows it */
};

/* A text written first into the caller's buf (size bytes, on its stack, say): sw_text_end() then
 * gives it in an allocation of its own size, with no growing on the way. */
void sw_text_start(struct sw_text *t, char *buf, size_t size);

void sw_text_raw(struct sw_text *t, const char *s, size_t n);
void sw_text_int(struct sw_text *t, int64_t i);
void sw_text_string(struct sw_text *t, const char *s);
void sw_text_value(struct sw_text *t, json_object *v);
/* The text, NUL-ended (the caller's to free), or NULL. */
char *sw_text_end(struct sw_text *t);

struct sw_request {
        char *method;
        json_object *id;     /* NULL: a notification, which gets no reply; see sw_null_id_new() */
        json_object *params; /* an object or NULL */
};

/* 0, or a JSON-RPC error code with a message in errbuf: SW_E_PARSE for what sw_json_check()
 * refuses, SW_E_INVALID_REQUEST when it is not a JSON-RPC 2.0 request (also: two members of one
 * object with the same name, at any depth; a member name with a NUL byte; an integer "id"
 * outside int64, or "-0"), SW_E_INVALID_PARAMS for positional params (an array), SW_E_TOO_LARGE
 * for more than SW_LINE_MAX bytes; -ENOMEM. *ret is written only on success. *ret_id is always
 * written: NULL, or on error the request's id when it was readable, for the error reply; the
 * caller puts it. With SW_E_INVALID_PARAMS the id was read: NULL is then a notification's. */
int sw_request_parse(const char *line, size_t len, struct sw_request *ret,
                     json_object **ret_id, char *errbuf, size_t errlen);
void sw_request_clear(struct sw_request *req);

/* "id": null: a request all the same (JSON-RPC 2.0), answered to id null, where NULL stands for
 * no id (a notification). sw_request_parse() gives it as this object, which every writer here
 * and json-c's write as null. NULL when out of memory. */
json_object *sw_null_id_new(void);
bool sw_id_is_null(json_object *id);

/* A batch (JSON-RPC 2.0, section 6): a line that is a JSON array with at least one element,
 * valid by the rules of sw_request_parse() but for the members' names, which each element's own
 * parse checks. Any other line is read as one request: sw_request_parse() says what is wrong with
 * an array that is not JSON, or "[]" (one invalid request, not a batch). */
bool sw_batch_is(const char *line, size_t len);
/* The next element of a batch: true with the text of the element in [*ret_at, *ret_at +
 * *ret_len); false after the last. *pos starts at 0, and is the caller's between calls. */
bool sw_batch_next(const char *line, size_t len, size_t *pos, size_t *ret_at, size_t *ret_len);
/* An error line (as sw_error_line()) to the id of the reply line given (null when it has none). */
char *sw_error_line_for(const char *reply, size_t len, int code, const char *message);

/* Lines ending in "\n", malloc'd; NULL on allocation failure. The json_object arguments are
 * taken over (put) in every case; id may be NULL (JSON null). */
char *sw_result_line(json_object *id, json_object *result);
char *sw_error_line(json_object *id, int code, const char *message);
char *sw_request_line(const char *method, json_object *params, int64_t id);
char *sw_notification_line(const char *method, json_object *params);

struct sw_reply {
        int64_t id;          /* -1 for a notification, and for an error reply whose id is null */
        char *method;        /* notifications only */
        json_object *result; /* success */
        json_object *params; /* notifications */
        int code;            /* 0 on success, else the error code */
        char *message;       /* the error's message */
        char *data;          /* the error's errno-style name, if any */
};
/* Replies may be up to SW_REPLY_MAX bytes. 0 or SW_E_PARSE / SW_E_INVALID_REQUEST /
 * SW_E_TOO_LARGE (as for requests), or -ENOMEM; *ret written only on success. */
int sw_reply_parse(const char *line, size_t len, struct sw_reply *ret);
void sw_reply_clear(struct sw_reply *reply);

/* Declarative parameters: a table per method, ending in {NULL}. */
enum sw_ptype {
        SW_P_BOOL,     /* bool */
        SW_P_INT,      /* int64_t, in [min, max] */
        SW_P_SECONDS,  /* double, a number in [min, max] (fractions allowed) */
        SW_P_STRING,   /* char *, strdup'd; max = longest length (0: no limit) */
        SW_P_STRV,     /* char **, NULL-terminated, non-empty array of strings */
        SW_P_ENV,      /* char **, "KEY=VALUE" strings, from an object of strings */
        SW_P_JSON,     /* json_object *, any value, referenced (get) */
        SW_P_IDS,      /* int64_t *, an array of job ids (each >= 1), 0-terminated; max = most */
        SW_P_PATH,     /* char[max + 1] in place: an absolute path of at most max bytes, or "" */
        SW_P_TEXT,     /* char[max + 1] in place: any string of at most max bytes, "" for none */
        SW_P_QUEUES,   /* char[max + 1] in place: "*", or queue names joined by commas */
};

/* Whether values of the type are strings kept in place (char[max + 1]). */
static inline bool sw_ptype_in_place(enum sw_ptype type)
{
        return type == SW_P_PATH || type == SW_P_TEXT || type == SW_P_QUEUES;
}

struct sw_param {
        const char *name;
        enum sw_ptype type;
        size_t offset; /* into the method's params structure */
        bool required;
        double min, max;
};

/* Fills out from params (an object, or NULL for none): 0, or SW_E_INVALID_PARAMS with errbuf
 * naming the parameter and what is wrong (unknown name, wrong type, out of range, missing), or
 * -ENOMEM. All or nothing: on error out is left exactly as it was. Fields not given keep what
 * out held; a given pointer field replaces (and frees) what it held, so out's pointer fields
 * must be NULL or owned. Free with sw_params_clear(), which also zeroes the scalar fields. */
int sw_params_parse(json_object *params, const struct sw_param *table, void *out, char *errbuf,
                    size_t errlen);
void sw_params_clear(const struct sw_param *table, void *out);

#endif
