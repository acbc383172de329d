/* SPDX-License-Identifier: MIT */
/*
 * The settings in force: applied to the pool and the runners at once, and the changes of
 * settings.set kept in the state database, which a restart or a reload lays over the file's
 * (unless a command-line flag says otherwise).
 */
#ifndef SLOWWORKD_JOBS_SETTINGS_H
#define SLOWWORKD_JOBS_SETTINGS_H

#include "jobs/daemon.h"
#include "util/config-load.h"

/* All or nothing: 0, or -EINVAL with nothing changed. */
int settings_apply(struct daemon *d, const struct sw_settings *s);
/* settings.set without "runtime": what changed from old is kept in the state database. */
void settings_keep(struct daemon *d, const struct sw_settings *old);
/* Lays the kept settings over s, but for those the command line set. */
void settings_overlay_kept(struct daemon *d, const struct config *flags, struct sw_settings *s);
/* Start: reads the kept settings and applies them (over the file's, under the flags). */
int settings_load_kept(struct daemon *d, const struct config *flags);

#endif
