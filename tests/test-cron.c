/* SPDX-License-Identifier: MIT */
/*
 * daemon/util/cron.c: what cron_parse refuses and why, next fire times checked by hand, and fire
 * times held against an oracle of this file's own: the real clock walked a minute at a time in a
 * real zone, each minute's wall time put to a predicate written by hand for the expression (so
 * neither cron.c's parser nor its search is in the oracle).
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/cron.h"
#include "run-suite.h"

static void refused(const char *expr, const char *message)
{
        char err[256] = "";
        struct cron c;

        ck_assert_msg(cron_parse(expr, &c, err, sizeof(err)) == -EINVAL, "\"%s\" parsed", expr);
        ck_assert_str_eq(err, message);
}

static time_t next(const char *expr, time_t after)
{
        char err[256];
        struct cron c;

        ck_assert_msg(cron_parse(expr, &c, err, sizeof(err)) == 0, "\"%s\": %s", expr, err);
        return cron_next(&c, after);
}

static void in_zone(const char *tz)
{
        ck_assert_int_eq(setenv("TZ", tz, 1), 0);
        tzset();
}

START_TEST(each_field_out_of_range)
{
        refused("60 * * * *", "minute: 60 is out of range 0-59");
        refused("* 24 * * *", "hour: 24 is out of range 0-23");
        refused("* * 32 * *", "day-of-month: 32 is out of range 1-31");
        refused("* * 0 * *", "day-of-month: 0 is out of range 1-31");
        refused("* * * 13 *", "month: 13 is out of range 1-12");
        refused("* * * 0 *", "month: 0 is out of range 1-12");
        refused("* * * * 8", "day-of-week: 8 is out of range 0-7");
        refused("1-99999999999 * * * *", "minute: 99999999999 is out of range 0-59");
}
END_TEST

START_TEST(bad_steps_and_ranges)
{
        refused("*/0 * * * *", "minute: bad step \"*/0\"");
        refused("* 1-5/0 * * *", "hour: bad step \"1-5/0\"");
        refused("* * */ * *", "day-of-month: bad step \"*/\"");
        refused("* * * */x *", "month: bad step \"*/x\"");
        refused("* * * * */2/2", "day-of-week: bad step \"*/2/2\"");
        refused("5-2 * * * *", "minute: bad range \"5-2\"");
        refused("1- * * * *", "minute: bad range \"1-\"");
}
END_TEST

START_TEST(empty_list_items)
{
        refused("1,,2 * * * *", "minute: empty list item");
        refused("* 1, * * *", "hour: empty list item");
        refused("* * ,1 * *", "day-of-month: empty list item");
}
END_TEST

START_TEST(wrong_field_count)
{
        refused("", "expected 5 fields (minute hour day-of-month month day-of-week), got 0");
        refused("* * * *", "expected 5 fields (minute hour day-of-month month day-of-week), got 4");
        refused("* * * * * *",
                "expected 5 fields (minute hour day-of-month month day-of-week), got 6");
}
END_TEST

START_TEST(junk)
{
        refused("x * * * *", "minute: bad value \"x\"");
        refused("* -1 * * *", "hour: bad value \"-1\"");
        refused("* * 1x * *", "day-of-month: bad value \"1x\"");
        refused("* * * foo *", "month: unknown name \"foo\" (jan-dec)");
        refused("* * * * *-5", "day-of-week: bad value \"*-5\"");
}
END_TEST

