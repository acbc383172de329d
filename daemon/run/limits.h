/* SPDX-License-Identifier: MIT */
/*
 * A job's limits: what its submit asked, over the default-* settings; whether this daemon can
 * enforce them (a limit it cannot is refused, never ignored); and how a run gets them: memory,
 * tasks and CPU weight through its cgroup, the rest as resource limits and a niceness of its
 * process. Jobs of other users also start from a login's resource limits, not the daemon's.
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

/* asked, with what it leaves unset taken from defaults. */
void limits_resolve(const struct sw_limits *asked, const struct sw_limits *defaults,
                    struct sw_limits *ret);
/* Whether l can be enforced for a job here: 0; -EINVAL with err naming the limit (and asked
 * tells whether it came from the submit or a default-* setting) and why not; -EPERM for a
 * niceness below 0 from a user who is not an admin. */
int limits_check(const struct sw_limits *l, const struct sw_limits *asked,
                 const struct contain *contain, bool admin, char *err, size_t errlen);
/* Writes the cgroup's part to the run's cgroup (run NULL: it has none, which fails if l has a
 * cgroup limit): 0, or -errno with err saying which failed. */
int limits_apply_cgroup(const struct sw_limits *l, struct cgroup_run *run, char *err,
                        size_t errlen);
/* The process's part; other_user: a job of a user other than the daemon's, else its runs get
 * back the open-files limit the daemon was started with (nofile), whatever it raised its own to. */
void limits_for_spawn(const struct sw_limits *l, bool other_user, const struct rlimit *nofile,
                      struct spawn_limits *ret);

#endif
