/* SPDX-License-Identifier: MIT */
/*
 * The runner, as the layers above see it: how a run is made, contained, limited, suspended,
 * supervised and ended, a shell job's or a plugin's. Files outside run/ include this header
 * only (scripts/check-layers says so); run/'s files include one another's headers, and never
 * this one. How a process is started (spawn, plain-command) stays inside.
 */
#ifndef SLOWWORKD_RUN_H
#define SLOWWORKD_RUN_H

#include "run/contain.h"
#include "run/context.h"
#include "run/fence.h"
#include "run/handover.h"
#include "run/inflight.h"
#include "run/limits.h"
#include "run/plugin-run.h"
#include "run/plugins.h"
#include "run/shell.h"
#include "run/supervise.h"
#include "run/supervisor.h"
#include "run/suspend.h"

#endif
