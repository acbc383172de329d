/* SPDX-License-Identifier: MIT */
/* daemon/util/cron.c: what cron_parse refuses and why, and next fire times checked by hand. */
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
        refused("* * * jan *", "month: bad value \"jan\"");
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
        ck_assert(!c.days_star && !c.weekdays_star);
        ck_assert_int_eq(cron_parse("* * 1-31 * 0-6", &c, err, sizeof(err)), 0);
        ck_assert(c.days_star && c.weekdays_star);
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
        ck_assert_int_eq(next("0 0 1-31 * 1", new_year), 1767571200);  /* Monday the 5th */
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
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(cron_suite());
}
