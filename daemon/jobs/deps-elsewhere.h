/* SPDX-License-Identifier: MIT */
/*
 * Jobs of this node that wait for jobs of other nodes (a submit passed on from another node, or
 * jobs taken over or restored, may): at each lease renewal the database says which of those
 * jobs no node holds any more and how each ended, and the waiting jobs hear of their ends as of
 * this node's own. Loop thread only.
 */
#ifndef SLOWWORKD_DEPS_ELSEWHERE_H
#define SLOWWORKD_DEPS_ELSEWHERE_H

#include "jobs/daemon.h"

/* A read of the ends, unless one is under way or no waiting job waits for another node's. */
void deps_elsewhere_read(struct daemon *d);

#endif
