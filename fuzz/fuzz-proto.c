/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for the wire format (proto/): the input is a byte stream from a client. It is
 * pushed through sw_lines in chunks whose sizes come from the input itself, with a line limit
 * that is either the daemon's or a small one, and the lines it yields are checked against a
 * plain split of the whole stream (blank lines skipped, the tail taken by sw_lines_finish). Each
 * line goes through sw_json_check, which must agree with the request parser on what is not
 * JSON, then through sw_request_parse, a request's
 * params through sw_params_parse against every table in methods.h (each into a heap struct of
 * exactly its type, so that a write past it is caught), and the line through sw_reply_parse.
 * Replies and requests built from what was parsed must parse back.
 *
 * Build with `make fuzz`; run e.g. `fuzz/fuzz-proto -max_len=4096 NEW_DIR fuzz/corpus`.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "methods.h"
#include "proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
        do {                                                                                       \
                if (!(cond)) {                                                                     \
                        fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
                        abort();                                                                   \
                }                                                                                  \
        } while (0)

static const struct {
        const struct sw_param *table;
        size_t size;
} tables[] = {
    {sw_no_params, 1},
    {sw_submit_params, sizeof(struct sw_submit_params)},
    {sw_id_params, sizeof(struct sw_id_params)},
    {sw_status_params, sizeof(struct sw_id_params)},
    {sw_log_params, sizeof(struct sw_log_params)},
    {sw_enqueue_params, sizeof(struct sw_enqueue_params)},
    {sw_settings_params, sizeof(struct sw_settings)},
};

/* A small deterministic generator, seeded from the input, for chunk sizes and choices. */
static uint64_t rng_next(uint64_t *s)
{
        uint64_t x = *s;

        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        return *s = x;
}

static uint64_t hash(const uint8_t *data, size_t size)
{
        uint64_t h = 1469598103934665603ull;
        size_t i;

        for (i = 0; i < size; i++)
                h = (h ^ data[i]) * 1099511628211ull;
        return h ? h : 1;
}

static void fuzz_params(json_object *params)
{
        char errbuf[256];
        size_t i;

        for (i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
                void *out = calloc(1, tables[i].size), *copy = malloc(tables[i].size);
                int r;

                CHECK(out && copy);
                r = sw_params_parse(params, tables[i].table, out, errbuf, sizeof(errbuf));
                CHECK(r == 0 || r == SW_E_INVALID_PARAMS || r == -ENOMEM);
                if (r)
                        CHECK(memchr(errbuf, '\0', sizeof(errbuf)) && errbuf[0]);
                /* Again over what the first parse stored: a given pointer field replaces (and
                 * frees) what it held, and a failure leaves every byte as it was. */
                memcpy(copy, out, tables[i].size);
                r = sw_params_parse(params, tables[i].table, out, errbuf, sizeof(errbuf));
                if (r)
                        CHECK(memcmp(copy, out, tables[i].size) == 0);
                sw_params_clear(tables[i].table, out);
                free(copy);
                free(out);
        }
}

/* What the daemon would send back must be a reply that parses. The client's parser takes integer
 * ids only (it sends no others): a reply to a string id is not checked. */
static void check_reply_line(char *line, int want_code, bool checked)
{
        struct sw_reply reply;
        int r;

        if (!line || !checked) {
                free(line); /* NULL: out of memory */
                return;
        }
        r = sw_reply_parse(line, strlen(line) - 1, &reply);
        if (r) {
                fprintf(stderr, "reply does not parse back (%d): %s", r, line);
                abort();
        }
        CHECK(reply.code == want_code);
        sw_reply_clear(&reply);
        free(line);
}

static bool int_id(json_object *id)
{
        return !id || json_object_is_type(id, json_type_int) || sw_id_is_null(id);
}

