/* SPDX-License-Identifier: MIT */
/*
 * The log method: a piece of a run's log file, read off the loop thread, as UTF-8 text (bytes
 * that are not UTF-8 become U+FFFD). "offset" lets a client follow a running job; "run" names
 * an earlier run, while the history keeps it. Another node's finished run's log is read from the
 * database they share.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/daemon.h"
#include "jobs/record.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "server/await.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/run-record.h"
#include "store/store.h"

#define LOG_CHUNK_DEFAULT 65536
#define LOG_CHUNK_MAX     131072 /* escaped as JSON, it stays well under a 1 MiB reply */

struct log_read {
        uv_work_t work;
        struct conn *c;
        json_object *id;
        int64_t job_id;
        char *path;
        int64_t offset, max;
        bool running;
        uint64_t token; /* its wait for the database (await_begin), when it reads there */
        /* results */
        bool at_end; /* the read reached the end of the file */
        char *data;
        size_t len;
        int err;
};

/* Length of the valid UTF-8 sequence at s (1..4), 0 if invalid, -1 if cut short at the end. */
static int utf8_sequence(const unsigned char *s, size_t n)
{
        int len, i;
        unsigned cp;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                len = 2, cp = s[0] & 0x1f;
        else if (s[0] >= 0xe0 && s[0] <= 0xef)
                len = 3, cp = s[0] & 0x0f;
        else if (s[0] >= 0xf0 && s[0] <= 0xf4)
                len = 4, cp = s[0] & 0x07;
        else
                return 0;
        for (i = 1; i < len; i++) {
                if ((size_t)i >= n)
                        return -1;
                if ((s[i] & 0xc0) != 0x80)
                        return 0;
                cp = (cp << 6) | (s[i] & 0x3f);
        }
        if ((len == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
            (len == 4 && (cp < 0x10000 || cp > 0x10ffff)))
                return 0;
        return len;
}

/* Copies in to a new UTF-8 string; *ret_used says how many input bytes it took (a sequence cut
 * at the end is left for the next read). */
static char *to_utf8(const char *in, size_t n, bool at_end, size_t *ret_used)
{
        char *out = malloc(3 * n + 1), *p = out;
        size_t i = 0;

        if (!out)
                return NULL;
        while (i < n) {
                int len = utf8_sequence((const unsigned char *)in + i, n - i);

                if (len < 0 && !at_end)
                        break;
                if (len <= 0) {
                        memcpy(p, "\xef\xbf\xbd", 3);
                        p += 3;
                        i++;
                        continue;
                }
                if (len == 1 && in[i] == '\0') {
                        memcpy(p, "\xef\xbf\xbd", 3);
                        p += 3;
                } else {
                        memcpy(p, in + i, (size_t)len);
                        p += len;
                }
                i += (size_t)len;
        }
        *p = '\0';
        *ret_used = i;
        return out;
}

static void read_work(uv_work_t *work)
{
        struct log_read *x = work->data;
        char *buf = malloc((size_t)x->max);
        ssize_t n;
        int fd;

        if (!buf) {
                x->err = -ENOMEM;
                return;
        }
        fd = open(x->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                /* A run that has not written anything yet has no file: empty, not an error. */
                x->err = errno == ENOENT ? 0 : -errno;
                x->at_end = true;
                x->data = strdup("");
                free(buf);
                return;
        }
        n = pread(fd, buf, (size_t)x->max, x->offset);
        close(fd);
        if (n < 0) {
                x->err = -errno;
                free(buf);
                return;
        }
        x->at_end = n < x->max;
        x->data = to_utf8(buf, (size_t)n, x->at_end && !x->running, &x->len);
        free(buf);
        if (!x->data)
                x->err = -ENOMEM;
}

/* The read's reply; x freed. */
static void reply_read(struct log_read *x)
{
        json_object *o;

        if (x->err < 0) {
                char message[256];

                snprintf(message, sizeof(message), "cannot read %s: %s", x->path,
                         strerror(-x->err));
                conn_reply(x->c, x->id, NULL, sw_error_from_errno(x->err), message);
        } else {
                o = json_object_new_object();
                json_object_object_add(o, "id", json_object_new_int64(x->job_id));
                json_object_object_add(o, "log", json_object_new_string(x->path));
                json_object_object_add(o, "data", json_object_new_string(x->data));
                json_object_object_add(o, "offset",
                                       json_object_new_int64(x->offset + (int64_t)x->len));
                /* eof: the run has ended and this is the last of its log */
                json_object_object_add(o, "eof", json_object_new_boolean(!x->running && x->at_end));
                conn_reply(x->c, x->id, o, 0, NULL);
        }
        conn_unref(x->c);
        free(x->data);
        free(x->path);
        free(x);
}

static void read_done(uv_work_t *work, int status)
{
        (void)status;
        reply_read(work->data);
}

static int hex_digit(char h)
{
        return h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : -1;
}

/* The bytes of a hex text in buf (room for half its length): how many, or -1 if it is not
 * hex. */
static ssize_t from_hex(const char *hex, char *buf)
{
        size_t n = strlen(hex) / 2;

        for (size_t i = 0; i < n; i++) {
                int hi = hex_digit(hex[2 * i]), lo = hex_digit(hex[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return -1;
                buf[i] = (char)(hi * 16 + lo);
        }
        return (ssize_t)n;
}

/* A piece of another node's run's log, as the shared database keeps it (none kept: as a run
 * that wrote nothing). */
static void db_read_done(void *data, const struct db_result *res)
{
        struct log_read *x = data;
        const char *hex = res && res->text ? res->text : "";
        char *buf;
        ssize_t n;

        if (!res || !await_current(x->c, x->token)) { /* the daemon stops, or it was answered */
                json_object_put(x->id);
                conn_unref(x->c);
                free(x->path);
                free(x);
                return;
        }
        buf = malloc(strlen(hex) / 2 + 1);
        n = buf ? from_hex(hex, buf) : -1;
        x->at_end = !res->got || x->offset + n >= res->i[0];
        if (!buf)
                x->err = -ENOMEM;
        else if (!res->got || n < 0)
                x->err = -EIO;
        else if (!(x->data = to_utf8(buf, (size_t)n, x->at_end, &x->len)))
                x->err = -ENOMEM;
        free(buf);
        reply_read(x);
}

/* Starts reading path (taken over) for the request; rec is the finished run's, or NULL for the
 * run in progress. */
static void start_read(struct daemon *d, struct conn *c, const struct sw_log_params *p,
                       struct reply *r, char *path, const struct run_record *rec, bool running)
{
        struct log_read *x = calloc(1, sizeof(*x));

        if (!x) {
                free(path);
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        x->work.data = x;
        x->c = conn_ref(c);
        x->id = json_object_get(r->id);
        x->job_id = p->id;
        x->path = path;
        x->offset = p->offset;
        x->max = p->max ? p->max : LOG_CHUNK_DEFAULT;
        if (x->max > LOG_CHUNK_MAX)
                x->max = LOG_CHUNK_MAX;
        if (x->max < 4) /* room for any whole character, so that a reader always moves on */
                x->max = 4;
        x->running = running;
        /* Another node's run: its log file is there, and its copy in the shared database. */
        if (!running && rec && store_other_node(d->store, rec->node)) {
                x->token = await_begin(c, r->id);
                store_read_log(d->store, p->id, rec->run, x->offset, x->max, db_read_done, x);
        } else {
                uv_queue_work(c->clients->loop, &x->work, read_work, read_done);
        }
        r->deferred = true;
}

/* The finished run's log is gone, or never was: why. */
static void reply_no_log(struct reply *r, const struct run_record *rec)
{
        if (rec->started > 0)
                reply_error(r, SW_E_NOT_FOUND,
                            "the log of job %lld (run %lld) was removed: its owner's logs "
                            "exceeded max-log-bytes-per-user",
                            (long long)rec->id, (long long)rec->run);
        else
                reply_error(r, SW_E_NOT_FOUND, "run %lld of job %lld never started: it has no log",
                            (long long)rec->run, (long long)rec->id);
}

/* Whether the job's last started run is in progress as far as its log goes: executing, or ended
 * a moment ago on its thread without the loop having heard of its end yet (its record is still
 * to come), its file read as a run's in progress. */
static bool run_in_progress(struct job *job)
{
        return job && (job_executing(job) ||
                       job->runs_ended < __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE));
}

/* The log of run p->run: the run in progress, or a finished one while the history keeps it. */
static void log_of_run(struct daemon *d, struct conn *c, const struct sw_log_params *p,
                       struct job *job, struct reply *r)
{
        int64_t started = job ? __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE) : 0;
        const struct run_record *rec;
        char *path;

        if (p->run == started && run_in_progress(job)) {
                path = record_log_path(d->shared.run.log_dir, p->id, p->run);
                if (!path)
                        reply_error(r, SW_E_INTERNAL, "out of memory");
                else
                        start_read(d, c, p, r, path, NULL, true);
                return;
        }
        rec = job && job->last && job->last->run == p->run ? job->last
                                                           : daemon_find_run(d, p->id, p->run);
        if (!rec) {
                const struct run_record *last = job ? job->last : daemon_last_run(d, p->id);

                if (p->run > started && (!last || p->run > last->run))
                        reply_error(r, SW_E_NOT_FOUND, "job %lld has no run %lld yet",
                                    (long long)p->id, (long long)p->run);
                else
                        reply_error(r, SW_E_NOT_FOUND,
                                    "the log of job %lld (run %lld) is gone: the history no "
                                    "longer keeps that run",
                                    (long long)p->id, (long long)p->run);
                return;
        }
        if (!rec->log) {
                reply_no_log(r, rec);
                return;
        }
        path = strdup(rec->log);
        if (!path)
                reply_error(r, SW_E_INTERNAL, "out of memory");
        else
                start_read(d, c, p, r, path, rec, false);
}

static void handle_log(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        struct sw_log_params *p = &params->log;
        struct job *job = registry_find(&d->registry, p->id);
        const struct run_record *rec = job ? job->last : daemon_last_run(d, p->id);
        char *path = NULL;
        bool running = run_in_progress(job);

        if (!rec && !job) {
                reply_error(r, SW_E_NOT_FOUND, "no job %lld", (long long)p->id);
                return;
        }
        if (!requests_may_touch(c, job ? job->owner : rec->owner)) {
                reply_error(r, SW_E_PERMISSION, "job %lld is not yours", (long long)p->id);
                return;
        }
        if (p->run) {
                log_of_run(d, c, p, job, r);
                return;
        }
        if (running)
                path = record_log_path(d->shared.run.log_dir, p->id,
                                       __atomic_load_n(&job->runs_started, __ATOMIC_ACQUIRE));
        else if (!running && rec && rec->log)
                path = strdup(rec->log);
        if (!path && job && !rec && !job_idle(job)) {
                /* Queued, not started: nothing yet, but more to come. */
                r->result = json_object_new_object();
                json_object_object_add(r->result, "id", json_object_new_int64(p->id));
                json_object_object_add(r->result, "log", NULL);
                json_object_object_add(r->result, "data", json_object_new_string(""));
                json_object_object_add(r->result, "offset", json_object_new_int64(p->offset));
                json_object_object_add(r->result, "eof", json_object_new_boolean(0));
                return;
        }
        if (!path && rec && rec->started > 0) {
                reply_no_log(r, rec);
                return;
        }
        if (!path) {
                reply_error(r, SW_E_NOT_FOUND, "job %lld has no log yet", (long long)p->id);
                return;
        }
        start_read(d, c, p, r, path, running ? NULL : rec, running);
}

const struct method log_methods[] = {
    {"log", sw_log_params, NULL, handle_log, true},
    {NULL, NULL, NULL, NULL, false},
};
