/* SPDX-License-Identifier: MIT */
/* Values for people, and the times they give. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "duration.h"
#include "format.h"

#define RED   "\033[31m"
#define GREEN "\033[32m"

const char *format_time(double t, char *buf, size_t len)
{
        time_t secs = (time_t)t;
        struct tm tm;

        if (!(t > 0) || !localtime_r(&secs, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm))
                snprintf(buf, len, "-");
        return buf;
}

/* x >= 0, to the nearest integer. */
static long long nearest(double x)
{
        return (long long)(x + 0.5);
}

const char *format_duration(double seconds, char *buf, size_t len)
{
        long long ms, s, tenths;

        if (!(seconds >= 0) || !(seconds < 1e15)) {
                snprintf(buf, len, "-");
                return buf;
        }
        ms = nearest(seconds * 1000);
        s = nearest(seconds);
        tenths = nearest(seconds * 10);
        if (ms < 1000)
                snprintf(buf, len, "%lldms", ms);
        else if (tenths < 600)
                snprintf(buf, len, "%lld.%llds", tenths / 10, tenths % 10);
        else if (s < 3600)
                snprintf(buf, len, "%lldm%02llds", s / 60, s % 60);
        else if (s < 86400)
                snprintf(buf, len, "%lldh%02lldm", s / 3600, s % 3600 / 60);
        else
                snprintf(buf, len, "%lldd%02lldh", s / 86400, s % 86400 / 3600);
        return buf;
}

const char *format_size(int64_t bytes, char *buf, size_t len)
{
        static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
        double v = (double)bytes;
        unsigned u = 0;

        if (bytes < 0) {
                snprintf(buf, len, "-");
                return buf;
        }
        while (u + 1 < sizeof(units) / sizeof(units[0]) && v >= 1024) {
                v /= 1024;
                u++;
        }
        if (v == (double)(int64_t)v || u == 0)
                snprintf(buf, len, "%.0f %s", v, units[u]);
        else
                snprintf(buf, len, "%.1f %s", v, units[u]);
        return buf;
}

bool format_colour_wanted(int fd)
{
        const char *no = getenv("NO_COLOR");

        return (!no || !*no) && isatty(fd);
}

const char *format_outcome_colour(const char *outcome)
{
        if (!outcome)
                return NULL;
        if (strcmp(outcome, "succeeded") == 0)
                return GREEN;
        if (strcmp(outcome, "failed") == 0 || strcmp(outcome, "killed") == 0 ||
            strcmp(outcome, "timed-out") == 0)
                return RED;
        return NULL;
}

int format_parse_since(const char *s, time_t now, double *ret)
{
        double ago;

        if (duration_parse(s, &ago) == 0) {
                *ret = (double)now - ago;
                return 0;
        }
        return duration_parse_local(s, ret);
}
