/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORKD_RANDOM_START_H
#define SLOWWORKD_RANDOM_START_H

#include <stdint.h>

/* Where numbers that must differ from an earlier start's begin (sessions, drains, whose answers
 * may still come): 62 random bits, the time's without randomness; room above to count up. */
int64_t random_start(void);

#endif
