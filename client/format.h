/* SPDX-License-Identifier: MIT */
/*
 * Values for people: local times, durations, sizes, outcomes in colour on a terminal; and the
 * times people give back ("2h", "2026-12-04 09:00").
 */
#ifndef SLOWCTL_FORMAT_H
#define SLOWCTL_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define FORMAT_MAX 32 /* room for any of the texts below */

/* Unix seconds as local time, "2026-12-04 09:05:12"; "-" for 0 or less (never started). */
const char *format_time(double t, char *buf, size_t len);
/* Seconds as "850ms", "12.3s", "3m04s", "2h05m", "3d04h"; "-" when negative. */
const char *format_duration(double seconds, char *buf, size_t len);
/* Bytes as "512 B", "16 MiB", "1.5 GiB"; "-" when negative. */
const char *format_size(int64_t bytes, char *buf, size_t len);

/* Whether to colour what goes to fd: a terminal, and NO_COLOR unset or empty (no-color.org). */
bool format_colour_wanted(int fd);
/* The escape sequence that colours an outcome (failed, killed, timed-out red, succeeded
 * green), or NULL for one that stays plain. */
const char *format_outcome_colour(const char *outcome);
#define FORMAT_COLOUR_OFF "\033[0m"

/*
 * A point in time from a person: a span back from now ("90s", "30m", "2h", "1d", "1w", "1h30m",
 * fractions allowed: duration_parse's), or a local date and time ("2026-12-04 09:00" or
 * "2026-12-04T09:00", with or without seconds, or a date alone for its midnight). 0 with *ret in
 * Unix seconds, or -EINVAL.
 */
int format_parse_since(const char *s, time_t now, double *ret);

#endif
