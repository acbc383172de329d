/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "run/contain.h"
#include "run/limits.h"
#include "run/spawn.h"
#include "util/cgroup.h"

/* A login's limits (systemd's defaults for a user's session), for jobs of other users; the
 * kernel's defaults for the others, which the daemon may have changed. */
#define MIB (1024 * 1024)
static const struct {
        int resource;
        struct rlimit value;
} login_rlimits[] = {
    {RLIMIT_NOFILE, {1024, 524288}},
    {RLIMIT_MEMLOCK, {8 * MIB, 8 * MIB}},
    {RLIMIT_CORE, {0, RLIM_INFINITY}},
    {RLIMIT_STACK, {8 * MIB, RLIM_INFINITY}},
    {RLIMIT_RTPRIO, {0, 0}},
    {RLIMIT_NICE, {0, 0}},
    {RLIMIT_MSGQUEUE, {819200, 819200}},
    {RLIMIT_CPU, {RLIM_INFINITY, RLIM_INFINITY}},
    {RLIMIT_FSIZE, {RLIM_INFINITY, RLIM_INFINITY}},
    {RLIMIT_DATA, {RLIM_INFINITY, RLIM_INFINITY}},
    {RLIMIT_AS, {RLIM_INFINITY, RLIM_INFINITY}},
    {RLIMIT_RSS, {RLIM_INFINITY, RLIM_INFINITY}},
    {RLIMIT_LOCKS, {RLIM_INFINITY, RLIM_INFINITY}},
};

/* The cgroup limits: the member, its name, and the controller that enforces it. */
static const struct {
        size_t offset;
        const char *name, *controller;
        unsigned bit;
} cgroup_limits[] = {
    {offsetof(struct sw_limits, memory_max), "memory_max", "memory", CGROUP_CTRL_MEMORY},
    {offsetof(struct sw_limits, tasks_max), "tasks_max", "pids", CGROUP_CTRL_PIDS},
    {offsetof(struct sw_limits, cpu_weight), "cpu_weight", "cpu", CGROUP_CTRL_CPU},
};
#define N_CGROUP_LIMITS (sizeof(cgroup_limits) / sizeof(cgroup_limits[0]))

_Static_assert(sizeof(struct sw_limits) == SW_LIMITS_COUNT * sizeof(int64_t),
               "struct sw_limits is SW_LIMITS_COUNT int64_t");

static int64_t member(const struct sw_limits *l, size_t offset)
{
        return *(const int64_t *)((const char *)l + offset);
}

/* Whether a value asks for something: set, and not 0 (no limit). */
static bool asks(int64_t v)
{
        return v != SW_LIMIT_UNSET && v != 0;
}

/* By member, in the order of struct sw_limits: the setting of its default, and of its ceiling
 * (NULL: none; a CPU weight is a share and a niceness a priority, not amounts to cap). */
static const char *const default_settings[SW_LIMITS_COUNT] = {
    "default-memory-max", "default-tasks-max",  "default-cpu-weight",
    "default-nice",       "default-open-files", "default-cpu-time"};
static const char *const ceiling_settings[SW_LIMITS_COUNT] = {
    "max-job-memory", "max-job-tasks", NULL, NULL, "max-job-open-files", "max-job-cpu-time"};

void limits_ceilings(const struct sw_limits *daemon, const struct sw_limits *queue,
                     const char *queue_name, struct limits_ceilings *ret)
{
        const int64_t *dm = (const int64_t *)daemon, *qm = (const int64_t *)queue;
        int64_t *out = (int64_t *)&ret->max;

        ret->queue = queue_name;
        ret->from_queue = 0;
        for (size_t i = 0; i < SW_LIMITS_COUNT; i++) {
                out[i] = ceiling_settings[i] && dm[i] > 0 ? dm[i] : 0;
                if (ceiling_settings[i] && queue && qm[i] > 0) {
                        out[i] = qm[i];
                        ret->from_queue |= 1u << i;
                }
        }
}

/* The ceiling's name for err: "max-job-cpu-time", or "queue.NAME.max-job-cpu-time". */
static const char *ceiling_name(const struct limits_ceilings *c, size_t i, char *buf, size_t len)
{
        if (!(c->from_queue & (1u << i)))
                return ceiling_settings[i];
        snprintf(buf, len, "queue.%s.%s", c->queue, ceiling_settings[i]);
        return buf;
}

int limits_resolve(const struct sw_limits *asked, const struct sw_limits *defaults,
                   const struct limits_ceilings *ceilings, bool clamp, struct sw_limits *ret,
                   const char **ret_from, char *err, size_t errlen)
{
        const int64_t *a = (const int64_t *)asked, *d = (const int64_t *)defaults;
        const int64_t *c = ceilings ? (const int64_t *)&ceilings->max : NULL;
        struct sw_limits l;
        const char *from[SW_LIMITS_COUNT];
        int64_t *out = (int64_t *)&l;
        char name[128];

        for (size_t i = 0; i < SW_LIMITS_COUNT; i++) {
                bool own = a[i] != SW_LIMIT_UNSET;

                out[i] = own ? a[i] : d[i];
                from[i] = own || !asks(d[i]) ? NULL : default_settings[i];
                if (!c || c[i] <= 0)
                        continue;
                if (own && a[i] > c[i] && !clamp) {
                        snprintf(err, errlen, "limits.%s %lld is above %s %lld",
                                 sw_limits_params[i].name, (long long)a[i],
                                 ceiling_name(ceilings, i, name, sizeof(name)), (long long)c[i]);
                        return -ERANGE;
                }
                /* None asked for (0, or a default of none) is as much as the ceiling allows;
                 * a default above the ceiling is the ceiling. */
                if (!asks(out[i]) || out[i] > c[i]) {
                        out[i] = c[i];
                        from[i] = ceiling_settings[i];
                }
        }
        *ret = l;
        if (ret_from)
                memcpy(ret_from, from, sizeof(from));
        return 0;
}

