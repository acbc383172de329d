/* SPDX-License-Identifier: MIT */
/*
 * Messages: a line of bytes to a JSON-RPC 2.0 request or reply, and requests, replies and
 * notifications back to lines. The line's UTF-8 is checked here first, then it is read by
 * RFC 8259 (json.c) into json-c's objects, all but the envelope's own: its members are read by
 * their places among the names a request, reply or notification may have.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error-internal.h"
#include "json-internal.h"
#include "proto.h"

#define seterr proto_error

/* The offset of the first byte that is not valid UTF-8, or n. */
static size_t utf8_check(const char *s, size_t n)
{
        size_t i = 0, k;

        while (i < n) {
                /* Most of a message is ASCII: skip it eight bytes at a time. */
                while (i + 8 <= n) {
                        uint64_t w;

                        memcpy(&w, s + i, sizeof(w));
                        if (w & 0x8080808080808080ull)
                                break;
                        i += 8;
                }
                if (i < n && !((unsigned char)s[i] & 0x80)) {
                        i++;
                        continue;
                }
                if (i >= n)
                        break;
                k = proto_utf8_char((const unsigned char *)s + i, n - i);
                if (k == 0)
                        break;
                i += k;
        }
        return i;
}

/* A copy of s with each byte that is not valid UTF-8 replaced by '?', so replies stay UTF-8. */
static char *utf8_sanitize(const char *s)
{
        size_t n = strlen(s), i = 0, k;
        char *copy = malloc(n + 1);

        if (!copy)
                return NULL;
        memcpy(copy, s, n + 1);
        while (i < n) {
                k = proto_utf8_char((const unsigned char *)copy + i, n - i);
                if (k == 0) {
                        copy[i] = '?';
                        k = 1;
                }
                i += k;
        }
        return copy;
}

/* One JSON value that must take the whole line: an object's members in *members, another value
 * in *ret (NULL for JSON null). SW_E_INVALID_REQUEST for a duplicate or NUL-holding member name;
 * *ret_scan says where the top-level "id" is. */
static int parse_line(const char *line, size_t len, size_t max, json_object **ret,
                      const char *const *names, struct proto_json_members *members,
                      struct proto_json_scan *ret_scan, char *errbuf, size_t errlen)
{
        size_t end;

        if (len > max)
                return seterr(errbuf, errlen, SW_E_TOO_LARGE,
                              "message of %zu bytes is larger than the limit of %zu", len, max);
        if (memchr(line, '\0', len))
                return seterr(errbuf, errlen, SW_E_PARSE, "invalid JSON: NUL byte");
        end = utf8_check(line, len);
        if (end < len)
                return seterr(errbuf, errlen, SW_E_PARSE, "invalid UTF-8 at byte %zu", end);
        return proto_json_parse_members(line, len, ret, names, members, ret_scan, errbuf, errlen);
}

