/* SPDX-License-Identifier: MIT */
/*
 * Cron expressions as Vixie cron and cronie read them: five fields "minute hour day-of-month
 * month day-of-week", or one of @yearly (@annually), @monthly, @weekly, @daily (@midnight) and
 * @hourly; and their fire times in local time. Each field is a comma-separated list of "*", "N",
 * "A-B", "*\/S", "A-B/S" and "A/S" (A to the field's maximum); day-of-week is 0-7 with 7 for
 * Sunday; months and days of the week may be named by their first three letters, in any case
 * ("jan", "Mon-Fri"). When either day field starts with "*", a day must match both; else either
 * (so "*\/2" in day-of-month with "1" in day-of-week is the odd Mondays, and "1-31" with "1"
 * every day).
 *
 * Local time is searched on the wall clock and a wall time becomes an instant as Python's
 * zoneinfo reads it with fold=0: one in a repeated hour fires once, at its first occurrence; one
 * in a skipped hour fires shifted by the change (02:15 in a skipped 02:00-03:00 fires at 03:15),
 * each in turn, however many there are. Fire times are the distinct instants so reached, in
 * order: a shifted wall time that lands on the instant of another match (02:00 on 03:00) fires
 * once for both.
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
        bool days_star;     /* the day-of-month field starts with "*" (cron's DOM_STAR) */
        bool weekdays_star; /* the day-of-week field starts with "*" (cron's DOW_STAR) */
};

/* 0, or -EINVAL with err naming the field and the fault, e.g.
 * "day-of-month: 32 is out of range 1-31", "minute: bad step \"*\/0\"", "hour: empty list item",
 * "day-of-week: unknown name \"foo\" (sun-sat)", or the @ form refused ("@reboot is not
 * supported: ..."). *ret is written only on success. */
int cron_parse(const char *expr, struct cron *ret, char *err, size_t errlen);

/* The first fire time strictly after `after`, in local time (TZ as the process has it, so
 * call tzset() after changing it); -1 if there is none within 5 years (e.g. Feb 30). */
time_t cron_next(const struct cron *c, time_t after);

#endif
