/* SPDX-License-Identifier: MIT */
/*
 * pause and resume (admins only): whether new runs start; suspend and continue: a running shell
 * job's processes stopped and let go on; signal: a signal sent to them. A pause with drain is
 * answered once no run is in progress (jobs/pause.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>

#include "jobs/answer.h"
#include "jobs/claims.h"
#include "jobs/daemon.h"
#include "jobs/drain.h"
#include "jobs/pause.h"
#include "jobs/queue.h"
#include "jobs/registry.h"
#include "jobs/shared-settings.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "run/run.h"
#include "server/await.h"
#include "server/conn.h"
#include "server/relay.h"
#include "store/store.h"
#include "store/db.h"
#include "store/run-record.h"
#include "util/signal-name.h"

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

/* A request answered once the database has: its connection, id and node; the request line for
 * the node when it is live. */
struct node_wait {
        struct daemon *d;
        struct conn *c;
        json_object *id;
        struct answer *answer; /* this node's drain */
        bool paused;
        uint64_t token; /* its wait for the database (await_begin) */
        char *line;
        char node[SW_NODE_NAME_MAX + 1];
};

static void node_wait_free(struct node_wait *w)
{
        conn_unref(w->c);
        free(w->line);
        free(w);
}

/* This node's own pause drained: no run of it is in progress. */
static void node_drained(void *data, bool drained)
{
        struct node_wait *w = data;
        json_object *result = json_object_new_object();

        json_object_object_add(result, "node", json_object_new_string(w->node));
        json_object_object_add(result, "paused", json_object_new_boolean(true));
        json_object_object_add(result, "running", json_object_new_int64(0));
        if (drained)
                w->answer->done(w->answer, 0, result);
        else {
                json_object_put(result);
                w->answer->drop(w->answer);
        }
        node_wait_free(w);
}

/* The row of a node that is not live changed (its pause kept for its next start). */
static void node_row_paused(void *data, const struct db_result *res)
{
        struct node_wait *w = data;
        json_object *result;

        if (!res || !await_current(w->c, w->token)) {
                json_object_put(w->id); /* the daemon stops, or the request was answered */
        } else if (!res->got || res->i[0] == 0) {
                conn_reply(w->c, w->id, NULL, SW_E_INTERNAL,
                           res->got ? "the node's row is gone" : "cannot reach the job database");
        } else {
                result = json_object_new_object();
                json_object_object_add(result, "node", json_object_new_string(w->node));
                json_object_object_add(result, "paused", json_object_new_boolean(w->paused));
                json_object_object_add(result, "running", json_object_new_int64(0));
                conn_reply(w->c, w->id, result, 0, NULL);
        }
        node_wait_free(w);
}

/* The nodes as the database has them now: a live node gets the request (at its epoch now, which
 * may be newer than the last renewal saw), a node that is not live has its row changed, and a
 * name no node has is refused. */
static void node_listed(void *data, const struct db_result *res)
{
        struct node_wait *w = data;
        json_object *rows = res && res->got && res->text ? json_tokener_parse(res->text) : NULL;
        json_object *row = NULL;
        char why[128];

        for (size_t i = 0;
             json_object_is_type(rows, json_type_array) && i < json_object_array_length(rows);
             i++) {
                json_object *o = json_object_array_get_idx(rows, i);
                const char *name = json_object_get_string(json_object_object_get(o, "name"));

                if (name && strcmp(name, w->node) == 0)
                        row = o;
        }
        if (!res || !await_current(w->c, w->token)) {
                json_object_put(w->id);
                node_wait_free(w);
        } else if (!res->got) {
                conn_reply(w->c, w->id, NULL, SW_E_INTERNAL, "cannot reach the job database");
                node_wait_free(w);
        } else if (!row) {
                snprintf(why, sizeof(why), "parameter \"node\": no node is named %s", w->node);
                conn_reply(w->c, w->id, NULL, SW_E_INVALID_PARAMS, why);
                node_wait_free(w);
        } else if (strcmp(json_object_get_string(json_object_object_get(row, "state")), "live") ==
                   0) {
                await_done(w->c, w->token);
                relay_forward_read(w->d->relay, w->c, w->node,
                                   json_object_get_int64(json_object_object_get(row, "epoch")),
                                   w->line, strlen(w->line));
                json_object_put(w->id);
                node_wait_free(w);
        } else {
                store_pause_node(w->d->store, w->node, w->paused, node_row_paused, w);
        }
        json_object_put(rows);
}

/* pause and resume of one node of a shared database: this one's here; another node's is passed
 * to it, where it is its own; a node that is not live has its row changed, which it reads at
 * its next start. */
