/* SPDX-License-Identifier: MIT */
/* slowctl's values for people: times, durations, sizes, colours, and the times people give. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format.h"
#include "run-suite.h"

static char buf[FORMAT_MAX];

static void in_zone(const char *tz)
{
        ck_assert_int_eq(setenv("TZ", tz, 1), 0);
        tzset();
}

START_TEST(times_are_local_to_the_second)
{
        in_zone("UTC");
        ck_assert_str_eq(format_time(1796373312.87, buf, sizeof(buf)), "2026-12-04 08:35:12");
        in_zone("Europe/Berlin");
        ck_assert_str_eq(format_time(1796373312.87, buf, sizeof(buf)), "2026-12-04 09:35:12");
        ck_assert_str_eq(format_time(0, buf, sizeof(buf)), "-");
}
END_TEST

START_TEST(durations_take_the_unit_that_reads_best)
{
        static const struct {
                double seconds;
                const char *text;
        } cases[] = {
            {0, "0ms"},         {0.85, "850ms"},  {0.9994, "999ms"}, {0.9996, "1.0s"},
            {12.34, "12.3s"},   {59.94, "59.9s"}, {59.96, "1m00s"},  {184, "3m04s"},
            {3599.4, "59m59s"}, {7500, "2h05m"},  {86399, "23h59m"}, {273600, "3d04h"},
            {-1, "-"},
        };
        size_t i;

        for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
                ck_assert_str_eq(format_duration(cases[i].seconds, buf, sizeof(buf)),
                                 cases[i].text);
}
END_TEST

START_TEST(sizes_are_binary_units_whole_or_to_a_tenth)
{
        ck_assert_str_eq(format_size(0, buf, sizeof(buf)), "0 B");
        ck_assert_str_eq(format_size(1023, buf, sizeof(buf)), "1023 B");
        ck_assert_str_eq(format_size(1024, buf, sizeof(buf)), "1 KiB");
        ck_assert_str_eq(format_size(1536, buf, sizeof(buf)), "1.5 KiB");
        ck_assert_str_eq(format_size(16777216, buf, sizeof(buf)), "16 MiB");
        ck_assert_str_eq(format_size(1610612736, buf, sizeof(buf)), "1.5 GiB");
        ck_assert_str_eq(format_size(-1, buf, sizeof(buf)), "-");
}
END_TEST

START_TEST(outcomes_that_went_wrong_are_red_and_success_green)
{
        ck_assert_str_eq(format_outcome_colour("failed"), "\033[31m");
        ck_assert_str_eq(format_outcome_colour("killed"), "\033[31m");
        ck_assert_str_eq(format_outcome_colour("timed-out"), "\033[31m");
        ck_assert_str_eq(format_outcome_colour("succeeded"), "\033[32m");
        ck_assert_ptr_null(format_outcome_colour("cancelled"));
        ck_assert_ptr_null(format_outcome_colour("interrupted"));
}
END_TEST

START_TEST(no_colour_where_no_color_is_set_or_not_a_terminal)
{
        ck_assert_int_eq(unsetenv("NO_COLOR"), 0);
        ck_assert(!format_colour_wanted(-1)); /* not a terminal */
        ck_assert_int_eq(setenv("NO_COLOR", "1", 1), 0);
        ck_assert(!format_colour_wanted(-1));
}
END_TEST

START_TEST(since_takes_a_duration_back_from_now)
{
        double t;

        ck_assert_int_eq(format_parse_since("90s", 100000, &t), 0);
        ck_assert_double_eq(t, 100000 - 90);
        ck_assert_int_eq(format_parse_since("30m", 100000, &t), 0);
        ck_assert_double_eq(t, 100000 - 1800);
        ck_assert_int_eq(format_parse_since("2h", 100000, &t), 0);
        ck_assert_double_eq(t, 100000 - 7200);
        ck_assert_int_eq(format_parse_since("1.5d", 1000000, &t), 0);
        ck_assert_double_eq(t, 1000000 - 129600);
        ck_assert_int_eq(format_parse_since("1w", 1000000, &t), 0);
        ck_assert_double_eq(t, 1000000 - 604800);
}
END_TEST

START_TEST(since_takes_a_local_date_and_time)
{
        double t;

        in_zone("UTC");
        ck_assert_int_eq(format_parse_since("2026-12-04 09:00", 0, &t), 0);
        ck_assert_double_eq(t, 1796374800);
        ck_assert_int_eq(format_parse_since("2026-12-04 09:00:30", 0, &t), 0);
        ck_assert_double_eq(t, 1796374830);
        ck_assert_int_eq(format_parse_since("2026-12-04", 0, &t), 0);
        ck_assert_double_eq(t, 1796342400);
        in_zone("Europe/Berlin");
        ck_assert_int_eq(format_parse_since("2026-12-04 10:00", 0, &t), 0);
        ck_assert_double_eq(t, 1796374800);
}
END_TEST

START_TEST(since_refuses_what_it_cannot_read)
{
        static const char *const bad[] = {"",          "2",      "2x",           "h",
                                          "-2h",       "2h ago", "2026-12-04 9", "2026-13-04",
                                          "yesterday", "inf",    "nanh"};
        double t = 7;
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_msg(format_parse_since(bad[i], 1000, &t) == -EINVAL, "%s", bad[i]);
                ck_assert_double_eq(t, 7);
        }
}
END_TEST

int main(void)
{
        Suite *s = suite_create("format");
        TCase *tc = tcase_create("format");

        tcase_add_test(tc, times_are_local_to_the_second);
        tcase_add_test(tc, durations_take_the_unit_that_reads_best);
        tcase_add_test(tc, sizes_are_binary_units_whole_or_to_a_tenth);
        tcase_add_test(tc, outcomes_that_went_wrong_are_red_and_success_green);
        tcase_add_test(tc, no_colour_where_no_color_is_set_or_not_a_terminal);
        tcase_add_test(tc, since_takes_a_duration_back_from_now);
        tcase_add_test(tc, since_takes_a_local_date_and_time);
        tcase_add_test(tc, since_refuses_what_it_cannot_read);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
