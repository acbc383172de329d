/* SPDX-License-Identifier: MIT */
/*
 * edit: a job that has not started yet (pending, stashed or waiting) runs something else, under
 * another name, in another folder, or at another priority. What it runs changes while no pool
 * thread can start it; its row is written again, so the change is kept as a submit's is.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "jobs/daemon.h"
#include "methods/method.h"
#include "methods/submit.h"
#include "server/conn.h"

static bool may_edit(const char *state)
{
        return strcmp(state, "pending") == 0 || strcmp(state, "stashed") == 0 ||
               strcmp(state, "waiting") == 0;
}

static void swap_strings(struct slow_work *work, void *data)
{
        job_strings_swap((struct job *)work, data);
}

/* The job's strings as the change makes them; false with the error in r. A change that makes
 * them longer counts against the owner's max-job-bytes-per-user as a submit would. */
static bool change_strings(struct daemon *d, struct conn *c, struct job *job,
                           const struct sw_edit_params *p, struct reply *r)
{
        struct job_change change = {
            .command = p->command, .name = p->name, .cwd = p->cwd, .argv = p->argv};
        struct job_strings strings;
        char err[256];
        int e;

        if (!p->command && !p->argv && !p->name && !p->cwd)
                return true;
        e = job_strings_new(job, &change, &strings, err, sizeof(err));
        if (e < 0) {
                reply_error(r, e == -ENOMEM ? SW_E_INTERNAL : SW_E_INVALID_PARAMS, "%s",
                            e == -ENOMEM ? "out of memory" : err);
                return false;
        }
        if (!submit_bytes_room(d, c, job->owner, (int64_t)strings.size - job->strings_size, r)) {
                job_strings_free(job, &strings);
                return false;
        }
        /* A thread took it between the look at its state and now: it runs as it was. */
        if (slow_work_call_unless_executing(&job->dw.work, swap_strings, &strings) < 0) {
                job_strings_free(job, &strings);
                reply_error(r, SW_E_CONFLICT,
                            "job %lld is running: only a job that has not "
                            "started can be edited",
                            (long long)job->id);
                return false;
        }
        job_strings_free(job, &strings); /* the ones it had */
        daemon_job_resized(d, job);
        return true;
}

static void handle_edit(struct daemon *d, struct conn *c, union params *params, struct reply *r)
{
        const struct sw_edit_params *p = &params->edit;
        struct job *job = method_lookup_job(d, c, p->id, r);
        const char *state;

        if (!job)
                return;
        state = job_state(job);
        if (!may_edit(state) || job->claim) {
                reply_error(r, SW_E_CONFLICT,
                            "job %lld is %s: only a pending, stashed or waiting job can be "
                            "edited",
                            (long long)job->id, job->claim ? "being claimed" : state);
                return;
        }
        if ((p->command || p->argv || p->cwd) &&
            !method_may_choose_run(d, c, job->owner, job->id, r))
                return;
        if (!change_strings(d, c, job, p, r))
                return;
        if (p->priority != SW_PRIORITY_UNSET && p->priority != job->priority) {
                job->priority = (int)p->priority;
                slow_work_set_priority(&job->dw.work, job->priority);
        }
        free(job->payload);
        job->payload = job_payload(job, job->queue->name);
        if (!job->payload) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                return;
        }
        daemon_save_job(d, job);
        r->result = job_to_json(job);
        json_object_object_add(r->result, "queue", json_object_new_string(job->queue->name));
        conn_wait_for(c, job->saved_seq);
}

static void edit_prefill(struct daemon *d, union params *params)
{
        (void)d;
        params->edit.priority = SW_PRIORITY_UNSET;
}

const struct method edit_methods[] = {
    {"edit", sw_edit_params, edit_prefill, handle_edit, true},
    {NULL, NULL, NULL, NULL, false},
};
