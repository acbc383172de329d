/* SPDX-License-Identifier: MIT */
/*
 * wait, cancel and release. A wait or a cancel of a running job is answered later, from the
 * job's own end (lifecycle.c), so that no thread is ever parked on a request.
 */
#include <stdio.h>

#include "jobs/answer.h"
#include "jobs/daemon.h"
#include "jobs/lifecycle.h"
#include "methods/dispatch.h"
#include "methods/method.h"
#include "methods/requests.h"
#include "server/conn.h"
#include "store/run-record.h"

/* The history's record of a job that is gone, if the client may see it; else an error reply. */
static const struct run_record *gone_job(struct daemon *d, struct conn *c, int64_t id,
                                         struct reply *r)
{
        const struct run_record *rec = daemon_last_run(d, id);

        if (!rec)
                reply_error(r, SW_E_NOT_FOUND, "no job %lld", (long long)id);
        else if (!requests_may_touch(c, rec->owner))
                reply_error(r, SW_E_PERMISSION, "job %lld is not yours", (long long)id);
        else
                return rec;
        return NULL;
}

/* A wait whose job left for another node (jobs/claims.c) is made again: it goes there. */
static void wait_again(void *data, struct conn *c, json_object *id, int64_t job)
{
        char line[160];
        int n = snprintf(line, sizeof(line),
                         "{\"jsonrpc\":\"2.0\",\"id\":%s,\"method\":\"wait\","
                         "\"params\":{\"id\":%lld}}",
                         json_object_to_json_string_ext(id, JSON_C_TO_STRING_PLAIN),
                         (long long)job);

        if (n < 0 || (size_t)n >= sizeof(line)) {
                conn_reply(c, json_object_get(id), NULL, SW_E_INTERNAL, "request id too long");
                return;
        }
        dispatch_again(data, c, line, (size_t)n);
}

static void handle_wait(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        struct answer *a;
        int64_t id = params->id.id;
        struct job *job = registry_find(&d->registry, id);
        const struct run_record *rec;

        if (!job) {
                rec = gone_job(d, c, id, r);
                if (rec) {
                        r->result = run_record_to_json(rec);
                        conn_wait_for(c, rec->saved_seq);
                }
                return;
        }
        if (!method_lookup_job(d, c, id, r))
                return;
        if (job_idle(job)) {
                r->result = job->last ? run_record_to_json(job->last) : NULL;
                conn_wait_for(c, job->saved_seq);
                return;
        }
        a = requests_answer_new(c, r->id);
        if (!a) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        requests_answer_again(a, wait_again, d, id);
        lifecycle_add_waiter(job, a);
        r->deferred = true;
}

static void handle_cancel(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        struct job *job = method_lookup_job(d, c, params->id.id, r);
        struct answer *a;

        if (!job)
                return;
        a = requests_answer_new(c, r->id);
        if (!a) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        if (lifecycle_cancel(d, job, a, &r->result) > 0) {
                r->deferred = true;
                return;
        }
        requests_answer_free(a);
        conn_wait_for(c, job->saved_seq);
        lifecycle_check_idle(d, job);
}

static void handle_release(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        struct job *job = method_lookup_job(d, c, params->id.id, r);

        if (!job)
                return;
        if (!requests_unhold(c, job)) {
                if (!job->persist) {
                        reply_error(r, SW_E_NOT_FOUND,
                                    "this connection holds no handle on job %lld",
                                    (long long)job->id);
                        return;
                }
                job->persist = false;
                job->handles--;
                daemon_save_state(d, job, NULL);
        }
        r->result = json_object_new_object();
        json_object_object_add(r->result, "id", json_object_new_int64(job->id));
        json_object_object_add(r->result, "handles", json_object_new_int((int)job->handles));
        lifecycle_check_idle(d, job);
}

const struct method control_methods[] = {
    {"wait", sw_id_params, NULL, handle_wait, true},
    {"cancel", sw_id_params, NULL, handle_cancel, true},
    {"release", sw_id_params, NULL, handle_release, true},
    {NULL, NULL, NULL, NULL, false},
};
