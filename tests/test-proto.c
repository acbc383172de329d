/* SPDX-License-Identifier: MIT */
/* The wire format: errors, lines, requests, replies, and parameter tables (proto/PROTOCOL.md). */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-internal.h"
#include "methods.h"
#include "proto.h"
#include "run-suite.h"

static char errbuf[256];

/* A parsed JSON text; NULL for "null". */
static json_object *J(const char *text)
{
        json_object *obj = json_tokener_parse(text);

        ck_assert_msg(obj || strcmp(text, "null") == 0, "test JSON does not parse: %s", text);
        return obj;
}

static int params(const char *text, const struct sw_param *table, void *out)
{
        json_object *obj = text ? J(text) : NULL;
        int r;

        errbuf[0] = '\0';
        r = sw_params_parse(obj, table, out, errbuf, sizeof(errbuf));
        json_object_put(obj);
        return r;
}

static void rejected(const char *text, const struct sw_param *table, void *out, const char *msg)
{
        ck_assert_msg(params(text, table, out) == SW_E_INVALID_PARAMS, "accepted: %s", text);
        ck_assert_msg(strstr(errbuf, msg), "\"%s\" does not say \"%s\" for %s", errbuf, msg, text);
}

static char *repeat(char c, size_t n)
{
        char *s = malloc(n + 1);

        ck_assert_ptr_nonnull(s);
        memset(s, c, n);
        s[n] = '\0';
        return s;
}

/* Errors */

START_TEST(error_names_are_errno_style)
{
        static const struct {
                int code;
                const char *name;
        } want[] = {
            {SW_E_PARSE, "EBADMSG"},    {SW_E_INVALID_REQUEST, "EPROTO"},
            {SW_E_NO_METHOD, "ENOSYS"}, {SW_E_INVALID_PARAMS, "EINVAL"},
            {SW_E_INTERNAL, "EIO"},     {SW_E_NOT_FOUND, "ENOENT"},
            {SW_E_PERMISSION, "EPERM"}, {SW_E_CONFLICT, "EEXIST"},
            {SW_E_BUSY, "EBUSY"},       {SW_E_TOO_LARGE, "E2BIG"},
        };
        size_t i;

        for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                ck_assert_str_eq(sw_error_name(want[i].code), want[i].name);
        ck_assert_ptr_null(sw_error_name(0));
        ck_assert_ptr_null(sw_error_name(-32000));
        ck_assert_ptr_null(sw_error_name(-ENOENT));
}
END_TEST

START_TEST(error_from_errno_maps_handler_failures)
{
        ck_assert_int_eq(sw_error_from_errno(-ENOENT), SW_E_NOT_FOUND);
        ck_assert_int_eq(sw_error_from_errno(-EPERM), SW_E_PERMISSION);
        ck_assert_int_eq(sw_error_from_errno(-EACCES), SW_E_PERMISSION);
        ck_assert_int_eq(sw_error_from_errno(-EEXIST), SW_E_CONFLICT);
        ck_assert_int_eq(sw_error_from_errno(-EBUSY), SW_E_BUSY);
        ck_assert_int_eq(sw_error_from_errno(-E2BIG), SW_E_TOO_LARGE);
        ck_assert_int_eq(sw_error_from_errno(-EMSGSIZE), SW_E_TOO_LARGE);
        ck_assert_int_eq(sw_error_from_errno(-EINVAL), SW_E_INVALID_PARAMS);
        ck_assert_int_eq(sw_error_from_errno(-ENOMEM), SW_E_INTERNAL);
        ck_assert_int_eq(sw_error_from_errno(-EIO), SW_E_INTERNAL);
        ck_assert_int_eq(sw_error_from_errno(0), SW_E_INTERNAL);
}
END_TEST

/* Lines */

/* Pushes stream in chunks (0: in one go) and records what sw_lines_next() gives, one event a
 * line: "E2BIG", or the line's length and a hash of its bytes. Ends with the pending count.
 * No ck_assert in the loop: in fork mode each one is a write to the parent. */
static char *transcript(const char *stream, size_t n, size_t chunk, bool random_chunks)
{
        struct sw_lines l;
        size_t off = 0, len, cap = 4096, used = 0, k, i;
        char *out = malloc(cap), *line;
        unsigned seed = 12345, hash;
        int r;

        ck_assert_ptr_nonnull(out);
        out[0] = '\0';
        sw_lines_init(&l);
        while (off < n) {
                k = chunk ? chunk : n;
                if (random_chunks) {
                        seed = seed * 1103515245 + 12345;
                        k = 1 + (seed >> 8) % 70000;
                }
                if (k > n - off)
                        k = n - off;
                if (sw_lines_push(&l, stream + off, k) != 0)
                        ck_abort_msg("push failed");
                off += k;
                while ((r = sw_lines_next(&l, &line, &len)) != 0) {
                        if (used + 64 > cap) {
                                cap *= 2;
                                out = realloc(out, cap);
                                if (!out)
                                        ck_abort_msg("out of memory");
                        }
                        if (r == -E2BIG) {
                                used += (size_t)sprintf(out + used, "E2BIG\n");
                                continue;
                        }
                        if (r != 1 || line[len] != '\0')
                                ck_abort_msg("sw_lines_next gave %d", r);
                        for (hash = 2166136261u, i = 0; i < len; i++)
                                hash = (hash ^ (unsigned char)line[i]) * 16777619u;
                        used += (size_t)sprintf(out + used, "%zu:%08x\n", len, hash);
                }
        }
        sprintf(out + used, "pending %zu\n", sw_lines_pending(&l));
        sw_lines_free(&l);
        return out;
}

START_TEST(lines_split_keeps_cr)
{
        struct sw_lines l;
        char *line;
        size_t len;

        sw_lines_init(&l);
        ck_assert_int_eq(sw_lines_push(&l, "a\r\nb\n", 5), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_uint_eq(len, 2);
        ck_assert_str_eq(line, "a\r");
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_str_eq(line, "b");
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        sw_lines_free(&l);
}
END_TEST

/* PROTOCOL.md: empty lines, and lines of whitespace (a lone "\r" too), are ignored. */
START_TEST(lines_whitespace_only_lines_are_skipped)
{
        static const char stream[] = "\n \n\t\n\r\n \t\r \r\n{\"a\":1}\r\n\r\n  \n";
        struct sw_lines l;
        char *line;
        size_t len;

        sw_lines_init(&l);
        ck_assert_int_eq(sw_lines_push(&l, stream, sizeof(stream) - 1), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_str_eq(line, "{\"a\":1}\r");
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        ck_assert_uint_eq(sw_lines_pending(&l), 0);
        sw_lines_free(&l);
}
END_TEST

/* A client that half-closes after a last request without "\n" still has it read. */
START_TEST(lines_finish_gives_the_last_line_without_newline)
{
        static const char stream[] = "{\"id\":1}\n{\"id\":2}";
        struct sw_lines l;
        char *line;
        size_t len;

        sw_lines_init(&l);
        ck_assert_int_eq(sw_lines_push(&l, stream, sizeof(stream) - 1), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_str_eq(line, "{\"id\":1}");
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        ck_assert_int_eq(sw_lines_finish(&l), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_uint_eq(len, 8);
        ck_assert_str_eq(line, "{\"id\":2}");
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        ck_assert_uint_eq(sw_lines_pending(&l), 0);
        /* Nothing more to finish: no line, empty or not, appears. */
        ck_assert_int_eq(sw_lines_finish(&l), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        ck_assert_int_eq(sw_lines_push(&l, " \r", 2), 0);
        ck_assert_int_eq(sw_lines_finish(&l), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        sw_lines_free(&l);
}
END_TEST

START_TEST(lines_finish_inside_an_oversized_line_gives_e2big)
{
        char *big = repeat('x', 64);
        struct sw_lines l;
        char *line;
        size_t len;

        sw_lines_init_max(&l, 16);
        ck_assert_int_eq(sw_lines_push(&l, big, 64), 0);
        ck_assert_int_eq(sw_lines_finish(&l), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), -E2BIG);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        sw_lines_free(&l);
        free(big);
}
END_TEST

START_TEST(lines_incomplete_line_waits_for_its_newline)
{
        struct sw_lines l;
        char *line;
        size_t len;

        sw_lines_init(&l);
        ck_assert_int_eq(sw_lines_push(&l, "abc", 3), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        ck_assert_uint_eq(sw_lines_pending(&l), 3);
        ck_assert_int_eq(sw_lines_push(&l, "d\nef", 4), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_str_eq(line, "abcd");
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        ck_assert_uint_eq(sw_lines_pending(&l), 2);
        sw_lines_free(&l);
}
END_TEST

START_TEST(lines_same_for_any_chunking)
{
        const size_t big = SW_LINE_MAX + 5, exact = SW_LINE_MAX, huge = SW_LINE_MAX + 4096;
        size_t n = 0, cap = big + exact + huge + 100;
        char *stream = malloc(cap), *one, *t;
        static const size_t chunks[] = {1, 7, 4096, 65536};
        size_t i;

        ck_assert_ptr_nonnull(stream);
        n += (size_t)sprintf(stream + n, "first\n\r\n\n");
        memset(stream + n, 'x', big);
        n += big;
        n += (size_t)sprintf(stream + n, "\nmid\n");
        memset(stream + n, 'y', exact);
        n += exact;
        stream[n++] = '\n';
        memset(stream + n, 'z', huge);
        n += huge;
        n += (size_t)sprintf(stream + n, "\nlast\ntail");

        one = transcript(stream, n, 0, false);
        ck_assert_msg(strncmp(one, "5:", 2) == 0, "%s", one);
        ck_assert_msg(strncmp(strchr(one, '\n') + 1, "E2BIG\n", 6) == 0,
                      "a blank line is given: %s", one);
        ck_assert_msg(strstr(one, "E2BIG\n3:"), "mid does not follow the big line: %s", one);
        ck_assert_msg(strstr(one, "\n1048576:"), "the SW_LINE_MAX line is lost: %s", one);
        ck_assert_msg(strstr(one, "E2BIG\n4:"), "last does not follow the huge line: %s", one);
        ck_assert_msg(strstr(one, "pending 4\n"), "%s", one);
        for (i = 0; i < sizeof(chunks) / sizeof(chunks[0]); i++) {
                t = transcript(stream, n, chunks[i], false);
                ck_assert_msg(strcmp(t, one) == 0, "chunks of %zu:\n%s\nin one go:\n%s", chunks[i],
                              t, one);
                free(t);
        }
        t = transcript(stream, n, 0, true);
        ck_assert_str_eq(t, one);
        free(t);
        free(one);
        free(stream);
}
END_TEST

START_TEST(lines_oversized_line_gives_e2big_once_and_next_line_intact)
{
        const size_t n = 3 * 1024 * 1024;
        char *big = repeat('{', n), *line;
        struct sw_lines l;
        size_t len;

        sw_lines_init(&l);
        ck_assert_int_eq(sw_lines_push(&l, big, n), 0);
        ck_assert_int_eq(sw_lines_push(&l, "\n{\"ok\":1}\n", 10), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), -E2BIG);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_str_eq(line, "{\"ok\":1}");
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        sw_lines_free(&l);
        free(big);
}
END_TEST

START_TEST(lines_oversized_line_is_never_held)
{
        const size_t chunk = 64 * 1024;
        char *data = repeat('a', chunk), *line;
        struct sw_lines l;
        size_t len, i;

        sw_lines_init(&l);
        for (i = 0; i < 48; i++) {
                ck_assert_int_eq(sw_lines_push(&l, data, chunk), 0);
                ck_assert_uint_le(l.len, SW_LINE_MAX + 2);
                ck_assert_uint_le(sw_lines_pending(&l), SW_LINE_MAX);
        }
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), -E2BIG);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        ck_assert_uint_eq(sw_lines_pending(&l), 0);
        ck_assert_int_eq(sw_lines_push(&l, "still\nnext\n", 11), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_str_eq(line, "next");
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 0);
        sw_lines_free(&l);
        free(data);
}
END_TEST

START_TEST(lines_exactly_line_max_is_accepted)
{
        char *data = repeat('b', SW_LINE_MAX + 1), *line;
        struct sw_lines l;
        size_t len;

        data[SW_LINE_MAX] = '\n';
        sw_lines_init(&l);
        ck_assert_int_eq(sw_lines_push(&l, data, SW_LINE_MAX + 1), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_uint_eq(len, SW_LINE_MAX);
        ck_assert_int_eq(line[0], 'b');
        ck_assert_int_eq(line[len], '\0');
        sw_lines_free(&l);
        free(data);
}
END_TEST

START_TEST(lines_line_max_plus_one_is_rejected)
{
        char *data = repeat('c', SW_LINE_MAX + 2), *line;
        struct sw_lines l;
        size_t len;

        data[SW_LINE_MAX + 1] = '\n';
        sw_lines_init(&l);
        ck_assert_int_eq(sw_lines_push(&l, data, SW_LINE_MAX + 2), 0);
        ck_assert_int_eq(sw_lines_push(&l, "ok\n", 3), 0);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), -E2BIG);
        ck_assert_int_eq(sw_lines_next(&l, &line, &len), 1);
        ck_assert_str_eq(line, "ok");
        sw_lines_free(&l);
        free(data);
}
END_TEST

/* Requests */

static int request(const char *line, struct sw_request *req, json_object **id)
{
        errbuf[0] = '\0';
        return sw_request_parse(line, strlen(line), req, id, errbuf, sizeof(errbuf));
}

static void bad_request(const char *line, int code, json_object *want_id)
{
        json_object *unset = json_object_new_int(-999), *id = unset;
        struct sw_request req;
        int r = request(line, &req, &id);

        ck_assert_msg(id != unset, "%s: *ret_id not written", line);
        json_object_put(unset);
        ck_assert_msg(r == code, "%s: %d, want %d (%s)", line, r, code, errbuf);
        ck_assert_msg(errbuf[0] != '\0', "%s: no message", line);
        ck_assert_msg(json_object_equal(id, want_id), "%s: id %s, want %s", line,
                      id ? json_object_to_json_string(id) : "NULL",
                      want_id ? json_object_to_json_string(want_id) : "NULL");
        json_object_put(id);
        json_object_put(want_id);
}

START_TEST(request_with_integer_id)
{
        struct sw_request req;
        json_object *id;

        ck_assert_int_eq(
            request("{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"wait\",\"params\":{\"id\":3}}",
                    &req, &id),
            0);
        ck_assert_ptr_null(id);
        ck_assert_str_eq(req.method, "wait");
        ck_assert(json_object_is_type(req.id, json_type_int));
        ck_assert_int_eq(json_object_get_int64(req.id), 7);
        ck_assert(json_object_is_type(req.params, json_type_object));
        ck_assert_int_eq(json_object_get_int(json_object_object_get(req.params, "id")), 3);
        sw_request_clear(&req);
        ck_assert_ptr_null(req.method);
}
END_TEST

START_TEST(request_with_string_id)
{
        struct sw_request req;
        json_object *id;

        ck_assert_int_eq(
            request("{\"jsonrpc\":\"2.0\",\"id\":\"a-1\",\"method\":\"ping\"}", &req, &id), 0);
        ck_assert_str_eq(json_object_get_string(req.id), "a-1");
        ck_assert_str_eq(req.method, "ping");
        sw_request_clear(&req);
}
END_TEST

START_TEST(request_without_id_is_a_notification)
{
        struct sw_request req;
        json_object *id;

        ck_assert_int_eq(
            request("{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":{}}", &req, &id), 0);
        ck_assert_ptr_null(req.id);
        ck_assert_ptr_nonnull(req.params);
        sw_request_clear(&req);
}
END_TEST

START_TEST(request_without_params_has_null_params)
{
        struct sw_request req;
        json_object *id;

        ck_assert_int_eq(
            request(" {\"method\":\"list\",\"id\":1,\"jsonrpc\":\"2.0\"} \r", &req, &id), 0);
        ck_assert_ptr_null(req.params);
        ck_assert_str_eq(req.method, "list");
        sw_request_clear(&req);
}
END_TEST

START_TEST(request_malformed_json_is_parse_error)
{
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"", SW_E_PARSE, NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":ping}", SW_E_PARSE, NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":01,\"method\":\"ping\"}", SW_E_PARSE, NULL);
        bad_request("", SW_E_PARSE, NULL);
        bad_request("   ", SW_E_PARSE, NULL);
}
END_TEST

START_TEST(request_trailing_garbage_is_parse_error)
{
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} x", SW_E_PARSE, NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}{}", SW_E_PARSE, NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\r,", SW_E_PARSE, NULL);
}
END_TEST

START_TEST(request_invalid_utf8_is_parse_error)
{
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}", SW_E_PARSE, NULL);
        /* json-c lets these through: an overlong NUL, a UTF-16 surrogate, a cut sequence. */
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xc0\x80\"}", SW_E_PARSE, NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"\xed\xa0\x80\"}", SW_E_PARSE, NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\xe2\x82", SW_E_PARSE, NULL);
        ck_assert(strstr(errbuf, "UTF-8"));
}
END_TEST

START_TEST(request_embedded_nul_is_parse_error)
{
        static const char line[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\0 ";
        struct sw_request req;
        json_object *id;

        ck_assert_int_eq(
            sw_request_parse(line, sizeof(line) - 1, &req, &id, errbuf, sizeof(errbuf)),
            SW_E_PARSE);
        ck_assert_ptr_null(id);
        ck_assert_int_eq(
            sw_request_parse(line, sizeof(line) - 3, &req, &id, errbuf, sizeof(errbuf)), 0);
        sw_request_clear(&req);
}
END_TEST

START_TEST(request_not_an_object_is_invalid_request)
{
        bad_request("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", SW_E_INVALID_REQUEST,
                    NULL);
        bad_request("123", SW_E_INVALID_REQUEST, NULL);
        bad_request("\"ping\"", SW_E_INVALID_REQUEST, NULL);
        bad_request("null", SW_E_INVALID_REQUEST, NULL);
}
END_TEST

START_TEST(request_without_jsonrpc_2_0_is_invalid_request_with_id)
{
        bad_request("{\"id\":4,\"method\":\"ping\"}", SW_E_INVALID_REQUEST, J("4"));
        bad_request("{\"jsonrpc\":\"1.0\",\"id\":4,\"method\":\"ping\"}", SW_E_INVALID_REQUEST,
                    J("4"));
        bad_request("{\"jsonrpc\":2.0,\"id\":\"x\",\"method\":\"ping\"}", SW_E_INVALID_REQUEST,
                    J("\"x\""));
}
END_TEST

START_TEST(request_method_not_a_string_is_invalid_request_with_id)
{
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":1}", SW_E_INVALID_REQUEST, J("5"));
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":5}", SW_E_INVALID_REQUEST, J("5"));
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\\u0000x\"}",
                    SW_E_INVALID_REQUEST, J("5"));
}
END_TEST

