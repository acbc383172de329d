/* SPDX-License-Identifier: MIT */
/* The daemon's settings: their defaults, and what the thread pool makes of them. */
#ifndef SLOWWORKD_SETTINGS_H
#define SLOWWORKD_SETTINGS_H

#include "methods.h"
#include "slowwork.h"

/* The settings before any file or flag: the kernel's pool defaults and SPEC's. */
void settings_default(struct sw_settings *s);
/* Checks a whole set of settings: 0 or -EINVAL. */
int settings_validate(const struct sw_settings *s);
/* The pool's part of them. */
struct slow_work_settings settings_for_pool(const struct sw_settings *s);

#endif
