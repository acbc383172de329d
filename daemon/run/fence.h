/* SPDX-License-Identifier: MIT */
/*
 * Each run's fence, on a node whose jobs another node takes once its lease runs out (a store
 * shared with other nodes): slowwork-fence, a small program started beside the run, that kills
 * it once neither the daemon nor its supervisor is left, whatever killed them and in whatever
 * order, so that no run of a dead node goes on beside the run of its job that another node
 * starts. Where a cgroup holds the run, the fence starts before the run's first process and kills
 * the whole cgroup; else it starts just after it and kills its process group (a process that
 * left the group escapes it, as it escapes cancel). The daemon kills the fence once the run is
 * over. On a node of its own (SQLite) no run has one, and costs nothing more: its next start
 * stops whatever the runs left before anything runs again.
 */
#ifndef SLOWWORKD_FENCE_H
#define SLOWWORKD_FENCE_H

#include <stdint.h>
#include <sys/types.h>

struct fence_context {
        const char *program; /* slowwork-fence: FENCE_PROGRAM, or $SLOWWORKD_FENCE */
        int life_fd;         /* the read end of the node's life pipe (supervisor.h) */
};

/* The runs' fences, waiting on life_fd: 0, or -errno when runs cannot have them (logged). */
int fence_setup(struct fence_context *f, int life_fd);
/* Starts run `run` of job id's fence: of its cgroup (cgroup_fd, the cgroup's folder), or of the
 * process group pgrp when cgroup_fd < 0. Its pid; 0 when it could not be started (logged). Any
 * thread. */
pid_t fence_start(const struct fence_context *f, int64_t id, int64_t run, int cgroup_fd,
                  pid_t pgrp);
/* The run is over (its processes gone, or given up on): its fence goes, and is waited for. */
void fence_end(pid_t fence);

#endif