START_TEST(fields_as_bit_sets)
{
        char err[256];
        struct cron c;

        ck_assert_int_eq(cron_parse(" 0,30 9-17/4 */10 2/5 5-7\t", &c, err, sizeof(err)), 0);
        ck_assert_uint_eq(c.minutes, UINT64_C(1) | UINT64_C(1) << 30);
        ck_assert_uint_eq(c.hours, 1u << 9 | 1u << 13 | 1u << 17);
        ck_assert_uint_eq(c.days, 1u << 1 | 1u << 11 | 1u << 21 | 1u << 31);
        ck_assert_uint_eq(c.months, 1u << 2 | 1u << 7 | 1u << 12);
        ck_assert_uint_eq(c.weekdays, 1u << 0 | 1u << 5 | 1u << 6);
        ck_assert(c.days_star && !c.weekdays_star);
        ck_assert_int_eq(cron_parse("* * 1-31 * 0-6", &c, err, sizeof(err)), 0);
        ck_assert(!c.days_star && !c.weekdays_star);
}
END_TEST

START_TEST(next_times_in_utc)
{
        const time_t new_year = 1767225600; /* 2026-01-01 00:00 UTC, a Thursday */

        in_zone("UTC");
        ck_assert_int_eq(next("*/15 * * * *", new_year), 1767226500);
        ck_assert_int_eq(next("*/15 * * * *", new_year + 1), 1767226500);
        ck_assert_int_eq(next("0 0 29 2 *", new_year), 1835395200);    /* 2028-02-29 */
        ck_assert_int_eq(next("0 12 13 * 5", new_year), 1767355200);   /* Friday the 2nd */
        ck_assert_int_eq(next("0 0 * * 7", new_year), 1767484800);     /* Sunday the 4th */
        ck_assert_int_eq(next("0 0 * * 1", new_year), 1767571200);     /* Monday the 5th */
        ck_assert_int_eq(next("0 0 1-31 * 1", new_year), 1767312000);  /* any day: the 2nd */
        ck_assert_int_eq(next("0 0 */2 * 1", new_year), 1767571200);   /* an odd Monday */
        ck_assert_int_eq(next("59 23 31 12 *", new_year), 1798761540); /* 2026-12-31 */
        ck_assert_int_eq(next("0 0 30 2 *", new_year), -1);
        ck_assert_int_eq(next("* * * * *", INT64_MAX), -1);
        ck_assert_int_eq(next("* * * * *", INT64_C(1) << 50), -1); /* in the year 35680317 */
}
END_TEST

START_TEST(next_times_across_dst)
{
        in_zone("Europe/Berlin");
        /* 2026-03-28 22:00 CET: 02:30 is skipped the next night, and fires at 03:30 CEST. */
        ck_assert_int_eq(next("30 2 * * *", 1774731600), 1774747800);
        /* 02:40 CEST on 2026-10-25, before the clocks go back: next is 03:00 CET. */
        ck_assert_int_eq(next("*/20 * * * *", 1792888800), 1792893600);
        /* 02:10 CET, in the repeated hour: 02:20 and 02:40 fired already, at CEST. */
        ck_assert_int_eq(next("*/20 * * * *", 1792890600), 1792893600);
        in_zone("UTC");
}
END_TEST

START_TEST(day_fields_are_stars_by_their_first_character)
{
        static const struct {
                const char *expr;
                bool days_star, weekdays_star;
        } cases[] = {
            {"0 0 * * 1", true, false},        {"0 0 */2 * 1", true, false},
            {"0 0 *,5 * 1", true, false},      {"0 0 5,* * 1", false, false},
            {"0 0 1-31 * 1", false, false},    {"0 0 13 * */7", false, true},
            {"0 0 1 * sun-sat", false, false}, {"@weekly", true, false},
            {"@yearly", false, true},
        };
        char err[256];
        struct cron c;

        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                ck_assert_int_eq(cron_parse(cases[i].expr, &c, err, sizeof(err)), 0);
                ck_assert_msg(c.days_star == cases[i].days_star &&
                                  c.weekdays_star == cases[i].weekdays_star,
                              "\"%s\": stars %d %d", cases[i].expr, c.days_star, c.weekdays_star);
        }
}
END_TEST