START_TEST(request_params_not_an_object_is_invalid_request_with_id)
{
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"wait\",\"params\":null}",
                    SW_E_INVALID_REQUEST, J("6"));
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"wait\",\"params\":\"x\"}",
                    SW_E_INVALID_REQUEST, J("6"));
}
END_TEST

/* JSON-RPC's positional params are valid JSON-RPC, but no method takes them: bad params, to the
 * request's id (none for a notification, which the daemon then does not answer). */
START_TEST(request_positional_params_are_invalid_params_with_id)
{
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"wait\",\"params\":[1]}",
                    SW_E_INVALID_PARAMS, J("6"));
        ck_assert_str_eq(errbuf, "params must be an object of named members");
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\",\"params\":[]}",
                    SW_E_INVALID_PARAMS, J("\"p\""));
        bad_request("{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":[]}", SW_E_INVALID_PARAMS,
                    NULL);
}
END_TEST

START_TEST(request_extra_member_is_invalid_request_with_id)
{
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"extra\":1}",
                    SW_E_INVALID_REQUEST, J("8"));
        ck_assert(strstr(errbuf, "\"extra\""));
}
END_TEST

/* The envelope's members are read without an object around them, and at most 8 are kept: the
 * first unknown one is named all the same, a long name cut at 64 bytes, and what was read of a
 * refused request goes (ASan sees a leak or a use after free). */
START_TEST(request_envelope_names_its_first_unknown_member_however_many)
{
        char line[512], name[80];

        bad_request("{\"a\":{\"x\":[1]},\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,"
                    "\"i\":{},\"j\":[],\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}",
                    SW_E_INVALID_REQUEST, J("3"));
        ck_assert_msg(strstr(errbuf, "\"a\""), "%s", errbuf);
        bad_request("{\"jsonrpc\":\"2.0\",\"method\":\"ping\",\"params\":{},\"id\":4,"
                    "\"a\":1,\"b\":2,\"c\":3,\"d\":{\"x\":1},\"e\":5}",
                    SW_E_INVALID_REQUEST, J("4"));
        ck_assert_msg(strstr(errbuf, "\"a\""), "%s", errbuf);
        memset(name, 'n', 70);
        name[70] = '\0';
        snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\",\"%s\":1}",
                 name);
        bad_request(line, SW_E_INVALID_REQUEST, J("5"));
        name[64] = '\0';
        ck_assert_msg(strstr(errbuf, name), "%s", errbuf);
        name[64] = 'n';
        name[65] = '\0';
        ck_assert_msg(!strstr(errbuf, name), "%s", errbuf);
        name[64] = '\0';
        /* A known name, once cut, is not taken for the name it begins with. */
        snprintf(line, sizeof(line),
                 "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\",\"params%s\":{}}", name);
        bad_request(line, SW_E_INVALID_REQUEST, J("6"));
        /* Read, then refused for a duplicate later on: no id, nothing kept. */
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":7,\"params\":{\"a\":[1,{}]},\"method\":\"ping\","
                    "\"params\":{}}",
                    SW_E_INVALID_REQUEST, NULL);
}
END_TEST

/* "id": null is a request, answered to id null (JSON-RPC 2.0), not a notification. */
START_TEST(request_with_id_null_is_answered_to_id_null)
{
        struct sw_request req;
        json_object *id;
        char *line;

        ck_assert_int_eq(
            request("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}", &req, &id), 0);
        ck_assert_ptr_nonnull(req.id);
        ck_assert(sw_id_is_null(req.id));
        ck_assert_str_eq(json_object_to_json_string(req.id), "null");
        line = sw_result_line(json_object_get(req.id), json_object_new_object());
        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{}}\n");
        free(line);
        line = sw_error_line(json_object_get(req.id), SW_E_NOT_FOUND, "no job 3");
        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32001,"
                               "\"message\":\"no job 3\",\"data\":\"ENOENT\"}}\n");
        free(line);
        sw_request_clear(&req);
        /* Not taken for null: another id, a number, none. */
        ck_assert(!sw_id_is_null(NULL));
        ck_assert_int_eq(
            request("{\"jsonrpc\":\"2.0\",\"id\":\"null\",\"method\":\"ping\"}", &req, &id), 0);
        ck_assert(!sw_id_is_null(req.id));
        sw_request_clear(&req);
        /* Its errors are to id null as well, and it is no notification. */
        ck_assert_int_eq(
            request("{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\",\"params\":[]}", &req,
                    &id),
            SW_E_INVALID_PARAMS);
        ck_assert(sw_id_is_null(id));
        json_object_put(id);
}
END_TEST

START_TEST(request_id_float_or_object_is_invalid_request_without_id)
{
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}", SW_E_INVALID_REQUEST,
                    NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1.0,\"method\":\"ping\"}", SW_E_INVALID_REQUEST,
                    NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":{},\"method\":\"ping\"}", SW_E_INVALID_REQUEST,
                    NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}", SW_E_INVALID_REQUEST,
                    NULL);
}
END_TEST

