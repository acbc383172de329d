/* SPDX-License-Identifier: MIT */
/* A job as the pool sees it: the slow_work_ops that run it and tell the loop what happened. */
#ifndef SLOWWORKD_ITEM_H
#define SLOWWORKD_ITEM_H

#include "slowwork.h"

extern const struct slow_work_ops item_ops;

#endif
