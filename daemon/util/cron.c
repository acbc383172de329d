/* SPDX-License-Identifier: MIT */
/* Cron expressions: parsing into bit sets, and the next fire time on the local wall clock. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/cron.h"

struct field {
        const char *name;
        int min, max;
};

static const struct field fields[5] = {
    {"minute", 0, 59}, {"hour", 0, 23},       {"day-of-month", 1, 31},
    {"month", 1, 12},  {"day-of-week", 0, 7},
};

#define NUMBER_MAX 1000000

/* Digits at *p, as a number capped above NUMBER_MAX; -1 when there are none. */
static long parse_number(const char **p)
{
        long n = 0;

        if (!isdigit((unsigned char)**p))
                return -1;
        for (; isdigit((unsigned char)**p); (*p)++)
                if (n <= NUMBER_MAX)
                        n = n * 10 + (**p - '0');
        return n;
}

__attribute__((format(printf, 4, 5))) static int fail(char *err, size_t errlen,
                                                      const struct field *f, const char *fmt, ...)
{
        int n = snprintf(err, errlen, "%s: ", f->name);
        va_list ap;

        if (n >= 0 && (size_t)n < errlen) {
                va_start(ap, fmt);
                vsnprintf(err + n, errlen - n, fmt, ap);
                va_end(ap);
        }
        return -EINVAL;
}

static int out_of_range(char *err, size_t errlen, const struct field *f, const char *num,
                        const char *end)
{
        return fail(err, errlen, f, "%.*s is out of range %d-%d", (int)(end - num), num, f->min,
                    f->max);
}

/* One list item, item[0..len), into *bits. */
static int parse_item(const struct field *f, const char *item, int len, uint64_t *bits, char *err,
                      size_t errlen)
{
        const char *p = item, *end = item + len, *num;
        long lo, hi, step = 1, v;

        if (len == 0)
                return fail(err, errlen, f, "empty list item");
        if (*p == '*') {
                p++;
                lo = f->min;
                hi = f->max;
        } else {
                num = p;
                if ((lo = parse_number(&p)) < 0)
                        return fail(err, errlen, f, "bad value \"%.*s\"", len, item);
                if (lo < f->min || lo > f->max)
                        return out_of_range(err, errlen, f, num, p);
                hi = lo;
                if (p < end && *p == '-') {
                        p++;
                        num = p;
                        if ((hi = parse_number(&p)) < 0)
                                return fail(err, errlen, f, "bad range \"%.*s\"", len, item);
                        if (hi < f->min || hi > f->max)
                                return out_of_range(err, errlen, f, num, p);
                        if (hi < lo)
                                return fail(err, errlen, f, "bad range \"%.*s\"", len, item);
                } else if (p < end && *p == '/') {
                        hi = f->max;
                }
        }
        if (p < end && *p == '/') {
                p++;
                if ((step = parse_number(&p)) < 1 || p != end)
                        return fail(err, errlen, f, "bad step \"%.*s\"", len, item);
        }
        if (p != end)
                return fail(err, errlen, f, "bad value \"%.*s\"", len, item);
        for (v = lo; v <= hi; v += step)
                *bits |= UINT64_C(1) << v;
        return 0;
}

static int parse_field(const struct field *f, const char *text, int len, uint64_t *ret, char *err,
                       size_t errlen)
{
        const char *item = text, *end = text + len, *comma;
        uint64_t bits = 0;
        int r;

        for (;;) {
                comma = memchr(item, ',', end - item);
                r = parse_item(f, item, (int)((comma ? comma : end) - item), &bits, err, errlen);
                if (r < 0)
                        return r;
                if (!comma)
                        break;
                item = comma + 1;
        }
        *ret = bits;
        return 0;
}

int cron_parse(const char *expr, struct cron *ret, char *err, size_t errlen)
{
        const char *start[5], *p = expr;
        int len[5], n = 0, i, r;
        uint64_t bits[5];
        struct cron c;

        for (;;) {
                while (*p == ' ' || *p == '\t')
                        p++;
                if (!*p)
                        break;
                if (n < 5)
                        start[n] = p;
                while (*p && *p != ' ' && *p != '\t')
                        p++;
                if (n < 5)
                        len[n] = (int)(p - start[n]);
                n++;
        }
        if (n != 5) {
                snprintf(err, errlen,
                         "expected 5 fields (minute hour day-of-month month day-of-week), got %d",
                         n);
                return -EINVAL;
        }
        for (i = 0; i < 5; i++) {
                r = parse_field(&fields[i], start[i], len[i], &bits[i], err, errlen);
                if (r < 0)
                        return r;
        }
        c.minutes = bits[0];
        c.hours = (uint32_t)bits[1];
        c.days = (uint32_t)bits[2];
        c.months = (uint16_t)bits[3];
        c.weekdays = (uint8_t)((bits[4] | bits[4] >> 7) & 0x7f);
        c.days_star = c.days == UINT32_C(0xfffffffe);
        c.weekdays_star = c.weekdays == 0x7f;
        *ret = c;
        return 0;
}

