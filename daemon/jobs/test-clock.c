/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jobs/daemon.h"
#include "jobs/test-clock.h"
#include "util/log.h"
#include "util/write-all.h"

struct test_clock {
        uv_poll_t poll;
        struct daemon *d;
        int fd;
        char line[128]; /* what came of the line being read */
        size_t n;
        bool too_long; /* the line being read did not fit: answered as unknown */
};

static void answer(struct test_clock *c, const char *text)
{
        int r = write_all(c->fd, text, strlen(text));

        if (r < 0) {
                errno = -r;
                log_warning("The test clock's answer was not written: %m");
        }
}

/* Everything that waits on the clocks looks at them again, before the answer. */
static void advance(struct daemon *d, double seconds)
{
        double before = run_wall_now();

        run_clock_advance(seconds);
        schedule_check(&d->schedule);
        for (size_t i = 0; i < REGISTRY_BUCKETS; i++)
                for (struct job *job = d->registry.by_id[i]; job; job = job->hnext) {
                        daemon_clock_moved(d, job, before);
                        job_kick(job);
                }
}

static void on_line(struct test_clock *c, const char *line)
{
        double seconds;
        char *end;

        if (strncmp(line, "advance ", 8) == 0) {
                errno = 0;
                seconds = strtod(line + 8, &end);
                if (errno == 0 && end != line + 8 && *end == '\0' && isfinite(seconds) &&
                    seconds >= 0) {
                        advance(c->d, seconds);
                        answer(c, "advanced\n");
                        return;
                }
        }
        answer(c, "unknown\n");
}

static void on_closed(uv_handle_t *handle)
{
        struct test_clock *c = handle->data;

        close(c->fd);
        free(c);
}

static void on_readable(uv_poll_t *poll, int status, int events)
{
        struct test_clock *c = poll->data;
        char buf[256];
        ssize_t got;

        (void)events;
        got = status < 0 ? -1 : read(c->fd, buf, sizeof(buf));
        if (got < 0 && (errno == EAGAIN || errno == EINTR))
                return;
        if (got <= 0) {
                /* The test let go of its end: the clocks stay where it left them. */
                uv_poll_stop(&c->poll);
                return;
        }
        for (ssize_t i = 0; i < got; i++) {
                if (buf[i] != '\n') {
                        if (c->n < sizeof(c->line) - 1)
                                c->line[c->n++] = buf[i];
                        else
                                c->too_long = true;
                        continue;
                }
                c->line[c->n] = '\0';
                if (c->too_long)
                        answer(c, "unknown\n");
                else
                        on_line(c, c->line);
                c->n = 0;
                c->too_long = false;
        }
}

int test_clock_open(struct daemon *d, uv_loop_t *loop, int fd, struct test_clock **ret)
{
        struct test_clock *c = calloc(1, sizeof(*c));
        int r;

        if (!c) {
                close(fd);
                return -ENOMEM;
        }
        c->d = d;
        c->fd = fd;
        c->poll.data = c;
        r = uv_poll_init(loop, &c->poll, fd);
        if (r < 0) {
                close(fd);
                free(c);
                return r;
        }
        r = uv_poll_start(&c->poll, UV_READABLE, on_readable);
        if (r < 0) {
                uv_close((uv_handle_t *)&c->poll, on_closed);
                return r;
        }
        log_warning("The test hook on the clocks is on (SLOWWORKD_TEST_CLOCK_FD): a test may move "
                    "them forward");
        *ret = c;
        return 0;
}

void test_clock_close(struct test_clock *c)
{
        if (c)
                uv_close((uv_handle_t *)&c->poll, on_closed);
}