/* Issue 12: "method":"ping","method":"settings.set" ran settings.set. */
START_TEST(request_duplicate_member_is_invalid_request)
{
        bad_request(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\":\"settings.set\"}",
            SW_E_INVALID_REQUEST, NULL);
        ck_assert_msg(strstr(errbuf, "duplicate member \"method\""), "%s", errbuf);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}",
                    SW_E_INVALID_REQUEST, NULL);
        /* The same name written with escapes. */
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"\\u006dethod\":\"list\"}",
                    SW_E_INVALID_REQUEST, NULL);
        /* At every depth: in params, and in a value inside them. */
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"settings.set\",\"params\":"
                    "{\"max-threads\":2,\"max-threads\":200}}",
                    SW_E_INVALID_REQUEST, NULL);
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\",\"params\":"
                    "{\"plugin\":\"p\",\"arg\":[1,{\"a\":{\"b\":1,\"c\":2,\"b\":3}}]}}",
                    SW_E_INVALID_REQUEST, NULL);
        ck_assert_msg(strstr(errbuf, "duplicate member \"b\""), "%s", errbuf);
        /* Among many names (compared otherwise than a few). */
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\",\"params\":"
                    "{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6,\"g\":7,\"h\":8,"
                    "\"i\":9,\"c\":10}}",
                    SW_E_INVALID_REQUEST, NULL);
        ck_assert_msg(strstr(errbuf, "duplicate member \"c\""), "%s", errbuf);
        /* Objects and arrays as the values of the names, and after them. */
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\",\"params\":"
                    "{\"a\":{\"x\":[1]},\"a\":[{\"y\":2}],\"z\":{\"w\":{\"v\":3}}}}",
                    SW_E_INVALID_REQUEST, NULL);
        ck_assert_msg(strstr(errbuf, "duplicate member \"a\""), "%s", errbuf);
        /* A line that is not JSON is a parse error, whatever its names. */
        bad_request(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":1,\"a\":2},}",
            SW_E_PARSE, NULL);
}
END_TEST

/* json-c cuts a member name at its NUL: "id\u0000x" would read as, and replace, "id". */
START_TEST(request_member_name_with_nul_is_invalid_request)
{
        bad_request(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"method\\u0000x\":\"list\"}",
            SW_E_INVALID_REQUEST, NULL);
        bad_request(
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait\",\"params\":{\"id\\u0000\":3}}",
            SW_E_INVALID_REQUEST, NULL);
        ck_assert_msg(strstr(errbuf, "NUL"), "%s", errbuf);
        /* Objects and arrays under such a name, and after it. */
        bad_request("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\",\"params\":"
                    "{\"a\\u0000\":{\"b\":[1,{\"c\":2}]},\"d\":{\"e\":[{}]}}}",
                    SW_E_INVALID_REQUEST, NULL);
        ck_assert_msg(strstr(errbuf, "NUL"), "%s", errbuf);
}
END_TEST

/* What json-c takes even in strict mode, in each place a request may hold it. */
START_TEST(request_json_extensions_are_parse_errors)
{
        static const char *const bad[] = {
            "{'jsonrpc':\"2.0\",\"id\":1,\"method\":\"ping\"}",
            "{\"jsonrpc\":'2.0',\"id\":1,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":-01,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait\",\"params\":{\"id\":1.}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait\",\"params\":{\"id\":2.e3}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait\",\"params\":{\"id\":-2.}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait\",\"params\":{\"id\":-.5}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"settings.set\",\"params\":"
            "{\"kill-grace\":NaN}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"settings.set\",\"params\":"
            "{\"kill-grace\":Infinity}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"settings.set\",\"params\":"
            "{\"kill-grace\":-Infinity}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\t\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\tb\",\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\x01\",\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"\\x41\",\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"\\ud800\",\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"\\udc00\\ud800\",\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":+1,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":0x1,\"method\":\"ping\"}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"/**/}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":[1,]}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":{\"a\":True}}",
        };
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                bad_request(bad[i], SW_E_PARSE, NULL);
}
END_TEST

/* Issue 12: an id beyond 64 bits was clamped, so the reply's id differed from the request's. */
START_TEST(request_id_outside_int64_is_invalid_request)
{
        static const char *const bad[] = {
            "9223372036854775808", "-9223372036854775809", "18446744073709551615",
            "18446744073709551616", "100000000000000000000000", "-0", "1e2", "1E0", "1.5e300",
        };
        char line[256];
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(line, sizeof(line), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"ping\"}",
                         bad[i]);
                bad_request(line, SW_E_INVALID_REQUEST, NULL);
                ck_assert_msg(strstr(errbuf, "\"id\""), "%s: %s", line, errbuf);
        }
}
END_TEST

/* The reply's id is the request's, byte for byte, up to the ends of int64. */
START_TEST(request_id_is_echoed_as_written)
{
        static const char *const ids[] = {
            "9223372036854775807", "-9223372036854775808", "0", "-1", "\"x/\\\"y\"",
        };
        char line[256], *reply, want[128];
        struct sw_request req;
        json_object *id;
        size_t i;

        for (i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
                snprintf(line, sizeof(line),
                         "{\"jsonrpc\":\"2.0\", \"id\" : %s ,\"method\":\"ping\"}", ids[i]);
                ck_assert_msg(request(line, &req, &id) == 0, "%s: %s", line, errbuf);
                reply = sw_result_line(json_object_get(req.id), NULL);
                snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":null}\n",
                         ids[i]);
                ck_assert_str_eq(reply, want);
                free(reply);
                sw_request_clear(&req);
        }
}
END_TEST

START_TEST(request_longer_than_line_max_is_too_large)
{
        char *line = repeat(' ', SW_LINE_MAX + 1);
        struct sw_request req;
        json_object *id;

        ck_assert_int_eq(sw_request_parse(line, SW_LINE_MAX + 1, &req, &id, errbuf, sizeof(errbuf)),
                         SW_E_TOO_LARGE);
        ck_assert_ptr_null(id);
        free(line);
}
END_TEST

/* JSON */

static int json_check(const char *text)
{
        errbuf[0] = '\0';
        return sw_json_check(text, strlen(text), errbuf, sizeof(errbuf));
}

START_TEST(json_check_takes_rfc_8259_only)
{
        static const char *const good[] = {
            "0", "-0", "-0.0e+00", "1E-2", "123.456e78", "\"\\u0000\"", "\"\\uD834\\uDD1E\"",
            " [ ] ", "{\"a\":1,\"a\":2}", "\"\xf4\x8f\xbf\xbf\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"",
            "[1e999]", "null",
        };
        static const char *const bad[] = {
            "", " ", "01", "-01", "1.", "2.e3", ".5", "+1", "NaN", "-Infinity", "Infinity", "0x10",
            "'a'", "{'a':1}", "{a:1}", "\"\t\"", "\"\n\"", "\"\\a\"", "\"\\u12\"", "\"\\ud800\"",
            "\"\\udc00\"", "\"\\ud800\\u0041\"", "[1,]", "{\"a\":1,}", "[1]x", "[1] [2]", "/**/1",
            "\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\xef\xbb\xbf{}", "[\f]", "tru", "nulll",
        };
        char deep[80];
        size_t i;

        for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
                ck_assert_msg(json_check(good[i]) == 0, "refused: %s (%s)", good[i], errbuf);
        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_msg(json_check(bad[i]) == SW_E_PARSE, "accepted: %s", bad[i]);
                ck_assert_msg(strncmp(errbuf, "invalid JSON: ", 14) == 0, "%s", errbuf);
        }
        ck_assert_int_eq(sw_json_check("[0]\0", 4, errbuf, sizeof(errbuf)), SW_E_PARSE);
        /* As deep as json-c goes, and no deeper. */
        memset(deep, '[', 32);
        memset(deep + 32, ']', 32);
        deep[64] = '\0';
        ck_assert_int_eq(json_check(deep), 0);
        memset(deep, '[', 33);
        memset(deep + 33, ']', 33);
        deep[66] = '\0';
        ck_assert_int_eq(json_check(deep), SW_E_PARSE);
}
END_TEST

/* JSONTestSuite's test_parsing (github.com/nst/JSONTestSuite), kept under
 * tests/jsontestsuite with its licence. */
static char *test_parsing_dir(void)
{
        char *path = strdup(JSONTESTSUITE_DIR);

        ck_assert_ptr_nonnull(path);
        return path;
}

static char *read_case(const char *dir, const char *name, size_t *ret_len)
{
        char *path, *data = NULL;
        size_t size = 0, len = 0, k;
        FILE *f;

        ck_assert_int_ne(asprintf(&path, "%s/%s", dir, name), -1);
        f = fopen(path, "rb");
        ck_assert_msg(f, "cannot open %s: %s", path, strerror(errno));
        do {
                if (len == size) {
                        size = size ? 2 * size : 65536;
                        data = realloc(data, size + 1);
                        ck_assert_ptr_nonnull(data);
                }
                k = fread(data + len, 1, size - len, f);
                len += k;
        } while (k > 0);
        ck_assert_msg(!ferror(f), "cannot read %s", path);
        fclose(f);
        free(path);
        data[len] = '\0';
        *ret_len = len;
        return data;
}

/* Batches */

static bool batch(const char *line)
{
        return sw_batch_is(line, strlen(line));
}

START_TEST(batch_is_a_non_empty_array_that_is_json)
{
        ck_assert(batch("[1]"));
        ck_assert(batch(" \t[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}] \r"));
        ck_assert(batch("[[]]"));
        /* Names are the members' business: a duplicate spoils only its member. */
        ck_assert(batch("[{\"a\":1,\"a\":2}]"));
        ck_assert(!batch("[]"));
        ck_assert(!batch(" [ \r\n] "));
        ck_assert(!batch("[1,]"));
        ck_assert(!batch("[1"));
        ck_assert(!batch("[1] x"));
        ck_assert(!batch("[\"\xff\"]"));
        ck_assert(!sw_batch_is("[1]\0", 4));
        ck_assert(!batch("{\"jsonrpc\":\"2.0\",\"id\":[1],\"method\":\"ping\"}"));
        ck_assert(!batch("1"));
        ck_assert(!batch(""));
}
END_TEST

/* The elements of line, each "|"-ended, as sw_batch_next() gives them. */
static void elements(const char *line, const char *want)
{
        size_t pos = 0, at, len, n = strlen(line);
        char got[512] = "";

        ck_assert_msg(sw_batch_is(line, n), "not a batch: %s", line);
        while (sw_batch_next(line, n, &pos, &at, &len))
                snprintf(got + strlen(got), sizeof(got) - strlen(got), "%.*s|", (int)len,
                         line + at);
        ck_assert_str_eq(got, want);
}

START_TEST(batch_elements_are_found_as_written)
{
        elements("[1]", "1|");
        elements(" [ 1 , -2.5e3 ,true,false , null ] ", "1|-2.5e3|true|false|null|");
        elements("[\"a,]\\\"}\",{\"b\":[1,{\"c\":\"]\"}]},[[],{}] ,\"\\\\\"]",
                 "\"a,]\\\"}\"|{\"b\":[1,{\"c\":\"]\"}]}|[[],{}]|\"\\\\\"|");
        elements("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},\r\n"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}]",
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}|"
                 "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}|");
}
END_TEST

START_TEST(batch_error_line_for_a_reply_takes_its_id)
{
        static const char *const replies[] = {
            "{\"jsonrpc\":\"2.0\",\"id\":12345678901234,\"result\":{\"items\":[]}}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"a\\u0062\",\"result\":1}",
            "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":1}",
        };
        static const char *const ids[] = {"12345678901234", "\"a\\u0062\"", "null"};
        char want[256], *line;

        for (size_t i = 0; i < 3; i++) {
                line = sw_error_line_for(replies[i], strlen(replies[i]), SW_E_TOO_LARGE, "long");
                snprintf(want, sizeof(want),
                         "{\"jsonrpc\":\"2.0\",\"id\":%s,\"error\":{\"code\":-32005,"
                         "\"message\":\"long\",\"data\":\"E2BIG\"}}\n",
                         ids[i]);
                ck_assert_str_eq(line, want);
                free(line);
        }
}
END_TEST

/* Whether text is a batch exactly when json-c reads it as a non-empty array, with elements that
 * are each JSON, as many as json-c's; why not, or NULL. */
static const char *batch_disagrees(const char *text, size_t len, bool json)
{
        json_object *v = json ? json_tokener_parse(text) : NULL;
        bool array = json_object_is_type(v, json_type_array) && json_object_array_length(v) > 0;
        size_t pos = 0, at, n = 0, elen;
        const char *why = NULL;

        if (sw_batch_is(text, len) != array)
                why = array ? "not taken for a batch" : "taken for a batch";
        while (!why && array && sw_batch_next(text, len, &pos, &at, &elen)) {
                if (sw_json_check(text + at, elen, NULL, 0) != 0)
                        why = "an element is not JSON";
                n++;
        }
        if (!why && array && n != json_object_array_length(v))
                why = "elements miscounted";
        json_object_put(v);
        return why;
}

/* Every n_ case is refused, as JSON and as a request (-32700), and is no batch; every y_ case is
 * JSON (and as a request at worst -32600), and a batch when it is a non-empty array, whose
 * elements are found. The i_ cases, which RFC 8259 leaves open, are only reported. */
