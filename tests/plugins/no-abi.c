/* SPDX-License-Identifier: MIT */
/* A shared object that is no slowwork plugin: it does not say which ABI it was built for. */
#include "slowwork-plugin.h"

int run(struct slowwork_plugin_ctx *ctx, const char *arg);

int run(struct slowwork_plugin_ctx *ctx, const char *arg)
{
        (void)ctx;
        (void)arg;
        return 0;
}
