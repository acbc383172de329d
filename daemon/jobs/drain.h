/* SPDX-License-Identifier: MIT */
/*
 * A pause with drain, answered once no run is in progress where the pause holds: on this node,
 * and on a shared database on every other node live as last seen. Each of those is mailed
 * DRAIN_MAIL ({"token": N, "queue": NAME or null}) after the pause's rows: it reads the shared
 * rows again, and mails DRAINED_MAIL (N) back once its runs there have ended, or at once when
 * the pause no longer holds. A node that is no longer live, or started again, counts as drained.
 * Loop thread only.
 */
#ifndef SLOWWORKD_DRAIN_H
#define SLOWWORKD_DRAIN_H

#include <json-c/json.h>

#include "jobs/daemon.h"

#define DRAIN_MAIL "drain"
#define DRAINED_MAIL "drained"

struct answer;
struct db_mail;

/* A pause with drain of the queue's pause (NULL: the daemon's), paused already: answered later
 * through a (1), or nothing to wait for (0: the caller answers, and a is still its own);
 * -ENOMEM. */
int drain_start(struct daemon *d, const char *queue, struct answer *a);
/* Mail DRAIN_MAIL or DRAINED_MAIL from another node. */
void drain_mail(struct daemon *d, const struct db_mail *m);
/* The nodes awaited are looked at again (at each lease renewal): those gone count as drained. */
void drain_check(struct daemon *d);
/* Shutdown: the drains not answered are dropped. */
void drain_close_all(struct daemon *d);

#endif
