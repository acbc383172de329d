/* SPDX-License-Identifier: MIT */
/*
 * A request the jobs answer later (a wait when its job goes idle, a cancel when its run has
 * ended, a drain when the runs are over): made by the layer that holds the request's
 * connection, which answers it in done, only frees it in drop, or asks again in moved.
 */
#ifndef SLOWWORKD_ANSWER_H
#define SLOWWORKD_ANSWER_H

#include <json-c/json.h>
#include <stdint.h>

struct answer {
        struct answer *next;
        /* The result (taken; NULL: null), to go out once the writes queued up to seq are on
         * disk. Frees the answer. */
        void (*done)(struct answer *a, uint64_t seq, json_object *result);
        /* Never answered (the daemon stops): frees it. */
        void (*drop)(struct answer *a);
        /* Not answered here: its job left for another node (jobs/claims.c), where the request
         * is made again. Frees it. NULL: dropped. */
        void (*moved)(struct answer *a);
};

#endif