START_TEST(json_test_suite_parsing)
{
        char *dir = test_parsing_dir(), *text, failures[4096] = "", iout[4096] = "";
        const char *why;
        size_t len, n_count = 0, y_count = 0, i_count = 0, i_taken = 0, used = 0, iused = 0;
        struct sw_request req;
        struct dirent *e;
        json_object *id;
        int j, r;
        DIR *d;

        d = opendir(dir);
        ck_assert_msg(d, "cannot open %s: %s", dir, strerror(errno));
        while ((e = readdir(d))) {
                char kind = e->d_name[0];

                if ((kind != 'n' && kind != 'y' && kind != 'i') || e->d_name[1] != '_')
                        continue;
                text = read_case(dir, e->d_name, &len);
                j = sw_json_check(text, len, errbuf, sizeof(errbuf));
                id = NULL;
                r = sw_request_parse(text, len, &req, &id, errbuf, sizeof(errbuf));
                if (r == 0)
                        sw_request_clear(&req);
                json_object_put(id);
                why = kind == 'i' ? NULL : batch_disagrees(text, len, kind == 'y');
                if (why && used < sizeof(failures) - 100)
                        used += (size_t)snprintf(failures + used, sizeof(failures) - used,
                                                 " %s (%s)", e->d_name, why);
                if (kind == 'n') {
                        n_count++;
                        if ((j != SW_E_PARSE || r != SW_E_PARSE) && used < sizeof(failures) - 100)
                                used += (size_t)snprintf(failures + used, sizeof(failures) - used,
                                                         " %s (check %d, request %d)", e->d_name,
                                                         j, r);
                } else if (kind == 'y') {
                        y_count++;
                        if ((j != 0 || r == SW_E_PARSE) && used < sizeof(failures) - 100)
                                used += (size_t)snprintf(failures + used, sizeof(failures) - used,
                                                         " %s (check %d, request %d)", e->d_name,
                                                         j, r);
                } else {
                        i_count++;
                        i_taken += j == 0;
                        if (iused < sizeof(iout) - 100)
                                iused += (size_t)snprintf(iout + iused, sizeof(iout) - iused,
                                                          " %s:%s", e->d_name,
                                                          j ? "refused" : "accepted");
                }
                free(text);
        }
        closedir(d);
        fprintf(stderr, "JSONTestSuite in %s: %zu n_, %zu y_; i_ %zu accepted of %zu:%s\n", dir,
                n_count, y_count, i_taken, i_count, iout);
        ck_assert_msg(n_count >= 188 && y_count >= 95,
                      "JSONTestSuite in %s is incomplete: %zu n_ and %zu y_ cases (188 and 95 "
                      "expected); run scripts/deps again",
                      dir, n_count, y_count);
        ck_assert_msg(failures[0] == '\0', "JSONTestSuite cases wrongly decided:%s", failures);
        free(dir);
}
END_TEST

/* What json-c's own reader makes of text (strict; a bare number ended by the text's end). */
static json_object *json_c_reads(const char *text, size_t len)
{
        json_tokener *tok = json_tokener_new();
        json_object *v;

        ck_assert_ptr_nonnull(tok);
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
        v = json_tokener_parse_ex(tok, text, (int)len);
        if (json_tokener_get_error(tok) == json_tokener_continue)
                v = json_tokener_parse_ex(tok, "", 1);
        ck_assert_msg(json_tokener_get_error(tok) == json_tokener_success, "json-c refuses %s",
                      text);
        json_tokener_free(tok);
        return v;
}

/* Whether a and b are the same: types (int64 or uint64 too), values, member order, texts. */
static bool same_value(json_object *a, json_object *b)
{
        size_t i, n;

        if (!a || !b)
                return a == b;
        if (json_object_get_type(a) != json_object_get_type(b))
                return false;
        switch (json_object_get_type(a)) {
        case json_type_int:
                return json_object_get_int64(a) == json_object_get_int64(b) &&
                       json_object_get_uint64(a) == json_object_get_uint64(b);
        case json_type_double:
                return memcmp(&(double){json_object_get_double(a)},
                              &(double){json_object_get_double(b)}, sizeof(double)) == 0 &&
                       strcmp(json_object_to_json_string(a), json_object_to_json_string(b)) == 0;
        case json_type_string:
                return json_object_get_string_len(a) == json_object_get_string_len(b) &&
                       memcmp(json_object_get_string(a), json_object_get_string(b),
                              (size_t)json_object_get_string_len(a)) == 0;
        case json_type_boolean:
                return json_object_get_boolean(a) == json_object_get_boolean(b);
        case json_type_array:
                n = json_object_array_length(a);
                if (n != json_object_array_length(b))
                        return false;
                for (i = 0; i < n; i++)
                        if (!same_value(json_object_array_get_idx(a, i),
                                        json_object_array_get_idx(b, i)))
                                return false;
                return true;
        case json_type_object: {
                struct lh_entry *x = json_object_get_object(a)->head,
                                *y = json_object_get_object(b)->head;

                for (; x && y; x = x->next, y = y->next)
                        if (strcmp(lh_entry_k(x), lh_entry_k(y)) != 0 ||
                            !same_value((json_object *)lh_entry_v(x), (json_object *)lh_entry_v(y)))
                                return false;
                return !x && !y;
        }
        default:
                return true;
        }
}

/* Writes v as the daemon does, and checks the bytes against json-c's writer's. */
static void writes_as_json_c_does(json_object *v)
{
        struct sw_text t = {0};
        const char *theirs = json_object_to_json_string_ext(
            v, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE);
        char *ours;

        sw_text_value(&t, v);
        ours = sw_text_end(&t);
        ck_assert_ptr_nonnull(ours);
        ck_assert_str_eq(ours, theirs);
        free(ours);
}

/* Reads text as the daemon does, and checks the value against json-c's reader's, and the text
 * written of it against json-c's writer's. */
static void reads_as_json_c_does(const char *text, size_t len)
{
        struct proto_json_scan scan;
        json_object *ours = NULL, *theirs;

        ck_assert_msg(proto_json_parse(text, len, &ours, &scan, errbuf, sizeof(errbuf)) == 0,
                      "%.200s: %s", text, errbuf);
        theirs = json_c_reads(text, len);
        ck_assert_msg(same_value(ours, theirs), "%.200s: read as %.200s, json-c reads %.200s",
                      text, json_object_to_json_string(ours), json_object_to_json_string(theirs));
        writes_as_json_c_does(ours);
        json_object_put(ours);
        json_object_put(theirs);
}

/* The one-pass reader makes what json-c's reader makes, and the writer writes what json-c's
 * writer writes: every JSON text of JSONTestSuite that both take, and the numbers at and past
 * int64's and uint64's ends, doubles as written, escapes, and nesting; then values made in C
 * (every control byte, doubles not read from a text). */
START_TEST(json_values_and_texts_are_what_json_c_makes)
{
        static const char *const texts[] = {
            "{\"a\":1,\"b\":-1,\"c\":9223372036854775807,\"d\":9223372036854775808,"
            "\"e\":18446744073709551615,\"f\":18446744073709551616,\"g\":-9223372036854775808,"
            "\"h\":-9223372036854775809,\"i\":-0,\"j\":0,\"k\":99999999999999999999999}",
            "[1.5,-0.0,1e400,-1e400,1e-400,2.50,1E3,1e+2,0.1,-2.5e-3,"
            "123456789012345678901234567890.5,0.30000000000000004]",
            "\"\\u0000a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00 \xc3\xbc\"",
            "{\"nested\":{\"x\":[{\"y\":null,\"z\":true},false,[],{}],\"\":{}},"
            "\"k\\u00e9y\":\"v\",\"k\\ty\":[[[[1]]]]}",
            "null", "true", "false", "  42  ", "-7", "3.25", "\"x\"", "[]", "{}", " [ 1 , 2 ] ",
            "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"submit\","
            "\"params\":{\"cwd\":\"/tmp\",\"command\":\"true\",\"delay\":0.5}}",
        };
        char *dir = test_parsing_dir(), *text;
        size_t i, len, n = 0;
        struct dirent *e;
        DIR *d;

        for (i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
                reads_as_json_c_does(texts[i], strlen(texts[i]));
        d = opendir(dir);
        ck_assert_msg(d, "cannot open %s: %s", dir, strerror(errno));
        while ((e = readdir(d))) {
                if ((e->d_name[0] != 'y' && e->d_name[0] != 'i') || e->d_name[1] != '_')
                        continue;
                text = read_case(dir, e->d_name, &len);
                /* What the reader refuses (an i_ case, or a name twice) is not compared. */
                if (proto_json_scan(text, len, true, NULL, errbuf, sizeof(errbuf)) == 0) {
                        reads_as_json_c_does(text, len);
                        n++;
                }
                free(text);
        }
        closedir(d);
        ck_assert_int_ge(n, 90);
        free(dir);
        {
                /* More names than the reader first has room for (16), at two depths, and more
                 * escaped text than its first buffer (256 bytes). */
                struct sw_text t = {0};
                char name[32];

                sw_text_raw(&t, "{\"outer\":", 9);
                for (int depth = 0; depth < 2; depth++) {
                        sw_text_raw(&t, "{", 1);
                        for (int k = 0; k < 40; k++) {
                                snprintf(name, sizeof(name), "%s\"k\\u00e9%d\":", k ? "," : "", k);
                                sw_text_raw(&t, name, strlen(name));
                                sw_text_raw(&t, "\"\\n\\u00e9abcdefghij\\t\"", 22);
                        }
                        sw_text_raw(&t, depth ? ",\"inner\":1" : ",\"inner\":", depth ? 10 : 9);
                }
                sw_text_raw(&t, "}}}", 3);
                text = sw_text_end(&t);
                ck_assert_ptr_nonnull(text);
                reads_as_json_c_does(text, strlen(text));
                free(text);
        }
        {
                char bytes[128];
                json_object *o = json_object_new_object(), *a = json_object_new_array();

                for (i = 0; i < sizeof(bytes); i++)
                        bytes[i] = (char)i;
                json_object_object_add(o, "bytes\x01/\"",
                                       json_object_new_string_len(bytes, sizeof(bytes)));
                json_object_array_add(a, json_object_new_double(0.1));
                json_object_array_add(a, json_object_new_double(-1e300));
                json_object_array_add(a, json_object_new_double(3));
                json_object_array_add(a, json_object_new_int64(INT64_MIN));
                json_object_array_add(a, json_object_new_uint64(UINT64_MAX));
                json_object_array_add(a, NULL);
                json_object_object_add(o, "made", a);
                json_object_object_add(o, "none", NULL);
                writes_as_json_c_does(o);
                json_object_put(o);
        }
}
END_TEST

/* A text begun in the caller's buffer comes back in an allocation of its own, whether it fitted
 * there or outgrew it. */
START_TEST(a_text_begun_in_the_callers_buffer_is_given_in_its_own)
{
        struct sw_text t;
        char buf[16], *text;

        for (int n = 1; n <= 40; n += 13) {
                memset(buf, '#', sizeof(buf));
                sw_text_start(&t, buf, sizeof(buf));
                sw_text_raw(&t, "[", 1);
                for (int i = 0; i < n; i++) {
                        sw_text_raw(&t, i ? "," : "", i ? 1 : 0);
                        sw_text_int(&t, i);
                }
                sw_text_raw(&t, "]", 1);
                text = sw_text_end(&t);
                ck_assert_ptr_nonnull(text);
                ck_assert(text != buf);
                ck_assert_str_eq(text, n == 1 ? "[0]" : n == 14 ? "[0,1,2,3,4,5,6,7,8,9,10,11,12,13]"
                                       : n == 27 ? "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,"
                                                   "19,20,21,22,23,24,25,26]"
                                                 : "[0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,"
                                                   "19,20,21,22,23,24,25,26,27,28,29,30,31,32,33,"
                                                   "34,35,36,37,38,39]");
                free(text);
        }
}
END_TEST

/* What json-c's reader takes as to depth, this one takes: its 32nd array or object only empty. */
START_TEST(json_depth_is_json_c_s)
{
        static const char *const inner[] = {"1", "", "{\"a\":1}", "{}", "[]"};
        char text[256];
        size_t depth, i, k, len;
        json_tokener *tok;
        json_object *v;
        bool theirs, ours;

        for (depth = 29; depth <= 33; depth++)
                for (i = 0; i < sizeof(inner) / sizeof(inner[0]); i++) {
                        for (k = 0, len = 0; k < depth; k++)
                                text[len++] = '[';
                        len += (size_t)sprintf(text + len, "%s", inner[i]);
                        for (k = 0; k < depth; k++)
                                text[len++] = ']';
                        text[len] = '\0';
                        tok = json_tokener_new();
                        json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
                        v = json_tokener_parse_ex(tok, text, (int)len + 1);
                        theirs = json_tokener_get_error(tok) == json_tokener_success;
                        json_object_put(v);
                        json_tokener_free(tok);
                        v = NULL;
                        ours = sw_json_read(text, len, &v, errbuf, sizeof(errbuf)) == 0;
                        json_object_put(v);
                        ck_assert_msg(ours == theirs, "%zu deep around %s: json-c %s, here %s",
                                      depth, inner[i], theirs ? "takes it" : "refuses it",
                                      ours ? "taken" : errbuf);
                        ck_assert_int_eq(sw_json_check(text, len, NULL, 0) == 0, ours);
                }
}
END_TEST

/* An escaped surrogate pair is its character, also where json-c 0.16 makes U+FFFD of it
 * (U+xD800 to U+xDFFF of planes 1 to 16), in a string and in a name. */
START_TEST(json_surrogate_pairs_are_their_characters)
{
        const char *text = "{\"\\uD836\\uDC00\":\"\\uD836\\uDC00\\uDBB6\\uDD24x\"}";
        json_object *v = NULL, *s;

        ck_assert_int_eq(sw_json_read(text, strlen(text), &v, errbuf, sizeof(errbuf)), 0);
        ck_assert(json_object_object_get_ex(v, "\xf0\x9d\xa0\x80", &s));
        ck_assert_str_eq(json_object_get_string(s), "\xf0\x9d\xa0\x80\xf3\xbd\xa4\xa4x");
        json_object_put(v);
}
END_TEST

/* Replies */

START_TEST(result_line_is_one_plain_json_line)
{
        json_object *result = J("{\"path\":\"/run/x\",\"pong\":true}");
        char *line = sw_result_line(J("7"), result);

        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":7,\"result\":{\"path\":\"/run/x\","
                               "\"pong\":true}}\n");
        free(line);
}
END_TEST

