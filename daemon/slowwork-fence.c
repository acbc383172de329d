/* SPDX-License-Identifier: MIT */
/*
 * slowwork-fence ID.RUN cgroup | ID.RUN group PID: one run's fence (see run/fence.h), a program
 * of its own. Descriptor 3 is the read end of the node's life pipe, whose write end only the
 * daemon and its supervisor hold: it reads end of file once neither is left, however they went
 * and in whatever order. Then it kills what is left of the run, its whole cgroup (descriptor 4,
 * the run's cgroup folder) or its process group PID, and exits. Until then it waits in read(2).
 * The daemon kills it once the run is over.
 *
 * Nothing but libc, so that it starts in a fraction of a millisecond; and a name that `pkill
 * slowworkd` does not match: it belongs to the run, not to the node.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LIFE_FD   3
#define CGROUP_FD 4
/* Passes over cgroup.procs where the kernel has no cgroup.kill (before 5.14). */
#define PASSES_MAX 100

/* The start time of pid (field 22 of /proc/PID/stat): 0, or -errno (-ENOENT when it is gone). */
static int start_time(pid_t pid, unsigned long long *ret)
{
        char path[64], text[1024], *p;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n <= 0)
                return -ENOENT;
        text[n] = '\0';
        /* After the name, which may hold anything: the state, then 18 fields before it. */
        p = strrchr(text, ')');
        if (!p || sscanf(p + 2,
                         "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                         "%*d %*d %*d %llu",
                         ret) != 1)
                return -EBADMSG;
        return 0;
}

/* Whether anything is left in the cgroup ("populated 1" in cgroup.events). */
static bool populated(void)
{
        char text[256] = "";
        int fd = openat(CGROUP_FD, "cgroup.events", O_RDONLY | O_CLOEXEC);
        ssize_t n = fd < 0 ? -1 : read(fd, text, sizeof(text) - 1);

        if (fd >= 0)
                close(fd);
        return n > 0 && strstr(text, "populated 1");
}

/* SIGKILL to every process of the cgroup and below: cgroup.kill, which no fork outruns; else
 * to each process of the cgroup itself, pass after pass until none is left. */
static void kill_cgroup(void)
{
        int fd = openat(CGROUP_FD, "cgroup.kill", O_WRONLY | O_CLOEXEC);

        if (fd >= 0) {
                ssize_t n = write(fd, "1", 1);

                close(fd);
                if (n == 1)
                        return;
        }
        for (int pass = 0; pass < PASSES_MAX; pass++) {
                FILE *procs;
                int pid, found = 0;

                fd = openat(CGROUP_FD, "cgroup.procs", O_RDONLY | O_CLOEXEC);
                procs = fd < 0 ? NULL : fdopen(fd, "re");
                if (!procs)
                        return;
                while (fscanf(procs, "%d", &pid) == 1)
                        found += kill(pid, SIGKILL) == 0;
                fclose(procs);
                if (!found)
                        return;
        }
}

/*
 * The process group has the id of the run's first process, which no other process gets while
 * the group has members. start is that process's start time: a process of that pid with another
 * start time means the group had ended; no process of that pid, that what is left is the run's.
 */
static void kill_group(pid_t pgrp, unsigned long long start)
{
        unsigned long long now;

        if (start_time(pgrp, &now) == 0 && now != start)
                return;
        kill(-pgrp, SIGKILL);
}

int main(int argc, char **argv)
{
        bool cgroup = argc == 3 && strcmp(argv[2], "cgroup") == 0;
        pid_t pgrp = argc == 4 && strcmp(argv[2], "group") == 0 ? atoi(argv[3]) : 0;
        unsigned long long start = 0;
        char buf[64];
        ssize_t n;

        if ((!cgroup && pgrp <= 0) || fcntl(LIFE_FD, F_GETFD) < 0 ||
            (cgroup && fcntl(CGROUP_FD, F_GETFD) < 0)) {
                fprintf(stderr, "slowwork-fence: started by slowworkd, for its own use\n");
                return 2;
        }
        /* The first process is slowworkd's child, not waited for yet: there, or a zombie. */
        if (pgrp > 0 && start_time(pgrp, &start) < 0)
                return 0;
        while ((n = read(LIFE_FD, buf, sizeof(buf))) != 0)
                if (n < 0 && errno != EINTR)
                        return 1;
        if (cgroup && !populated())
                return 0;
        if (cgroup)
                kill_cgroup();
        else
                kill_group(pgrp, start);
        fprintf(stderr,
                "<4>slowwork-fence: slowworkd and its supervisor are gone: killed what "
                "was left of run %s\n",
                argv[1]);
        return 0;
}
