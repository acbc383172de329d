/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/job.h"
#include "jobs/queues.h"
#include "store/store.h"
#include "util/log.h"
#include "util/settings.h"

struct queue *queues_find(struct daemon *d, const char *name)
{
        struct queue *q;

        if (!name)
                return d->queues;
        for (q = d->queues; q; q = q->next)
                if (strcmp(q->name, name) == 0)
                        return q;
        return NULL;
}

/* A new queue's settings, under the file's lines for it, under what was kept. */
static int settings_from(json_object *file_queues, const char *name, json_object *kept,
                         struct sw_queue_settings *ret, char *err, size_t errlen)
{
        struct sw_queue_settings s = settings_queue_default();
        json_object *file = file_queues ? json_object_object_get(file_queues, name) : NULL;
        int r = 0;

        if (file)
                r = settings_queue_parse(file, &s, &s, err, errlen);
        if (r == 0 && kept)
                r = settings_queue_parse(kept, &s, &s, err, errlen);
        if (r == 0)
                *ret = s;
        return r;
}

static int settings_of(struct daemon *d, const char *name, json_object *kept,
                       struct sw_queue_settings *ret, char *err, size_t errlen)
{
        return settings_from(d->file_queues, name, kept, ret, err, errlen);
}

int queues_check_file(struct daemon *d, json_object *file_queues, char *err, size_t errlen)
{
        struct sw_queue_settings s;
        char why[256];

        for (struct queue *q = d->queues->next; q; q = q->next)
                if (settings_from(file_queues, q->name, q->kept, &s, why, sizeof(why)) < 0) {
                        snprintf(err, errlen,
                                 "queue %s: the file's lines and its kept settings: %s", q->name,
                                 why);
                        return -EINVAL;
                }
        return 0;
}

/* Made and put at the end of the list: 0, or -errno. */
static int make(struct daemon *d, const char *name, const struct sw_queue_settings *s,
                json_object *kept, struct queue **ret)
{
        struct queue **tail = &d->queues, *q;
        int r = queue_new(name, s, d->store, &d->pause, &d->shared.run.stopping, daemon_release_held, d, &q);

        if (r < 0)
                return log_error_errno(r, "Failed to start the pool of queue %s: %m", name);
        q->kept = kept ? json_object_get(kept) : NULL;
        queue_set_fair(q, d->settings.fair_share);
        q->away = store_shared(d->store) && !settings_serves(d->settings.node_queues, name);
        while (*tail)
                tail = &(*tail)->next;
        *tail = q;
        if (ret)
                *ret = q;
        return 0;
}

/* The rows of what was given: "queue.NAME" and "queue.NAME/SETTING". */
static void keep(struct daemon *d, struct queue *q, json_object *given)
{
        char row[160];

        snprintf(row, sizeof(row), "queue.%s", q->name);
        store_put_setting(d->store, row, 1);
        if (!q->kept)
                q->kept = json_object_new_object();
        json_object_object_foreach(given, setting, value)
        {
                snprintf(row, sizeof(row), "queue.%s/%s", q->name, setting);
                store_put_setting(d->store, row, json_object_get_double(value));
                json_object_object_add(q->kept, setting, json_object_get(value));
        }
}

int queues_add(struct daemon *d, const char *name, json_object *given, char *err, size_t errlen)
{
        struct sw_queue_settings s;
        struct queue *q;
        int r;

        if (queues_find(d, name)) {
                snprintf(err, errlen, "queue %s exists already", name);
                return -EEXIST;
        }
        r = settings_of(d, name, given, &s, err, errlen);
        if (r < 0)
                return r;
        r = make(d, name, &s, NULL, &q);
        if (r < 0) {
                snprintf(err, errlen, "cannot start its threads: %s", strerror(-r));
                return r;
        }
        keep(d, q, given);
        log_info("Queue %s added", name);
        return 0;
}

int queues_set(struct daemon *d, struct queue *q, json_object *given, bool to_keep, char *err,
               size_t errlen)
{
        struct sw_queue_settings s;
        int r = settings_queue_parse(given, &q->settings, &s, err, errlen);

        if (r == 0 && queue_configure(q, &s) < 0) {
                snprintf(err, errlen, "the pool refused the settings");
                r = -EINVAL;
        }
        if (r == 0 && to_keep)
                keep(d, q, given);
        return r;
}

/* Out of the list, as queue.remove takes it (queue_free() is the caller's). */
static void unlink_queue(struct daemon *d, struct queue *q)
{
        struct queue **p;

        for (p = &d->queues; *p != q; p = &(*p)->next)
                ;
        *p = q->next;
        burst_end(&d->burst);
}