/* A string without NUL bytes: 1 with *ret, -1 when of another type. */
static int string_of(json_object *v, const char **ret)
{
        if (!json_object_is_type(v, json_type_string) ||
            strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
                return -1;
        *ret = json_object_get_string(v);
        return 1;
}

/* A string member without NUL bytes: 1 with *ret, 0 when absent, -1 when of another type. */
static int get_string(json_object *obj, const char *key, const char **ret)
{
        json_object *v;

        return json_object_object_get_ex(obj, key, &v) ? string_of(v, ret) : 0;
}

/* The same, of the envelope's member i (its place among the names it was read with). */
static int member_string(const struct proto_json_members *m, int i, const char **ret)
{
        return m->has[i] ? string_of(m->value[i], ret) : 0;
}

/* The envelope's member i taken over (NULL when absent or null). */
static json_object *member_take(struct proto_json_members *m, int i)
{
        json_object *v = m->value[i];

        m->value[i] = NULL;
        return v;
}

/* An integer id json-c reads as written: within int64, so not clamped, and not "-0". */
static bool id_as_written(json_object *id, const char *line, const struct proto_json_scan *scan)
{
        char text[24];
        struct sw_text t;

        sw_text_start(&t, text, sizeof(text)); /* an int64 fits: nothing is allocated */
        sw_text_int(&t, json_object_get_int64(id));
        return t.len == scan->id_len && memcmp(line + scan->id_at, t.s, t.len) == 0;
}

static bool is_jsonrpc_2(const struct proto_json_members *m, int jsonrpc)
{
        const char *version;

        return member_string(m, jsonrpc, &version) > 0 && strcmp(version, "2.0") == 0;
}

static bool known(const char *name, const char *const *names)
{
        for (size_t i = 0; names[i]; i++)
                if (strcmp(name, names[i]) == 0)
                        return true;
        return false;
}

/* The first member whose name is not in names, or NULL. */
static const char *unknown_member(json_object *obj, const char *const *names)
{
        json_object_object_foreach(obj, key, val)
        {
                (void)val;
                if (!known(key, names))
                        return key;
        }
        return NULL;
}

/* The same of an envelope: the first member of a name it was not read with, or of a name in
 * names (their places) not in allowed (a bit for each place). */
static const char *unknown_envelope_member(const struct proto_json_members *m,
                                           const char *const *names, unsigned allowed)
{
        for (int i = 0; names[i]; i++)
                if (m->has[i] && !(allowed & 1u << i))
                        return names[i];
        return m->unknown ? m->unknown_name : NULL;
}

/* A request's envelope: its members' names, and their places. */
static const char *const request_members[] = {"jsonrpc", "method", "id", "params", NULL};
enum { REQ_JSONRPC, REQ_METHOD, REQ_ID, REQ_PARAMS };

/* Everything but the id, which the caller has checked. */
static int check_request(const struct proto_json_members *m, char *errbuf, size_t errlen)
{
        const char *name, *method;

        name = unknown_envelope_member(m, request_members, ~0u);
        if (name)
                return seterr(errbuf, errlen, SW_E_INVALID_REQUEST, "unknown member \"%.64s\"",
                              name);
        if (!is_jsonrpc_2(m, REQ_JSONRPC))
                return seterr(errbuf, errlen, SW_E_INVALID_REQUEST, "\"jsonrpc\" must be \"2.0\"");
        if (member_string(m, REQ_METHOD, &method) <= 0)
                return seterr(errbuf, errlen, SW_E_INVALID_REQUEST, "\"method\" must be a string");
        /* JSON-RPC allows positional params, as an array; no method here takes them. */
        if (m->has[REQ_PARAMS] && json_object_is_type(m->value[REQ_PARAMS], json_type_array))
                return seterr(errbuf, errlen, SW_E_INVALID_PARAMS,
                              "params must be an object of named members");
        if (m->has[REQ_PARAMS] && !json_object_is_type(m->value[REQ_PARAMS], json_type_object))
                return seterr(errbuf, errlen, SW_E_INVALID_REQUEST, "\"params\" must be an object");
        return 0;
}

json_object *sw_null_id_new(void)
{
        /* json-c has no object for null (NULL is null), and NULL is a notification's id here: a
         * number whose text is "null" is written as null by json-c and by sw_text_value(). */
        return json_object_new_double_s(0, "null");
}

bool sw_id_is_null(json_object *id)
{
        return json_object_is_type(id, json_type_double) &&
               strcmp(json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN), "null") == 0;
}