/* A batch is JSON, and its elements are found whole: each is JSON of its own. */
static void fuzz_batch(const char *line, size_t len)
{
        size_t pos = 0, at, n;

        if (!sw_batch_is(line, len))
                return;
        CHECK(sw_json_check(line, len, NULL, 0) == 0);
        while (sw_batch_next(line, len, &pos, &at, &n)) {
                CHECK(n > 0 && at + n <= len && pos <= len);
                CHECK(sw_json_check(line + at, n, NULL, 0) == 0);
        }
}

/* The request rebuilt from what was parsed must parse back to the same method. */
static void check_request_line(const struct sw_request *req)
{
        char *line = sw_request_line(req->method, json_object_get(req->params), 7), errbuf[256];
        struct sw_request again = {0};
        json_object *id = NULL;
        int r;

        if (!line)
                return; /* out of memory */
        r = sw_request_parse(line, strlen(line) - 1, &again, &id, errbuf, sizeof(errbuf));
        if (r) {
                fprintf(stderr, "request does not parse back (%d: %s): %s", r, errbuf, line);
                abort();
        }
        CHECK(strcmp(again.method, req->method) == 0);
        sw_request_clear(&again);
        free(line);
}

static void fuzz_line(const char *line, size_t len)
{
        struct sw_request req = {0};
        struct sw_reply reply;
        json_object *id = NULL;
        char errbuf[256];
        bool checked;
        int r;

        r = sw_request_parse(line, len, &req, &id, errbuf, sizeof(errbuf));
        /* json-c reads whatever the scan lets through; the parser refuses more, never less. */
        if (len <= SW_LINE_MAX && r != -ENOMEM)
                CHECK((r == SW_E_PARSE) == (sw_json_check(line, len, NULL, 0) == SW_E_PARSE));
        if (r == 0) {
                CHECK(req.method && !id);
                CHECK(!req.params || json_object_is_type(req.params, json_type_object));
                if (req.params) {
                        fuzz_params(req.params);
                        check_reply_line(sw_result_line(json_object_get(req.id),
                                                        json_object_get(req.params)),
                                         0, int_id(req.id));
                }
                check_request_line(&req);
                check_reply_line(sw_error_line(json_object_get(req.id), SW_E_NO_METHOD,
                                               req.method),
                                 SW_E_NO_METHOD, int_id(req.id));
                sw_request_clear(&req);
        } else {
                CHECK(r == SW_E_PARSE || r == SW_E_INVALID_REQUEST || r == SW_E_INVALID_PARAMS ||
                      r == SW_E_TOO_LARGE || r == -ENOMEM);
                CHECK(memchr(errbuf, '\0', sizeof(errbuf)));
                /* The error reply the daemon sends, to the id it could read. */
                checked = int_id(id);
                if (r < 0)
                        json_object_put(id);
                else
                        check_reply_line(sw_error_line(id, r, errbuf), r, checked);
        }

        fuzz_batch(line, len);
        r = sw_reply_parse(line, len, &reply);
        CHECK(r == 0 || r == SW_E_PARSE || r == SW_E_INVALID_REQUEST || r == SW_E_TOO_LARGE ||
              r == -ENOMEM);
        if (r == 0)
                sw_reply_clear(&reply);
}

/* A line of a plain split of the whole stream; len (size_t)-1 for an oversized one. */
struct expected {
        size_t start, len;
};

/* Spaces, tabs and "\r" only: sw_lines_next() skips such a line. */
static bool blank(const uint8_t *s, size_t n)
{
        size_t i;

        for (i = 0; i < n; i++)
                if (s[i] != ' ' && s[i] != '\t' && s[i] != '\r')
                        return false;
        return true;
}