START_TEST(names_in_lists_and_ranges_in_any_case)
{
        char err[256];
        struct cron c;

        ck_assert_int_eq(cron_parse("0 0 * jan,JUL,Dec mon-FRI", &c, err, sizeof(err)), 0);
        ck_assert_uint_eq(c.months, 1u << 1 | 1u << 7 | 1u << 12);
        ck_assert_uint_eq(c.weekdays, 0x3e);
        ck_assert_int_eq(cron_parse("0 0 1 Feb-apr/2,nov sun,Sat", &c, err, sizeof(err)), 0);
        ck_assert_uint_eq(c.months, 1u << 2 | 1u << 4 | 1u << 11);
        ck_assert_uint_eq(c.weekdays, 1u << 0 | 1u << 6);
        ck_assert_int_eq(cron_parse("0 0 * 3,oct/2 tue/2,5", &c, err, sizeof(err)), 0);
        ck_assert_uint_eq(c.months, 1u << 3 | 1u << 10 | 1u << 12);
        ck_assert_uint_eq(c.weekdays, 1u << 2 | 1u << 4 | 1u << 5 | 1u << 6);
        ck_assert_int_eq(cron_parse("0 0 * * wed-7", &c, err, sizeof(err)), 0);
        ck_assert_uint_eq(c.weekdays, 1u << 0 | 1u << 3 | 1u << 4 | 1u << 5 | 1u << 6);
}
END_TEST

START_TEST(bad_names)
{
        refused("* * * * foo", "day-of-week: unknown name \"foo\" (sun-sat)");
        refused("* * * * monday", "day-of-week: unknown name \"monday\" (sun-sat)");
        refused("* * * * mon-", "day-of-week: bad range \"mon-\"");
        refused("* * * * mon-xyz", "day-of-week: unknown name \"xyz\" (sun-sat)");
        refused("* * * * fri-mon", "day-of-week: bad range \"fri-mon\"");
        refused("* * * * */mon", "day-of-week: bad step \"*/mon\"");
        refused("* * * * 1mon", "day-of-week: bad value \"1mon\"");
        refused("* * * mon *", "month: unknown name \"mon\" (jan-dec)");
        refused("* * * jan,,feb *", "month: empty list item");
        refused("* * jan * *", "day-of-month: bad value \"jan\"");
        refused("jan * * * *", "minute: bad value \"jan\"");
}
END_TEST

START_TEST(at_forms_are_their_five_fields)
{
        static const char *const forms[][2] = {
            {"@yearly", "0 0 1 1 *"}, {"@annually", "0 0 1 1 *"},  {"@monthly", "0 0 1 * *"},
            {"@weekly", "0 0 * * 0"}, {"@daily", "0 0 * * *"},     {"@midnight", "0 0 * * *"},
            {"@hourly", "0 * * * *"}, {" \t@daily ", "0 0 * * *"},
        };
        char err[256];
        struct cron a, b;

        for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
                memset(&a, 0, sizeof(a));
                memset(&b, 0, sizeof(b));
                ck_assert_msg(cron_parse(forms[i][0], &a, err, sizeof(err)) == 0, "%s: %s",
                              forms[i][0], err);
                ck_assert_int_eq(cron_parse(forms[i][1], &b, err, sizeof(err)), 0);
                ck_assert_msg(memcmp(&a, &b, sizeof(a)) == 0, "%s", forms[i][0]);
        }
}
END_TEST

START_TEST(at_forms_refused)
{
        refused("@reboot", "@reboot is not supported: a recurring job needs times (five fields, or "
                           "@yearly, @annually, @monthly, @weekly, @daily, @midnight or @hourly)");
        refused("@Daily", "unknown \"@Daily\" (five fields, or @yearly, @annually, @monthly, "
                          "@weekly, @daily, @midnight or @hourly)");
        refused("@every", "unknown \"@every\" (five fields, or @yearly, @annually, @monthly, "
                          "@weekly, @daily, @midnight or @hourly)");
        refused("@daily 5", "@daily stands alone, got 2 fields");
        refused("@", "unknown \"@\" (five fields, or @yearly, @annually, @monthly, @weekly, "
                     "@daily, @midnight or @hourly)");
        refused("0 @daily * * *", "hour: bad value \"@daily\"");
}
END_TEST