int sw_request_parse(const char *line, size_t len, struct sw_request *ret, json_object **ret_id,
                     char *errbuf, size_t errlen)
{
        struct proto_json_members m;
        json_object *obj, *id;
        struct proto_json_scan scan;
        const char *method;
        char *copy;
        int r;

        *ret_id = NULL;
        r = parse_line(line, len, SW_LINE_MAX, &obj, request_members, &m, &scan, errbuf, errlen);
        if (r)
                return r;
        if (!m.object) {
                bool empty =
                    json_object_is_type(obj, json_type_array) && json_object_array_length(obj) == 0;

                json_object_put(obj);
                return seterr(errbuf, errlen, SW_E_INVALID_REQUEST,
                              empty ? "an empty array: neither a request nor a batch"
                                    : "a request must be a JSON object");
        }
        id = m.value[REQ_ID];
        if (m.has[REQ_ID] && !id) {
                /* "id": null is a request, answered to id null; an absent id a notification. */
                id = m.value[REQ_ID] = sw_null_id_new();
                if (!id) {
                        r = seterr(errbuf, errlen, -ENOMEM, "out of memory");
                        goto out;
                }
        }
        if (m.has[REQ_ID] && !json_object_is_type(id, json_type_int) &&
            !json_object_is_type(id, json_type_string) && !sw_id_is_null(id)) {
                r = seterr(errbuf, errlen, SW_E_INVALID_REQUEST,
                           "\"id\" must be an integer, a string or null");
                goto out;
        }
        if (json_object_is_type(id, json_type_int) && !id_as_written(id, line, &scan)) {
                r = seterr(errbuf, errlen, SW_E_INVALID_REQUEST,
                           "\"id\" must be an integer from -9223372036854775808 to "
                           "9223372036854775807, or a string");
                goto out;
        }
        r = check_request(&m, errbuf, errlen);
        if (r) {
                *ret_id = member_take(&m, REQ_ID);
                goto out;
        }
        member_string(&m, REQ_METHOD, &method);
        copy = strdup(method);
        if (!copy) {
                *ret_id = member_take(&m, REQ_ID);
                r = seterr(errbuf, errlen, -ENOMEM, "out of memory");
                goto out;
        }
        ret->method = copy;
        ret->id = member_take(&m, REQ_ID);
        ret->params = member_take(&m, REQ_PARAMS);
out:
        proto_json_members_clear(&m);
        return r;
}

static size_t skip_json_space(const char *s, size_t n, size_t i)
{
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
                i++;
        return i;
}

bool sw_batch_is(const char *line, size_t len)
{
        size_t i = skip_json_space(line, len, 0);

        if (i >= len || line[i] != '[' || len > SW_LINE_MAX || memchr(line, '\0', len) ||
            utf8_check(line, len) < len || proto_json_scan(line, len, false, NULL, NULL, 0) != 0)
                return false;
        /* "[]" is no batch: one invalid request (JSON-RPC 2.0, section 6). */
        return line[skip_json_space(line, len, i + 1)] != ']';
}

/* The end of the JSON value at i of a text known to be JSON. */
static size_t value_end(const char *s, size_t n, size_t i)
{
        size_t depth = 0;

        for (; i < n; i++) {
                char c = s[i];

                if (c == '"') {
                        for (i++; i < n && s[i] != '"'; i++)
                                if (s[i] == '\\')
                                        i++;
                } else if (c == '[' || c == '{') {
                        depth++;
                } else if (c == ']' || c == '}') {
                        if (depth == 0)
                                return i;
                        depth--;
                } else if (c == ',' && depth == 0) {
                        return i;
                }
                if (depth == 0 && (c == '"' || c == ']' || c == '}'))
                        return i + 1;
        }
        return n;
}

bool sw_batch_next(const char *line, size_t len, size_t *pos, size_t *ret_at, size_t *ret_len)
{
        size_t i = skip_json_space(line, len, *pos), end;

        if (i < len && (line[i] == '[' || line[i] == ','))
                i = skip_json_space(line, len, i + 1);
        if (i >= len || line[i] == ']')
                return false;
        end = value_end(line, len, i);
        /* A scalar ends before the space, comma or bracket after it. */
        while (end > i && (line[end - 1] == ' ' || line[end - 1] == '\t' || line[end - 1] == '\n' ||
                           line[end - 1] == '\r'))
                end--;
        *ret_at = i;
        *ret_len = end - i;
        *pos = end;
        return true;
}

char *sw_error_line_for(const char *reply, size_t len, int code, const char *message)
{
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":";
        struct proto_json_scan scan;
        struct sw_text t = {0};
        char *error = sw_error_line(NULL, code, message);

        if (!error)
                return NULL;
        if (proto_json_scan(reply, len, true, &scan, NULL, 0) != 0 || scan.id_len == 0 ||
            strncmp(error, head, sizeof(head) - 1) != 0)
                return error; /* to id null */
        /* The reply's id as it is written, in place of the null. */
        sw_text_raw(&t, head, sizeof(head) - 1);
        sw_text_raw(&t, reply + scan.id_at, scan.id_len);
        sw_text_raw(&t, error + sizeof(head) - 1 + 4, strlen(error + sizeof(head) - 1 + 4));
        free(error);
        return sw_text_end(&t);
}