START_TEST(result_line_round_trips)
{
        char *line = sw_result_line(J("42"), J("{\"id\":3,\"state\":\"pending\"}"));
        struct sw_reply reply;

        ck_assert_int_eq(sw_reply_parse(line, strlen(line) - 1, &reply), 0);
        ck_assert_int_eq(reply.id, 42);
        ck_assert_int_eq(reply.code, 0);
        ck_assert_ptr_null(reply.method);
        ck_assert_ptr_null(reply.message);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(reply.result, "state")),
                         "pending");
        sw_reply_clear(&reply);
        free(line);

        line = sw_result_line(J("1"), NULL);
        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":null}\n");
        ck_assert_int_eq(sw_reply_parse(line, strlen(line), &reply), 0);
        ck_assert_int_eq(reply.code, 0);
        ck_assert_ptr_null(reply.result);
        sw_reply_clear(&reply);
        free(line);
}
END_TEST

START_TEST(error_line_round_trips_with_data_name)
{
        char *line = sw_error_line(J("9"), SW_E_NOT_FOUND, "no item 9");
        struct sw_reply reply;

        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":9,\"error\":{\"code\":-32001,"
                               "\"message\":\"no item 9\",\"data\":\"ENOENT\"}}\n");
        ck_assert_int_eq(sw_reply_parse(line, strlen(line), &reply), 0);
        ck_assert_int_eq(reply.id, 9);
        ck_assert_int_eq(reply.code, SW_E_NOT_FOUND);
        ck_assert_str_eq(reply.message, "no item 9");
        ck_assert_str_eq(reply.data, "ENOENT");
        ck_assert_ptr_null(reply.result);
        sw_reply_clear(&reply);
        free(line);
}
END_TEST

START_TEST(error_line_with_null_id_and_unknown_code)
{
        char *line = sw_error_line(NULL, -1, "odd");
        struct sw_reply reply;

        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-1,"
                               "\"message\":\"odd\"}}\n");
        ck_assert_int_eq(sw_reply_parse(line, strlen(line), &reply), 0);
        ck_assert_int_eq(reply.id, -1);
        ck_assert_int_eq(reply.code, -1);
        ck_assert_ptr_null(reply.data);
        sw_reply_clear(&reply);
        free(line);
}
END_TEST

START_TEST(error_line_message_stays_utf8)
{
        char *line = sw_error_line(J("3"), SW_E_INVALID_PARAMS, "bad \xff\xc3 name \xc3\xa9");
        struct sw_reply reply;

        ck_assert_int_eq(sw_reply_parse(line, strlen(line), &reply), 0);
        ck_assert_str_eq(reply.message, "bad ?? name \xc3\xa9");
        ck_assert_str_eq(reply.data, "EINVAL");
        sw_reply_clear(&reply);
        free(line);
}
END_TEST

START_TEST(notification_line_round_trips)
{
        char *line = sw_notification_line("event", J("{\"id\":3,\"state\":\"idle\"}"));
        struct sw_reply reply;

        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":{\"id\":3,"
                               "\"state\":\"idle\"}}\n");
        ck_assert_int_eq(sw_reply_parse(line, strlen(line), &reply), 0);
        ck_assert_int_eq(reply.id, -1);
        ck_assert_str_eq(reply.method, "event");
        ck_assert_int_eq(json_object_get_int(json_object_object_get(reply.params, "id")), 3);
        sw_reply_clear(&reply);
        free(line);
}
END_TEST

START_TEST(request_line_parses_as_a_request)
{
        char *line = sw_request_line("cancel", J("{\"id\":12}"), 5);
        struct sw_request req;
        json_object *id;

        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"cancel\",\"params\":"
                               "{\"id\":12}}\n");
        ck_assert_int_eq(
            sw_request_parse(line, strlen(line) - 1, &req, &id, errbuf, sizeof(errbuf)), 0);
        ck_assert_int_eq(json_object_get_int64(req.id), 5);
        ck_assert_str_eq(req.method, "cancel");
        sw_request_clear(&req);
        free(line);

        line = sw_request_line("ping", NULL, 6);
        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}\n");
        free(line);
}
END_TEST

START_TEST(reply_parse_rejects_what_is_not_a_reply)
{
        static const char *const bad[] = {
            "{\"jsonrpc\":\"2.0\",\"id\":1}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"error\":{\"code\":1,\"message\":\"x\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":\"1\",\"result\":1}",
            "{\"id\":1,\"result\":1}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1,\"extra\":1}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":\"x\",\"message\":\"x\"}}",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":1}}",
            "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"id\":1}",
            "[1]",
            "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"a\":[1]},\"b\":1,\"c\":1,\"d\":1,\"e\":1,"
            "\"f\":1,\"g\":1,\"h\":1,\"i\":1}",
            "{\"jsonrpc\":\"2.0\",\"method\":\"event\",\"params\":[]}",
            "{\"jsonrpc\":\"2.0\",\"id\":null}",
        };
        struct sw_reply reply;
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(sw_reply_parse(bad[i], strlen(bad[i]), &reply) ==
                                  SW_E_INVALID_REQUEST,
                              "accepted: %s", bad[i]);
        ck_assert_int_eq(sw_reply_parse("{\"jsonrpc\":", 11, &reply), SW_E_PARSE);
}
END_TEST

/* Parameters */

struct every {
        bool b;
        int64_t i, any;
        double s;
        char *str;
        char **strv;
        char **env;
        json_object *json;
};

static const struct sw_param every_params[] = {
    {"b", SW_P_BOOL, offsetof(struct every, b), false, 0, 0},
    {"i", SW_P_INT, offsetof(struct every, i), false, -5, 5},
    {"any", SW_P_INT, offsetof(struct every, any), false, 0, 0},
    {"s", SW_P_SECONDS, offsetof(struct every, s), false, 0.5, 10},
    {"str", SW_P_STRING, offsetof(struct every, str), false, 0, 4},
    {"strv", SW_P_STRV, offsetof(struct every, strv), false, 0, 0},
    {"env", SW_P_ENV, offsetof(struct every, env), false, 0, 0},
    {"json", SW_P_JSON, offsetof(struct every, json), false, 0, 0},
    {.name = NULL},
};

static bool submit_is_empty(const struct sw_submit_params *p)
{
        return !p->class_name && !p->command && !p->argv && !p->cwd && !p->env && p->timeout == 0 &&
               !p->plugin && !p->entry && !p->arg && !p->key && !p->name && p->delay == 0 &&
               !p->hold && !p->persist;
}

START_TEST(params_absent_or_empty_without_required_is_fine)
{
        struct sw_submit_params sub = {0};
        struct sw_id_params id = {0};

        ck_assert_int_eq(params(NULL, sw_submit_params, &sub), 0);
        ck_assert_int_eq(params("{}", sw_submit_params, &sub), 0);
        ck_assert_ptr_null(sub.command);
        ck_assert_int_eq(params(NULL, sw_no_params, &id), 0);
        ck_assert_int_eq(params("{}", sw_status_params, &id), 0);
        ck_assert_int_eq(id.id, 0);
}
END_TEST

START_TEST(params_bool_accepts_only_booleans)
{
        struct every e = {0};

        ck_assert_int_eq(params("{\"b\":true}", every_params, &e), 0);
        ck_assert(e.b);
        rejected("{\"b\":1}", every_params, &e, "parameter \"b\" must be a boolean");
        rejected("{\"b\":\"true\"}", every_params, &e, "must be a boolean");
        rejected("{\"b\":null}", every_params, &e, "must be a boolean");
        ck_assert(e.b);
}
END_TEST

START_TEST(params_int_accepts_only_integers_in_range)
{
        struct every e = {0};

        ck_assert_int_eq(params("{\"i\":-5}", every_params, &e), 0);
        ck_assert_int_eq(e.i, -5);
        ck_assert_int_eq(params("{\"i\":5}", every_params, &e), 0);
        ck_assert_int_eq(e.i, 5);
        rejected("{\"i\":6}", every_params, &e, "parameter \"i\" must be between -5 and 5");
        rejected("{\"i\":-6}", every_params, &e, "between -5 and 5");
        rejected("{\"i\":1.0}", every_params, &e, "parameter \"i\" must be an integer");
        rejected("{\"i\":\"1\"}", every_params, &e, "must be an integer");
        rejected("{\"i\":18446744073709551615}", every_params, &e, "too large");
        ck_assert_int_eq(e.i, 5);
}
END_TEST

START_TEST(params_int_with_zero_range_is_unchecked)
{
        struct every e = {0};

        ck_assert_int_eq(params("{\"any\":-9223372036854775808}", every_params, &e), 0);
        ck_assert_int_eq(e.any, INT64_MIN);
        ck_assert_int_eq(params("{\"any\":9223372036854775807}", every_params, &e), 0);
        ck_assert_int_eq(e.any, INT64_MAX);
        rejected("{\"any\":9223372036854775808}", every_params, &e, "too large");
}
END_TEST

START_TEST(params_seconds_accept_finite_numbers_in_range)
{
        struct every e = {0};

        ck_assert_int_eq(params("{\"s\":2}", every_params, &e), 0);
        ck_assert_double_eq(e.s, 2.0);
        ck_assert_int_eq(params("{\"s\":0.5}", every_params, &e), 0);
        ck_assert_double_eq(e.s, 0.5);
        rejected("{\"s\":0.25}", every_params, &e, "parameter \"s\" must be between 0.5 and 10");
        rejected("{\"s\":10.001}", every_params, &e, "between 0.5 and 10");
        rejected("{\"s\":\"2\"}", every_params, &e, "parameter \"s\" must be a number");
        rejected("{\"s\":true}", every_params, &e, "must be a number");
        /* json-c reads these words even in strict mode. */
        rejected("{\"s\":NaN}", every_params, &e, "finite");
        rejected("{\"s\":Infinity}", every_params, &e, "finite");
        rejected("{\"s\":1e999}", every_params, &e, "finite");
        ck_assert_double_eq(e.s, 0.5);
}
END_TEST

