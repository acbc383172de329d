/* SPDX-License-Identifier: MIT */
/*
 * A reload starts again from the defaults, so a key taken out of the file goes back to its
 * default, and a flag keeps winning over the file.
 */
#include <stdlib.h>

#include "jobs/settings.h"
#include "reload.h"
#include "server/conn.h"
#include "server/listener.h"
#include "server/notify.h"
#include "util/log.h"

struct reload_work {
        uv_work_t work;
        struct reload *rl;
        struct config_file cf;
        char err[512];
        int r;
        bool again; /* another SIGHUP came meanwhile */
};

/* Off the loop: a group lookup may ask a directory server. The config does not change. */
static void reload_work(uv_work_t *work)
{
        struct reload_work *w = work->data;

        w->r = config_load(w->rl->config, &w->cf, w->err, sizeof(w->err));
}

static void reload_done(uv_work_t *work, int status)
{
        struct reload_work *w = work->data;
        struct reload *rl = w->rl;
        bool again = w->again;
        int r = w->r;

        rl->under_way = NULL;
        /* Stopping: the pool is going away, and systemd must not hear READY=1 again. */
        if (*rl->stopping) {
                free(w);
                return;
        }
        if (r < 0)
                log_error("Failed to reload the configuration, keeping the one in use: %s",
                          w->err);
        else {
                registry_overlay_kept(rl->registry, rl->config, &w->cf.settings);
                r = registry_apply_settings(rl->registry, &w->cf.settings);
                if (r < 0)
                        log_error_errno(r, "Failed to apply the reloaded settings: %m");
                else {
                        rl->clients->admin_gid = w->cf.admin_gid;
                        rl->listener->socket_gid = w->cf.socket_gid;
                        log_info("Reloaded the configuration");
                }
        }
        free(w);
        notify_ready(rl->notify);
        if (again)
                reload(rl);
}

void reload(struct reload *rl)
{
        struct reload_work *w;
        int r;

        if (rl->under_way) {
                rl->under_way->again = true;
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                log_error("Failed to reload the configuration: out of memory");
                return;
        }
        w->rl = rl;
        w->work.data = w;
        notify_reloading(rl->notify);
        r = uv_queue_work(rl->loop, &w->work, reload_work, reload_done);
        if (r < 0) {
                log_error("Failed to reload the configuration: %s", uv_strerror(r));
                free(w);
                notify_ready(rl->notify);
                return;
        }
        rl->under_way = w;
}
