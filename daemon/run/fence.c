/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/fence.h"
#include "util/log.h"
#include "util/spawn-helper.h"

int fence_setup(struct fence_context *f, int life_fd)
{
        const char *program = getenv("SLOWWORKD_FENCE");

        if (!program || !program[0])
                program = FENCE_PROGRAM;
        *f = (struct fence_context){.program = program, .life_fd = life_fd};
        if (life_fd < 0 || access(program, X_OK) < 0) {
                int r = life_fd < 0 ? -EBADF : -errno;

                log_warning("Runs have no fence (%s: %s): should the daemon and its supervisor "
                            "both die, another node may run their jobs beside what is left of them",
                            life_fd < 0 ? "no life pipe" : program, strerror(-r));
                return r;
        }
        return 0;
}

pid_t fence_start(const struct fence_context *f, int64_t id, int64_t run, int cgroup_fd, pid_t pgrp)
{
        char name[48], group[24];
        char *argv[] = {(char *)"slowwork-fence", name,
                        (char *)(cgroup_fd >= 0 ? "cgroup" : "group"),
                        cgroup_fd >= 0 ? NULL : group, NULL};
        int fds[2] = {f->life_fd, cgroup_fd};
        pid_t pid;
        int r;

        snprintf(name, sizeof(name), "%" PRId64 ".%" PRId64, id, run);
        snprintf(group, sizeof(group), "%d", (int)pgrp);
        r = spawn_helper(f->program, argv, fds, cgroup_fd >= 0 ? 2 : 1, &pid);
        if (r < 0) {
                log_warning("Job %" PRId64 ": cannot start the fence of run %" PRId64
                            " (%s: %s): it runs without",
                            id, run, f->program, strerror(-r));
                return 0;
        }
        return pid;
}

void fence_end(pid_t fence)
{
        kill(fence, SIGKILL);
        while (waitpid(fence, NULL, 0) < 0 && errno == EINTR)
                ;
}
