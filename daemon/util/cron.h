/* SPDX-License-Identifier: MIT */
/*
 * Cron expressions, five fields "minute hour day-of-month month day-of-week", and their fire
 * times in local time, as python3-croniter computes them. Each field is a comma-separated list
 * of "*", "N", "A-B", "*\/S", "A-B/S" and "A/S" (A to the field's maximum); day-of-week is 0-7
 * with 7 for Sunday. When neither day field is full, a day matches either of them.
 *
 * Local time is searched on the wall clock and a wall time becomes an instant the way croniter
 * does: one in a skipped hour is read with the offset before the change (02:30 in a skipped
 * 02:00-03:00 fires at 03:30), one in a repeated hour fires once, at its first occurrence.
 */
#ifndef SLOWWORKD_UTIL_CRON_H
#define SLOWWORKD_UTIL_CRON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct cron {
        uint64_t minutes;   /* bits 0..59 */
        uint32_t hours;     /* bits 0..23 */
        uint32_t days;      /* bits 1..31 */
        uint16_t months;    /* bits 1..12 */
        uint8_t weekdays;   /* bits 0..6, Sunday 0 */
        bool days_star;     /* every day of the month is in the field */
        bool weekdays_star; /* every day of the week is in the field */
};

/* 0, or -EINVAL with err naming the field and the fault, e.g.
 * "day-of-month: 32 is out of range 1-31", "minute: bad step \"*\/0\"", "hour: empty list item".
 * *ret is written only on success. */
int cron_parse(const char *expr, struct cron *ret, char *err, size_t errlen);

/* The first fire time strictly after `after`, in local time (TZ as the process has it, so
 * call tzset() after changing it); -1 if there is none within 5 years (e.g. Feb 30). */
time_t cron_next(const struct cron *c, time_t after);

#endif
