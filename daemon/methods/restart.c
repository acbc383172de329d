/* SPDX-License-Identifier: MIT */
/*
 * restart: a new job made of an ended job's spec (jobs/spec.h), kept with its last run's record
 * while that is in the history; owned by the ended job's owner, whoever of its owner and the
 * admins asks. A live job (pending, running, waiting, idle but held, persist, recurring) is not
 * restarted: it can be enqueued.
 */
#include <errno.h>
#include <string.h>

#include "jobs/daemon.h"
#include "jobs/metrics.h"
#include "jobs/registry.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "methods/submit.h"
#include "store/run-record.h"

/* The ended job's spec record, if the client may restart it; else NULL and an error reply. */
static const struct run_record *ended_job(struct daemon *d, struct conn *c, int64_t id,
                                          struct reply *r)
{
        const struct run_record *rec;
        struct job *job = registry_find(&d->registry, id);

        if (job) {
                if (method_lookup_job(d, c, id, r))
                        reply_error(r, SW_E_CONFLICT,
                                    "job %lld is live (%s): only a job that ended can be "
                                    "restarted (enqueue runs a live one again)",
                                    (long long)id, job_state(job));
                return NULL;
        }
        rec = daemon_last_run(d, id);
        if (!rec)
                reply_error(r, SW_E_NOT_FOUND, "no job %lld", (long long)id);
        else if (!requests_may_touch(c, rec->owner))
                reply_error(r, SW_E_PERMISSION, "job %lld is not yours", (long long)id);
        else if (!rec->spec)
                reply_error(r, SW_E_NOT_FOUND,
                            "job %lld cannot be restarted: its spec is not kept (a plugin job, "
                            "another node's, or its last run has left the history)",
                            (long long)id);
        else
                return rec;
        return NULL;
}

/* The spec as submit's params, with restart's command or argv over what it ran. */
static json_object *spec_params(const struct run_record *rec, const struct sw_restart_params *p,
                                struct reply *r)
{
        json_object *o = json_tokener_parse(rec->spec), *argv;
        bool shell = o && json_object_object_get_ex(o, "command", NULL);

        if (!o) {
                reply_error(r, SW_E_INTERNAL, "job %lld's spec is not JSON", (long long)rec->id);
                return NULL;
        }
        if (p->command && p->argv) {
                reply_error(r, SW_E_INVALID_PARAMS, "give at most one of \"command\" and \"argv\"");
        } else if (p->command && !shell) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "parameter \"command\": job %lld runs an argv: give \"argv\"",
                            (long long)rec->id);
        } else if (p->argv && shell) {
                reply_error(r, SW_E_INVALID_PARAMS,
                            "parameter \"argv\": job %lld runs a shell command: give \"command\"",
                            (long long)rec->id);
        } else {
                if (p->command)
                        json_object_object_add(o, "command", json_object_new_string(p->command));
                if (p->argv && (argv = json_object_new_array())) {
                        for (char **a = p->argv; *a; a++)
                                json_object_array_add(argv, json_object_new_string(*a));
                        json_object_object_add(o, "argv", argv);
                }
                return o;
        }
        json_object_put(o);
        return NULL;
}

/* Just the new job's id, as restart answers (a submit's reply says more). */
static void id_only(struct reply *r)
{
        json_object *id;

        if (!r->result || !json_object_object_get_ex(r->result, "id", &id))
                return;
        id = json_object_get(id);
        json_object_put(r->result);
        r->result = json_object_new_object();
        json_object_object_add(r->result, "id", id);
}

static void handle_restart(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        const struct run_record *rec = ended_job(d, c, params->restart.id, r);
        struct sw_submit_params p = {.retry_delay = SW_RETRY_DELAY_DEFAULT};
        json_object *o, *asked;

        if (!rec)
                return;
        if ((params->restart.command || params->restart.argv) &&
            !method_may_choose_run(d, c, rec->owner, rec->id, r))
                return;
        if (!(o = spec_params(rec, &params->restart, r)))
                return;
        if (sw_params_parse(o, sw_submit_params, &p, r->message, sizeof(r->message))) {
                r->code = SW_E_INTERNAL;
                json_object_put(o);
                return;
        }
        /* A keyed submit that waits for its key's claim among the nodes is made again from
         * these params, not restart's. */
        asked = r->params;
        r->params = o;
        submit_as(d, c, rec->owner, true, &p, r);
        r->params = asked;
        sw_params_clear(sw_submit_params, &p);
        json_object_put(o);
        if (r->code || r->deferred)
                return;
        metrics_submitted(&d->metrics);
        id_only(r);
}

const struct method restart_methods[] = {
    {"restart", sw_restart_params, NULL, handle_restart, true},
    {NULL, NULL, NULL, NULL, false},
};
