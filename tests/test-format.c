/* SPDX-License-Identifier: MIT */
/* slowctl's values for people: times, durations, sizes, colours, and the times and spans people
 * give. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "duration.h"
#include "format.h"
#include "tail.h"
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
        /* The one reader of spans: seconds without a unit, and units together. */
        ck_assert_int_eq(format_parse_since("90", 100000, &t), 0);
        ck_assert_double_eq(t, 100000 - 90);
        ck_assert_int_eq(format_parse_since("1h30m", 100000, &t), 0);
        ck_assert_double_eq(t, 100000 - 5400);
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
        ck_assert_int_eq(format_parse_since("2026-12-04T09:00", 0, &t), 0);
        ck_assert_double_eq(t, 1796374800);
        in_zone("Europe/Berlin");
        ck_assert_int_eq(format_parse_since("2026-12-04 10:00", 0, &t), 0);
        ck_assert_double_eq(t, 1796374800);
}
END_TEST

START_TEST(since_refuses_what_it_cannot_read)
{
        static const char *const bad[] = {"",          "2 h",    "2x",           "h",
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

START_TEST(durations_are_seconds_or_numbers_with_units)
{
        static const struct {
                const char *text;
                double seconds;
        } good[] = {
            {"90", 90},   {"90s", 90},      {"2m", 120},    {"1h30m", 5400},   {"1d", 86400},
            {"0.5", 0.5}, {"1.5s", 1.5},    {"1.5h", 5400}, {"1d12h", 129600}, {"1w", 604800},
            {"0", 0},     {"2h0m5s", 7205}, {".5", 0.5},    {"1m30.5s", 90.5},
        };
        double t;

        for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
                t = -1;
                ck_assert_msg(duration_parse(good[i].text, &t) == 0, "%s", good[i].text);
                ck_assert_msg(t == good[i].seconds, "%s: %g", good[i].text, t);
        }
}
END_TEST

START_TEST(durations_refuse_what_they_cannot_read)
{
        /* Signs, spaces, exponents, hex, units out of order or twice, a number left without its
         * unit after one with it, clock times and dates (spans only here). */
        static const char *const bad[] = {
            "",      "s",      "-5",  "+5",   " 5",    "5 ",         "5x",   "1h30",
            "30m1h", "1m1m",   "1e3", "inf",  "nan",   "0x10",       "1..5", "1.5.",
            ".",     "1h 30m", "5S",  "soon", "09:00", "2026-12-24",
        };
        double t = 7;

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_msg(duration_parse(bad[i], &t) == -EINVAL, "%s", bad[i]);
                ck_assert_double_eq(t, 7);
        }
        ck_assert_int_eq(
            duration_parse("99999999999999999999999999999999999999999999999999999999999"
                           "9999999999999999999999999999999999999999999999999999999999"
                           "9999999999999999999999999999999999999999999999999999999999"
                           "9999999999999999999999999999999999999999999999999999999999"
                           "9999999999999999999999999999999999999999999999999999999999"
                           "9999999999999999999999999999999999999999999999999999999999",
                           &t),
            -EINVAL);
}
END_TEST

/* 2026-12-04 08:35:12 UTC, 09:35:12 in Berlin. */
#define NOW ((time_t)1796373312)

START_TEST(until_takes_a_span_as_it_is)
{
        double t;

        ck_assert_int_eq(duration_until("2m", NOW, &t), 0);
        ck_assert_double_eq(t, 120);
        ck_assert_int_eq(duration_until("0.5", NOW, &t), 0);
        ck_assert_double_eq(t, 0.5);
}
END_TEST

START_TEST(until_a_time_of_day_is_the_next_one_today_or_tomorrow)
{
        double t;

        in_zone("UTC");
        ck_assert_int_eq(duration_until("09:00", NOW, &t), 0);
        ck_assert_double_eq(t, 24 * 60 + 48); /* today, 24 min 48 s on */
        ck_assert_int_eq(duration_until("08:00", NOW, &t), 0);
        ck_assert_double_eq(t, 86400 - 35 * 60 - 12); /* tomorrow's */
        ck_assert_int_eq(duration_until("08:35:12", NOW, &t), 0);
        ck_assert_double_eq(t, 86400); /* now is not next */
        ck_assert_int_eq(duration_until("08:35:13", NOW, &t), 0);
        ck_assert_double_eq(t, 1);
        in_zone("Europe/Berlin");
        ck_assert_int_eq(duration_until("09:00", NOW, &t), 0);
        ck_assert_double_eq(t, 86400 - 35 * 60 - 12); /* 09:35 there: tomorrow's */
        ck_assert_int_eq(duration_until("10:00", NOW, &t), 0);
        ck_assert_double_eq(t, 24 * 60 + 48);
}
END_TEST

