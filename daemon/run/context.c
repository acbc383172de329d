/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "run/context.h"
#include "util/log.h"
#include "util/write-all.h"

static double now(clockid_t clock)
{
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds the test hook moved both clocks forward (jobs/test-clock.c): 0 unless a test did. */
static double moved;

static double moved_by(void)
{
        double m;

        __atomic_load(&moved, &m, __ATOMIC_ACQUIRE);
        return m;
}

double run_mono_now(void)
{
        return now(CLOCK_MONOTONIC) + moved_by();
}

double run_wall_now(void)
{
        return now(CLOCK_REALTIME) + moved_by();
}

double run_mono_real(void)
{
        return now(CLOCK_MONOTONIC);
}

void run_clock_advance(double seconds)
{
        double m = moved_by() + seconds;

        __atomic_store(&moved, &m, __ATOMIC_RELEASE);
}

double run_kill_grace(const struct run_context *ctx)
{
        double grace;

        __atomic_load(&ctx->kill_grace, &grace, __ATOMIC_RELAXED);
        return grace;
}

bool run_fenced(const struct run_context *ctx)
{
        double at;

        if (__atomic_load_n(&ctx->fenced, __ATOMIC_ACQUIRE))
                return true;
        __atomic_load(&ctx->fence_at, &at, __ATOMIC_ACQUIRE);
        return at > 0 && run_mono_real() >= at;
}

bool run_space_low(int dir_fd, int64_t min_free)
{
        struct statvfs st;

        if (min_free <= 0 || fstatvfs(dir_fd, &st) < 0 || st.f_blocks == 0)
                return false;
        return (double)st.f_bavail * 100.0 < (double)min_free * (double)st.f_blocks;
}

void run_log_init(struct run_log *log, const struct run_context *ctx, const char *path)
{
        int64_t limit = __atomic_load_n(&ctx->log_limit, __ATOMIC_RELAXED);
        int64_t budget = __atomic_load_n(&ctx->log_budget, __ATOMIC_RELAXED);

        *log = (struct run_log){
            .dir_fd = ctx->log_dir_fd,
            .path = path,
            .fd = -1,
            .uid = (uid_t)-1,
            .gid = (gid_t)-1,
            .limit = budget < limit ? budget : limit,
            .min_free = __atomic_load_n(&ctx->min_free_space, __ATOMIC_RELAXED),
        };
}

static int make_file(struct run_log *log)
{
        const char *name = log->path ? strrchr(log->path, '/') : NULL;

        if (!name)
                return -ENOMEM;
        name++;
        if (unlinkat(log->dir_fd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        log->fd = openat(log->dir_fd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                         0600);
        if (log->fd < 0)
                return -errno;
        if ((log->uid != (uid_t)-1 || log->gid != (gid_t)-1) &&
            fchown(log->fd, log->uid, log->gid) < 0) {
                int r = -errno;

                close(log->fd);
                log->fd = -1;
                (void)unlinkat(log->dir_fd, name, 0);
                return r;
        }
        return 0;
}

/* What fits of the output kept in memory, NUL-terminated; the rest is dropped. */
static int keep(struct run_log *log, const void *data, size_t n)
{
        size_t room = log->keep_size > log->kept + 1 ? log->keep_size - log->kept - 1 : 0;

        if (n < room)
                room = n;
        if (log->keep && log->keep_size > 0) {
                memcpy(log->keep + log->kept, data, room);
                log->kept += room;
                log->keep[log->kept] = '\0';
        }
        log->logged += (int64_t)n;
        return 0;
}

int run_log_write(struct run_log *log, const void *data, size_t n)
{
        static const char cut_note[] = "\n[slowworkd: log cut here: log-limit reached]\n";
        static const char full_note[] = "\n[slowworkd: log cut here: the state folder's file "
                                        "system is below min-free-space]\n";
        const char *note = cut_note;
        int r;

        if (log->cut)
                return 0;
        if (!log->path)
                return keep(log, data, n);
        if (log->fd < 0 && !log->err) {
                log->err = make_file(log);
                if (log->err)
                        log_warning("Cannot make the log %s: %s", log->path ? log->path : "",
                                    strerror(-log->err));
        }
        if (log->err)
                return log->err;
        if (run_space_low(log->dir_fd, log->min_free)) {
                n = 0;
                note = full_note;
                log->cut = true;
        } else if (log->logged + (int64_t)n > log->limit) {
                n = (size_t)(log->limit - log->logged);
                log->cut = true;
        }
        r = write_all(log->fd, data, n);
        if (r == 0) {
                log->logged += (int64_t)n;
                log->size += (int64_t)n;
        }
        if (log->cut && r == 0) {
                r = write_all(log->fd, note, strlen(note));
                if (r == 0)
                        log->size += (int64_t)strlen(note);
        }
        return r;
}

void run_log_close(struct run_log *log)
{
        if (log->fd >= 0)
                close(log->fd);
        log->fd = -1;
}
