/* SPDX-License-Identifier: MIT */
/*
 * A reload starts again from the defaults, so a key taken out of the file goes back to its
 * default, and a flag keeps winning over the file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/queues.h"
#include "jobs/settings.h"
#include "reload.h"
#include "server/conn.h"
#include "server/listener.h"
#include "server/notify.h"
#include "util/log.h"

/* A reload request waiting for its answer. */
struct reload_waiter {
        struct conn *c;
        json_object *id;
        struct reload_waiter *next;
};

struct reload_work {
        uv_work_t work;
        struct reload *rl;
        struct config_file cf;
        char err[512];
        int r;
        bool again;                    /* another SIGHUP or request came meanwhile */
        struct reload_waiter *waiters; /* requests this reload answers */
};

/* Off the loop: a group lookup may ask a directory server. The config does not change. */
static void reload_work(uv_work_t *work)
{
        struct reload_work *w = work->data;

        w->r = config_load(w->rl->config, &w->cf, w->err, sizeof(w->err));
}

/* Answers every request of the list: with a result when r is 0, else with message. */
static void answer(struct reload_waiter *list, int r, const char *message)
{
        struct reload_waiter *x;

        while ((x = list)) {
                list = x->next;
                if (r < 0)
                        conn_reply(x->c, x->id, NULL, sw_error_from_errno(r), message);
                else
                        conn_reply(x->c, x->id, json_object_new_object(), 0, NULL);
                conn_unref(x->c);
                free(x);
        }
}

/* The file read: applied, or -errno with why not in err. */
static int apply(struct reload *rl, struct reload_work *w, char *err, size_t errlen)
{
        int r = w->r;

        if (r < 0) {
                snprintf(err, errlen, "%s", w->err);
                return r;
        }
        r = queues_check_file(rl->daemon, w->cf.queues, err, errlen);
        if (r < 0)
                return r;
        settings_overlay_kept(rl->daemon, rl->config, &w->cf.settings);
        r = settings_apply(rl->daemon, &w->cf.settings);
        if (r < 0) {
                snprintf(err, errlen, "the pool refused its settings: %s", strerror(-r));
                return r;
        }
        queues_set_file(rl->daemon, w->cf.queues);
        rl->clients->admin_gid = w->cf.admin_gid;
        rl->listener->socket_gid = w->cf.socket_gid;
        return 0;
}

static void reload_done(uv_work_t *work, int status)
{
        struct reload_work *w = work->data;
        struct reload *rl = w->rl;
        char err[512], message[600] = "";
        int r;

        rl->under_way = NULL;
        /* Stopping: the pool is going away, and systemd must not hear READY=1 again. */
        if (*rl->stopping) {
                answer(w->waiters, -EBUSY, "the daemon is shutting down");
                answer(rl->next, -EBUSY, "the daemon is shutting down");
                rl->next = NULL;
                config_file_clear(&w->cf);
                free(w);
                return;
        }
        r = apply(rl, w, err, sizeof(err));
        if (r < 0) {
                log_error("Failed to reload the configuration, keeping the one in use: %s", err);
                snprintf(message, sizeof(message),
                         "cannot reload the configuration, keeping the one in use: %s", err);
        } else
                log_info("Reloaded the configuration");
        notify_ready(rl->notify);
        answer(w->waiters, r, message);
        if (w->again)
                reload(rl);
        config_file_clear(&w->cf);
        free(w);
}

/* Starts a reload that answers the requests waiting for the next one: 0, or -errno (logged). */
static int start(struct reload *rl)
{
        struct reload_work *w;
        int r;

        w = calloc(1, sizeof(*w));
        if (!w)
                return log_error_errno(-ENOMEM, "Failed to reload the configuration: %m");
        w->rl = rl;
        w->work.data = w;
        notify_reloading(rl->notify);
        r = uv_queue_work(rl->loop, &w->work, reload_work, reload_done);
        if (r < 0) {
                log_error("Failed to reload the configuration: %s", uv_strerror(r));
                free(w);
                notify_ready(rl->notify);
                return r;
        }
        w->waiters = rl->next;
        rl->next = NULL;
        rl->under_way = w;
        return 0;
}

void reload(struct reload *rl)
{
        int r;

        if (rl->under_way) {
                rl->under_way->again = true;
                return;
        }
        r = start(rl);
        if (r < 0) {
                answer(rl->next, r, "cannot reload the configuration: out of resources");
                rl->next = NULL;
        }
}

int reload_request(struct reload *rl, struct conn *c, json_object *id)
{
        struct reload_waiter *x = malloc(sizeof(*x));

        if (!x)
                return -ENOMEM;
        x->c = conn_ref(c);
        x->id = json_object_get(id);
        x->next = rl->next;
        rl->next = x;
        reload(rl);
        return 0;
}
