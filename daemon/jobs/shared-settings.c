/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/gate.h"
#include "jobs/pause.h"
#include "jobs/queues.h"
#include "jobs/shared-settings.h"
#include "store/db.h"
#include "store/store.h"
#include "util/log.h"

void shared_settings_changed(struct daemon *d)
{
        d->shared_changes++;
        /* The nodes live at the commit, which this node may not have seen yet. */
        if (store_shared(d->store))
                store_send_mail_all(d->store, SHARED_SETTINGS_MAIL, "");
}

struct reading {
        struct daemon *d;
        uint64_t changes; /* this node's, when the read was asked for */
        void (*then)(void *data, int r);
        void *data;
};

/* The rows applied: [[name, value], ...]; false when they are not that. */
static bool apply_rows(struct daemon *d, json_object *rows)
{
        bool paused = false;
        size_t n;

        if (!json_object_is_type(rows, json_type_array))
                return false;
        n = json_object_array_length(rows);
        for (size_t i = 0; i < n; i++) {
                json_object *row = json_object_array_get_idx(rows, i);
                const char *name = json_object_get_string(json_object_array_get_idx(row, 0));
                double value = json_object_get_double(json_object_array_get_idx(row, 1));

                if (!name)
                        continue;
                if (strcmp(name, PAUSE_KEPT_NAME) == 0)
                        paused = value != 0;
                else
                        queues_load_kept(d, name, value);
        }
        pause_restore(&d->pause, paused, PAUSE_ELSEWHERE);
        queues_apply_kept(d);
        /* What a resume lets go is queued again (what is still paused is held again). */
        gate_open(&d->gate);
        return true;
}

static void applied(void *data, const struct db_result *res)
{
        struct reading *rd = data;
        struct daemon *d = rd->d;
        json_object *rows;
        bool ok;

        if (!res || daemon_stopping(d)) {
                if (rd->then)
                        rd->then(rd->data, -ECANCELED);
                free(rd);
                return;
        }
        /* This node changed them since: a read after its rows are written has them too. */
        if (rd->changes != d->shared_changes) {
                rd->changes = d->shared_changes;
                store_read_shared_settings(d->store, applied, rd);
                return;
        }
        rows = res->got && res->text ? json_tokener_parse(res->text) : NULL;
        ok = apply_rows(d, rows);
        if (!ok)
                log_warning("Cannot read the settings another node changed: %s",
                            res->got ? "not a list" : "the job database cannot be read");
        json_object_put(rows);
        if (rd->then)
                rd->then(rd->data, ok ? 0 : -EIO);
        free(rd);
}

void shared_settings_read(struct daemon *d, void (*then)(void *data, int r), void *data)
{
        struct reading *rd = malloc(sizeof(*rd));

        if (!rd) {
                log_warning("Cannot read the settings another node changed: out of memory");
                if (then)
                        then(data, -ENOMEM);
                return;
        }
        *rd = (struct reading){d, d->shared_changes, then, data};
        store_read_shared_settings(d->store, applied, rd);
}
