/* SPDX-License-Identifier: MIT */
/*
 * A job's payload: what it runs, as a submit's params say it and as the state database keeps it
 * (JSON text, parsed back by the submit's own table after a restart; the environment has its
 * own table, the class a column), and the rules a submit's spec must keep.
 */
#ifndef SLOWWORKD_PAYLOAD_H
#define SLOWWORKD_PAYLOAD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

#include "methods.h"

/* 0, with whether the job is very slow; or -EINVAL with why in err. */
int payload_check(const struct sw_submit_params *p, bool *ret_very_slow, char *err,
                  size_t errlen);
/* The payload's text (the caller frees it), limits the job's as resolved; NULL when out of
 * memory. */
char *payload_json(const struct sw_submit_params *p, const struct sw_limits *limits);
/* A plugin job's argument as JSON text ("null" for none). */
const char *payload_arg_text(json_object *arg);

#endif