void queues_remove(struct daemon *d, struct queue *q)
{
        char row[96];

        unlink_queue(d, q);
        snprintf(row, sizeof(row), "queue.%s", q->name);
        store_delete_settings(d->store, row);
        log_info("Queue %s removed", q->name);
        queue_free(q);
}

/* The kept rows, gathered before the queues are made: {"NAME": {"SETTING": value}}. A name
 * may hold dots, a slash never: the slash ends it. */
void queues_load_kept(struct daemon *d, const char *name, double value)
{
        const char *qname = name + strlen("queue."), *dot = strchr(qname, '/');
        char buf[SW_QUEUE_NAME_MAX + 1], err[128];
        json_object *q;

        snprintf(buf, sizeof(buf), "%.*s", dot ? (int)(dot - qname) : (int)strlen(qname), qname);
        if (sw_queue_name_check("queue", buf, err, sizeof(err)) ||
            (strcmp(buf, SW_QUEUE_DEFAULT) == 0 &&
             !(dot && strcmp(dot + 1, PAUSE_KEPT_NAME) == 0))) {
                log_warning("Ignoring the kept setting %s: not a queue's", name);
                return;
        }
        if (!d->kept_queues)
                d->kept_queues = json_object_new_object();
        q = json_object_object_get(d->kept_queues, buf);
        if (!q) {
                q = json_object_new_object();
                json_object_object_add(d->kept_queues, buf, q);
        }
        if (dot)
                json_object_object_add(q, dot + 1,
                                       value == (double)(int64_t)value
                                           ? json_object_new_int64((int64_t)value)
                                           : json_object_new_double(value));
}

/* A kept queue, made or set again, with its pause taken out of its settings (the default
 * queue's pause alone is kept). */
static void apply_kept(struct daemon *d, const char *name, json_object *kept, const char *how)
{
        json_object *paused = NULL;
        struct queue *q = queues_find(d, name);
        struct sw_queue_settings s;
        char err[256];

        if (json_object_object_get_ex(kept, PAUSE_KEPT_NAME, &paused)) {
                paused = json_object_get(paused);
                json_object_object_del(kept, PAUSE_KEPT_NAME);
        }
        if (q != d->queues) {
                if (settings_of(d, name, kept, &s, err, sizeof(err)) < 0) {
                        log_warning("Queue %s: ignoring its kept settings: %s", name, err);
                        /* Nor are they worked in again at a reload, which would refuse the file. */
                        kept = NULL;
                        settings_of(d, name, NULL, &s, err, sizeof(err));
                }
                /* An existing queue is set again only when its rows changed: a runtime change
                 * of its settings stays. */
                if (!q) {
                        make(d, name, &s, kept, &q);
                } else if (!q->kept || !kept || !json_object_equal(q->kept, kept)) {
                        json_object_put(q->kept);
                        q->kept = kept ? json_object_get(kept) : json_object_new_object();
                        queue_configure(q, &s);
                }
        }
        if (q)
                pause_restore(&q->pause, paused && json_object_get_double(paused) != 0, how);
        json_object_put(paused);
}

/* Each queue kept, made or set as its rows say. */
static void apply_kept_queues(struct daemon *d, const char *how)
{
        if (!d->kept_queues)
                return;
        json_object_object_foreach(d->kept_queues, kname, kept) apply_kept(d, kname, kept, how);
        json_object_put(d->kept_queues);
        d->kept_queues = NULL;
}

void queues_set_file(struct daemon *d, json_object *file_queues)
{
        struct sw_queue_settings s;
        char err[256];

        if (file_queues != d->file_queues) {
                json_object_put(d->file_queues);
                d->file_queues = file_queues ? json_object_get(file_queues) : NULL;
        }
        apply_kept_queues(d, PAUSE_AT_START);
        for (struct queue *q = d->queues->next; q; q = q->next)
                if (settings_of(d, q->name, q->kept, &s, err, sizeof(err)) == 0)
                        queue_configure(q, &s);
        if (!file_queues)
                return;
        json_object_object_foreach(file_queues, name, unused)
        {
                (void)unused;
                if (!queues_find(d, name) && settings_of(d, name, NULL, &s, err, sizeof(err)) == 0)
                        make(d, name, &s, NULL, NULL);
        }
}