void sw_request_clear(struct sw_request *req)
{
        free(req->method);
        json_object_put(req->id);
        json_object_put(req->params);
        memset(req, 0, sizeof(*req));
}

/* Adds val to obj, or puts it. */
static int add(json_object *obj, const char *key, json_object *val)
{
        if (json_object_object_add(obj, key, val) == 0)
                return 0;
        json_object_put(val);
        return -ENOMEM;
}

static int add_string(json_object *obj, const char *key, const char *s)
{
        json_object *v = json_object_new_string(s);

        if (!v)
                return -ENOMEM;
        return add(obj, key, v);
}

/* The line for obj, which it puts. */
static char *finish(json_object *obj)
{
        struct sw_text t = {0};

        sw_text_value(&t, obj);
        sw_text_raw(&t, "\n", 1);
        json_object_put(obj);
        return sw_text_end(&t);
}

/* {"jsonrpc":"2.0","id":id}, taking id over. */
static json_object *reply_new(json_object *id)
{
        json_object *obj = json_object_new_object();

        if (!obj || add_string(obj, "jsonrpc", "2.0") < 0) {
                json_object_put(obj);
                json_object_put(id);
                return NULL;
        }
        if (add(obj, "id", id) < 0) {
                json_object_put(obj);
                return NULL;
        }
        return obj;
}

/* Made from id and result, without an object around them: the reply to every request, so the
 * one most made. */
char *sw_result_line(json_object *id, json_object *result)
{
        struct sw_text t;
        char first[512];
        static const char head[] = "{\"jsonrpc\":\"2.0\",\"id\":", middle[] = ",\"result\":";

        sw_text_start(&t, first, sizeof(first));
        sw_text_raw(&t, head, sizeof(head) - 1);
        sw_text_value(&t, id);
        sw_text_raw(&t, middle, sizeof(middle) - 1);
        sw_text_value(&t, result);
        sw_text_raw(&t, "}\n", 2);
        json_object_put(id);
        json_object_put(result);
        return sw_text_end(&t);
}

static json_object *error_new(int code, const char *message)
{
        const char *name = sw_error_name(code);
        json_object *err = json_object_new_object(), *v;
        char *text = NULL;

        if (!message)
                message = name ? name : "error";
        text = utf8_sanitize(message);
        if (!err || !text)
                goto fail;
        v = json_object_new_int(code);
        if (!v || add(err, "code", v) < 0 || add_string(err, "message", text) < 0)
                goto fail;
        if (name && add_string(err, "data", name) < 0)
                goto fail;
        free(text);
        return err;
fail:
        free(text);
        json_object_put(err);
        return NULL;
}

char *sw_error_line(json_object *id, int code, const char *message)
{
        json_object *obj = reply_new(id), *err;

        if (!obj)
                return NULL;
        err = error_new(code, message);
        if (!err || add(obj, "error", err) < 0) {
                json_object_put(obj);
                return NULL;
        }
        return finish(obj);
}

static char *call_line(const char *method, json_object *params, bool has_id, int64_t id)
{
        static const char head[] = "{\"jsonrpc\":\"2.0\",";
        struct sw_text t;
        char first[512];

        sw_text_start(&t, first, sizeof(first));
        sw_text_raw(&t, head, sizeof(head) - 1);
        if (has_id) {
                sw_text_raw(&t, "\"id\":", 5);
                sw_text_int(&t, id);
                sw_text_raw(&t, ",", 1);
        }
        sw_text_raw(&t, "\"method\":", 9);
        sw_text_string(&t, method);
        if (params) {
                sw_text_raw(&t, ",\"params\":", 10);
                sw_text_value(&t, params);
        }
        sw_text_raw(&t, "}\n", 2);
        json_object_put(params);
        return sw_text_end(&t);
}

char *sw_request_line(const char *method, json_object *params, int64_t id)
{
        return call_line(method, params, true, id);
}

char *sw_notification_line(const char *method, json_object *params)
{
        return call_line(method, params, false, 0);
}

