/* SPDX-License-Identifier: MIT */
/* A submit's work, for restart too (restart.c): a job of another owner than the caller's; and
 * the bytes a user's jobs keep, for edit too. */
#ifndef SLOWWORKD_METHODS_SUBMIT_H
#define SLOWWORKD_METHODS_SUBMIT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "methods/method.h"

/* The submit p, for owner (the caller's uid, or the owner of a job an admin restarts). A submit
 * without env gets the connection's (env.set); a restart (an ended job's spec) does not, and
 * its limits are brought under the ceilings in force rather than refused above them. */
void submit_as(struct daemon *d, struct conn *c, uid_t owner, bool restart,
               struct sw_submit_params *p, struct reply *r);
/* Whether owner's live jobs may keep more bytes than now (max-job-bytes-per-user; admins, c's
 * uid, are not bound): false with the busy error, which names the setting, in r if not. */
bool submit_bytes_room(struct daemon *d, struct conn *c, uid_t owner, int64_t more,
                       struct reply *r);

#endif
