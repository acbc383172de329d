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

#include "config-load.h"
#include "log.h"
#include "manager.h"
#include "notify.h"

int config_add_flag(struct config *c, const char *name, const char *value, char *err, size_t errlen)
{
        struct sw_settings scratch;
        unsigned i;
        int r;

        manager_default_settings(&scratch);
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

int config_load(const struct config *c, struct config_file *ret, char *err, size_t errlen)
{
        const char *path = c->path ? c->path : CONFIG_FILE_DEFAULT;
        struct config_file cf;
        unsigned i;
        int r;

        manager_default_settings(&cf.settings);
        r = config_file_read(path, !c->path, &cf, err, errlen);
        if (r < 0)
                return r;
        for (i = 0; i < c->nflags; i++) {
                r = config_parse_setting(&cf.settings, c->flags[i].name, c->flags[i].value, err,
                                         errlen);
                if (r < 0)
                        return r;
        }
        if (manager_settings_validate(&cf.settings) < 0)
                return threads_conflict(c, path, &cf, err, errlen);
        *ret = cf;
        return 0;
}

struct config_reload {
        uv_work_t work;
        struct manager *m;
        struct config_file cf;
        char err[512];
        int r;
        bool again; /* another SIGHUP came meanwhile */
};

/* Off the loop: a group lookup may ask a directory server. m->config does not change. */
static void reload_work(uv_work_t *work)
{
        struct config_reload *rl = work->data;

        rl->r = config_load(&rl->m->config, &rl->cf, rl->err, sizeof(rl->err));
}

static void reload_done(uv_work_t *work, int status)
{
        struct config_reload *rl = work->data;
        struct manager *m = rl->m;
        bool again = rl->again;
        int r = rl->r;

        m->reload = NULL;
        /* Stopping: the pool is going away, and systemd must not hear READY=1 again. */
        if (m->stopping) {
                free(rl);
                return;
        }
        if (r < 0)
                log_error("Failed to reload the configuration, keeping the one in use: %s",
                          rl->err);
        else {
                manager_overlay_persisted(m, &rl->cf.settings);
                r = manager_apply_settings(m, &rl->cf.settings);
                if (r < 0)
                        log_error_errno(r, "Failed to apply the reloaded settings: %m");
                else {
                        m->admin_gid = rl->cf.admin_gid;
                        m->socket_gid = rl->cf.socket_gid;
                        log_info("Reloaded the configuration");
                }
        }
        free(rl);
        notify_ready(m);
        if (again)
                config_reload(m);
}

void config_reload(struct manager *m)
{
        struct config_reload *rl;
        int r;

        if (m->reload) {
                m->reload->again = true;
                return;
        }
        rl = calloc(1, sizeof(*rl));
        if (!rl) {
                log_error("Failed to reload the configuration: out of memory");
                return;
        }
        rl->m = m;
        rl->work.data = rl;
        notify_reloading(m);
        r = uv_queue_work(m->loop, &rl->work, reload_work, reload_done);
        if (r < 0) {
                log_error("Failed to reload the configuration: %s", uv_strerror(r));
                free(rl);
                notify_ready(m);
                return;
        }
        m->reload = rl;
}