START_TEST(params_string_checks_type_length_and_nul)
{
        struct every e = {0};

        ck_assert_int_eq(params("{\"str\":\"abcd\"}", every_params, &e), 0);
        ck_assert_str_eq(e.str, "abcd");
        ck_assert_int_eq(params("{\"str\":\"\"}", every_params, &e), 0);
        ck_assert_str_eq(e.str, "");
        rejected("{\"str\":\"abcde\"}", every_params, &e, "parameter \"str\" must be at most 4");
        rejected("{\"str\":\"a\\u0000b\"}", every_params, &e,
                 "parameter \"str\" must not contain NUL");
        rejected("{\"str\":1}", every_params, &e, "parameter \"str\" must be a string");
        rejected("{\"str\":null}", every_params, &e, "must be a string");
        ck_assert_str_eq(e.str, "");
        sw_params_clear(every_params, &e);
}
END_TEST

START_TEST(params_strv_is_a_non_empty_array_of_strings)
{
        struct every e = {0};

        ck_assert_int_eq(params("{\"strv\":[\"ls\",\"-l\",\"\"]}", every_params, &e), 0);
        ck_assert_str_eq(e.strv[0], "ls");
        ck_assert_str_eq(e.strv[1], "-l");
        ck_assert_str_eq(e.strv[2], "");
        ck_assert_ptr_null(e.strv[3]);
        rejected("{\"strv\":[]}", every_params, &e, "must be a non-empty array of strings");
        rejected("{\"strv\":\"ls\"}", every_params, &e, "must be a non-empty array of strings");
        rejected("{\"strv\":[\"ls\",1]}", every_params, &e, "must be a non-empty array of strings");
        rejected("{\"strv\":[\"ls\",\"a\\u0000\"]}", every_params, &e, "must not contain NUL");
        ck_assert_str_eq(e.strv[0], "ls");
        sw_params_clear(every_params, &e);
}
END_TEST

START_TEST(params_env_object_becomes_key_value_strings)
{
        struct every e = {0};

        ck_assert_int_eq(
            params("{\"env\":{\"PATH\":\"/bin\",\"EMPTY\":\"\",\"EQ\":\"a=b\"}}", every_params, &e),
            0);
        ck_assert_str_eq(e.env[0], "PATH=/bin");
        ck_assert_str_eq(e.env[1], "EMPTY=");
        ck_assert_str_eq(e.env[2], "EQ=a=b");
        ck_assert_ptr_null(e.env[3]);
        ck_assert_int_eq(params("{\"env\":{}}", every_params, &e), 0);
        ck_assert_ptr_null(e.env[0]);
        sw_params_clear(every_params, &e);
}
END_TEST

START_TEST(params_env_rejects_bad_names_and_values)
{
        struct every e = {0};

        rejected("{\"env\":{\"A=B\":\"x\"}}", every_params, &e, "invalid variable name \"A=B\"");
        rejected("{\"env\":{\"\":\"x\"}}", every_params, &e, "invalid variable name");
        rejected("{\"env\":{\"A\":1}}", every_params, &e, "must be an object of strings");
        rejected("{\"env\":[\"A=B\"]}", every_params, &e, "must be an object of strings");
        rejected("{\"env\":{\"A\":\"x\\u0000y\"}}", every_params, &e, "must not contain NUL");
        ck_assert_ptr_null(e.env);
}
END_TEST

START_TEST(params_json_takes_any_value_and_null)
{
        struct every e = {0};

        ck_assert_int_eq(params("{\"json\":{\"n\":[1,2]}}", every_params, &e), 0);
        ck_assert(json_object_is_type(e.json, json_type_object));
        ck_assert_int_eq(params("{\"json\":\"s\"}", every_params, &e), 0);
        ck_assert_str_eq(json_object_get_string(e.json), "s");
        ck_assert_int_eq(params("{\"json\":null}", every_params, &e), 0);
        ck_assert_ptr_null(e.json);
        sw_params_clear(every_params, &e);
}
END_TEST

START_TEST(params_unknown_name_is_rejected)
{
        struct sw_submit_params sub = {0};

        rejected("{\"command\":\"true\",\"foo\":1}", sw_submit_params, &sub,
                 "unknown parameter \"foo\"");
        rejected("{\"Command\":\"true\"}", sw_submit_params, &sub, "unknown parameter \"Command\"");
        ck_assert_ptr_null(sub.command);
}
END_TEST

START_TEST(params_missing_required_is_rejected)
{
        struct sw_log_params log = {0};
        struct sw_id_params id = {0};

        rejected("{\"offset\":5}", sw_log_params, &log, "missing parameter \"id\"");
        rejected(NULL, sw_id_params, &id, "missing parameter \"id\"");
        ck_assert_int_eq(log.offset, 0);
}
END_TEST

START_TEST(params_failure_leaves_out_unchanged_and_leaks_nothing)
{
        struct sw_submit_params sub = {0};

        /* Every pointer field is converted before the last member fails; ASan checks the frees. */
        rejected("{\"class\":\"slow\",\"command\":\"true\",\"argv\":[\"a\",\"b\"],\"cwd\":\"/\","
                 "\"env\":{\"A\":\"1\"},\"plugin\":\"p\",\"entry\":\"e\",\"arg\":{\"x\":[1]},"
                 "\"key\":\"k\",\"name\":\"n\",\"hold\":true,\"delay\":-1}",
                 sw_submit_params, &sub, "parameter \"delay\" must be between 0 and 31536000");
        ck_assert(submit_is_empty(&sub));
        rejected("{\"command\":\"true\",\"argv\":[\"a\"],\"bogus\":1}", sw_submit_params, &sub,
                 "unknown parameter");
        ck_assert(submit_is_empty(&sub));
}
END_TEST

START_TEST(submit_priority_is_an_integer_from_minus_100_to_100)
{
        struct sw_submit_params sub = {0};

        ck_assert_int_eq(params("{\"command\":\"true\",\"priority\":-100,\"stashed\":true}",
                                sw_submit_params, &sub),
                         0);
        ck_assert_int_eq(sub.priority, -100);
        ck_assert(sub.stashed);
        ck_assert_int_eq(params("{\"priority\":100}", sw_submit_params, &sub), 0);
        ck_assert_int_eq(sub.priority, 100);
        sw_params_clear(sw_submit_params, &sub);
        memset(&sub, 0, sizeof(sub));
        rejected("{\"priority\":101}", sw_submit_params, &sub, "\"priority\"");
        rejected("{\"priority\":-101}", sw_submit_params, &sub, "\"priority\"");
        rejected("{\"priority\":1.5}", sw_submit_params, &sub, "\"priority\"");
        rejected("{\"priority\":\"5\"}", sw_submit_params, &sub, "\"priority\"");
        rejected("{\"stashed\":1}", sw_submit_params, &sub, "\"stashed\"");
        ck_assert(submit_is_empty(&sub));
}
END_TEST

START_TEST(edit_takes_an_id_and_what_it_changes)
{
        struct sw_edit_params e = {0};

        ck_assert_int_eq(params("{\"id\":3,\"command\":\"true\",\"name\":\"n\","
                                "\"priority\":-7,\"cwd\":\"/tmp\"}",
                                sw_edit_params, &e),
                         0);
        ck_assert_int_eq(e.id, 3);
        ck_assert_str_eq(e.command, "true");
        ck_assert_str_eq(e.name, "n");
        ck_assert_int_eq(e.priority, -7);
        ck_assert_str_eq(e.cwd, "/tmp");
        sw_params_clear(sw_edit_params, &e);
        memset(&e, 0, sizeof(e));
        ck_assert_int_eq(params("{\"id\":3,\"argv\":[\"a\",\"b\"]}", sw_edit_params, &e), 0);
        ck_assert_str_eq(e.argv[1], "b");
        sw_params_clear(sw_edit_params, &e);
        memset(&e, 0, sizeof(e));
        rejected("{\"command\":\"true\"}", sw_edit_params, &e, "\"id\"");
        rejected("{\"id\":3,\"priority\":200}", sw_edit_params, &e, "\"priority\"");
        rejected("{\"id\":3,\"argv\":\"a\"}", sw_edit_params, &e, "\"argv\"");
        rejected("{\"id\":3,\"key\":\"k\"}", sw_edit_params, &e, "unknown parameter");
}
END_TEST

START_TEST(params_given_pointer_replaces_what_out_held)
{
        struct sw_submit_params sub = {0};

        ck_assert_int_eq(
            params("{\"command\":\"one\",\"argv\":[\"a\"],\"arg\":[1]}", sw_submit_params, &sub),
            0);
        ck_assert_int_eq(params("{\"command\":\"two\",\"arg\":{}}", sw_submit_params, &sub), 0);
        ck_assert_str_eq(sub.command, "two");
        ck_assert_str_eq(sub.argv[0], "a");
        ck_assert(json_object_is_type(sub.arg, json_type_object));
        sw_params_clear(sw_submit_params, &sub);
}
END_TEST

START_TEST(params_clear_frees_and_zeroes_every_field)
{
        struct sw_submit_params sub = {0};

        ck_assert_int_eq(
            params("{\"class\":\"very-slow\",\"argv\":[\"sleep\",\"1\"],\"cwd\":\"/\","
                   "\"env\":{\"A\":\"1\"},\"timeout\":1.5,\"key\":\"k\",\"name\":\"n\","
                   "\"delay\":0,\"hold\":true,\"persist\":true}",
                   sw_submit_params, &sub),
            0);
        ck_assert_str_eq(sub.class_name, "very-slow");
        ck_assert_double_eq(sub.timeout, 1.5);
        ck_assert(sub.hold && sub.persist);
        sw_params_clear(sw_submit_params, &sub);
        ck_assert(submit_is_empty(&sub));
        sw_params_clear(sw_submit_params, &sub);
}
END_TEST

START_TEST(params_submit_limits_follow_the_protocol)
{
        struct sw_submit_params sub = {0};
        char *text, *cmd = repeat('x', 65537);

        rejected("{\"class\":\"very-very-very-slow\"}", sw_submit_params, &sub,
                 "parameter \"class\" must be at most 16 bytes");
        rejected("{\"timeout\":31536001}", sw_submit_params, &sub,
                 "parameter \"timeout\" must be between 0 and 31536000");
        ck_assert_int_ne(asprintf(&text, "{\"command\":\"%s\"}", cmd), -1);
        rejected(text, sw_submit_params, &sub, "parameter \"command\" must be at most 65536");
        free(text);
        cmd[65536] = '\0';
        ck_assert_int_ne(asprintf(&text, "{\"command\":\"%s\"}", cmd), -1);
        ck_assert_int_eq(params(text, sw_submit_params, &sub), 0);
        free(text);
        free(cmd);
        sw_params_clear(sw_submit_params, &sub);
}
END_TEST

START_TEST(params_id_tables_require_what_the_methods_need)
{
        struct sw_log_params log = {0};
        struct sw_enqueue_params enq = {0};
        struct sw_id_params id = {0};

        ck_assert_int_eq(params("{\"id\":9007199254740991}", sw_id_params, &id), 0);
        ck_assert_int_eq(id.id, 9007199254740991);
        rejected("{\"id\":9007199254740992}", sw_id_params, &id, "between 1 and 9007199254740991");
        rejected("{\"id\":0}", sw_id_params, &id, "between 1");
        rejected("{\"id\":\"3\"}", sw_status_params, &id, "must be an integer");
        ck_assert_int_eq(params("{\"id\":3,\"offset\":0,\"max\":1048576}", sw_log_params, &log), 0);
        ck_assert_int_eq(log.max, 1048576);
        rejected("{\"id\":3,\"max\":0}", sw_log_params, &log, "\"max\" must be between 1");
        rejected("{\"id\":3,\"offset\":-1}", sw_log_params, &log, "\"offset\" must be between 0");
        ck_assert_int_eq(params("{\"id\":3,\"run\":2}", sw_log_params, &log), 0);
        ck_assert_int_eq(log.run, 2);
        rejected("{\"id\":3,\"run\":0}", sw_log_params, &log, "\"run\" must be between 1");
        ck_assert_int_eq(params("{\"key\":\"nightly\"}", sw_enqueue_params, &enq), 0);
        ck_assert_str_eq(enq.key, "nightly");
        ck_assert_int_eq(enq.id, 0);
        sw_params_clear(sw_enqueue_params, &enq);
}
END_TEST

