/* SPDX-License-Identifier: MIT */
/*
 * Users and groups from the user database (NSS). Every call may block on it (LDAP, sssd): call
 * them off the loop thread, or at startup.
 */
#ifndef SLOWWORKD_CREDENTIALS_H
#define SLOWWORKD_CREDENTIALS_H

#include <sys/types.h>

/* Who a job runs as in the system instance, and what its environment says about it. */
struct user_creds {
        uid_t uid;
        gid_t gid;     /* the primary group of the passwd entry */
        gid_t *groups; /* every group of the user, the primary one included */
        int ngroups;
        char *name, *home;
};

/* The passwd entry and group list of uid: 0, -ENOENT when there is no such user, or -errno. */
int credentials_lookup_user(uid_t uid, struct user_creds **ret);
struct user_creds *user_creds_free(struct user_creds *u);
/* The name of user uid (a new string), and the uid of the user so named: 0, -ENOENT when there
 * is none, or -errno. */
int credentials_user_name(uid_t uid, char **ret);
int credentials_uid_of(const char *name, uid_t *ret);
/* Whether the user uid, whose process has the primary group gid, is a member of group:
 * 1 or 0, or -errno when the user database cannot say. */
int credentials_user_in_group(uid_t uid, gid_t gid, gid_t group);
/* A group by name, or by number: 0, -ENOENT, or -errno. */
int credentials_group_by_name(const char *name, gid_t *ret);

#endif
