/* SPDX-License-Identifier: MIT */
/*
 * The plugin runs inside their entry point, in a small file mapped shared: stores to it outlive a
 * crash of the daemon (the kernel keeps the page), cost no system call, and tell the next start
 * which plugin jobs were running when the daemon died, even if the database never heard of it.
 */
#ifndef SLOWWORKD_INFLIGHT_H
#define SLOWWORKD_INFLIGHT_H

#include <stddef.h>
#include <stdint.h>

#define INFLIGHT_SLOTS 256 /* more than max-threads can be */

struct inflight {
        int64_t *slots; /* job ids, 0 for a free slot */
        int fd;
};

/* Maps DIR/plugins-running; the ids the last daemon left there (it died running them) in
 * *ret_ids (*ret_n of them, the caller frees), and clears them. */
int inflight_open(struct inflight *f, const char *dir, int64_t **ret_ids, size_t *ret_n);
void inflight_close(struct inflight *f);
/* Pool threads: a slot for the job while its entry point runs, or -1 when none is free. */
int inflight_enter(struct inflight *f, int64_t id);
void inflight_leave(struct inflight *f, int slot);

#endif
