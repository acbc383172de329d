/* SPDX-License-Identifier: MIT */
/*
 * The smallest useful plugin, and the one the tests use: each entry point shows one thing a
 * plugin can do. Build: cc -shared -fPIC -o hello.so hello.c $(pkg-config --cflags slowwork)
 */
#include <stdlib.h>
#include <time.h>

#include "slowwork-plugin.h"

SLOWWORK_PLUGIN_DEFINE_ABI;

/* Logs who it is and what it got. */
SLOWWORK_PLUGIN_ENTRY(hello)
{
        slowwork_log(ctx, "hello from job %lld run %lld (%s), arg %s\n",
                     (long long)slowwork_item_id(ctx), (long long)slowwork_run_number(ctx),
                     slowwork_very_slow(ctx) ? "very-slow" : "slow", arg);
        return 0;
}

/* Does nothing: what a plugin run costs. */
SLOWWORK_PLUGIN_ENTRY(noop)
{
        (void)ctx;
        (void)arg;
        return 0;
}

/* Returns the number it got as its exit code. */
SLOWWORK_PLUGIN_ENTRY(exit_with)
{
        (void)ctx;
        return atoi(arg);
}

/* Sleeps until asked to stop, then says why and returns 3. */
SLOWWORK_PLUGIN_ENTRY(until_stopped)
{
        (void)arg;
        slowwork_log(ctx, "waiting\n");
        while (slowwork_sleep(ctx, 60) == 0)
                ;
        slowwork_log(ctx, "stopping: %s\n", slowwork_stop_reason(ctx));
        return 3;
}

/* Runs for arg seconds without ever asking whether it should stop. */
SLOWWORK_PLUGIN_ENTRY(busy)
{
        double seconds = atof(arg);
        struct timespec ts = {.tv_sec = (time_t)seconds};

        (void)ctx;
        ts.tv_nsec = (long)((seconds - (double)ts.tv_sec) * 1e9);
        nanosleep(&ts, NULL);
        return 0;
}
