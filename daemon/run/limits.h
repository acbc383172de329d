/* SPDX-License-Identifier: MIT */
/*
 * A job's limits: what its submit asked, over the default-* settings, under the max-job-*
 * ceilings (a user's job, not an admin's: a queue's own ceilings over the daemon's); whether this
 * daemon can enforce them (a limit it cannot is refused, never ignored); and how a run gets them:
 * memory, tasks and CPU weight through its cgroup, the rest as resource limits and a niceness of
 * its process. Jobs of other users also start from a login's resource limits, not the daemon's.
 */
#ifndef SLOWWORKD_LIMITS_H
#define SLOWWORKD_LIMITS_H

#include <stdbool.h>
#include <stddef.h>

#include "methods.h"

struct cgroup_run;
struct contain;
struct rlimit;
struct spawn_limits;

/* The ceilings a job of a queue is under: each the queue's own where it has one (above 0),
 * else the daemon's; 0: none. */
struct limits_ceilings {
        struct sw_limits max;
        const char *queue;   /* the queue's name, for errors */
        unsigned from_queue; /* bit i: the ith member of max is the queue's own */
};
void limits_ceilings(const struct sw_limits *daemon, const struct sw_limits *queue,
                     const char *queue_name, struct limits_ceilings *ret);
/* asked, with what it leaves unset taken from defaults, under ceilings (NULL: none, an admin's
 * job). Under a ceiling, a limit of none (0, or unset with a default of none) is the ceiling,
 * and so is a default above it; a limit asked above it is -ERANGE with err naming both
 * ("limits.cpu_time 99999 is above max-job-cpu-time 3600"), or with clamp (a restart's kept
 * limits) the ceiling. ret_from (SW_LIMITS_COUNT, may be NULL) gets by member the setting a
 * value came from, NULL for the job's own. 0, or -ERANGE and nothing written. */
int limits_resolve(const struct sw_limits *asked, const struct sw_limits *defaults,
                   const struct limits_ceilings *ceilings, bool clamp, struct sw_limits *ret,
                   const char **ret_from, char *err, size_t errlen);
/* Whether l can be enforced for a job here: 0; -EINVAL with err naming the limit (and from, by
 * member as limits_resolve gives it, the setting it came from) and why not; -EPERM for a
 * niceness below 0 from a user who is not an admin. */
int limits_check(const struct sw_limits *l, const char *const *from, const struct contain *contain,
                 bool admin, char *err, size_t errlen);
/* Writes the cgroup's part to the run's cgroup (run NULL: it has none, which fails if l has a
 * cgroup limit): 0, or -errno with err saying which failed. */
int limits_apply_cgroup(const struct sw_limits *l, struct cgroup_run *run, char *err,
                        size_t errlen);
/* The process's part; other_user: a job of a user other than the daemon's, else its runs get
 * back the open-files limit the daemon was started with (nofile), whatever it raised its own to. */
void limits_for_spawn(const struct sw_limits *l, bool other_user, const struct rlimit *nofile,
                      struct spawn_limits *ret);

#endif