/* The oracle. A wall time's predicate, as the expression means it, written by hand. */
typedef bool (*wall_match)(const struct tm *tm);

struct fires {
        time_t t[20000];
        size_t n;
};

static int compare_times(const void *a, const void *b)
{
        time_t x = *(const time_t *)a, y = *(const time_t *)b;

        return (x > y) - (x < y);
}

/* The wall clock's reading at t, as seconds as if it were UTC (its offset added). */
static time_t wall_of(time_t t, struct tm *tm)
{
        if (!localtime_r(&t, tm))
                ck_abort_msg("localtime_r(%lld) failed", (long long)t);
        return t + tm->tm_gmtoff;
}

static void add_fire(struct fires *f, time_t t)
{
        if (f->n == sizeof(f->t) / sizeof(f->t[0]))
                ck_abort_msg("more than %zu fire times", f->n);
        f->t[f->n++] = t;
}

/* Every fire time in [from, to): the real clock a minute at a time. A minute's wall time fires
 * when it matches and the clock has not shown it before (a repeated hour fires in its first
 * pass only); wall times the clock jumps over fire shifted by the jump: at the instant the offset
 * before it gives them, which is the jump's instant plus their distance from its start. Then
 * sorted, and an instant reached twice is one fire time. */
static void oracle(wall_match match, time_t from, time_t to, struct fires *f)
{
        time_t t, wall, prev = 0, shown = 0, s;
        struct tm tm;
        size_t kept = 0;

        f->n = 0;
        for (t = from - from % 60; t < to; t += 60) {
                wall = wall_of(t, &tm);
                for (s = prev + 60; prev && s < wall; s += 60) {
                        struct tm skipped;

                        if (gmtime_r(&s, &skipped) && match(&skipped))
                                add_fire(f, t - 60 + (s - prev));
                }
                if (wall > shown && match(&tm))
                        add_fire(f, t);
                if (wall > shown)
                        shown = wall;
                prev = wall;
        }
        qsort(f->t, f->n, sizeof(f->t[0]), compare_times);
        for (size_t i = 0; i < f->n; i++)
                if (kept == 0 || f->t[i] != f->t[kept - 1])
                        f->t[kept++] = f->t[i];
        f->n = kept;
}

/* The oracle's next fire time after `after`, or `end` when it knows none before end. */
static time_t oracle_next(const struct fires *f, time_t after, time_t end)
{
        size_t lo = 0, hi = f->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;

                if (f->t[mid] <= after)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < f->n ? f->t[lo] : end;
}

static void check_next(const struct cron *c, const char *expr, const struct fires *f, time_t after,
                       time_t end)
{
        time_t want = oracle_next(f, after, end), got = cron_next(c, after);
        char a[64], w[64], g[64];
        struct tm tm;

        if (want == end && (got > end || got == -1))
                return;
        if (got == want)
                return;
        strftime(a, sizeof(a), "%F %T %Z", localtime_r(&after, &tm));
        strftime(w, sizeof(w), "%F %T %Z", localtime_r(&want, &tm));
        strftime(g, sizeof(g), "%F %T %Z", localtime_r(&got, &tm));
        ck_abort_msg("\"%s\" after %s (%lld): oracle %s (%lld), cron_next %s (%lld)", expr, a,
                     (long long)after, w, (long long)want, g, (long long)got);
}

/* cron_next against the oracle for every `after` in [from, to): every `step` seconds, and at
 * each fire time and the seconds either side; and the chain of fire times from `from`, each
 * counted from the one before as the daemon does, is the oracle's, none lost or doubled. The
 * oracle looks two days beyond either end. */
