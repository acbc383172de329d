/* SPDX-License-Identifier: MIT */
/* Cron expressions: parsing into bit sets, and the next fire time on the local wall clock. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "util/cron.h"

struct field {
        const char *name;
        int min, max;
        const char *const *names; /* names[i] stands for min + i; NULL: numbers only */
        const char *name_range;   /* "jan-dec": for the message when a name is unknown */
};

static const char *const month_names[] = {"jan", "feb", "mar", "apr", "may", "jun", "jul",
                                          "aug", "sep", "oct", "nov", "dec", NULL};
static const char *const weekday_names[] = {"sun", "mon", "tue", "wed", "thu", "fri", "sat", NULL};

static const struct field fields[5] = {
    {"minute", 0, 59, NULL, NULL},
    {"hour", 0, 23, NULL, NULL},
    {"day-of-month", 1, 31, NULL, NULL},
    {"month", 1, 12, month_names, "jan-dec"},
    {"day-of-week", 0, 7, weekday_names, "sun-sat"},
};

/* The @ forms that stand for five fields, as Vixie cron and cronie read them (case matters
 * there too). @reboot, which they also know, means a job run at start, not at times. */
static const struct {
        const char *name, *fields;
} nicknames[] = {
    {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"}, {"@monthly", "0 0 1 * *"},
    {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},    {"@midnight", "0 0 * * *"},
    {"@hourly", "0 * * * *"},
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

#define NO_VALUE     (-1)
#define UNKNOWN_NAME (-2)

/* A number at *p, or where the field has names one of them in any case ("Mon", "JAN"): its
 * value; NO_VALUE when there is neither, UNKNOWN_NAME for letters that name nothing (*p then
 * past them). */
static long parse_value(const struct field *f, const char **p, const char *end)
{
        const char *word = *p;

        if (isdigit((unsigned char)**p))
                return parse_number(p);
        if (!f->names)
                return NO_VALUE;
        while (*p < end && isalpha((unsigned char)**p))
                (*p)++;
        if (*p == word)
                return NO_VALUE;
        for (int i = 0; f->names[i]; i++)
                if (*p - word == 3 && strncasecmp(word, f->names[i], 3) == 0)
                        return f->min + i;
        return UNKNOWN_NAME;
}

/* The value at *p, checked against the field's range: 0 with *ret, or -EINVAL with err saying
 * why (`what` names the item's kind for a missing value: "value", "range"). */
static int parse_bound(const struct field *f, const char **p, const char *end, const char *item,
                       int len, const char *what, long *ret, char *err, size_t errlen)
{
        const char *start = *p;
        long v = parse_value(f, p, end);

        if (v == UNKNOWN_NAME)
                return fail(err, errlen, f, "unknown name \"%.*s\" (%s)", (int)(*p - start), start,
                            f->name_range);
        if (v == NO_VALUE)
                return fail(err, errlen, f, "bad %s \"%.*s\"", what, len, item);
        if (v < f->min || v > f->max)
                return out_of_range(err, errlen, f, start, *p);
        *ret = v;
        return 0;
}

/* One list item, item[0..len), into *bits. */
static int parse_item(const struct field *f, const char *item, int len, uint64_t *bits, char *err,
                      size_t errlen)
{
        const char *p = item, *end = item + len;
        long lo, hi, step = 1, v;
        int r;

        if (len == 0)
                return fail(err, errlen, f, "empty list item");
        if (*p == '*') {
                p++;
                lo = f->min;
                hi = f->max;
        } else {
                r = parse_bound(f, &p, end, item, len, "value", &lo, err, errlen);
                if (r < 0)
                        return r;
                hi = lo;
                if (p < end && *p == '-') {
                        p++;
                        r = parse_bound(f, &p, end, item, len, "range", &hi, err, errlen);
                        if (r < 0)
                                return r;
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

#define NICKNAMES "@yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly"

/* The five fields that the @ form word[0..len) stands for; NULL with err saying why. */
static const char *nickname_fields(const char *word, int len, char *err, size_t errlen)
{
        for (size_t i = 0; i < sizeof(nicknames) / sizeof(nicknames[0]); i++)
                if ((size_t)len == strlen(nicknames[i].name) &&
                    memcmp(word, nicknames[i].name, len) == 0)
                        return nicknames[i].fields;
        if (len == 7 && memcmp(word, "@reboot", 7) == 0)
                snprintf(err, errlen,
                         "@reboot is not supported: a recurring job needs times (five fields, "
                         "or " NICKNAMES ")");
        else
                snprintf(err, errlen, "unknown \"%.*s\" (five fields, or " NICKNAMES ")", len,
                         word);
        return NULL;
}

int cron_parse(const char *expr, struct cron *ret, char *err, size_t errlen)
{
        const char *start[5], *p = expr, *nickname;
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
        if (n > 0 && start[0][0] == '@') {
                if (n > 1) {
                        snprintf(err, errlen, "%.*s stands alone, got %d fields", len[0], start[0],
                                 n);
                        return -EINVAL;
                }
                nickname = nickname_fields(start[0], len[0], err, errlen);
                return nickname ? cron_parse(nickname, ret, err, errlen) : -EINVAL;
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
        /* As Vixie cron and cronie decide it: by the field's first character, not its set
         * ("*\/2" is a star, "1-31" is not). */
        c.days_star = start[2][0] == '*';
        c.weekdays_star = start[4][0] == '*';
        *ret = c;
        return 0;
}

struct wall {
        int year, month, day, hour, minute; /* month 1..12 */
};

#define LAST_YEAR 9999

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

/* The wall time of a count of seconds on the wall clock (as if UTC), to the minute. */
static bool wall_from_seconds(int64_t s, struct wall *ret)
{
        time_t tt = (time_t)s;
        struct tm tm;

        if (!gmtime_r(&tt, &tm) || tm.tm_year > LAST_YEAR - 1900)
                return false;
        *ret = (struct wall){tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min};
        return true;
}

/* Where a wall time fires: `t`; for one that a change of offset skipped, also the wall time
 * where the skipped span ends (`skip_end`) and its length (`gap`), else both 0. */
struct instant {
        int64_t t, skip_end, gap;
};

/* The instant of a change of offset between lo and hi (hi - lo at most two days), the offset at
 * lo being `before`: the first second whose offset is another. */
static int64_t change_between(int64_t lo, int64_t hi, long before)
{
        int64_t mid;

        while (hi - lo > 1) {
                mid = lo + (hi - lo) / 2;
                if (utc_offset(mid) == before)
                        lo = mid;
                else
                        hi = mid;
        }
        return hi;
}

/* The instant of a wall time, as Python's zoneinfo reads it with fold=0: before a change of
 * offset, the old offset holds for wall times up to the change's instant plus the larger of the
 * two offsets. So a repeated wall time is its first occurrence, and a skipped one is shifted by
 * the change (02:30 in a skipped 02:00-03:00 is 03:30 after it). Offsets change at most once in
 * a day here, as they do in every zone of today's tz database. */
static struct instant wall_to_instant(const struct wall *w)
{
        int64_t s = wall_seconds(w), change;
        long before = utc_offset(s - 86400), after = utc_offset(s + 86400);

        if (before == after)
                return (struct instant){s - before, 0, 0};
        change = change_between(s - 86400, s + 86400, before);
        if (s < change + before)
                return (struct instant){s - before, 0, 0};
        if (before < after && s < change + after)
                return (struct instant){s - before, change + after, after - before};
        return (struct instant){s - after, 0, 0};
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

/* The first wall time to look at for a fire time after `after` (`first` is after + 60): the
 * minute after it; but within a gap's length after a change that skipped wall times, the first
 * skipped one still to fire after `after` (skipped 02:15 fires at 03:15 after the change, which
 * is after 03:01). */
static bool first_wall(time_t after, time_t first, struct wall *ret)
{
        int64_t change, s;
        long before;
        struct tm tm;

        if (!localtime_r(&first, &tm) || tm.tm_year > LAST_YEAR - 1900)
                return false;
        before = utc_offset((int64_t)after - 86400);
        if (before < tm.tm_gmtoff) {
                change = change_between((int64_t)after - 86400, first, before);
                if (after < change + (tm.tm_gmtoff - before)) {
                        /* The next minute of the wall clock before the change. */
                        s = (int64_t)after + before;
                        return wall_from_seconds(s - (s % 60 + 60) % 60 + 60, ret);
                }
        }
        *ret = (struct wall){tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min};
        return true;
}

time_t cron_next(const struct cron *c, time_t after)
{
        int64_t limit, best = -1;
        struct instant in;
        struct wall w;
        time_t first;

        if (__builtin_add_overflow(after, 60, &first) || !first_wall(after, first, &w))
                return -1;
        limit = wall_seconds(&w) + FIVE_YEARS;
        while (wall_seconds(&w) <= limit) {
                if (!(c->months & 1u << w.month)) {
                        next_month(&w);
                } else if (!day_matches(c, &w)) {
                        next_day(&w);
                } else if (!(c->hours & UINT32_C(1) << w.hour)) {
                        next_hour(&w);
                } else if (!(c->minutes & UINT64_C(1) << w.minute)) {
                        next_minute(&w);
                } else if ((in = wall_to_instant(&w)).t <= after) {
                        next_minute(&w);
                } else if (!in.skip_end || best >= 0) {
                        /* Wall times that exist fire in their order: the first is the next. */
                        return (time_t)(best >= 0 && best < in.t ? best : in.t);
                } else {
                        /* A skipped wall time fires shifted by the change, among the wall
                         * times after the gap: one of those before its shift fires first. The
                         * skipped ones after it fire after it. */
                        best = in.t;
                        limit = wall_seconds(&w) + in.gap - 60;
                        if (!wall_from_seconds(in.skip_end, &w))
                                break;
                }
        }
        return (time_t)best;
}
