/* SPDX-License-Identifier: MIT */
/*
 * Where the settings come from: defaults < the configuration file < command-line flags. A reload
 * starts again from the defaults, so a key taken out of the file goes back to its default, and
 * a flag keeps winning over the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/config-load.h"
#include "util/settings.h"

int config_add_flag(struct config *c, const char *name, const char *value, char *err, size_t errlen)
{
        struct sw_settings scratch;
        unsigned i;
        int r;

        settings_default(&scratch);
        r = config_parse_setting(&scratch, name, value, err, errlen);
        if (r < 0)
                return r;
        for (i = 0; i < c->nflags && strcmp(c->flags[i].name, name) != 0; i++)
                ;
        if (i == CONFIG_SETTINGS) {
                snprintf(err, errlen, "too many setting flags");
                return -E2BIG;
        }
        c->flags[i].name = name;
        c->flags[i].value = value;
        if (i == c->nflags)
                c->nflags++;
        return 0;
}

static const char *flag_value(const struct config *c, const char *name)
{
        unsigned i;

        for (i = 0; i < c->nflags; i++)
                if (strcmp(c->flags[i].name, name) == 0)
                        return c->flags[i].value;
        return NULL;
}

/* min-threads above max-threads: name the file's line when the file set either of them. */
static int threads_conflict(const struct config *c, const char *path, const struct config_file *cf,
                            char *err, size_t errlen)
{
        unsigned line = 0, min_line = 0, max_line = 0;

        if (!flag_value(c, "min-threads"))
                min_line = config_file_line(cf, "min-threads");
        if (!flag_value(c, "max-threads"))
                max_line = config_file_line(cf, "max-threads");
        line = min_line > max_line ? min_line : max_line;
        if (line)
                snprintf(err, errlen,
                         "%s:%u: min-threads (%lld) must not exceed max-threads (%lld)", path, line,
                         (long long)cf->settings.min_threads, (long long)cf->settings.max_threads);
        else
                snprintf(err, errlen, "--min-threads (%lld) must not exceed --max-threads (%lld)",
                         (long long)cf->settings.min_threads, (long long)cf->settings.max_threads);
        return -EINVAL;
}

/* Each queue's lines, over a new queue's settings, make settings a pool takes. */
static int check_queues(const char *path, const struct config_file *cf, char *err, size_t errlen)
{
        struct sw_queue_settings base = settings_queue_default(), scratch;
        char why[256];

        if (!cf->queues)
                return 0;
        json_object_object_foreach(cf->queues, name, given)
        {
                int r = settings_queue_parse(given, &base, &scratch, why, sizeof(why));

                if (r < 0) {
                        snprintf(err, errlen, "%s:%u: queue %s: %s", path,
                                 config_file_queue_line(cf, name), name, why);
                        return r;
                }
        }
        return 0;
}

/* The store's flags over the file, and the schema's default. */
static int store_flags(const struct config *c, struct config_file *cf, char *err, size_t errlen)
{
        if (c->store) {
                free(cf->store);
                cf->store = *c->store ? strdup(c->store) : NULL;
                if (*c->store && !cf->store)
                        goto oom;
        }
        if (c->cluster_key_file) {
                free(cf->cluster_key_file);
                cf->cluster_key_file = strdup(c->cluster_key_file);
                if (!cf->cluster_key_file)
                        goto oom;
        }
        /* Without the key, whoever may write the schema could make the nodes run anything. */
        if (cf->store && !cf->cluster_key_file) {
                snprintf(err, errlen,
                         "the jobs are kept in PostgreSQL (store): cluster-key-file must name "
                         "the key file that every node of the schema has (slowworkd "
                         "--make-cluster-key FILE makes one)");
                return -EINVAL;
        }
        if (c->store_schema || !cf->store_schema) {
                free(cf->store_schema);
                cf->store_schema =
                    strdup(c->store_schema ? c->store_schema : CONFIG_STORE_SCHEMA_DEFAULT);
                if (!cf->store_schema)
                        goto oom;
        }
        return 0;
oom:
        snprintf(err, errlen, "out of memory");
        return -ENOMEM;
}

/* The node's flags over the file, and their defaults: the host name, and the lease's times,
 * which must leave room for a renewal that comes late. */
static int node_flags(const struct config *c, const char *path, struct config_file *cf, char *err,
                      size_t errlen)
{
        char host[256];

        if (c->node_name || !cf->node_name) {
                if (!c->node_name && gethostname(host, sizeof(host)) < 0)
                        snprintf(host, sizeof(host), "localhost");
                host[sizeof(host) - 1] = '\0';
                if (!c->node_name && config_check_node_name(host, err, errlen) < 0)
                        return -EINVAL;
                free(cf->node_name);
                cf->node_name = strdup(c->node_name ? c->node_name : host);
                if (!cf->node_name) {
                        snprintf(err, errlen, "out of memory");
                        return -ENOMEM;
                }
        }
        if (c->lease_renew > 0 || cf->lease_renew <= 0)
                cf->lease_renew = c->lease_renew > 0 ? c->lease_renew : CONFIG_LEASE_RENEW_DEFAULT;
        if (c->lease_time > 0 || cf->lease_time <= 0)
                cf->lease_time = c->lease_time > 0 ? c->lease_time : CONFIG_LEASE_TIME_DEFAULT;
        if (cf->lease_time < 2 * cf->lease_renew && c->lease_renew > 0 && c->lease_time > 0) {
                snprintf(err, errlen, "--lease-time (%g) must be at least twice --lease-renew (%g)",
                         cf->lease_time, cf->lease_renew);
                return -EINVAL;
        }
        if (cf->lease_time < 2 * cf->lease_renew) {
                snprintf(err, errlen, "%s: lease-time (%g) must be at least twice lease-renew (%g)",
                         path, cf->lease_time, cf->lease_renew);
                return -EINVAL;
        }
        return 0;
}

static int load(const struct config *c, struct config_file *ret, config_tell_fn *tell, char *err,
                size_t errlen)
{
        const char *path = c->path ? c->path : CONFIG_FILE_DEFAULT;
        struct config_file cf = {.queues = NULL};
        unsigned i;
        int r;

        settings_default(&cf.settings);
        if (c->system)
                settings_default_system(&cf.settings);
        r = config_file_read(path, !c->path, &cf, tell, err, errlen);
        for (i = 0; r == 0 && i < c->nflags; i++)
                r = config_parse_setting(&cf.settings, c->flags[i].name, c->flags[i].value, err,
                                         errlen);
        if (r == 0)
                r = store_flags(c, &cf, err, errlen);
        if (r == 0)
                r = node_flags(c, path, &cf, err, errlen);
        if (r == 0 && settings_validate(&cf.settings) < 0)
                r = threads_conflict(c, path, &cf, err, errlen);
        if (r == 0)
                r = check_queues(path, &cf, err, errlen);
        if (r < 0) {
                config_file_clear(&cf);
                return r;
        }
        *ret = cf;
        return 0;
}

int config_load(const struct config *c, struct config_file *ret, char *err, size_t errlen)
{
        return load(c, ret, NULL, err, errlen);
}

/* The checks past the lines (flags over the file, threads in order, the queues, the node) need
 * the file's values whole, so they run only once every line is good, and tell one problem. */
int config_check(const struct config *c, config_tell_fn *tell)
{
        struct config_file cf;
        char err[512];
        int r = load(c, &cf, tell, err, sizeof(err));

        if (r < 0) {
                if (*err)
                        tell(err);
                return r;
        }
        config_file_clear(&cf);
        return 0;
}