static void against_oracle(const char *expr, wall_match match, time_t from, time_t to, time_t step)
{
        static struct fires f;
        time_t end = to + 2 * 86400, t;
        char err[256];
        struct cron c;
        size_t i;

        ck_assert_msg(cron_parse(expr, &c, err, sizeof(err)) == 0, "\"%s\": %s", expr, err);
        oracle(match, from - 2 * 86400, end, &f);
        for (t = from; t < to; t += step) {
                check_next(&c, expr, &f, t, end);
                check_next(&c, expr, &f, t + 37, end);
        }
        for (i = 0; i < f.n; i++) {
                check_next(&c, expr, &f, f.t[i] - 1, end);
                check_next(&c, expr, &f, f.t[i], end);
                check_next(&c, expr, &f, f.t[i] + 1, end);
        }
        i = 0;
        while (i < f.n && f.t[i] <= from)
                i++;
        for (t = cron_next(&c, from); t != -1 && t < to; t = cron_next(&c, t), i++)
                if (i == f.n || t != f.t[i])
                        ck_abort_msg("\"%s\": fire time %lld is not the oracle's", expr,
                                     (long long)t);
        ck_assert_msg(i == f.n || f.t[i] >= to, "\"%s\": the chain lost %lld", expr,
                      (long long)f.t[i]);
}

/* The predicates. */
static bool at(const struct tm *tm, int hour, int minute)
{
        return tm->tm_hour == hour && tm->tm_min == minute;
}
static bool odd_mondays(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_mday % 2 == 1 && tm->tm_wday == 1;
}
static bool midnights(const struct tm *tm)
{
        return at(tm, 0, 0);
}
static bool mondays(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_wday == 1;
}
static bool thirteenths_or_fridays(const struct tm *tm)
{
        return at(tm, 0, 0) && (tm->tm_mday == 13 || tm->tm_wday == 5);
}
static bool first_sundays(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_mday <= 7 && tm->tm_wday == 0;
}
static bool tuesdays_on_1_11_21_31(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_mday % 10 == 1 && tm->tm_wday == 2;
}
static bool fifteenths_or_mondays(const struct tm *tm)
{
        return at(tm, 0, 0) && (tm->tm_mday == 15 || tm->tm_wday == 1);
}
static bool weekdays_of_january_and_march(const struct tm *tm)
{
        return at(tm, 9, 0) && (tm->tm_mon == 0 || tm->tm_mon == 2) && tm->tm_wday >= 1 &&
               tm->tm_wday <= 5;
}
static bool weekends(const struct tm *tm)
{
        return at(tm, 8, 30) && (tm->tm_wday == 0 || tm->tm_wday == 6);
}
static bool first_of_february_and_april(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_mday == 1 && (tm->tm_mon == 1 || tm->tm_mon == 3);
}
static bool sundays_wednesdays_saturdays(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_wday % 3 == 0;
}
static bool new_years(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_mday == 1 && tm->tm_mon == 0;
}
static bool firsts(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_mday == 1;
}
static bool sundays(const struct tm *tm)
{
        return at(tm, 0, 0) && tm->tm_wday == 0;
}
static bool hours(const struct tm *tm)
{
        return tm->tm_min == 0;
}

static const struct {
        const char *expr;
        wall_match match;
} day_rules[] = {
    {"0 0 */2 * 1", odd_mondays},
    {"0 0 * * 1", mondays},
    {"0 0 *,5 * 1", mondays},
    {"0 0 1-31 * 1", midnights},
    {"0 0 5,* * 1", midnights},
    {"0 0 1-31 * 0-6", midnights},
    {"0 0 13 * 5", thirteenths_or_fridays},
    {"0 0 1-7 * */7", first_sundays},
    {"0 0 */10 * 2", tuesdays_on_1_11_21_31},
    {"0 0 15 * Mon", fifteenths_or_mondays},
    {"0 9 * jan,Mar mon-FRI", weekdays_of_january_and_march},
    {"30 8 * * SAT,sun", weekends},
    {"0 0 1 FEB-apr/2 *", first_of_february_and_april},
    {"0 0 * * sun-sat/3", sundays_wednesdays_saturdays},
    {"@yearly", new_years},
    {"@annually", new_years},
    {"@monthly", firsts},
    {"@weekly", sundays},
    {"@daily", midnights},
    {"@midnight", midnights},
    {"@hourly", hours},
};

