/* SPDX-License-Identifier: MIT */
#include "config.h"

#ifdef WITH_JEMALLOC
#include <jemalloc/jemalloc.h>
#else
#include <malloc.h>
#endif

#include "util/heap.h"

#define STRINGIFY_(x) #x
#define STRINGIFY(x) STRINGIFY_(x)

void heap_release(void)
{
#ifdef WITH_JEMALLOC
        /* This thread's cached blocks back to their arenas, then every arena's unused pages
         * to the system (jemalloc would otherwise return them only as it is used again). */
        mallctl("thread.tcache.flush", NULL, NULL, NULL, 0);
        mallctl("arena." STRINGIFY(MALLCTL_ARENAS_ALL) ".purge", NULL, NULL, NULL, 0);
#else
        malloc_trim(0);
#endif
}
