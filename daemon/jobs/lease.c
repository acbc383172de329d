/* SPDX-License-Identifier: MIT */
#include <math.h>

#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/deps-elsewhere.h"
#include "jobs/drain.h"
#include "jobs/lease.h"
#include "jobs/restore.h"
#include "run/run.h"
#include "store/store.h"
#include "util/log.h"

static void check(struct lease *l);

static void on_tick(uv_timer_t *timer)
{
        check(timer->data);
}

int lease_init(struct lease *l, uv_loop_t *loop, struct daemon *d, double renew,
               void (*lost)(void *data), void *data)
{
        *l = (struct lease){.d = d, .renew = renew, .lost = lost, .data = data};
        l->timer.data = l;
        return uv_timer_init(loop, &l->timer);
}

/* The fence: runs stop when the lease is about to run out unrenewed, start again once renewed. */
static void check(struct lease *l)
{
        struct daemon *d = l->d;
        bool fenced = __atomic_load_n(&d->shared.run.fenced, __ATOMIC_ACQUIRE);
        double until, now = run_mono_real(), fence_at, next;
        bool lost = store_lease(d->store, &until);

        if (until == INFINITY)
                return;
        if (lost) {
                daemon_fence(d, true);
                if (!l->told) {
                        l->told = true;
                        l->lost(l->data);
                }
                return;
        }
        /* Half a renewal early: the kills are done before any other node may take the jobs. */
        fence_at = until - l->renew / 2;
        __atomic_store(&d->shared.run.fence_at, &fence_at, __ATOMIC_RELEASE);
        supervisor_deadline(&d->supervisor, fence_at);
        /* A fence the loop did not see (the daemon was stopped past it, and renewed since):
         * what the threads held or cut for it goes on now. */
        if (!fenced && l->fence_at > 0 && now >= l->fence_at && now < fence_at) {
                log_error("Node %s: its lease ran out unrenewed a moment: runs it cut run again",
                          store_node(d->store));
                daemon_fence(d, true);
                daemon_fence(d, false);
        }
        l->fence_at = fence_at;
        if (now >= fence_at && !fenced)
                log_error("Node %s: its lease runs out unrenewed: its runs are stopped and none "
                          "starts until it is renewed",
                          store_node(d->store));
        else if (now < fence_at && fenced)
                log_info("Node %s renewed its lease: runs start again", store_node(d->store));
        daemon_fence(d, now >= fence_at);
        next = now < fence_at && fence_at < now + l->renew ? fence_at : now + l->renew;
        uv_timer_start(&l->timer, on_tick, (uint64_t)ceil((next - now) * 1000.0), 0);
}

void lease_renewed(struct lease *l)
{
        struct daemon *d = l->d;

        if (!store_shared(d->store))
                return;
        restore_adopted(d);
        claims_renewed(d);
        drain_check(d);
        deps_elsewhere_read(d);
        check(l);
}

void lease_close(struct lease *l)
{
        uv_close((uv_handle_t *)&l->timer, NULL);
}