/* December 2027 to March 2028 in Berlin: a new year, a leap day, the clocks going forward. */
START_TEST(day_rules_and_names_against_the_oracle)
{
        in_zone("Europe/Berlin");
        against_oracle(day_rules[_i].expr, day_rules[_i].match, 1827619200, 1838160000,
                       86400 / 4 + 60);
        in_zone("UTC");
}
END_TEST

static bool quarters_of_2(const struct tm *tm)
{
        return tm->tm_hour == 2 && tm->tm_min % 15 == 0;
}
static bool at_2_30(const struct tm *tm)
{
        return at(tm, 2, 30);
}
static bool at_2_and_3(const struct tm *tm)
{
        return tm->tm_min == 0 && (tm->tm_hour == 2 || tm->tm_hour == 3);
}
static bool every_20_minutes(const struct tm *tm)
{
        return tm->tm_min % 20 == 0;
}
static bool tens_of_2_and_3(const struct tm *tm)
{
        return tm->tm_min % 10 == 0 && (tm->tm_hour == 2 || tm->tm_hour == 3);
}
static bool every_minute_of_2(const struct tm *tm)
{
        return tm->tm_hour == 2;
}
static bool halves_of_1(const struct tm *tm)
{
        return tm->tm_hour == 1 && tm->tm_min % 30 == 0;
}
static bool quarter_to_and_past_1_to_3(const struct tm *tm)
{
        return (tm->tm_min == 15 || tm->tm_min == 45) && tm->tm_hour >= 1 && tm->tm_hour <= 3;
}
static bool at_1_59(const struct tm *tm)
{
        return at(tm, 1, 59);
}
static bool at_3(const struct tm *tm)
{
        return at(tm, 3, 0);
}
static bool sundays_at_2_05(const struct tm *tm)
{
        return at(tm, 2, 5) && tm->tm_wday == 0;
}
static bool every_minute(const struct tm *tm)
{
        (void)tm;
        return true;
}

static const struct {
        const char *expr;
        wall_match match;
} dst_rules[] = {
    {"*/15 2 * * *", quarters_of_2},
    {"30 2 * * *", at_2_30},
    {"0 2,3 * * *", at_2_and_3},
    {"*/20 * * * *", every_20_minutes},
    {"*/10 2-3 * * *", tens_of_2_and_3},
    {"* 2 * * *", every_minute_of_2},
    {"*/30 1 * * *", halves_of_1},
    {"15,45 1-3 * * *", quarter_to_and_past_1_to_3},
    {"59 1 * * *", at_1_59},
    {"0 3 * * *", at_3},
    {"5 2 * * sun", sundays_at_2_05},
    {"@hourly", hours},
    {"* * * * *", every_minute},
    {"@daily", midnights},
    {"@weekly", sundays},
};

/* Santiago's clocks change at midnight: on 2026-09-06 a Sunday starts at 01:00. */
static const char *const dst_zones[] = {"Europe/Berlin", "America/New_York", "Australia/Lord_Howe",
                                        "America/Santiago"};

/* The instants in 2026 at which the zone's offset changes. */
static size_t changes_in_2026(time_t *ret, size_t max)
{
        time_t t = 1767225600, end = 1798761600, lo, hi, mid;
        struct tm tm;
        long offset;
        size_t n = 0;

        ck_assert_ptr_nonnull(localtime_r(&t, &tm));
        for (offset = tm.tm_gmtoff; t < end; t += 3600) {
                if (localtime_r(&t, &tm) && tm.tm_gmtoff == offset)
                        continue;
                for (lo = t - 3600, hi = t; hi - lo > 1;) {
                        mid = lo + (hi - lo) / 2;
                        if (localtime_r(&mid, &tm) && tm.tm_gmtoff == offset)
                                lo = mid;
                        else
                                hi = mid;
                }
                ck_assert_uint_lt(n, max);
                ret[n++] = hi;
                ck_assert_ptr_nonnull(localtime_r(&t, &tm));
                offset = tm.tm_gmtoff;
        }
        return n;
}

