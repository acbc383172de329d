/* SPDX-License-Identifier: MIT */
/* SIGHUP and the reload method: the configuration read again, off the loop, and applied. */
#ifndef SLOWWORKD_RELOAD_H
#define SLOWWORKD_RELOAD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <uv.h>

#include "util/config-load.h"

struct clients;
struct conn;
struct daemon;
struct listener;
struct notify;
struct reload_waiter;
struct reload_work;

/* What a reload reads and changes. */
struct reload {
        uv_loop_t *loop;
        const struct config *config; /* the file and the flags */
        struct daemon *daemon;       /* settings */
        struct clients *clients;     /* admin-group */
        struct listener *listener;   /* socket-group */
        struct notify *notify;
        const bool *stopping;        /* the daemon is stopping: nothing is applied */
        struct reload_work *under_way;
        struct reload_waiter *next; /* requests that came during it: answered by the next one */
};

/* Loads the file and the flags again and applies them (the settings kept by settings.set stay
 * on top), or logs why not and keeps what runs. A SIGHUP during a reload reloads once more. */
void reload(struct reload *rl);
/* The reload method: reloads as above, and answers request id on c once the file is applied, or
 * with the file's error (what runs is then unchanged). 0, or -ENOMEM. */
int reload_request(struct reload *rl, struct conn *c, json_object *id);

#endif
