/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <signal.h>
#include <stdint.h>

#include "run/context.h"
#include "run/suspend.h"
#include "util/cgroup.h"

#define SUSPEND_LOCKS 64

/* The locks suspends share: each is taken alone, never two at once. */
static pthread_mutex_t locks[SUSPEND_LOCKS] = {
    [0 ... SUSPEND_LOCKS - 1] = PTHREAD_MUTEX_INITIALIZER,
};

static pthread_mutex_t *lock_of(const struct suspend *s)
{
        return &locks[((uintptr_t)s / 64) % SUSPEND_LOCKS];
}

void suspend_init(struct suspend *s)
{
        *s = (struct suspend){0};
}

void suspend_destroy(struct suspend *s)
{
        cgroup_run_unref(s->cgroup);
}

/* Under the lock: sig to every process of the run in hand. */
static int send(struct suspend *s, int sig)
{
        int r;

        if (s->cgroup)
                r = cgroup_run_signal(s->cgroup, sig);
        else
                r = kill(-s->pid, sig) < 0 ? -errno : 0;
        return r < 0 ? r : 0;
}

/* Under the lock. */
static int set_stopped(struct suspend *s, bool stopped)
{
        if (s->cgroup)
                return cgroup_run_freeze(s->cgroup, stopped);
        return kill(-s->pid, stopped ? SIGSTOP : SIGCONT) < 0 ? -errno : 0;
}

void suspend_begin(struct suspend *s)
{
        pthread_mutex_lock(lock_of(s));
        s->starting = true;
        s->on = false;
        s->total = 0;
        s->signals = 0;
        pthread_mutex_unlock(lock_of(s));
}

void suspend_attach(struct suspend *s, struct cgroup_run *cgroup, pid_t pid)
{
        pthread_mutex_lock(lock_of(s));
        s->cgroup = cgroup ? cgroup_run_ref(cgroup) : NULL;
        s->pid = pid;
        s->starting = false;
        /* Suspended while it started: stopped before it runs much further. Handed over stopped
         * and continued before it was taken up: let go on now. */
        if ((s->on || s->handed_on) && set_stopped(s, s->on) < 0 && s->on)
                s->on = false;
        s->handed_on = false;
        for (int sig = 1; sig <= 64; sig++)
                if (s->signals & UINT64_C(1) << (sig - 1))
                        send(s, sig);
        s->signals = 0;
        pthread_mutex_unlock(lock_of(s));
}

/* Under the lock: no run's processes in hand any more, whatever they are doing. */
static void let_go(struct suspend *s)
{
        s->on = false;
        s->handed_on = false;
        s->starting = false;
        s->signals = 0;
        s->pid = 0;
        s->cgroup = cgroup_run_unref(s->cgroup);
}

void suspend_detach(struct suspend *s)
{
        pthread_mutex_lock(lock_of(s));
        if (s->pid > 0 && s->on) {
                set_stopped(s, false);
                s->total += run_mono_now() - s->since;
        }
        let_go(s);
        pthread_mutex_unlock(lock_of(s));
}

void suspend_hand_over(struct suspend *s, bool *ret_on, double *ret_since, double *ret_total)
{
        pthread_mutex_lock(lock_of(s));
        *ret_on = s->on;
        *ret_since = s->since;
        *ret_total = s->total;
        let_go(s);
        pthread_mutex_unlock(lock_of(s));
}

void suspend_expect(struct suspend *s, bool on, double since, double total)
{
        pthread_mutex_lock(lock_of(s));
        s->starting = true;
        s->on = on;
        s->handed_on = on;
        s->since = since;
        s->total = total;
        s->signals = 0;
        pthread_mutex_unlock(lock_of(s));
}

double suspend_deadline(struct suspend *s, double deadline)
{
        double moved;

        if (deadline <= 0)
                return 0;
        pthread_mutex_lock(lock_of(s));
        moved = s->on ? 0 : deadline + s->total;
        pthread_mutex_unlock(lock_of(s));
        return moved;
}

static int change(struct suspend *s, bool stop)
{
        int r;

        pthread_mutex_lock(lock_of(s));
        if (s->pid <= 0 && !s->starting)
                r = -ESRCH;
        else if (s->on == stop)
                r = 0;
        else {
                /* A run still starting is stopped once its processes are in hand. */
                r = s->pid > 0 ? set_stopped(s, stop) : 0;
                if (r == 0) {
                        double now = run_mono_now();

                        if (stop)
                                s->since = now;
                        else
                                s->total += now - s->since;
                        s->on = stop;
                        r = 1;
                }
        }
        pthread_mutex_unlock(lock_of(s));
        return r;
}

int suspend_stop(struct suspend *s)
{
        return change(s, true);
}

int suspend_continue(struct suspend *s)
{
        return change(s, false);
}

bool suspend_is_on(struct suspend *s)
{
        bool on;

        pthread_mutex_lock(lock_of(s));
        on = s->on;
        pthread_mutex_unlock(lock_of(s));
        return on;
}

int suspend_signal(struct suspend *s, int sig)
{
        int r;

        /* Under the lock, so that the run's cgroup and group are not let go of meanwhile. */
        pthread_mutex_lock(lock_of(s));
        if (s->pid > 0)
                r = send(s, sig);
        else if (s->starting && sig >= 1 && sig <= 64) {
                s->signals |= UINT64_C(1) << (sig - 1);
                r = 0;
        } else
                r = -ESRCH;
        pthread_mutex_unlock(lock_of(s));
        return r;
}