static const char *const error_members[] = {"code", "message", "data", NULL};
/* A reply's or a notification's envelope: its members' names, their places, and which go with
 * which. */
static const char *const reply_members[] = {"jsonrpc", "id", "result", "error", "method", "params",
                                            NULL};
enum { REP_JSONRPC, REP_ID, REP_RESULT, REP_ERROR, REP_METHOD, REP_PARAMS };
#define RESPONSE_MEMBERS (1u << REP_JSONRPC | 1u << REP_ID | 1u << REP_RESULT | 1u << REP_ERROR)
#define NOTIFICATION_MEMBERS (1u << REP_JSONRPC | 1u << REP_METHOD | 1u << REP_PARAMS)

static int parse_notification(struct proto_json_members *m, struct sw_reply *r)
{
        const char *method;

        if (unknown_envelope_member(m, reply_members, NOTIFICATION_MEMBERS) ||
            member_string(m, REP_METHOD, &method) <= 0)
                return SW_E_INVALID_REQUEST;
        if (m->has[REP_PARAMS] && !json_object_is_type(m->value[REP_PARAMS], json_type_object))
                return SW_E_INVALID_REQUEST;
        r->method = strdup(method);
        if (!r->method)
                return -ENOMEM;
        r->params = member_take(m, REP_PARAMS);
        return 0;
}

static int parse_error(json_object *err, struct sw_reply *r)
{
        const char *message, *data = NULL;
        json_object *code;
        int64_t c;

        if (!json_object_is_type(err, json_type_object) || unknown_member(err, error_members) ||
            !json_object_object_get_ex(err, "code", &code) ||
            !json_object_is_type(code, json_type_int) || get_string(err, "message", &message) <= 0)
                return SW_E_INVALID_REQUEST;
        c = json_object_get_int64(code);
        if (c == 0 || c < INT32_MIN || c > INT32_MAX)
                return SW_E_INVALID_REQUEST;
        r->code = (int)c;
        r->message = strdup(message);
        /* JSON-RPC lets "data" be anything; only the daemon's names are kept. */
        if (get_string(err, "data", &data) > 0)
                r->data = strdup(data);
        if (!r->message || (data && !r->data))
                return -ENOMEM;
        return 0;
}

static int parse_response(struct proto_json_members *m, const char *line,
                          const struct proto_json_scan *scan, struct sw_reply *r)
{
        json_object *id = m->value[REP_ID];

        if (unknown_envelope_member(m, reply_members, RESPONSE_MEMBERS) || !m->has[REP_ID])
                return SW_E_INVALID_REQUEST;
        if (json_object_is_type(id, json_type_int) && id_as_written(id, line, scan))
                r->id = json_object_get_int64(id);
        else if (!json_object_is_type(id, json_type_null))
                return SW_E_INVALID_REQUEST;
        if (m->has[REP_RESULT] == m->has[REP_ERROR])
                return SW_E_INVALID_REQUEST;
        if (m->has[REP_ERROR])
                return parse_error(m->value[REP_ERROR], r);
        r->result = member_take(m, REP_RESULT);
        return 0;
}

int sw_reply_parse(const char *line, size_t len, struct sw_reply *ret)
{
        struct sw_reply reply = {.id = -1};
        struct proto_json_members m;
        struct proto_json_scan scan;
        json_object *obj;
        int r;

        r = parse_line(line, len, SW_REPLY_MAX, &obj, reply_members, &m, &scan, NULL, 0);
        if (r)
                return r;
        if (!m.object || !is_jsonrpc_2(&m, REP_JSONRPC))
                r = SW_E_INVALID_REQUEST;
        else if (m.has[REP_METHOD])
                r = parse_notification(&m, &reply);
        else
                r = parse_response(&m, line, &scan, &reply);
        json_object_put(obj);
        proto_json_members_clear(&m);
        if (r) {
                sw_reply_clear(&reply);
                return r;
        }
        *ret = reply;
        return 0;
}

void sw_reply_clear(struct sw_reply *reply)
{
        free(reply->method);
        json_object_put(reply->result);
        json_object_put(reply->params);
        free(reply->message);
        free(reply->data);
        memset(reply, 0, sizeof(*reply));
}
