/* SPDX-License-Identifier: MIT */
/*
 * A method: its name, its parameter table (proto/methods.h) and its handler. Each file of
 * methods/ exports its own rows of the table, next to its handlers; dispatch.c looks them up.
 */
#ifndef SLOWWORKD_METHOD_H
#define SLOWWORKD_METHOD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "methods.h"
#include "proto.h"

struct conn;
struct daemon;

/* Room for any method's parameters. */
union params {
        struct sw_settings settings;
        struct sw_submit_params submit;
        struct sw_id_params id;
        struct sw_pause_params pause;
        struct sw_log_params log;
        struct sw_enqueue_params enqueue;
        struct sw_history_params history;
        struct sw_queue_params queue;
        struct sw_queue_opt_params queue_opt;
        struct sw_list_params list;
        struct sw_env_set_params env_set;
        struct sw_edit_params edit;
        struct sw_signal_params signal;
        struct sw_restart_params restart;
        struct sw_node_params node;
};

/* What a handler returns: a result, or an error code and message. */
struct reply {
        json_object *id; /* the request's; a handler that defers takes a reference */
        json_object *params; /* the request's params as sent (NULL: none) */
        json_object *result;
        int code;
        char message[256];
        bool deferred; /* the handler answers later, with conn_reply() */
        /* A submit done again once its key's claim among the nodes was answered (claim.c):
         * the job that won it (NULL: the key was another job's of this node). */
        struct job *claimed;
};

struct method {
        const char *name; /* NULL ends a table */
        const struct sw_param *params;
        /* Fills in what parameters that are not given stand for. */
        void (*prefill)(struct daemon *d, union params *p);
        void (*handle)(struct daemon *d, struct conn *c, union params *p, struct reply *r);
        /* Its param "id" names a job: one that another node holds or ran is asked there. */
        bool by_id;
};

extern const struct method daemon_methods[]; /* ping, version, settings.*, stats, reload */
extern const struct method nodes_methods[];  /* nodes, nodes.forget */
extern const struct method submit_methods[]; /* submit, enqueue, env.set */
extern const struct method control_methods[]; /* wait, cancel, release */
extern const struct method query_methods[];  /* status, list, subscribe, history */
extern const struct method log_methods[];    /* log */
extern const struct method flow_methods[];   /* pause, resume, suspend, continue, signal */
extern const struct method queue_methods[];  /* queue.add, queue.remove, queue.list */
extern const struct method metrics_methods[]; /* metrics */
extern const struct method edit_methods[];    /* edit */
extern const struct method restart_methods[]; /* restart */

int reply_error(struct reply *r, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The request again, answered with conn_reply() (the id's reference taken over), r's claimed as
 * given. */
void method_call_again(struct daemon *d, struct conn *c, const char *name, json_object *id,
                       json_object *params, struct reply *r);

/* The live job a request names, if the client may touch it; else NULL and an error reply. */
struct job *method_lookup_job(struct daemon *d, struct conn *c, int64_t id, struct reply *r);
/* Whether the client, who may touch job id of owner's, may also choose what it runs (its command,
 * argv, folder): in the system instance a job of root's (or of the daemon's own user's) runs as
 * root, and admin-group is not root, so only root chooses what it runs; else false and the
 * permission error in r. */
bool method_may_choose_run(struct daemon *d, struct conn *c, uid_t owner, int64_t id,
                           struct reply *r);
/* The queue param names (NULL: the default queue); else NULL and an error reply naming param. */
struct queue *method_lookup_queue(struct daemon *d, const char *param, const char *name,
                                  struct reply *r);

#endif
