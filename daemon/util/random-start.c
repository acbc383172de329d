/* SPDX-License-Identifier: MIT */
#include <sys/random.h>
#include <time.h>

#include "util/random-start.h"

int64_t random_start(void)
{
        uint64_t v;

        if (getrandom(&v, sizeof(v), 0) != sizeof(v))
                v = (uint64_t)time(NULL) << 20;
        return (int64_t)(v >> 2);
}
