/* SPDX-License-Identifier: MIT */
/* Where the settings come from: defaults, then the configuration file, then the flags. */
#ifndef SLOWWORKD_CONFIG_LOAD_H
#define SLOWWORKD_CONFIG_LOAD_H

#include <stdbool.h>

#include "util/config-file.h"

struct config {
        const char *path; /* --config FILE; NULL: CONFIG_FILE_DEFAULT, if it exists */
        struct {
                const char *name, *value;
        } flags[CONFIG_SETTINGS]; /* the setting flags, the last of each name */
        unsigned nflags;
        const char *store, *store_schema; /* --store, --store-schema; NULL: not given */
        const char *node_name;            /* --node-name; NULL: not given */
        const char *cluster_key_file;     /* --cluster-key-file; NULL: not given */
        double lease_renew, lease_time;   /* --lease-renew, --lease-time; 0: not given */
        bool system;                      /* --system: the system instance's defaults */
};

/* Checks a setting flag and keeps it, to apply over the file now and at every reload. */
int config_add_flag(struct config *c, const char *name, const char *value, char *err,
                    size_t errlen);
/* Defaults, the file and the flags, checked as a whole: 0, or -errno with err saying why. What
 * ret holds is config_file_clear()'s to free. */
int config_load(const struct config *c, struct config_file *ret, char *err, size_t errlen);
/* What config_load() would read, checked without keeping it (slowworkd --check-config): 0, or
 * -errno once each problem is told: every bad line of the file, else the first other one. */
int config_check(const struct config *c, config_tell_fn *tell);

#endif
