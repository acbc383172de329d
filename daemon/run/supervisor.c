/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/pidfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/supervise.h"
#include "run/supervisor.h"
#include "util/log.h"
#include "util/spawn-helper.h"

/* How long a start waits for the last daemon's supervisor to finish its stop. */
#define LAST_WAIT_MS 30000
/* Supervisors that die within a second of their start, in a row, before the daemon gives up. */
#define QUICK_ENDS_MAX 5

struct supervisor_watch {
        uv_poll_t poll;
        struct supervisor *s;
        int pidfd;
};

static double mono_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* DIR/runs-inflight, flock()ed once the last daemon's supervisor has let go of it (waiting up to
 * wait_ms for it). */
static int lock_inflight(const char *state_dir, int wait_ms)
{
        char *path;
        int fd, waited;

        if (asprintf(&path, "%s/runs-inflight", state_dir) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                int r = log_error_errno(-errno, "Cannot open %s: %m", path);

                free(path);
                return r;
        }
        for (waited = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; waited += 20) {
                if (errno != EWOULDBLOCK) {
                        int r = log_error_errno(-errno, "Cannot lock %s: %m", path);

                        free(path);
                        close(fd);
                        return r;
                }
                if (waited == 0 && wait_ms > 0)
                        log_info("Waiting for the last daemon's supervisor to stop its runs");
                if (waited >= wait_ms) {
                        log_warning("The last daemon's supervisor still holds %s after %d s: "
                                    "starting all the same",
                                    path, wait_ms / 1000);
                        break;
                }
                poll(NULL, 0, 20);
        }
        free(path);
        return fd;
}

static void start_one(struct supervisor *s, int wait_ms);

static void watch_closed(uv_handle_t *handle)
{
        struct supervisor_watch *w = handle->data;

        close(w->pidfd);
        free(w);
}

void supervisor_unwatch(struct supervisor *s)
{
        if (!s->watch)
                return;
        uv_close((uv_handle_t *)&s->watch->poll, watch_closed);
        s->watch = NULL;
}

/* The supervisor is gone while the daemon lives: another takes its place. */
static void on_gone(uv_poll_t *poll, int status, int events)
{
        struct supervisor_watch *w = poll->data;
        struct supervisor *s = w->s;
        int code = 0;

        (void)status;
        (void)events;
        supervisor_unwatch(s);
        while (waitpid(s->pid, &code, 0) < 0 && errno == EINTR)
                ;
        close(s->pipe_fd);
        s->pipe_fd = -1;
        s->pid = 0;
        if (WIFSIGNALED(code))
                log_warning("The supervisor was killed (%s): starting another",
                            strsignal(WTERMSIG(code)));
        else
                log_warning("The supervisor exited (status %d): starting another",
                            WEXITSTATUS(code));
        s->quick_ends = mono_now() - s->started < 1 ? s->quick_ends + 1 : 0;
        if (s->quick_ends >= QUICK_ENDS_MAX) {
                log_error("%d supervisors in a row died at their start: none from now on; should "
                          "the daemon die, its runs go on until the next start stops them",
                          s->quick_ends);
                return;
        }
        start_one(s, 0);
}

/* Its pidfd on the loop; without one (a kernel before 5.3), a supervisor that dies is not
 * replaced. */
static void watch(struct supervisor *s)
{
        struct supervisor_watch *w = calloc(1, sizeof(*w));
        int r = w ? 0 : -ENOMEM;

        if (w) {
                w->s = s;
                w->pidfd = (int)pidfd_open(s->pid, 0);
                if (w->pidfd < 0)
                        r = -errno;
        }
        if (r == 0)
                r = uv_poll_init(s->loop, &w->poll, w->pidfd);
        if (r < 0) {
                log_warning("Cannot watch the supervisor (%s): should it die, none takes its "
                            "place",
                            strerror(-r));
                if (w && w->pidfd >= 0)
                        close(w->pidfd);
                free(w);
                return;
        }
        w->poll.data = w;
        uv_poll_start(&w->poll, UV_READABLE, on_gone);
        s->watch = w;
}

