/* SPDX-License-Identifier: MIT */
/*
 * A method: its name, its parameter table (proto/methods.h) and its handler. Each file of
 * methods/ exports its own rows of the table, next to its handlers; dispatch.c looks them up.
 */
#ifndef SLOWWORKD_METHOD_H
#define SLOWWORKD_METHOD_H

#include <json-c/json.h>
#include <stdbool.h>

#include "methods.h"
#include "proto.h"

struct conn;
struct registry;

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
        void (*prefill)(struct registry *reg, union params *p);
        void (*handle)(struct registry *reg, struct conn *c, union params *p, struct reply *r);
        /* Its param "id" names a job: one that another node holds or ran is asked there. */
        bool by_id;
};

extern const struct method daemon_methods[]; /* ping, version, settings.*, stats, reload, nodes */
extern const struct method submit_methods[]; /* submit, enqueue, env.set */
extern const struct method control_methods[]; /* wait, cancel, release */
extern const struct method query_methods[];  /* status, list, subscribe, history */
extern const struct method log_methods[];    /* log */
extern const struct method flow_methods[];   /* pause, resume, suspend, continue */
extern const struct method queue_methods[];  /* queue.add, queue.remove, queue.list */
extern const struct method metrics_methods[]; /* metrics */

int reply_error(struct reply *r, int code, const char *fmt, ...)
        __attribute__((format(printf, 3, 4)));

/* The request again, answered with conn_reply() (the id's reference taken over), r's claimed as
 * given. */
void method_call_again(struct registry *reg, struct conn *c, const char *name, json_object *id,
                       json_object *params, struct reply *r);

/* A keyed submit of a shared database, its job new (added, not yet saved): its first row
 * claims the key among the nodes, and the request is answered once that is known. */
struct sw_submit_params;
void claim_submit(struct registry *reg, struct conn *c, struct job *job,
                  const struct sw_submit_params *p, struct reply *r);

/* list's page of this node (r->result) merged with the other nodes' live jobs of a shared
 * database: the reply is deferred until the database answers (list-nodes.c). */
struct sw_list_params;
void list_other_nodes(struct registry *reg, struct conn *c, const struct sw_list_params *p,
                      struct reply *r);

/* A history page's records stop near this many bytes, whatever the limit: a client reads a reply
 * whole, and the connection drops one that leaves replies this large unread (CONN_OUT_MAX). */
#define HISTORY_PAGE_BYTES (4u * 1024 * 1024)
#define RECORD_BYTES       320 /* a record's JSON beside its command and log path, about */
/* history's page: the record added to runs unless the page is full (limit records, or about
 * HISTORY_PAGE_BYTES with bytes so far; false). */
struct run_record;
bool history_page_add(json_object *runs, const struct run_record *rec, int64_t limit,
                      size_t *bytes);
/* history of a shared database: every node's runs, from the database (history-nodes.c); owner
 * -1 for any, outcomes a mask of sw_outcomes (0: any), before.id 0 for none. */
void history_of_all_nodes(struct registry *reg, struct conn *c, const struct sw_history_params *p,
                          int64_t owner, unsigned outcomes, const struct sw_run_position *before,
                          struct reply *r);

/* The live job a request names, if the client may touch it; else NULL and an error reply. */
struct job *method_lookup_job(struct registry *reg, struct conn *c, int64_t id, struct reply *r);
/* The queue param names (NULL: the default queue); else NULL and an error reply naming param. */
struct queue *method_lookup_queue(struct registry *reg, const char *param, const char *name,
                                  struct reply *r);

#endif
