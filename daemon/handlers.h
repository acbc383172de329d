/* SPDX-License-Identifier: MIT */
/* One function per method; dispatch.c's table names them. */
#ifndef SLOWWORKD_HANDLERS_H
#define SLOWWORKD_HANDLERS_H

#include "dispatch.h"

/* Room for any method's parameters. */
union params {
        struct sw_settings settings;
        struct sw_submit_params submit;
        struct sw_id_params id;
        struct sw_log_params log;
        struct sw_enqueue_params enqueue;
};

void handle_ping(struct conn *c, union params *p, struct reply *r);
void handle_version(struct conn *c, union params *p, struct reply *r);
void handle_settings_get(struct conn *c, union params *p, struct reply *r);
void prefill_settings(struct conn *c, union params *p);
void handle_settings_set(struct conn *c, union params *p, struct reply *r);
void handle_stats(struct conn *c, union params *p, struct reply *r);
void handle_submit(struct conn *c, union params *p, struct reply *r);
void handle_enqueue(struct conn *c, union params *p, struct reply *r);
void handle_wait(struct conn *c, union params *p, struct reply *r);
void handle_cancel(struct conn *c, union params *p, struct reply *r);
void handle_release(struct conn *c, union params *p, struct reply *r);
void handle_status(struct conn *c, union params *p, struct reply *r);
void handle_list(struct conn *c, union params *p, struct reply *r);
void handle_log(struct conn *c, union params *p, struct reply *r);
void handle_subscribe(struct conn *c, union params *p, struct reply *r);

#endif
