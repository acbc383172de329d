/* SPDX-License-Identifier: MIT */
/*
 * The kept settings that the nodes of a shared database share (db_setting_shared()'s): the
 * daemon's pause, and the queues with their settings and pauses. A node that changes them tells
 * the other live nodes (mail "settings", sent with the rows' batch); each reads the shared rows
 * again and applies them. A node that starts reads them with its own. Loop thread only.
 */
#ifndef SLOWWORKD_SHARED_SETTINGS_H
#define SLOWWORKD_SHARED_SETTINGS_H

#include "jobs/daemon.h"

#define SHARED_SETTINGS_MAIL "settings"

/* This node changed them (its rows are queued): the other nodes are told. Nothing on SQLite. */
void shared_settings_changed(struct daemon *d);
/* Mail SHARED_SETTINGS_MAIL came, or another node's request needs them as they are now: the
 * rows are read and applied, then then(data, 0) is called (then NULL: nothing); then(data, r)
 * with -EIO or -ENOMEM when they could not be read, -ECANCELED when the daemon stops first. */
void shared_settings_read(struct daemon *d, void (*then)(void *data, int r), void *data);

#endif
