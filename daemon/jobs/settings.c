/* SPDX-License-Identifier: MIT */
#include <string.h>

#include "jobs/claims.h"
#include "jobs/queues.h"
#include "jobs/settings.h"
#include "store/store.h"
#include "util/log.h"
#include "util/settings.h"

int settings_apply(struct daemon *d, const struct sw_settings *s)
{
        struct sw_queue_settings qs = settings_queue_part(s);
        int r = queue_configure(d->queues, &qs);

        if (r < 0)
                return r;
        if (!__atomic_load_n(&d->shared.run.stopping, __ATOMIC_ACQUIRE) &&
            metrics_file_set(&d->metrics_file, s->metrics_file, s->metrics_interval) < 0)
                log_warning("Cannot write the metrics to %s: out of memory", s->metrics_file);
        d->settings = *s;
        d->settings.runtime = false;
        d->settings.queue = NULL; /* the request's */
        __atomic_store_n(&d->shared.run.log_limit, s->log_limit, __ATOMIC_RELAXED);
        __atomic_store_n(&d->shared.run.log_budget, s->max_log_bytes_per_user, __ATOMIC_RELAXED);
        __atomic_store_n(&d->shared.run.min_free_space, s->min_free_space, __ATOMIC_RELAXED);
        __atomic_store(&d->shared.run.kill_grace, &s->kill_grace, __ATOMIC_RELAXED);
        users_set_limits(&d->users, s->max_queued_per_user, s->max_running_per_user);
        for (struct queue *q = d->queues; q; q = q->next) {
                queue_set_fair(q, s->fair_share);
                __atomic_store_n(&q->away, store_shared(d->store) && !settings_serves(s->node_queues, q->name),
                                 __ATOMIC_RELEASE);
        }
        claims_settings_changed(d);
        return 0;
}

void settings_keep(struct daemon *d, const struct sw_settings *old)
{
        json_object *before = sw_settings_to_json(old), *after = sw_settings_to_json(&d->settings);

        if (!d->kept)
                d->kept = json_object_new_object();
        json_object_object_foreach(after, name, value)
        {
                if (json_object_equal(value, json_object_object_get(before, name)))
                        continue;
                if (json_object_is_type(value, json_type_string))
                        store_put_setting_text(d->store, name, json_object_get_string(value));
                else
                        store_put_setting(d->store, name, json_object_get_double(value));
                json_object_object_add(d->kept, name, json_object_get(value));
        }
        json_object_put(before);
        json_object_put(after);
}

static bool given_by_flag(const struct config *flags, const char *name)
{
        for (unsigned i = 0; i < flags->nflags; i++)
                if (strcmp(flags->flags[i].name, name) == 0)
                        return true;
        return false;
}

void settings_overlay_kept(struct daemon *d, const struct config *flags, struct sw_settings *s)
{
        struct sw_settings next = *s;
        json_object *overlay;
        char err[256] = "";

        if (!d->kept)
                return;
        overlay = json_object_new_object();
        json_object_object_foreach(d->kept, name, value)
        {
                if (!given_by_flag(flags, name))
                        json_object_object_add(overlay, name, json_object_get(value));
        }
        /* The same table as settings.set: values from an older daemon are checked again. */
        if (sw_params_parse(overlay, sw_settings_params, &next, err, sizeof(err)) != 0 ||
            settings_validate(&next) < 0)
                log_warning("Ignoring the settings kept in the state database: %s",
                            err[0] ? err : "min-threads would exceed max-threads");
        else
                *s = next;
        json_object_put(overlay);
}

/* A yes-or-no setting, which the state database keeps as 1 or 0. */
static bool setting_is_bool(const char *name)
{
        for (unsigned i = 0; i < SW_SETTINGS_COUNT; i++)
                if (strcmp(sw_settings_params[i].name, name) == 0)
                        return sw_settings_params[i].type == SW_P_BOOL;
        return false;
}

static void load_setting(void *data, const char *name, double value, const char *text)
{
        struct daemon *d = data;
        json_object *v;

        if (strcmp(name, PAUSE_KEPT_NAME) == 0) {
                pause_restore(&d->pause, value != 0, PAUSE_AT_START);
                return;
        }
        if (strncmp(name, "queue.", strlen("queue.")) == 0) {
                queues_load_kept(d, name, value);
                return;
        }
        if (text)
                v = json_object_new_string(text);
        else if (setting_is_bool(name))
                v = json_object_new_boolean(value != 0);
        else if (value == (double)(int64_t)value)
                v = json_object_new_int64((int64_t)value);
        else
                v = json_object_new_double(value);
        json_object_object_add(d->kept, name, v);
}

int settings_load_kept(struct daemon *d, const struct config *flags)
{
        struct sw_settings s = d->settings;
        int r;

        d->kept = json_object_new_object();
        r = store_load_settings(d->store, load_setting, d);
        if (r < 0)
                return r;
        queues_set_file(d, d->file_queues);
        if (json_object_object_length(d->kept) == 0)
                return 0;
        settings_overlay_kept(d, flags, &s);
        return settings_apply(d, &s);
}
