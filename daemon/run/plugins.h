/* SPDX-License-Identifier: MIT */
/*
 * The plugins the daemon has loaded: each opened once (RTLD_NOW | RTLD_LOCAL) from the plugin
 * folder and kept while a job refers to it. Loop thread only.
 */
#ifndef SLOWWORKD_PLUGINS_H
#define SLOWWORKD_PLUGINS_H

#include <stddef.h>

#include "slowwork-plugin.h"

struct plugin {
        struct plugin *next;
        char *name;
        void *handle;
        unsigned refs;
        /* The entry point found last, by name: most jobs of a plugin call the same one. */
        char *entry;
        slowwork_plugin_entry *entry_fn;
};

struct plugins {
        char *dir;
        struct plugin *loaded;
};

/*
 * The entry point ENTRY of plugin NAME, loading the plugin unless it is loaded: 0 with a
 * reference on *ret, or -EINVAL (a name that is not a plain file name), -ENOENT (no such plugin
 * or symbol), -EPROTO (not a slowwork plugin, or another ABI) or -ENOMEM, with a message for the
 * submitter in err.
 */
int plugins_get(struct plugins *ps, const char *name, const char *entry, struct plugin **ret,
                slowwork_plugin_entry **ret_entry, char *err, size_t errlen);
/* Drops a reference; the last one unloads the plugin. Accepts NULL. */
void plugins_put(struct plugins *ps, struct plugin *p);
void plugins_free(struct plugins *ps);

#endif