struct wall {
        int year, month, day, hour, minute; /* month 1..12 */
};

static bool is_leap(int y)
{
        return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m)
{
        static const int days[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

        return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Days since 1970-01-01 (Howard Hinnant's days_from_civil). */
static int64_t days_from_civil(int y, int m, int d)
{
        int64_t era, yoe, doy, doe;

        y -= m <= 2;
        era = (y >= 0 ? y : y - 399) / 400;
        yoe = y - era * 400;
        doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
        doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
        return era * 146097 + doe - 719468;
}

/* The wall time as if it were UTC: seconds since the epoch. */
static int64_t wall_seconds(const struct wall *w)
{
        return days_from_civil(w->year, w->month, w->day) * 86400 + w->hour * 3600 + w->minute * 60;
}

static long utc_offset(int64_t t)
{
        time_t tt = (time_t)t;
        struct tm tm;

        return localtime_r(&tt, &tm) ? tm.tm_gmtoff : 0;
}

/* The instant of a wall time, as Python's zoneinfo reads it with fold=0: before a change of
 * offset, the old offset holds for wall times up to the change's instant plus the larger of the
 * two offsets. */
static int64_t wall_to_instant(const struct wall *w)
{
        int64_t s = wall_seconds(w), lo = s - 86400, hi = s + 86400, mid;
        long before = utc_offset(lo), after = utc_offset(hi);

        if (before == after)
                return s - before;
        while (hi - lo > 1) {
                mid = lo + (hi - lo) / 2;
                if (utc_offset(mid) == before)
                        lo = mid;
                else
                        hi = mid;
        }
        return s < hi + (before > after ? before : after) ? s - before : s - after;
}

static bool day_matches(const struct cron *c, const struct wall *w)
{
        int weekday = (int)((days_from_civil(w->year, w->month, w->day) % 7 + 11) % 7);
        bool dom = c->days & UINT32_C(1) << w->day, dow = c->weekdays & 1u << weekday;

        if (c->days_star || c->weekdays_star)
                return dom && dow;
        return dom || dow;
}

static void next_month(struct wall *w)
{
        if (++w->month > 12) {
                w->month = 1;
                w->year++;
        }
        w->day = 1;
        w->hour = 0;
        w->minute = 0;
}

static void next_day(struct wall *w)
{
        if (++w->day > days_in_month(w->year, w->month)) {
                next_month(w);
                return;
        }
        w->hour = 0;
        w->minute = 0;
}

static void next_hour(struct wall *w)
{
        if (++w->hour > 23) {
                next_day(w);
                return;
        }
        w->minute = 0;
}

static void next_minute(struct wall *w)
{
        if (++w->minute > 59)
                next_hour(w);
}

#define FIVE_YEARS (INT64_C(1827) * 86400)
#define LAST_YEAR  9999

time_t cron_next(const struct cron *c, time_t after)
{
        time_t first;
        struct wall w;
        struct tm tm;
        int64_t t, limit;

        if (__builtin_add_overflow(after, 60, &first) || !localtime_r(&first, &tm) ||
            tm.tm_year > LAST_YEAR - 1900)
                return -1;
        w = (struct wall){tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min};
        limit = wall_seconds(&w) + FIVE_YEARS;
        while (wall_seconds(&w) <= limit) {
                if (!(c->months & 1u << w.month))
                        next_month(&w);
                else if (!day_matches(c, &w))
                        next_day(&w);
                else if (!(c->hours & UINT32_C(1) << w.hour))
                        next_hour(&w);
                else if (!(c->minutes & UINT64_C(1) << w.minute))
                        next_minute(&w);
                else if ((t = wall_to_instant(&w)) <= after)
                        next_minute(&w);
                else
                        return (time_t)t;
        }
        return -1;
}