static void pause_node(struct daemon *d, struct conn *c, const char *method, bool paused,
                       bool drain, const char *node, struct reply *r)
{
        struct node_wait *w;
        json_object *req;

        if (!store_shared(d->store) || !d->relay) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "parameter \"node\": a node's own pause is for the nodes of a shared "
                            "database (pause the daemon instead)");
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        *w = (struct node_wait){.d = d, .c = conn_ref(c), .paused = paused};
        snprintf(w->node, sizeof(w->node), "%s", node);
        if (strcmp(node, store_node(d->store)) == 0) {
                claims_pause_node(d, paused);
                r->result = pause_result(&d->node_pause);
                if (paused && drain && (w->answer = requests_answer_new(c, r->id)) &&
                    pause_add_drain(&d->node_pause, node_drained, w) > 0) {
                        json_object_put(r->result);
                        r->result = NULL;
                        r->deferred = true;
                        return;
                }
                if (w->answer)
                        requests_answer_free(w->answer);
                node_wait_free(w);
                return;
        }
        req = json_object_new_object();
        json_object_object_add(req, "jsonrpc", json_object_new_string("2.0"));
        json_object_object_add(req, "id", json_object_get(r->id));
        json_object_object_add(req, "method", json_object_new_string(method));
        json_object_object_add(req, "params", json_object_get(r->params));
        w->line = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
        json_object_put(req);
        if (!w->line) {
                node_wait_free(w);
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        w->id = json_object_get(r->id);
        w->token = await_begin(c, r->id);
        store_list_nodes(d->store, node_listed, w);
        r->deferred = true;
}

static void handle_pause(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        struct pause *pause;
        int e = 0;

        if (p->pause.node && p->pause.queue) {
                reply_error(r, SW_E_INVALID_PARAMS, "give at most one of \"node\" and \"queue\"");
                return;
        }
        if (p->pause.node) {
                if (admin_only(c, "pause", r))
                        pause_node(d, c, "pause", true, p->pause.drain, p->pause.node, r);
                return;
        }
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

        if (p->pause.node && p->pause.queue) {
                reply_error(r, SW_E_INVALID_PARAMS, "give at most one of \"node\" and \"queue\"");
                return;
        }
        if (p->pause.node) {
                if (admin_only(c, "resume", r))
                        pause_node(d, c, "resume", false, false, p->pause.node, r);
                return;
        }
        if (!admin_only(c, "resume", r) || !(pause = pause_of(d, p->pause.queue, r)))
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

/* The signal a request names, or 0 and an error reply. SIGSTOP and SIGCONT (and the terminal's
 * stops) are refused: they are what suspend and continue do, and a run stopped or let go behind
 * their back would count its suspended time wrongly. */
static int signal_of(json_object *obj, struct reply *r)
{
        int sig = -EINVAL;

        if (json_object_is_type(obj, json_type_int)) {
                int64_t n = json_object_get_int64(obj);

                if (signal_is_valid(n))
                        sig = (int)n;
        } else if (json_object_is_type(obj, json_type_string)) {
                sig = signal_by_name(json_object_get_string(obj));
        } else {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "parameter \"signal\" must be a signal's name or number");
                return 0;
        }
        if (sig < 0) {
                reply_error(r, SW_E_INVALID_PARAMS, "parameter \"signal\": no such signal: %s",
                            json_object_to_json_string(obj));
                return 0;
        }
        if (sig == SIGSTOP || sig == SIGCONT || sig == SIGTSTP || sig == SIGTTIN ||
            sig == SIGTTOU) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "parameter \"signal\": SIG%s stops or continues the job behind the "
                            "daemon's back (use suspend and continue)",
                            signal_name(sig));
                return 0;
        }
        return sig;
}

/* A job that ended and left the tables has no run to signal: its owner is told so (-32003), as
 * of a live job between runs; anyone else as ever. */
static struct job *lookup_running(struct daemon *d, struct conn *c, int64_t id, struct reply *r)
{
        const struct run_record *rec;

        if (registry_find(&d->registry, id))
                return method_lookup_job(d, c, id, r);
        rec = daemon_last_run(d, id);
        if (!rec)
                reply_error(r, SW_E_NOT_FOUND, "no job %lld", (long long)id);
        else if (!requests_may_touch(c, rec->owner))
                reply_error(r, SW_E_PERMISSION, "job %lld is not yours", (long long)id);
        else
                reply_error(r, SW_E_CONFLICT, "job %lld has ended: no run in progress",
                            (long long)id);
        return NULL;
}

static void handle_signal(struct daemon *d, struct conn *c, union params *p, struct reply *r)
{
        int64_t id = p->signal.id;
        struct job *job;
        int sig, e;

        if (!(sig = signal_of(p->signal.signal, r)) || !(job = lookup_running(d, c, id, r)))
                return;
        if (job->x->plugin_entry) {
                reply_error(r, SW_E_CONFLICT,
                            "job %lld is a plugin job, which runs inside the daemon: it cannot be "
                            "signalled",
                            (long long)id);
                return;
        }
        e = suspend_signal(&job->suspend, sig);
        if (e == -ESRCH) {
                reply_error(r, SW_E_CONFLICT, "job %lld has no run in progress", (long long)id);
                return;
        }
        if (e < 0) {
                reply_error(r, SW_E_INTERNAL, "cannot signal job %lld: %s", (long long)id,
                            strerror(-e));
                return;
        }
        r->result = json_object_new_object();
        json_object_object_add(r->result, "id", json_object_new_int64(id));
        json_object_object_add(r->result, "signal", json_object_new_int(sig));
}

const struct method flow_methods[] = {
    {"pause", sw_pause_params, NULL, handle_pause, false},
    {"resume", sw_resume_params, NULL, handle_resume, false},
    {"suspend", sw_id_params, NULL, handle_suspend, true},
    {"continue", sw_id_params, NULL, handle_continue, true},
    {"signal", sw_signal_params, NULL, handle_signal, true},
    {NULL, NULL, NULL, NULL, false},
};
