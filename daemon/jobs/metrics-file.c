/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "jobs/metrics-file.h"
#include "util/log.h"
#include "util/write-all.h"

int metrics_file_init(struct metrics_file *f, uv_loop_t *loop)
{
        return uv_timer_init(loop, &f->timer);
}

/* Writes text to path through a temporary file and a rename: 0 or -errno. */
static int metrics_file_write(const char *path, const char *text, size_t len)
{
        char *tmp;
        int fd, r;

        if (asprintf(&tmp, "%s.%ld.tmp", path, (long)getpid()) < 0)
                return -ENOMEM;
        /* One a crash left behind; a symbolic link there goes, not what it points at. */
        (void)unlink(tmp);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
        if (fd < 0) {
                r = -errno;
                free(tmp);
                return r;
        }
        r = fchmod(fd, 0644) < 0 ? -errno : write_all(fd, text, len);
        if (close(fd) < 0 && r == 0)
                r = -errno;
        if (r == 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void)unlink(tmp);
        free(tmp);
        return r;
}

static void on_tick(uv_timer_t *timer)
{
        struct metrics_file *f = timer->data;
        char *text = f->render ? f->render(f->data) : NULL;
        int r = text ? metrics_file_write(f->path, text, strlen(text)) : -ENOMEM;

        if (r < 0 && r != f->last_error)
                log_warning("Cannot write the metrics to %s: %s (trying again every %g s)", f->path,
                            strerror(-r), f->interval);
        else if (r == 0 && f->last_error)
                log_info("Writing the metrics to %s again", f->path);
        f->last_error = r;
        f->written |= r == 0;
        free(text);
}

int metrics_file_set(struct metrics_file *f, const char *path, double interval)
{
        char *copy = NULL;

        if (path && !path[0])
                path = NULL;
        if ((!path && !f->path) ||
            (path && f->path && strcmp(path, f->path) == 0 && interval == f->interval))
                return 0;
        if (path && !(copy = strdup(path)))
                return -ENOMEM;
        /* Metrics no longer written would read as current: the file goes with the writes. */
        if (f->written && (!path || strcmp(path, f->path) != 0)) {
                if (unlink(f->path) < 0 && errno != ENOENT)
                        log_warning("Cannot remove the metrics file %s: %m", f->path);
                f->written = false;
        }
        free(f->path);
        f->path = copy;
        f->interval = interval;
        f->last_error = 0;
        uv_timer_stop(&f->timer);
        if (!path)
                return 0;
        f->timer.data = f;
        uv_timer_start(&f->timer, on_tick, 0, (uint64_t)(interval * 1000.0 + 0.5));
        return 0;
}

void metrics_file_stop(struct metrics_file *f)
{
        uv_timer_stop(&f->timer);
}

void metrics_file_close(struct metrics_file *f)
{
        free(f->path);
        f->path = NULL;
        if (f->timer.loop && !uv_is_closing((uv_handle_t *)&f->timer))
                uv_close((uv_handle_t *)&f->timer, NULL);
}