START_TEST(params_no_params_table_rejects_any_member)
{
        struct sw_id_params unused = {0};

        rejected("{\"id\":1}", sw_no_params, &unused, "unknown parameter \"id\"");
}
END_TEST

/* Settings */

static struct sw_settings current(void)
{
        struct sw_settings s = {
            .min_threads = 2,
            .max_threads = 4,
            .vslow_percentage = 50,
            .idle_timeout = 5,
            .history_limit = 10000,
            .log_limit = 16777216,
            .kill_grace = 5,
            .stop_timeout = 30,
            .max_connections_per_user = 64,
            .max_log_bytes_per_user = 1073741824,
            .min_free_space = 5,
            .metrics_interval = 15,
            .node_queues = "*",
            .store_timeout = 5,
        };
        return s;
}

static bool settings_eq(const struct sw_settings *a, const struct sw_settings *b)
{
        return a->min_threads == b->min_threads && a->max_threads == b->max_threads &&
               a->vslow_percentage == b->vslow_percentage && a->idle_timeout == b->idle_timeout &&
               a->history_limit == b->history_limit && a->log_limit == b->log_limit &&
               a->kill_grace == b->kill_grace && a->stop_timeout == b->stop_timeout &&
               a->max_connections_per_user == b->max_connections_per_user &&
               a->max_log_bytes_per_user == b->max_log_bytes_per_user &&
               a->min_free_space == b->min_free_space &&
               a->max_queued_per_user == b->max_queued_per_user &&
               a->max_running_per_user == b->max_running_per_user &&
               a->max_jobs_per_user == b->max_jobs_per_user &&
               a->max_job_bytes_per_user == b->max_job_bytes_per_user &&
               strcmp(a->metrics_file, b->metrics_file) == 0 &&
               strcmp(a->on_end, b->on_end) == 0 &&
               strcmp(a->node_queues, b->node_queues) == 0 && a->store_timeout == b->store_timeout &&
               a->metrics_interval == b->metrics_interval && a->runtime == b->runtime;
}

START_TEST(settings_set_keeps_what_is_not_given)
{
        struct sw_settings s = current();

        ck_assert_int_eq(params("{\"max-threads\":8,\"idle-timeout\":0.25,\"runtime\":true}",
                                sw_settings_params, &s),
                         0);
        ck_assert_int_eq(s.max_threads, 8);
        ck_assert_double_eq(s.idle_timeout, 0.25);
        ck_assert(s.runtime);
        ck_assert_int_eq(s.min_threads, 2);
        ck_assert_int_eq(s.vslow_percentage, 50);
        ck_assert_int_eq(s.history_limit, 10000);
        ck_assert_int_eq(s.log_limit, 16777216);
        ck_assert_double_eq(s.kill_grace, 5);
        ck_assert_double_eq(s.stop_timeout, 30);
        ck_assert_int_eq(s.max_connections_per_user, 64);
        ck_assert_int_eq(s.max_log_bytes_per_user, 1073741824);
        ck_assert_int_eq(s.min_free_space, 5);
}
END_TEST

START_TEST(settings_set_rejects_a_bad_value_whole)
{
        struct sw_settings s = current(), before = current();

        rejected("{\"max-threads\":8,\"vslow-percentage\":100}", sw_settings_params, &s,
                 "parameter \"vslow-percentage\" must be between 1 and 99");
        rejected("{\"min-threads\":0}", sw_settings_params, &s, "between 1 and 255");
        rejected("{\"max-threads\":256}", sw_settings_params, &s, "between 1 and 255");
        rejected("{\"idle-timeout\":0}", sw_settings_params, &s, "between 0.001 and 86400");
        rejected("{\"log-limit\":1023}", sw_settings_params, &s, "between 1024 and 1099511627776");
        rejected("{\"history-limit\":10000001}", sw_settings_params, &s, "between 1 and 10000000");
        rejected("{\"kill-grace\":3601}", sw_settings_params, &s, "between 0 and 3600");
        rejected("{\"stop-timeout\":-0.5}", sw_settings_params, &s, "between 0 and 86400");
        rejected("{\"max-connections-per-user\":0}", sw_settings_params, &s, "between 1 and 1024");
        rejected("{\"max-connections-per-user\":1025}", sw_settings_params, &s,
                 "between 1 and 1024");
        rejected("{\"max-log-bytes-per-user\":1023}", sw_settings_params, &s,
                 "between 1024 and 1099511627776");
        rejected("{\"min-free-space\":100}", sw_settings_params, &s, "between 0 and 99");
        rejected("{\"min-free-space\":2.5}", sw_settings_params, &s, "must be an integer");
        rejected("{\"max-queued-per-user\":-1}", sw_settings_params, &s,
                 "between 0 and 10000000");
        rejected("{\"max-running-per-user\":1.5}", sw_settings_params, &s, "must be an integer");
        rejected("{\"max-jobs-per-user\":-1}", sw_settings_params, &s, "between 0 and 10000000");
        rejected("{\"max-jobs-per-user\":\"5\"}", sw_settings_params, &s, "must be an integer");
        rejected("{\"max-job-bytes-per-user\":1099511627777}", sw_settings_params, &s,
                 "between 0 and 1099511627776");
        rejected("{\"min-threads\":\"2\"}", sw_settings_params, &s, "must be an integer");
        rejected("{\"threads\":2}", sw_settings_params, &s, "unknown parameter \"threads\"");
        rejected("{\"metrics-interval\":0.5}", sw_settings_params, &s, "between 1 and 86400");
        rejected("{\"metrics-file\":\"m.prom\"}", sw_settings_params, &s,
                 "parameter \"metrics-file\" must be an absolute path");
        rejected("{\"max-threads\":3,\"metrics-file\":[\"/m\"]}", sw_settings_params, &s,
                 "parameter \"metrics-file\" must be an absolute path");
        ck_assert(settings_eq(&s, &before));
}
END_TEST

/* A path setting is copied into the settings, which are copied whole: no pointer to share. */
START_TEST(settings_set_takes_a_path_in_place_up_to_its_limit)
{
        struct sw_settings s = current(), copy;
        char text[SW_SETTING_PATH_MAX + 64], path[SW_SETTING_PATH_MAX + 2];

        ck_assert_int_eq(params("{\"metrics-file\":\"/var/lib/prom/slowwork.prom\"}",
                                sw_settings_params, &s),
                         0);
        ck_assert_str_eq(s.metrics_file, "/var/lib/prom/slowwork.prom");
        copy = s;
        ck_assert_int_eq(params("{\"metrics-file\":\"\"}", sw_settings_params, &s), 0);
        ck_assert_str_eq(s.metrics_file, "");
        ck_assert_str_eq(copy.metrics_file, "/var/lib/prom/slowwork.prom");
        memset(path, 'a', sizeof(path) - 1);
        path[0] = '/';
        path[SW_SETTING_PATH_MAX] = '\0';
        snprintf(text, sizeof(text), "{\"metrics-file\":\"%s\"}", path);
        ck_assert_int_eq(params(text, sw_settings_params, &s), 0);
        ck_assert_uint_eq(strlen(s.metrics_file), SW_SETTING_PATH_MAX);
        path[SW_SETTING_PATH_MAX] = 'a';
        path[SW_SETTING_PATH_MAX + 1] = '\0';
        snprintf(text, sizeof(text), "{\"metrics-file\":\"%s\"}", path);
        rejected(text, sw_settings_params, &s, "at most 1024 bytes");
        ck_assert_uint_eq(strlen(s.metrics_file), SW_SETTING_PATH_MAX);
}
END_TEST

/* A command setting (on-end) is a text in place: any string up to its limit, "" for none. */
START_TEST(settings_set_takes_a_command_in_place_up_to_its_limit)
{
        struct sw_settings s = current(), before;
        char *command = repeat('x', SW_SETTING_COMMAND_MAX + 1), *text;

        ck_assert_int_eq(params("{\"on-end\":\"notify-send \\\"$SLOWWORK_JOB\\\" done\"}",
                                sw_settings_params, &s),
                         0);
        ck_assert_str_eq(s.on_end, "notify-send \"$SLOWWORK_JOB\" done");
        before = s;
        rejected("{\"on-end\":5}", sw_settings_params, &s, "parameter \"on-end\" must be a string");
        rejected("{\"on-end\":\"a\\u0000b\"}", sw_settings_params, &s, "without NUL bytes");
        ck_assert_int_gt(asprintf(&text, "{\"on-end\":\"%s\"}", command), 0);
        rejected(text, sw_settings_params, &s, "at most 4096 bytes");
        free(text);
        ck_assert(settings_eq(&s, &before));
        command[SW_SETTING_COMMAND_MAX] = '\0';
        ck_assert_int_gt(asprintf(&text, "{\"on-end\":\"%s\"}", command), 0);
        ck_assert_int_eq(params(text, sw_settings_params, &s), 0);
        ck_assert_uint_eq(strlen(s.on_end), SW_SETTING_COMMAND_MAX);
        free(text);
        ck_assert_int_eq(params("{\"on-end\":\"\"}", sw_settings_params, &s), 0);
        ck_assert_str_eq(s.on_end, "");
        free(command);
}
END_TEST

/* A submit's on_end: a string up to a command's length (the daemon refuses an empty one). */
START_TEST(submit_on_end_is_a_string_up_to_a_commands_length)
{
        struct sw_submit_params sub = {0};
        char *command = repeat('x', SW_COMMAND_MAX + 1), *text;

        ck_assert_int_eq(params("{\"command\":\"true\",\"on_end\":\"echo $SLOWWORK_RUN\"}",
                                sw_submit_params, &sub),
                         0);
        ck_assert_str_eq(sub.on_end, "echo $SLOWWORK_RUN");
        sw_params_clear(sw_submit_params, &sub);
        sub = (struct sw_submit_params){0};
        rejected("{\"command\":\"true\",\"on_end\":true}", sw_submit_params, &sub,
                 "parameter \"on_end\" must be a string");
        ck_assert_int_gt(asprintf(&text, "{\"on_end\":\"%s\"}", command), 0);
        rejected(text, sw_submit_params, &sub, "at most 65536 bytes");
        free(text);
        ck_assert_ptr_null(sub.on_end);
        free(command);
}
END_TEST

/* Limits: each member checked, all or nothing, messages naming "limits.x"; unset members are
 * left out of the JSON. */
START_TEST(limits_parse_all_or_nothing_and_name_the_member)
{
        struct sw_limits l, before;
        json_object *obj;
        char err[256];

        sw_limits_unset(&l);
        obj = json_tokener_parse("{\"memory_max\":1073741824,\"nice\":-20,\"cpu_time\":0}");
        ck_assert_int_eq(sw_limits_parse(obj, &l, err, sizeof(err)), 0);
        json_object_put(obj);
        ck_assert(l.memory_max == 1073741824 && l.nice == -20 && l.cpu_time == 0);
        ck_assert(l.tasks_max == SW_LIMIT_UNSET && l.open_files == SW_LIMIT_UNSET);
        obj = sw_limits_to_json(&l);
        ck_assert_str_eq(json_object_to_json_string_ext(obj, JSON_C_TO_STRING_PLAIN),
                         "{\"memory_max\":1073741824,\"nice\":-20,\"cpu_time\":0}");
        json_object_put(obj);
        before = l;
        obj = json_tokener_parse("{\"open_files\":64,\"cpu_weight\":0.5}");
        ck_assert_int_eq(sw_limits_parse(obj, &l, err, sizeof(err)), SW_E_INVALID_PARAMS);
        json_object_put(obj);
        ck_assert_str_eq(err, "parameter \"limits.cpu_weight\" must be an integer");
        ck_assert(memcmp(&l, &before, sizeof(l)) == 0);
        obj = json_tokener_parse("{\"nice\":20}");
        ck_assert_int_eq(sw_limits_parse(obj, &l, err, sizeof(err)), SW_E_INVALID_PARAMS);
        json_object_put(obj);
        ck_assert_str_eq(err, "parameter \"limits.nice\" must be between -20 and 19");
        obj = json_tokener_parse("{\"swap_max\":1}");
        ck_assert_int_eq(sw_limits_parse(obj, &l, err, sizeof(err)), SW_E_INVALID_PARAMS);
        json_object_put(obj);
        ck_assert_str_eq(err, "unknown parameter \"limits.swap_max\"");
        obj = json_object_new_int(5);
        ck_assert_int_eq(sw_limits_parse(obj, &l, err, sizeof(err)), SW_E_INVALID_PARAMS);
        json_object_put(obj);
        ck_assert_str_eq(err, "parameter \"limits\" must be an object");
        ck_assert(memcmp(&l, &before, sizeof(l)) == 0);
}
END_TEST

