/* SPDX-License-Identifier: MIT */
/*
 * A keyed submit of a shared database: its new job's first row claims the key among the nodes'
 * live jobs. Won, the submit is done again with that job (held, queued, saved as any new one);
 * lost to another node's job, the new job goes without a trace and that job was asked to run
 * once more (it coalesces if it has not started, runs again after if it has); lost to a live job
 * of this node's, the submit is done again with it. A row of this node's with no live job is one
 * kept for another node's ask: it runs again soon, and the submit coalesces into that.
 */
#include <stdlib.h>
#include <string.h>

#include "jobs/daemon.h"
#include "jobs/lifecycle.h"
#include "methods/claim.h"
#include "methods/method.h"
#include "server/conn.h"
#include "store/db.h"
#include "store/store.h"

struct claim {
        struct daemon *d;
        struct conn *c;
        json_object *id, *params;
        struct job *job;
        bool may_again;
};

/* A new job that did not become the key's: gone as if never submitted. */
static void drop(struct daemon *d, struct job *job)
{
        if (!job->live)
                return;
        if (job->persist) {
                job->persist = false;
                job->handles--;
                /* Its row may stay, asked to run again by another node: it does not persist. */
                daemon_save_state(d, job, NULL);
        }
        lifecycle_check_idle(d, job);
}

/* The key is another node's job's: the answer says which, and how it took the submit. */
static void answer_other(struct claim *cl, const struct db_result *res, struct reply *r)
{
        const char *key = job_key(cl->job), *node = res->text ? res->text : "";
        long long other = (long long)res->i[0];

        if (!res->i[2]) {
                reply_error(r, SW_E_CONFLICT,
                            "key \"%s\" belongs to job %lld on node %s, which runs something else",
                            key, other, node);
                return;
        }
        if (!cl->may_again) {
                reply_error(
                    r, SW_E_CONFLICT,
                    "key \"%s\" belongs to job %lld on node %s: hold, persist, delay, after "
                    "and after_any apply only to a live job of the node asked",
                    key, other, node);
                return;
        }
        r->result = json_object_new_object();
        json_object_object_add(r->result, "id", json_object_new_int64(other));
        json_object_object_add(r->result, "state",
                               json_object_new_string(res->i[1] ? "running" : "pending"));
        json_object_object_add(r->result, "node", json_object_new_string(node));
        json_object_object_add(r->result, res->i[1] ? "deferred" : "coalesced",
                               json_object_new_boolean(1));
}

static void claimed(void *data, const struct db_result *res)
{
        struct claim *cl = data;
        struct daemon *d = cl->d;
        struct job *job = cl->job;
        struct reply r = {0};
        bool won = res && res->got && res->i[0] == job->id;

        job->claim = NULL;
        if (!res) { /* the daemon stops: the request gets no answer */
                json_object_put(cl->id);
        } else if (won && !cl->c->closing) {
                r.claimed = job;
                method_call_again(d, cl->c, "submit", cl->id, cl->params, &r);
                if (r.code)
                        drop(d, job);
        } else if (!won && res->got && res->text && strcmp(res->text, store_node(d->store)) == 0 &&
                   registry_find(&d->registry, res->i[0])) {
                drop(d, job);
                method_call_again(d, cl->c, "submit", cl->id, cl->params, &r);
        } else {
                drop(d, job);
                if (!res->got)
                        reply_error(&r, SW_E_INTERNAL,
                                    "the job database did not answer the claim of a key");
                else if (!won)
                        answer_other(cl, res, &r);
                conn_reply(cl->c, cl->id, r.result, r.code, r.message);
        }
        json_object_put(cl->params);
        conn_unref(cl->c);
        job_unref(job);
        free(cl);
}

void claim_submit(struct daemon *d, struct conn *c, struct job *job,
                  const struct sw_submit_params *p, struct reply *r)
{
        struct claim *cl = calloc(1, sizeof(*cl));

        if (!cl) {
                reply_error(r, SW_E_INTERNAL, "out of memory");
                drop(d, job);
                return;
        }
        *cl = (struct claim){
            .d = d,
            .c = conn_ref(c),
            .id = json_object_get(r->id),
            .params = json_object_get(r->params),
            .job = job_ref(job),
            /* Another node's job is only asked to run again: what else a submit asks of a
             * job is for its own node's. */
            .may_again = !p->hold && !p->persist && !p->after && !p->after_any && p->delay <= 0,
        };
        job->claim = cl;
        daemon_claim(d, job, cl->may_again, claimed, cl);
        r->deferred = true;
}
