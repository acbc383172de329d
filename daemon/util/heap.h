/* SPDX-License-Identifier: MIT */
/* The daemon's heap: what it freed goes back to the system, whichever malloc it was linked with
 * (jemalloc, or libc's: configure --without-jemalloc). */
#ifndef SLOWWORKD_HEAP_H
#define SLOWWORKD_HEAP_H

/* Returns the heap's free pages to the system now, rather than at some later growth. */
void heap_release(void);

#endif