START_TEST(settings_to_json_has_every_name)
{
        struct sw_settings s = current();
        json_object *obj;
        char *line;

        s.runtime = true;
        s.limits.nice = -3;
        obj = sw_settings_to_json(&s);
        ck_assert_int_eq(json_object_object_length(obj), SW_SETTINGS_COUNT);
        line = sw_result_line(NULL, obj);
        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"result\":{\"min-threads\":2,"
                               "\"max-threads\":4,\"vslow-percentage\":50,\"idle-timeout\":5.0,"
                               "\"history-limit\":10000,\"log-limit\":16777216,"
                               "\"kill-grace\":5.0,\"stop-timeout\":30.0,"
                               "\"max-connections-per-user\":64,"
                               "\"max-log-bytes-per-user\":1073741824,\"min-free-space\":5,"
                               "\"max-queued-per-user\":0,\"max-running-per-user\":0,"
                               "\"max-jobs-per-user\":0,\"max-job-bytes-per-user\":0,"
                               "\"default-memory-max\":0,"
                               "\"default-tasks-max\":0,\"default-cpu-weight\":0,"
                               "\"default-nice\":-3,\"default-open-files\":0,"
                               "\"default-cpu-time\":0,\"max-job-memory\":0,\"max-job-tasks\":0,"
                               "\"max-job-open-files\":0,\"max-job-cpu-time\":0,"
                               "\"metrics-file\":\"\","
                               "\"metrics-interval\":15.0,\"on-end\":\"\",\"fair-share\":false,"
                               "\"node-queues\":\"*\",\"store-timeout\":5.0}}\n");
        free(line);
}
END_TEST

START_TEST(settings_get_output_parses_back_as_settings_set_input)
{
        struct sw_settings s = current(), back = {0};
        json_object *obj = sw_settings_to_json(&s);

        ck_assert_int_eq(sw_params_parse(obj, sw_settings_params, &back, errbuf, sizeof(errbuf)),
                         0);
        ck_assert(settings_eq(&back, &s));
        json_object_put(obj);
}
END_TEST

START_TEST(methods_table_lists_every_method)
{
        static const char *const want[] = {
            "submit",    "enqueue",      "wait",       "cancel",       "release",
            "status",    "list",         "log",        "stats",        "subscribe",
            "ping",      "version",      "settings.get", "settings.set", "history",
            "pause",     "resume",       "suspend",    "continue",     "queue.add",
            "queue.remove", "queue.list",   "metrics",    "env.set",      "nodes",
            "edit",      "signal",       "restart",    "nodes.forget",
        };
        const size_t nwant = sizeof(want) / sizeof(want[0]);
        size_t i, j, n = 0;

        while (sw_methods[n])
                n++;
        ck_assert_uint_eq(n, nwant);
        for (i = 0; i < nwant; i++) {
                for (j = 0; j < n; j++)
                        if (strcmp(sw_methods[j], want[i]) == 0)
                                break;
                ck_assert_msg(j < n, "%s is missing", want[i]);
        }
}
END_TEST

START_TEST(history_before_takes_an_id_and_a_run_and_nothing_else)
{
        static const char *const bad[] = {
            "3", "{}", "{\"id\":1}", "{\"id\":0,\"run\":1}", "{\"id\":1,\"run\":-1}",
            "{\"id\":1,\"run\":1,\"x\":1}", "{\"id\":\"1\",\"run\":1}",
        };
        struct sw_run_position pos = {7, 7};
                json_object *obj;
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                obj = json_tokener_parse(bad[i]);
                ck_assert_int_eq(sw_run_position_parse(obj, &pos, errbuf, sizeof(errbuf)),
                                 SW_E_INVALID_PARAMS);
                ck_assert_msg(strstr(errbuf, "before") != NULL, "%s", errbuf);
                ck_assert_int_eq(pos.id, 7);
                json_object_put(obj);
        }
        obj = json_tokener_parse("{\"id\":12,\"run\":3}");
        ck_assert_int_eq(sw_run_position_parse(obj, &pos, errbuf, sizeof(errbuf)), 0);
        ck_assert_int_eq(pos.id, 12);
        ck_assert_int_eq(pos.run, 3);
        json_object_put(obj);
}
END_TEST

START_TEST(history_outcome_is_one_name_or_an_array_of_names)
{
        static const char *const bad[] = {"\"ok\"", "[]", "[\"failed\",\"nope\"]", "3",
                                          "[3]", "{}"};
        unsigned mask = 99;
                json_object *obj;
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                obj = json_tokener_parse(bad[i]);
                ck_assert_int_eq(sw_outcomes_parse(obj, &mask, errbuf, sizeof(errbuf)),
                                 SW_E_INVALID_PARAMS);
                ck_assert_uint_eq(mask, 99);
                json_object_put(obj);
        }
        obj = json_tokener_parse("\"killed\"");
        ck_assert_int_eq(sw_outcomes_parse(obj, &mask, errbuf, sizeof(errbuf)), 0);
        ck_assert_uint_eq(mask, sw_outcome_bit("killed"));
        json_object_put(obj);
        obj = json_tokener_parse("[\"failed\",\"timed-out\"]");
        ck_assert_int_eq(sw_outcomes_parse(obj, &mask, errbuf, sizeof(errbuf)), 0);
        ck_assert_uint_eq(mask, sw_outcome_bit("failed") | sw_outcome_bit("timed-out"));
        ck_assert_uint_eq(sw_outcome_bit("succeeded") & mask, 0);
        json_object_put(obj);
}
END_TEST

static Suite *proto_suite(void)
{
        Suite *s = suite_create("proto");
        TCase *tc;

        tc = tcase_create("errors");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, error_names_are_errno_style);
        tcase_add_test(tc, error_from_errno_maps_handler_failures);
        suite_add_tcase(s, tc);

        tc = tcase_create("lines");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, lines_split_keeps_cr);
        tcase_add_test(tc, lines_whitespace_only_lines_are_skipped);
        tcase_add_test(tc, lines_finish_gives_the_last_line_without_newline);
        tcase_add_test(tc, lines_finish_inside_an_oversized_line_gives_e2big);
        tcase_add_test(tc, lines_incomplete_line_waits_for_its_newline);
        tcase_add_test(tc, lines_same_for_any_chunking);
        tcase_add_test(tc, lines_oversized_line_gives_e2big_once_and_next_line_intact);
        tcase_add_test(tc, lines_oversized_line_is_never_held);
        tcase_add_test(tc, lines_exactly_line_max_is_accepted);
        tcase_add_test(tc, lines_line_max_plus_one_is_rejected);
        suite_add_tcase(s, tc);

        tc = tcase_create("requests");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, request_with_integer_id);
        tcase_add_test(tc, request_with_string_id);
        tcase_add_test(tc, request_without_id_is_a_notification);
        tcase_add_test(tc, request_without_params_has_null_params);
        tcase_add_test(tc, request_malformed_json_is_parse_error);
        tcase_add_test(tc, request_trailing_garbage_is_parse_error);
        tcase_add_test(tc, request_invalid_utf8_is_parse_error);
        tcase_add_test(tc, request_embedded_nul_is_parse_error);
        tcase_add_test(tc, request_not_an_object_is_invalid_request);
        tcase_add_test(tc, request_without_jsonrpc_2_0_is_invalid_request_with_id);
        tcase_add_test(tc, request_method_not_a_string_is_invalid_request_with_id);
        tcase_add_test(tc, request_params_not_an_object_is_invalid_request_with_id);
        tcase_add_test(tc, request_extra_member_is_invalid_request_with_id);
        tcase_add_test(tc, request_envelope_names_its_first_unknown_member_however_many);
        tcase_add_test(tc, request_id_float_or_object_is_invalid_request_without_id);
        tcase_add_test(tc, request_with_id_null_is_answered_to_id_null);
        tcase_add_test(tc, request_positional_params_are_invalid_params_with_id);
        tcase_add_test(tc, batch_is_a_non_empty_array_that_is_json);
        tcase_add_test(tc, batch_elements_are_found_as_written);
        tcase_add_test(tc, batch_error_line_for_a_reply_takes_its_id);
        tcase_add_test(tc, request_duplicate_member_is_invalid_request);
        tcase_add_test(tc, request_member_name_with_nul_is_invalid_request);
        tcase_add_test(tc, request_json_extensions_are_parse_errors);
        tcase_add_test(tc, request_id_outside_int64_is_invalid_request);
        tcase_add_test(tc, request_id_is_echoed_as_written);
        tcase_add_test(tc, request_longer_than_line_max_is_too_large);
        suite_add_tcase(s, tc);

        tc = tcase_create("json");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, json_check_takes_rfc_8259_only);
        tcase_add_test(tc, json_test_suite_parsing);
        tcase_add_test(tc, json_values_and_texts_are_what_json_c_makes);
        tcase_add_test(tc, a_text_begun_in_the_callers_buffer_is_given_in_its_own);
        tcase_add_test(tc, json_depth_is_json_c_s);
        tcase_add_test(tc, json_surrogate_pairs_are_their_characters);
        suite_add_tcase(s, tc);

        tc = tcase_create("replies");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, result_line_is_one_plain_json_line);
        tcase_add_test(tc, result_line_round_trips);
        tcase_add_test(tc, error_line_round_trips_with_data_name);
        tcase_add_test(tc, error_line_with_null_id_and_unknown_code);
        tcase_add_test(tc, error_line_message_stays_utf8);
        tcase_add_test(tc, notification_line_round_trips);
        tcase_add_test(tc, request_line_parses_as_a_request);
        tcase_add_test(tc, reply_parse_rejects_what_is_not_a_reply);
        suite_add_tcase(s, tc);

        tc = tcase_create("params");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, params_absent_or_empty_without_required_is_fine);
        tcase_add_test(tc, params_bool_accepts_only_booleans);
        tcase_add_test(tc, params_int_accepts_only_integers_in_range);
        tcase_add_test(tc, params_int_with_zero_range_is_unchecked);
        tcase_add_test(tc, params_seconds_accept_finite_numbers_in_range);
        tcase_add_test(tc, params_string_checks_type_length_and_nul);
        tcase_add_test(tc, params_strv_is_a_non_empty_array_of_strings);
        tcase_add_test(tc, params_env_object_becomes_key_value_strings);
        tcase_add_test(tc, params_env_rejects_bad_names_and_values);
        tcase_add_test(tc, params_json_takes_any_value_and_null);
        tcase_add_test(tc, params_unknown_name_is_rejected);
        tcase_add_test(tc, params_missing_required_is_rejected);
        tcase_add_test(tc, params_failure_leaves_out_unchanged_and_leaks_nothing);
        tcase_add_test(tc, params_given_pointer_replaces_what_out_held);
        tcase_add_test(tc, submit_priority_is_an_integer_from_minus_100_to_100);
        tcase_add_test(tc, edit_takes_an_id_and_what_it_changes);
        tcase_add_test(tc, params_clear_frees_and_zeroes_every_field);
        tcase_add_test(tc, params_submit_limits_follow_the_protocol);
        tcase_add_test(tc, params_id_tables_require_what_the_methods_need);
        tcase_add_test(tc, params_no_params_table_rejects_any_member);
        suite_add_tcase(s, tc);

        tc = tcase_create("methods");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, settings_set_keeps_what_is_not_given);
        tcase_add_test(tc, settings_set_rejects_a_bad_value_whole);
        tcase_add_test(tc, settings_set_takes_a_path_in_place_up_to_its_limit);
        tcase_add_test(tc, settings_set_takes_a_command_in_place_up_to_its_limit);
        tcase_add_test(tc, submit_on_end_is_a_string_up_to_a_commands_length);
        tcase_add_test(tc, settings_to_json_has_every_name);
        tcase_add_test(tc, limits_parse_all_or_nothing_and_name_the_member);
        tcase_add_test(tc, settings_get_output_parses_back_as_settings_set_input);
        tcase_add_test(tc, methods_table_lists_every_method);
        tcase_add_test(tc, history_before_takes_an_id_and_a_run_and_nothing_else);
        tcase_add_test(tc, history_outcome_is_one_name_or_an_array_of_names);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(proto_suite());
}
