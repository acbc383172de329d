/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/deps-elsewhere.h"
#include "jobs/deps.h"
#include "jobs/job.h"
#include "store/db.h"
#include "store/store.h"
#include "util/log.h"

static int by_value(const void *a, const void *b)
{
        int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

        return (x > y) - (x < y);
}

/* The ids that waiting jobs wait for and this node does not hold, sorted, each once: a
 * PostgreSQL array's text, or NULL (none, or out of memory). */
static char *ids_elsewhere(struct daemon *d)
{
        size_t n = 0, size = 0, len;
        int64_t *ids = NULL;
        char *text = NULL;
        FILE *f;

        for (size_t i = 0; i < d->deps.n; i++) {
                const struct job *job = d->deps.waiting[i];
                const int64_t *lists[] = {job->after, job->after_any};

                for (size_t k = 0; k < 2; k++)
                        for (const int64_t *id = lists[k]; id && *id; id++) {
                                if (registry_find(&d->registry, *id))
                                        continue;
                                if (n == size) {
                                        int64_t *more = realloc(ids, (size ? 2 * size : 16) *
                                                                         sizeof(*ids));

                                        if (!more) {
                                                free(ids);
                                                return NULL;
                                        }
                                        ids = more;
                                        size = size ? 2 * size : 16;
                                }
                                ids[n++] = *id;
                        }
        }
        if (n == 0)
                return NULL;
        qsort(ids, n, sizeof(*ids), by_value);
        f = open_memstream(&text, &len);
        if (f) {
                for (size_t i = 0; i < n; i++)
                        if (i == 0 || ids[i] != ids[i - 1])
                                fprintf(f, "%s%" PRId64, i ? "," : "{", ids[i]);
                fputc('}', f);
                if (fclose(f) != 0) {
                        free(text);
                        text = NULL;
                }
        }
        free(ids);
        return text;
}

static void ended(void *data, const struct db_result *res)
{
        struct daemon *d = data;
        json_object *rows;
        size_t n;

        if (!res || daemon_stopping(d))
                return;
        d->reading_deps = false;
        rows = res->got && res->text ? json_tokener_parse(res->text) : NULL;
        n = json_object_is_type(rows, json_type_array) ? json_object_array_length(rows) : 0;
        for (size_t i = 0; i < n; i++) {
                json_object *row = json_object_array_get_idx(rows, i);
                int64_t id = json_object_get_int64(json_object_array_get_idx(row, 0));
                const char *outcome = json_object_get_string(json_object_array_get_idx(row, 1));

                /* Gone without a run recorded: it did not succeed. */
                deps_ended_elsewhere(&d->deps, id, outcome && strcmp(outcome, "succeeded") == 0);
        }
        json_object_put(rows);
}

void deps_elsewhere_read(struct daemon *d)
{
        char *ids;

        if (d->reading_deps || !store_shared(d->store) || !(ids = ids_elsewhere(d)))
                return;
        d->reading_deps = true;
        store_ended_jobs(d->store, ids, ended, d);
        free(ids);
}