void queues_apply_kept(struct daemon *d)
{
        struct sw_queue_settings s;
        struct queue *q, *next;
        char err[256];

        /* A queue with kept rows that have gone was removed on another node: it goes here too,
         * unless this node's file declares it, or it holds jobs of this node (as a restored
         * job's queue is made again); then it stays, resumed, set by the file's lines alone. */
        for (q = d->queues->next; q; q = next) {
                bool declared;

                next = q->next;
                if (!q->kept ||
                    (d->kept_queues && json_object_object_get_ex(d->kept_queues, q->name, NULL)))
                        continue;
                declared =
                    d->file_queues && json_object_object_get_ex(d->file_queues, q->name, NULL);
                if (declared || q->njobs > 0) {
                        if (!declared)
                                log_warning("Queue %s was removed on another node, but holds %zu "
                                            "job%s here: it stays, with the defaults",
                                            q->name, q->njobs, q->njobs == 1 ? "" : "s");
                        json_object_put(q->kept);
                        q->kept = NULL;
                        if (settings_of(d, q->name, NULL, &s, err, sizeof(err)) == 0)
                                queue_configure(q, &s);
                        pause_restore(&q->pause, false, PAUSE_ELSEWHERE);
                        continue;
                }
                unlink_queue(d, q);
                log_info("Queue %s removed on another node", q->name);
                queue_free(q);
        }
        /* The default queue's pause is its one row. */
        if (!d->kept_queues || !json_object_object_get_ex(d->kept_queues, SW_QUEUE_DEFAULT, NULL))
                pause_restore(&d->queues->pause, false, PAUSE_ELSEWHERE);
        apply_kept_queues(d, PAUSE_ELSEWHERE);
}

struct queue *queues_restore(struct daemon *d, const char *name)
{
        struct sw_queue_settings s;
        struct queue *q = NULL;
        char err[256];

        if (sw_queue_name_check("queue", name, err, sizeof(err)))
                return NULL;
        log_warning("Queue %s of a restored job is no longer declared: made again with the "
                    "defaults",
                    name);
        if (settings_of(d, name, NULL, &s, err, sizeof(err)) == 0)
                make(d, name, &s, NULL, &q);
        return q;
}

void queues_stats(struct daemon *d, struct queue *q, struct slow_work_stats *ret)
{
        struct slow_work_stats st;

        if (q) {
                slow_work_pool_stats(q->pool, ret);
                return;
        }
        *ret = (struct slow_work_stats){0};
        for (q = d->queues; q; q = q->next) {
                slow_work_pool_stats(q->pool, &st);
                ret->threads += st.threads;
                ret->busy += st.busy;
                ret->busy_very_slow += st.busy_very_slow;
                ret->idle += st.idle;
                ret->very_slow_cap += st.very_slow_cap;
                ret->queued_slow += st.queued_slow;
                ret->queued_very_slow += st.queued_very_slow;
                ret->delayed += st.delayed;
                ret->items_run += st.items_run;
        }
}

int64_t queues_waiting_for_space(struct daemon *d, struct queue *q)
{
        int64_t n = 0;

        if (pause_is_on(&d->pause))
                return 0;
        for (size_t i = 0; i < d->gate.n; i++) {
                struct queue *of = d->gate.jobs[i]->queue;

                n += (!q || of == q) && !pause_is_on(&of->pause);
        }
        return n;
}

json_object *queues_json(struct daemon *d, struct queue *q)
{
        json_object *o = sw_queue_settings_to_json(&q->settings);
        struct slow_work_stats st;
        int64_t held = 0;

        for (size_t i = 0; i < d->gate.n; i++)
                held += d->gate.jobs[i]->queue == q;
        slow_work_pool_stats(q->pool, &st);
        json_object_object_add(o, "name", json_object_new_string(q->name));
        json_object_object_add(o, "threads", json_object_new_int64(st.threads));
        json_object_object_add(o, "running", json_object_new_int64(st.busy));
        json_object_object_add(
            o, "queued",
            json_object_new_int64((int64_t)st.queued_slow + st.queued_very_slow + st.delayed + held));
        json_object_object_add(o, "paused", json_object_new_boolean(pause_is_on(&q->pause)));
        json_object_object_add(o, "jobs", json_object_new_int64((int64_t)q->njobs));
        return o;
}

int64_t queues_waiting_for_turn(struct daemon *d, struct queue *q)
{
        size_t n = q ? q->users.nheld : d->users.nheld;

        for (struct queue *each = d->queues; !q && each; each = each->next)
                n += each->users.nheld;
        return (int64_t)n;
}