int limits_check(const struct sw_limits *l, const char *const *from, const struct contain *contain,
                 bool admin, char *err, size_t errlen)
{
        for (size_t i = 0; i < N_CGROUP_LIMITS; i++) {
                const char *f = from[cgroup_limits[i].offset / sizeof(int64_t)];

                if (!asks(member(l, cgroup_limits[i].offset)))
                        continue;
                if (!contain->tree) {
                        snprintf(err, errlen,
                                 "limits.%s%s%s%s cannot be enforced here: runs are not contained "
                                 "in cgroups (see the daemon's log at start)",
                                 cgroup_limits[i].name, f ? " (from " : "", f ? f : "",
                                 f ? ")" : "");
                        return -EINVAL;
                }
                if (!(contain->controllers & cgroup_limits[i].bit)) {
                        snprintf(err, errlen,
                                 "limits.%s%s%s%s cannot be enforced here: the %s controller is "
                                 "not available in the daemon's cgroup subtree %s",
                                 cgroup_limits[i].name, f ? " (from " : "", f ? f : "",
                                 f ? ")" : "", cgroup_limits[i].controller, contain->path);
                        return -EINVAL;
                }
        }
        if (l->nice != SW_LIMIT_UNSET && l->nice < 0) {
                if (geteuid() != 0) {
                        snprintf(err, errlen,
                                 "limits.nice below 0 cannot be enforced here: the daemon is not "
                                 "privileged to raise a priority");
                        return -EINVAL;
                }
                if (!admin) {
                        snprintf(err, errlen, "only admins may set limits.nice below 0");
                        return -EPERM;
                }
        }
        return 0;
}

int limits_apply_cgroup(const struct sw_limits *l, struct cgroup_run *run, char *err,
                        size_t errlen)
{
        static int (*const set[])(struct cgroup_run *, uint64_t) = {
            cgroup_run_set_memory_max, cgroup_run_set_pids_max, cgroup_run_set_cpu_weight};

        for (size_t i = 0; i < N_CGROUP_LIMITS; i++) {
                int64_t v = member(l, cgroup_limits[i].offset);
                int r;

                if (!asks(v))
                        continue;
                r = run ? set[i](run, (uint64_t)v) : -EOPNOTSUPP;
                if (r < 0) {
                        snprintf(err, errlen, "cannot set limits.%s to %lld in the run's cgroup: %s",
                                 cgroup_limits[i].name, (long long)v,
                                 run ? strerror(-r) : "the run has no cgroup");
                        return r;
                }
        }
        return 0;
}

static void put_rlimit(struct spawn_limits *s, int resource, rlim_t soft, rlim_t hard)
{
        unsigned i;

        for (i = 0; i < s->nrlimits && s->rlimits[i].resource != resource; i++)
                ;
        if (i == SPAWN_RLIMITS_MAX)
                return;
        s->rlimits[i].resource = resource;
        s->rlimits[i].value = (struct rlimit){soft, hard};
        if (i == s->nrlimits)
                s->nrlimits++;
}

void limits_for_spawn(const struct sw_limits *l, bool other_user, const struct rlimit *nofile,
                      struct spawn_limits *ret)
{
        *ret = (struct spawn_limits){0};
        if (!other_user)
                put_rlimit(ret, RLIMIT_NOFILE, nofile->rlim_cur, nofile->rlim_max);
        /* Lowered to them, never raised above the daemon's own ceiling: that takes a privilege
         * (CAP_SYS_RESOURCE) a daemon in a container may lack. */
        for (size_t i = 0; other_user && i < sizeof(login_rlimits) / sizeof(login_rlimits[0]);
             i++) {
                struct rlimit now, v = login_rlimits[i].value;

                if (getrlimit(login_rlimits[i].resource, &now) == 0 && now.rlim_max < v.rlim_max)
                        v.rlim_max = now.rlim_max;
                if (v.rlim_cur > v.rlim_max)
                        v.rlim_cur = v.rlim_max;
                put_rlimit(ret, login_rlimits[i].resource, v.rlim_cur, v.rlim_max);
        }
        if (asks(l->open_files))
                put_rlimit(ret, RLIMIT_NOFILE, (rlim_t)l->open_files, (rlim_t)l->open_files);
        /* SIGXCPU when a process has used that much CPU, SIGKILL a second later. */
        if (asks(l->cpu_time))
                put_rlimit(ret, RLIMIT_CPU, (rlim_t)l->cpu_time, (rlim_t)l->cpu_time + 1);
        if (asks(l->nice)) {
                ret->set_nice = true;
                ret->nice = (int)l->nice;
        }
}
