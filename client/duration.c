/* SPDX-License-Identifier: MIT */
/* Spans and moments as people give them. */
#define _GNU_SOURCE
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"

static const struct {
        char unit;
        double seconds;
} units[] = {{'w', 604800}, {'d', 86400}, {'h', 3600}, {'m', 60}, {'s', 1}};

#define N_UNITS (sizeof(units) / sizeof(units[0]))

/* A number that is plain digits with at most one point: no sign, exponent, space, inf or nan,
 * which strtod would take. */
static bool plain_number(const char *s, const char **ret_end)
{
        const char *p = s;
        bool digits = false, point = false;

        for (;; p++) {
                if (*p >= '0' && *p <= '9')
                        digits = true;
                else if (*p == '.' && !point)
                        point = true;
                else
                        break;
        }
        *ret_end = p;
        return digits;
}

/* Numbers each with its unit, largest first and each unit once: 0 with *ret, or -EINVAL. */
static int parse_with_units(const char *s, double *ret)
{
        size_t next_unit = 0;
        const char *end;
        double total = 0;

        while (*s) {
                size_t u;

                if (!plain_number(s, &end))
                        return -EINVAL;
                for (u = next_unit; u < N_UNITS && units[u].unit != *end; u++)
                        ;
                if (u == N_UNITS)
                        return -EINVAL;
                total += strtod(s, NULL) * units[u].seconds;
                next_unit = u + 1;
                s = end + 1;
        }
        *ret = total;
        return 0;
}

int duration_parse(const char *s, double *ret)
{
        const char *end;
        double v;

        if (!plain_number(s, &end))
                return -EINVAL;
        if (!*end) /* seconds, without a unit */
                v = strtod(s, NULL);
        else if (parse_with_units(s, &v) < 0)
                return -EINVAL;
        if (!isfinite(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

/* tm as local time, its daylight saving time found by mktime; -EINVAL when it is no time. */
static int local_seconds(struct tm *tm, double *ret)
{
        time_t t;

        tm->tm_isdst = -1;
        t = mktime(tm);
        if (t == (time_t)-1)
                return -EINVAL;
        *ret = (double)t;
        return 0;
}

int duration_parse_local(const char *s, double *ret)
{
        static const char *const forms[] = {"%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M",
                                            "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%d"};

        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
                struct tm tm = {0};
                const char *end = strptime(s, forms[i], &tm);

                if (end && !*end)
                        return local_seconds(&tm, ret);
        }
        return -EINVAL;
}

/* The time of day given (its hours, minutes and seconds), days after now's date, in local
 * time: counted by the calendar, as a day of a DST change is not 24 h. */
static int time_of_day(time_t now, int days, const struct tm *given, double *ret)
{
        struct tm tm;

        if (!localtime_r(&now, &tm))
                return -EINVAL;
        tm.tm_mday += days;
        tm.tm_hour = given->tm_hour;
        tm.tm_min = given->tm_min;
        tm.tm_sec = given->tm_sec;
        return local_seconds(&tm, ret);
}

/* "09:00" or "09:00:30": the next such time of day after now, today's or tomorrow's. */
static int next_time_of_day(const char *s, time_t now, double *ret)
{
        static const char *const forms[] = {"%H:%M:%S", "%H:%M"};

        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
                struct tm given = {0};
                const char *end = strptime(s, forms[i], &given);
                double t;
                int r;

                if (!end || *end)
                        continue;
                r = time_of_day(now, 0, &given, &t);
                if (r == 0 && t <= (double)now)
                        r = time_of_day(now, 1, &given, &t);
                if (r == 0)
                        *ret = t;
                return r;
        }
        return -EINVAL;
}

int duration_until(const char *s, time_t now, double *ret)
{
        double t = 0;

        if (duration_parse(s, ret) == 0)
                return 0;
        if (next_time_of_day(s, now, &t) < 0 && duration_parse_local(s, &t) < 0)
                return -EINVAL;
        if (t <= (double)now)
                return -ERANGE;
        *ret = t - (double)now;
        return 0;
}