START_TEST(until_a_time_of_day_counts_the_calendar_across_a_dst_change)
{
        double t;

        /* 2026-03-28 12:00 in Berlin, winter time; that night clocks go from 02:00 to 03:00.
         * The next 11:00 is 2026-03-29 11:00 summer time: 22 hours on, not 23. */
        in_zone("Europe/Berlin");
        ck_assert_int_eq(duration_until("11:00", (time_t)1774695600, &t), 0);
        ck_assert_double_eq(t, 1774774800 - 1774695600);
        ck_assert_double_eq(t, 22 * 3600);
}
END_TEST

START_TEST(until_a_local_date_and_time_is_that_moment_and_not_a_past_one)
{
        double t = 7;

        in_zone("UTC");
        ck_assert_int_eq(duration_until("2026-12-24T18:00", NOW, &t), 0);
        ck_assert_double_eq(t, 1798135200 - (double)NOW);
        ck_assert_int_eq(duration_until("2026-12-24 18:00:30", NOW, &t), 0);
        ck_assert_double_eq(t, 1798135230 - (double)NOW);
        in_zone("Europe/Berlin");
        ck_assert_int_eq(duration_until("2026-12-24T19:00", NOW, &t), 0);
        ck_assert_double_eq(t, 1798135200 - (double)NOW);
        t = 7;
        ck_assert_int_eq(duration_until("2026-12-04T09:00", NOW, &t), -ERANGE);
        ck_assert_int_eq(duration_until("2026-12-04T09:35:12", NOW, &t), -ERANGE);
        ck_assert_int_eq(duration_until("2026-12-24T25:00", NOW, &t), -EINVAL);
        ck_assert_int_eq(duration_until("25:00", NOW, &t), -EINVAL);
        ck_assert_int_eq(duration_until("9", NOW, &t), 0); /* seconds */
        ck_assert_int_eq(duration_until("tomorrow", NOW, &t), -EINVAL);
        ck_assert_int_eq(duration_until("-1", NOW, &t), -EINVAL);
}
END_TEST

/* The last lines of a text given piece by piece, as tail -n gives them. */
static const char *tail_of(const char *const *pieces, int64_t lines)
{
        static char out[256];
        struct tail t = {.lines = lines};

        for (; *pieces; pieces++)
                ck_assert_int_eq(tail_add(&t, *pieces, strlen(*pieces)), 0);
        snprintf(out, sizeof(out), "%s", tail_text(&t));
        tail_clear(&t);
        return out;
}

START_TEST(tail_keeps_the_last_lines_across_pieces)
{
        ck_assert_str_eq(tail_of((const char *[]){"a\nb\nc\n", NULL}, 2), "b\nc\n");
        ck_assert_str_eq(tail_of((const char *[]){"a\nb", "\nc", "\nd\n", NULL}, 2), "c\nd\n");
        /* A last line without its newline is a line. */
        ck_assert_str_eq(tail_of((const char *[]){"a\nb\nc", NULL}, 2), "b\nc");
        ck_assert_str_eq(tail_of((const char *[]){"a\n", "b\n", NULL}, 5), "a\nb\n");
        ck_assert_str_eq(tail_of((const char *[]){"a\nb\n", NULL}, 0), "");
        ck_assert_str_eq(tail_of((const char *[]){"\n\n\n", NULL}, 2), "\n\n");
        ck_assert_str_eq(tail_of((const char *[]){NULL}, 3), "");
        ck_assert_str_eq(tail_of((const char *[]){"", "x", NULL}, 1), "x");
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
        tcase_add_test(tc, tail_keeps_the_last_lines_across_pieces);
        tcase_add_test(tc, durations_are_seconds_or_numbers_with_units);
        tcase_add_test(tc, durations_refuse_what_they_cannot_read);
        tcase_add_test(tc, until_takes_a_span_as_it_is);
        tcase_add_test(tc, until_a_time_of_day_is_the_next_one_today_or_tomorrow);
        tcase_add_test(tc, until_a_time_of_day_counts_the_calendar_across_a_dst_change);
        tcase_add_test(tc, until_a_local_date_and_time_is_that_moment_and_not_a_past_one);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
