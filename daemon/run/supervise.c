/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include "run/contain.h"
#include "run/inflight.h"
#include "run/supervise.h"
#include "util/cgroup.h"
#include "util/log.h"
#include "util/spawn-helper.h"

#define DAEMON_FD   (SPAWN_HELPER_FD + SUPERVISE_FD_DAEMON)
#define INFLIGHT_FD (SPAWN_HELPER_FD + SUPERVISE_FD_INFLIGHT)

/* Where it says what it stopped. */
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
                st->fd =
                    open(st->report, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
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

/* Only what it was given open, beside its stderr; named, so that whoever sees the name sees it
 * detached (posix_spawn made its session and reset its signals). */
static void detach(void)
{
        close_range(SPAWN_HELPER_FD + SUPERVISE_FDS, ~0U, 0);
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
static void fence(const char *cgroup_path)
{
        struct contain c = {.path = (char *)cgroup_path};
        struct inflight_run *runs;
        size_t n;

        log_warning("The daemon's lease ran out unrenewed: killing its runs");
        if (cgroup_path && cgroup_tree_open(cgroup_path, false, &c.tree) == 0)
                contain_kill_runs(&c);
        cgroup_tree_unref(c.tree);
        if (inflight_read(INFLIGHT_FD, &runs, &n) == 0) {
                contain_stop_group_leftovers(runs, n, fenced, NULL);
                free(runs);
        }
}

/* Until the daemon is gone (end of file): its deadlines (a double each, the last one counts),
 * and a fence at each that passes; a negative one lets go (the daemon's reexec). */
static void watch(const char *cgroup_path)
{
        double deadline = 0, said[64];

        for (;;) {
                struct pollfd pfd = {.fd = DAEMON_FD, .events = POLLIN};
                double left = deadline - mono_now();
                int timeout = deadline <= 0 ? -1 : left <= 0 ? 0 : (int)(left * 1000) + 1;
                ssize_t got;
                int n = poll(&pfd, 1, timeout);

                if (n < 0 && errno == EINTR)
                        continue;
                if (n == 0) {
                        fence(cgroup_path);
                        deadline = 0;
                        continue;
                }
                got = read(DAEMON_FD, said, sizeof(said));
                if (got < 0 && errno == EINTR)
                        continue;
                if (got <= 0)
                        return;
                if ((size_t)got >= sizeof(*said))
                        deadline = said[(size_t)got / sizeof(*said) - 1];
                /* The daemon re-executes itself: its runs go on, and its next program starts
                 * a supervisor of its own. */
                if (deadline < 0)
                        _exit(0);
        }
}

int supervise_main(int argc, char **argv)
{
        const char *cgroup_path = argc == 4 && argv[2][0] ? argv[2] : NULL;
        struct stopping st = {.report = argc == 4 ? argv[3] : NULL, .fd = -1};
        struct contain c = {.path = (char *)cgroup_path};
        struct inflight_run *runs;
        size_t n;

        if (argc != 4 || fcntl(DAEMON_FD, F_GETFD) < 0 || fcntl(INFLIGHT_FD, F_GETFD) < 0) {
                fprintf(stderr, "slowworkd: %s is for the daemon's own use\n", SUPERVISE_FLAG);
                _exit(2);
        }
        detach();
        watch(cgroup_path);
        /* A subtree the daemon made went with its clean end: then nothing is left. */
        if (cgroup_path && cgroup_tree_open(cgroup_path, false, &c.tree) == 0)
                contain_stop_leftovers(&c, stopped, &st);
        cgroup_tree_unref(c.tree);
        if (inflight_read(INFLIGHT_FD, &runs, &n) == 0) {
                contain_stop_group_leftovers(runs, n, stopped, &st);
                free(runs);
        }
        _exit(0);
}