/* Each zone's spring-forward and fall-back of 2026 (Lord Howe's by half an hour, Santiago's at
 * midnight), every minute from a day before to a day after. */
START_TEST(daylight_saving_changes_against_the_oracle)
{
        size_t zone = (size_t)_i / (sizeof(dst_rules) / sizeof(dst_rules[0]));
        size_t rule = (size_t)_i % (sizeof(dst_rules) / sizeof(dst_rules[0]));
        time_t changes[4];
        size_t n;

        in_zone(dst_zones[zone]);
        n = changes_in_2026(changes, 4);
        ck_assert_uint_eq(n, 2);
        for (size_t i = 0; i < n; i++)
                against_oracle(dst_rules[rule].expr, dst_rules[rule].match, changes[i] - 86400,
                               changes[i] + 86400, 60);
        in_zone("UTC");
}
END_TEST

/* The issue's example: on the night Berlin's clocks go from 02:00 to 03:00, 02:00, 02:15, 02:30
 * and 02:45 each fire once, shifted to 03:00, 03:15, 03:30 and 03:45; then 02:00 the next night. */
START_TEST(each_match_in_a_skipped_hour_fires_shifted)
{
        const time_t change = 1774746000; /* 2026-03-29 01:00 UTC, 03:00 CEST */
        time_t t = change - 3600,
               want[] = {change, change + 900, change + 1800, change + 2700, change + 82800};

        in_zone("Europe/Berlin");
        for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
                t = next("*/15 2 * * *", t);
                ck_assert_int_eq(t, want[i]);
        }
        /* From inside the shifted hour: 03:20 CEST is 02:20 shifted; 02:30 is next. */
        ck_assert_int_eq(next("*/15 2 * * *", change + 1200), change + 1800);
        /* 02:00 shifted is 03:00 itself: one fire time for both. */
        ck_assert_int_eq(next("0 2,3 * * *", change - 60), change);
        ck_assert_int_eq(next("0 2,3 * * *", change), change + 82800);
        in_zone("UTC");
}
END_TEST

static Suite *cron_suite(void)
{
        Suite *s = suite_create("cron");
        TCase *tc = tcase_create("cron");

        tcase_add_test(tc, each_field_out_of_range);
        tcase_add_test(tc, bad_steps_and_ranges);
        tcase_add_test(tc, empty_list_items);
        tcase_add_test(tc, wrong_field_count);
        tcase_add_test(tc, junk);
        tcase_add_test(tc, fields_as_bit_sets);
        tcase_add_test(tc, next_times_in_utc);
        tcase_add_test(tc, next_times_across_dst);
        tcase_add_test(tc, day_fields_are_stars_by_their_first_character);
        tcase_add_test(tc, names_in_lists_and_ranges_in_any_case);
        tcase_add_test(tc, bad_names);
        tcase_add_test(tc, at_forms_are_their_five_fields);
        tcase_add_test(tc, at_forms_refused);
        tcase_add_test(tc, each_match_in_a_skipped_hour_fires_shifted);
        tcase_add_loop_test(tc, day_rules_and_names_against_the_oracle, 0,
                            (int)(sizeof(day_rules) / sizeof(day_rules[0])));
        tcase_add_loop_test(tc, daylight_saving_changes_against_the_oracle, 0,
                            (int)(sizeof(dst_zones) / sizeof(dst_zones[0]) *
                                  (sizeof(dst_rules) / sizeof(dst_rules[0]))));
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(cron_suite());
}
