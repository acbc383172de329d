/* SPDX-License-Identifier: MIT */
/* Users and groups from the user database, for the system instance's admins and jobs. */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>

#include "util/credentials.h"

/* Entries can be large (many members): the buffer grows until the entry fits. */
#define ENTRY_BUF_MAX (1024 * 1024)

/* Doubles the buffer for an entry that did not fit: 0, or -ENOMEM (the buffer freed). */
static int grow(char **buf, size_t *size)
{
        char *bigger = realloc(*buf, *size ? 2 * *size : 1024);

        if (!bigger) {
                free(*buf);
                *buf = NULL;
                return -ENOMEM;
        }
        *buf = bigger;
        *size = *size ? 2 * *size : 1024;
        return 0;
}

/* "Not found" comes as 0 or as one of several errnos, depending on the backend. */
static int lookup_error(int r)
{
        return r == 0 || r == ENOENT || r == ESRCH || r == EBADF || r == EPERM ? -ENOENT : -r;
}

static int get_passwd(uid_t uid, struct passwd *pw, char **ret_buf)
{
        struct passwd *found = NULL;
        size_t size = 0;
        char *buf = NULL;
        int r;

        do {
                if (grow(&buf, &size) < 0)
                        return -ENOMEM;
                r = getpwuid_r(uid, pw, buf, size, &found);
        } while (r == ERANGE && size < ENTRY_BUF_MAX);
        if (r == 0 && found) {
                *ret_buf = buf;
                return 0;
        }
        free(buf);
        return lookup_error(r);
}

int credentials_user_name(uid_t uid, char **ret)
{
        struct passwd pw;
        char *buf, *name;
        int r = get_passwd(uid, &pw, &buf);

        if (r < 0)
                return r;
        name = strdup(pw.pw_name);
        free(buf);
        if (!name)
                return -ENOMEM;
        *ret = name;
        return 0;
}

int credentials_uid_of(const char *name, uid_t *ret)
{
        struct passwd pw, *found = NULL;
        size_t size = 0;
        char *buf = NULL;
        int r;

        do {
                if (grow(&buf, &size) < 0)
                        return -ENOMEM;
                r = getpwnam_r(name, &pw, buf, size, &found);
        } while (r == ERANGE && size < ENTRY_BUF_MAX);
        if (r == 0 && found)
                *ret = pw.pw_uid;
        free(buf);
        return r == 0 && found ? 0 : lookup_error(r);
}

/* The groups of name, gid among them (getgrouplist(3) puts it first). */
static int get_groups(const char *name, gid_t gid, gid_t **ret, int *ret_n)
{
        int n = 32;
        gid_t *groups = NULL;

        for (;;) {
                gid_t *bigger = realloc(groups, (size_t)n * sizeof(*groups));
                int want = n;

                if (!bigger) {
                        free(groups);
                        return -ENOMEM;
                }
                groups = bigger;
                if (getgrouplist(name, gid, groups, &want) >= 0) {
                        *ret = groups;
                        *ret_n = want;
                        return 0;
                }
                if (want <= n) /* no growth asked for: the lookup itself failed */
                        want = 2 * n;
                if (want > 65536) {
                        free(groups);
                        return -E2BIG;
                }
                n = want;
        }
}

struct user_creds *user_creds_free(struct user_creds *u)
{
        if (!u)
                return NULL;
        free(u->groups);
        free(u->name);
        free(u->home);
        free(u);
        return NULL;
}

int credentials_lookup_user(uid_t uid, struct user_creds **ret)
{
        struct user_creds *u;
        struct passwd pw;
        char *buf;
        int r;

        r = get_passwd(uid, &pw, &buf);
        if (r < 0)
                return r;
        u = calloc(1, sizeof(*u));
        if (!u) {
                free(buf);
                return -ENOMEM;
        }
        u->uid = uid;
        u->gid = pw.pw_gid;
        u->name = strdup(pw.pw_name);
        u->home = strdup(pw.pw_dir ? pw.pw_dir : "/");
        r = u->name && u->home ? get_groups(pw.pw_name, pw.pw_gid, &u->groups, &u->ngroups)
                               : -ENOMEM;
        free(buf);
        if (r < 0) {
                user_creds_free(u);
                return r;
        }
        *ret = u;
        return 0;
}

int credentials_user_in_group(uid_t uid, gid_t gid, gid_t group)
{
        struct passwd pw;
        gid_t *groups;
        char *buf;
        int n, i, r;

        if (gid == group)
                return 1;
        r = get_passwd(uid, &pw, &buf);
        if (r == -ENOENT)
                return 0; /* a uid without a name has no supplementary groups */
        if (r < 0)
                return r;
        r = get_groups(pw.pw_name, pw.pw_gid, &groups, &n);
        free(buf);
        if (r < 0)
                return r;
        for (i = 0; i < n; i++)
                if (groups[i] == group)
                        r = 1;
        free(groups);
        return r;
}

int credentials_group_by_name(const char *name, gid_t *ret)
{
        struct group gr, *found = NULL;
        char *buf = NULL, *end;
        unsigned long number;
        size_t size = 0;
        int r;

        errno = 0;
        number = strtoul(name, &end, 10);
        if (name[0] >= '0' && name[0] <= '9' && *end == '\0' && errno == 0 && number < (gid_t)-1) {
                *ret = (gid_t)number;
                return 0;
        }
        do {
                if (grow(&buf, &size) < 0)
                        return -ENOMEM;
                r = getgrnam_r(name, &gr, buf, size, &found);
        } while (r == ERANGE && size < ENTRY_BUF_MAX);
        if (r == 0 && found)
                *ret = gr.gr_gid;
        free(buf);
        return r == 0 && found ? 0 : lookup_error(r);
}
