/* SPDX-License-Identifier: MIT */
/*
 * pause and resume (admins only): whether new runs start; suspend and continue: a running shell
 * job's processes stopped and let go on. A pause with drain is answered once no run is in
 * progress (jobs/pause.c).
 */
#include <errno.h>
#include <string.h>

#include "jobs/answer.h"
#include "jobs/daemon.h"
#include "jobs/drain.h"
#include "jobs/pause.h"
#include "jobs/queue.h"
#include "jobs/shared-settings.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "run/run.h"
#include "server/conn.h"

static bool admin_only(struct conn *c, const char *what, struct reply *r)
{
        if (conn_is_admin(c))
                return true;
        reply_error(r, SW_E_PERMISSION, "permission denied: only admins %s the daemon", what);
        return false;
}

/* The pause of the queue named (NULL: the daemon's); else NULL and an error reply. */
static struct pause *pause_of(struct daemon *d, const char *queue, struct reply *r)
{
        struct queue *q;

        if (!queue)
                return &d->pause;
        q = method_lookup_queue(d, "queue", queue, r);
        return q ? &q->pause : NULL;
}

static void handle_pause(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        struct pause *pause;
        int e = 0;

        if (!admin_only(c, "pause", r) || !(pause = pause_of(d, p->pause.queue, r)))
                return;
        pause_set(pause, true);
        shared_settings_changed(d);
        if (p->pause.drain) {
                struct answer *a = requests_answer_new(c, r->id);

                e = a ? drain_start(d, pause->queue, a) : -ENOMEM;
                if (e > 0) {
                        r->deferred = true;
                        return;
                }
                if (a)
                        requests_answer_free(a);
        }
        if (e < 0) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        r->result = pause_result(pause);
}

static void handle_resume(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        struct pause *pause;

        if (!admin_only(c, "resume", r) || !(pause = pause_of(d, p->queue_opt.queue, r)))
                return;
        pause_set(pause, false);
        shared_settings_changed(d);
        /* The held runs are queued again, in the order they came (those of a queue still
         * paused are held again). */
        gate_open(&d->gate);
        r->result = pause_result(pause);
}

/* suspend (stop true) or continue the processes of the job's run in progress. */
static void change(struct daemon *d, struct conn *c, int64_t id, bool stop, struct reply *r)
{
        struct job *job = method_lookup_job(d, c, id, r);
        int e;

        if (!job)
                return;
        if (job->x->plugin_entry) {
                reply_error(r, SW_E_CONFLICT,
                            "job %lld is a plugin job, which runs inside the daemon: it cannot be "
                            "suspended",
                            (long long)id);
                return;
        }
        e = stop ? suspend_stop(&job->suspend) : suspend_continue(&job->suspend);
        if (e == -ESRCH) {
                reply_error(r, SW_E_CONFLICT, "job %lld is not running", (long long)id);
                return;
        }
        if (e < 0) {
                reply_error(r, SW_E_INTERNAL, "cannot %s job %lld: %s",
                            stop ? "suspend" : "continue", (long long)id, strerror(-e));
                return;
        }
        /* Its run looks at its timeout again. */
        if (!stop)
                job_kick(job);
        r->result = json_object_new_object();
        json_object_object_add(r->result, "id", json_object_new_int64(id));
        json_object_object_add(r->result, "suspended", json_object_new_boolean(stop));
        json_object_object_add(r->result, "changed", json_object_new_boolean(e > 0));
}

static void handle_suspend(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        change(d, c, p->id.id, true, r);
}

static void handle_continue(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        change(d, c, p->id.id, false, r);
}

const struct method flow_methods[] = {
    {"pause", sw_pause_params, NULL, handle_pause, false},
    {"resume", sw_queue_opt_params, NULL, handle_resume, false},
    {"suspend", sw_id_params, NULL, handle_suspend, true},
    {"continue", sw_id_params, NULL, handle_continue, true},
    {NULL, NULL, NULL, NULL, false},
};
