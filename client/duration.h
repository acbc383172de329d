/* SPDX-License-Identifier: MIT */
/*
 * Spans and moments as people give them to slowctl: "90", "90s", "2m", "1h30m", "1d", "0.5",
 * "1.5s"; a clock time ("09:00") or a local date and time ("2026-12-24T18:00"). The one reader
 * for every option that takes seconds, and for history --since.
 */
#ifndef SLOWCTL_DURATION_H
#define SLOWCTL_DURATION_H

#include <time.h>

/*
 * A span: a number of seconds ("90", "0.5"), or numbers each with its unit, largest first and
 * each unit once ("90s", "2m", "1h30m", "1.5h", "1d12h"): s, m, h, d, w. 0 with *ret in
 * seconds, or -EINVAL (*ret untouched).
 */
int duration_parse(const char *s, double *ret);

/*
 * A local date and time: "2026-12-24T18:00" or "2026-12-24 18:00", with or without seconds, or a
 * date alone for its midnight. 0 with *ret in Unix seconds, or -EINVAL.
 */
int duration_parse_local(const char *s, double *ret);

/*
 * How long from now until s: a span (duration_parse), the next time of day ("09:00",
 * "09:00:30") after now, today or tomorrow, or a local date and time. 0 with *ret in seconds;
 * -EINVAL when s is none of these, -ERANGE when the moment is past.
 */
int duration_until(const char *s, time_t now, double *ret);

#endif