static void start_one(struct supervisor *s, int wait_ms)
{
        int inflight_fd = lock_inflight(s->state_dir, wait_ms), fds[2] = {-1, -1};
        char *argv[] = {(char *)"slowworkd", (char *)SUPERVISE_FLAG,
                        s->cgroup ? s->cgroup : (char *)"", s->report, NULL};
        int r = inflight_fd < 0 ? inflight_fd : 0;
        pid_t pid = 0;

        if (r == 0 && (!s->report || s->life[1] < 0))
                r = -ENOMEM;
        if (r == 0 && pipe2(fds, O_CLOEXEC) < 0)
                r = -errno;
        if (r == 0) {
                int passed[SUPERVISE_FDS];

                passed[SUPERVISE_FD_DAEMON] = fds[0];
                passed[SUPERVISE_FD_LIFE] = s->life[1];
                passed[SUPERVISE_FD_INFLIGHT] = inflight_fd;
                r = spawn_helper("/proc/self/exe", argv, passed, SUPERVISE_FDS, &pid);
        }
        if (fds[0] >= 0)
                close(fds[0]);
        if (inflight_fd >= 0)
                close(inflight_fd); /* the supervisor's now, and its lock */
        if (r < 0) {
                log_warning("No supervisor (%s): should the daemon die, its runs go on until the "
                            "next start on the state folder stops them",
                            strerror(-r));
                if (fds[1] >= 0)
                        close(fds[1]);
                return;
        }
        s->pid = pid;
        s->pipe_fd = fds[1];
        s->started = mono_now();
        s->said = 0;
        fcntl(s->pipe_fd, F_SETFL, O_NONBLOCK);
        supervisor_deadline(s, s->deadline);
        watch(s);
}

void supervisor_start(struct supervisor *s, uv_loop_t *loop, const struct contain *c,
                      const char *state_dir)
{
        *s = (struct supervisor){.loop = loop, .pipe_fd = -1, .life = {-1, -1}};
        if (asprintf(&s->report, "%s/runs-stopped", state_dir) < 0)
                s->report = NULL;
        s->state_dir = strdup(state_dir);
        s->cgroup = c->tree ? strdup(c->path) : NULL;
        if (!s->state_dir || (c->tree && !s->cgroup) || pipe2(s->life, O_CLOEXEC) < 0)
                s->life[0] = s->life[1] = -1;
        start_one(s, LAST_WAIT_MS);
}

int supervisor_life_fd(const struct supervisor *s)
{
        return s->life[0];
}

void supervisor_deadline(struct supervisor *s, double at)
{
        s->deadline = at;
        if (s->pid <= 0 || at == s->said)
                return;
        /* Eight bytes go whole into a pipe, or not at all (non-blocking): a deadline the
         * supervisor has not read yet is overtaken by the next. */
        if (write(s->pipe_fd, &at, sizeof(at)) == (ssize_t)sizeof(at))
                s->said = at;
}

void supervisor_let_go(struct supervisor *s)
{
        double go = -1;

        supervisor_unwatch(s);
        if (s->pid > 0) {
                fcntl(s->pipe_fd, F_SETFL, 0);
                if (write(s->pipe_fd, &go, sizeof(go)) != (ssize_t)sizeof(go))
                        log_warning("Cannot tell the supervisor to let go: %m");
                close(s->pipe_fd);
                while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        s->pid = 0;
        s->pipe_fd = -1;
}

void supervisor_stop(struct supervisor *s)
{
        if (s->pid > 0) {
                close(s->pipe_fd);
                while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        for (int i = 0; i < 2; i++)
                if (s->life[i] >= 0)
                        close(s->life[i]);
        free(s->report);
        free(s->state_dir);
        free(s->cgroup);
        *s = (struct supervisor){.pipe_fd = -1, .life = {-1, -1}};
}

void supervisor_report(struct supervisor *s,
                       void (*cb)(void *data, int64_t id, int64_t run, int left), void *data)
{
        FILE *f = s->report ? fopen(s->report, "re") : NULL;
        int64_t id, run;
        int left;

        if (!f)
                return;
        while (fscanf(f, "%" SCNd64 " %" SCNd64 " %d", &id, &run, &left) == 3)
                if (left > 0)
                        cb(data, id, run, left);
        fclose(f);
        unlink(s->report);
}