/* *ret_pending: the bytes of an incomplete last line that is not oversized. */
static struct expected *expected_lines(const uint8_t *data, size_t size, size_t max,
                                       size_t *ret_n, size_t *ret_pending)
{
        struct expected *out = malloc((size + 1) * sizeof(*out));
        size_t n = 0, start = 0, i;

        CHECK(out);
        for (i = 0; i < size; i++)
                if (data[i] == '\n') {
                        if (i - start > max)
                                out[n++] = (struct expected){start, (size_t)-1};
                        else if (!blank(data + start, i - start))
                                out[n++] = (struct expected){start, i - start};
                        start = i + 1;
                }
        *ret_pending = 0;
        if (size - start > max)
                out[n++] = (struct expected){start, (size_t)-1};
        else
                *ret_pending = size - start;
        *ret_n = n;
        return out;
}

/* Takes every complete line the splitter holds, checking it against the plain split; parses
 * those that start before parse_end (the others repeat one of them). */
static void take_lines(struct sw_lines *lines, const uint8_t *data, const struct expected *expect,
                       size_t nexp, size_t *got, size_t parse_end)
{
        size_t len;
        char *line;
        int r;

        while ((r = sw_lines_next(lines, &line, &len)) != 0) {
                CHECK(*got < nexp);
                if (r < 0) {
                        CHECK(r == -E2BIG && expect[*got].len == (size_t)-1);
                } else {
                        CHECK(r == 1 && expect[*got].len == len && line[len] == '\0');
                        CHECK(memcmp(line, data + expect[*got].start, len) == 0);
                        if (expect[*got].start < parse_end)
                                fuzz_line(line, len);
                }
                (*got)++;
        }
}

/* Pushes the stream through a splitter in chunks, checking the lines against a plain split. */
static void split(const uint8_t *data, size_t size, size_t max, size_t parse_end, uint64_t *seed)
{
        size_t nexp, pending, got = 0, off = 0;
        struct expected *expect = expected_lines(data, size, max, &nexp, &pending);
        struct sw_lines lines;

        sw_lines_init_max(&lines, max);
        while (off < size) {
                /* Mostly small chunks, sometimes large ones. */
                size_t chunk = 1 + rng_next(seed) % (rng_next(seed) % 8 == 0 ? 65536 : 16);

                if (chunk > size - off)
                        chunk = size - off;
                CHECK(sw_lines_push(&lines, (const char *)data + off, chunk) == 0);
                off += chunk;
                /* Take the lines now, or leave them for after a later push. */
                if (rng_next(seed) % 4 != 0)
                        take_lines(&lines, data, expect, nexp, &got, parse_end);
        }
        take_lines(&lines, data, expect, nexp, &got, parse_end);
        CHECK(got == nexp);
        CHECK(sw_lines_pending(&lines) == pending);
        /* EOF: the incomplete last line is a line too, unless it is blank. */
        CHECK(sw_lines_finish(&lines) == 0);
        if (pending > 0 && !blank(data + size - pending, pending))
                expect[nexp++] = (struct expected){size - pending, pending};
        take_lines(&lines, data, expect, nexp, &got, parse_end);
        CHECK(got == nexp);
        CHECK(sw_lines_pending(&lines) == 0);
        sw_lines_free(&lines);
        free(expect);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        uint64_t seed = hash(data, size);
        /* Mostly the daemon's limit; sometimes a small one, to reach the oversized-line paths. */
        size_t max = rng_next(&seed) % 4 == 0 ? 1 + rng_next(&seed) % 256 : SW_LINE_MAX;
        /* Sometimes the input many times over: a stream longer than one input may be, for the
         * splitter's buffer management (moving taken lines out, growing, freeing a large one). */
        size_t copies = rng_next(&seed) % 8 == 0 ? 2 + rng_next(&seed) % 63 : 1, i;
        uint8_t *stream;

        if (copies == 1 || size == 0) {
                split(data, size, max, size, &seed);
                return 0;
        }
        stream = malloc(size * copies);
        CHECK(stream);
        for (i = 0; i < copies; i++)
                memcpy(stream + i * size, data, size);
        /* From the third copy on, every line repeats one of the second copy. */
        split(stream, size * copies, max, 2 * size, &seed);
        free(stream);
        return 0;
}
