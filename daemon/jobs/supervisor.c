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
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jobs/inflight.h"
#include "jobs/supervisor.h"
#include "util/cgroup.h"
#include "util/log.h"

/* How long a start waits for the last daemon's supervisor to finish its stop. */
#define LAST_WAIT_MS 30000

/* DIR/runs-inflight, flock()ed once the last daemon's supervisor has let go of it. */
static int lock_inflight(const char *state_dir)
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
                if (waited == 0)
                        log_info("Waiting for the last daemon's supervisor to stop its runs");
                if (waited >= LAST_WAIT_MS) {
                        log_warning("The last daemon's supervisor still holds %s after %d s: "
                                    "starting all the same",
                                    path, LAST_WAIT_MS / 1000);
                        break;
                }
                poll(NULL, 0, 20);
        }
        free(path);
        return fd;
}

/* The supervisor's side: where it says what it stopped. */
struct stopping {
        const char *report;
        int fd;
};

/* A run that left processes: written down for the next start. One whose processes would not go
 * is left to the next start, which tries again. */
static void stopped(void *data, int64_t id, int64_t run, int left)
{
        struct stopping *st = data;

        if (left <= 0)
                return;
        log_info("Job %" PRId64 ": the daemon is gone; stopped the %d process%s its run %" PRId64
                 " left",
                 id, left, left == 1 ? "" : "es", run);
        if (st->fd < 0)
                st->fd = open(st->report, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
                              0600);
        if (st->fd < 0 || dprintf(st->fd, "%" PRId64 " %" PRId64 " %d\n", id, run, left) < 0)
                log_error("Cannot write to %s: %m", st->report);
}

/* A fence's kill of a run's process group: said in the log. */
static void fenced(void *data, int64_t id, int64_t run, int left)
{
        (void)data;
        if (left > 0)
                log_info("Job %" PRId64 ": killed the %d process%s of its run %" PRId64, id, left,
                         left == 1 ? "" : "es", run);
}

/* Every descriptor from 3 on goes, but a and b. */
static void close_all_but(int a, int b)
{
        unsigned lo = (unsigned)(a < b ? a : b), hi = (unsigned)(a < b ? b : a);

        if (lo > 3)
                close_range(3, lo - 1, 0);
        if (hi > lo + 1)
                close_range(lo + 1, hi - 1, 0);
        close_range(hi + 1, ~0U, 0);
}

/* Out of the daemon's session (no terminal's signals), with only what it needs open; named
 * last, so that whoever sees the name sees it detached. */
static void detach(int pipe_fd, int inflight_fd)
{
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        sigset_t none;

        setsid();
        signal(SIGTERM, SIG_DFL);
        signal(SIGINT, SIG_DFL);
        signal(SIGHUP, SIG_DFL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        if (null >= 0) {
                dup2(null, 0);
                dup2(null, 1);
        }
        close_all_but(pipe_fd, inflight_fd);
        prctl(PR_SET_NAME, "slowworkd-super");
}

static double mono_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The daemon's lease ran out unrenewed and it said no later deadline: it may be stopped, and
 * another node may run its jobs. Its runs' processes go now; the cgroups stay the daemon's. */
static void fence(const char *cgroup_path, int inflight_fd)
{
        struct contain c = {.path = (char *)cgroup_path};
        struct inflight_run *runs;
        size_t n;

        log_warning("The daemon's lease ran out unrenewed: killing its runs");
        if (cgroup_path && cgroup_tree_open(cgroup_path, false, &c.tree) == 0)
                contain_kill_runs(&c);
        cgroup_tree_unref(c.tree);
        if (inflight_read(inflight_fd, &runs, &n) == 0) {
                contain_stop_group_leftovers(runs, n, fenced, NULL);
                free(runs);
        }
}

/* Until the daemon is gone (end of file): its deadlines (a double each, the last one counts),
 * and a fence at each that passes. */
static void watch(int pipe_fd, const char *cgroup_path, int inflight_fd)
{
        double deadline = 0, said[64];

        for (;;) {
                struct pollfd pfd = {.fd = pipe_fd, .events = POLLIN};
                double left = deadline - mono_now();
                int timeout = deadline <= 0 ? -1 : left <= 0 ? 0 : (int)(left * 1000) + 1;
                ssize_t got;
                int n = poll(&pfd, 1, timeout);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0) {
                        fence(cgroup_path, inflight_fd);
                        deadline = 0;
                        continue;
                }
                got = read(pipe_fd, said, sizeof(said));
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0)
                        return;
                if ((size_t)got >= sizeof(*said))
                        deadline = said[(size_t)got / sizeof(*said) - 1];
        }
}

static void __attribute__((noreturn))
supervise(int pipe_fd, int inflight_fd, const char *cgroup_path, const char *report)
{
        struct stopping st = {.report = report, .fd = -1};
        struct contain c = {.path = (char *)cgroup_path};
        struct inflight_run *runs;
        size_t n;

        detach(pipe_fd, inflight_fd);
        watch(pipe_fd, cgroup_path, inflight_fd);
        /* A subtree the daemon made went with its clean end: then nothing is left. */
        if (cgroup_path && cgroup_tree_open(cgroup_path, false, &c.tree) == 0)
                contain_stop_leftovers(&c, stopped, &st);
        cgroup_tree_unref(c.tree);
        if (inflight_read(inflight_fd, &runs, &n) == 0) {
                contain_stop_group_leftovers(runs, n, stopped, &st);
                free(runs);
        }
        _exit(0);
}

void supervisor_start(struct supervisor *s, const struct contain *c, const char *state_dir)
{
        int inflight_fd = lock_inflight(state_dir), fds[2] = {-1, -1}, r = inflight_fd;
        pid_t pid = -1;

        *s = (struct supervisor){.pipe_fd = -1};
        if (r >= 0 && asprintf(&s->report, "%s/runs-stopped", state_dir) < 0) {
                s->report = NULL;
                r = -ENOMEM;
        }
        if (r >= 0 && pipe2(fds, O_CLOEXEC) < 0)
                r = -errno;
        if (r >= 0) {
                pid = fork();
                if (pid == 0) {
                        close(fds[1]);
                        supervise(fds[0], inflight_fd, c->tree ? c->path : NULL, s->report);
                }
                r = pid < 0 ? -errno : 0;
                close(fds[0]);
        }
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
        fcntl(s->pipe_fd, F_SETFL, O_NONBLOCK);
}

void supervisor_deadline(struct supervisor *s, double at)
{
        if (s->pid <= 0 || at == s->said)
                return;
        /* Eight bytes go whole into a pipe, or not at all (non-blocking): a deadline the
         * supervisor has not read yet is overtaken by the next. */
        if (write(s->pipe_fd, &at, sizeof(at)) == (ssize_t)sizeof(at))
                s->said = at;
}

void supervisor_stop(struct supervisor *s)
{
        if (s->pid > 0) {
                close(s->pipe_fd);
                while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
                        ;
        }
        free(s->report);
        *s = (struct supervisor){.pipe_fd = -1};
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
