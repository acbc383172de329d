/* SPDX-License-Identifier: MIT */
/* A plugin built for an ABI slowworkd does not have. */
#include "slowwork-plugin.h"

__attribute__((visibility("default"))) const unsigned int slowwork_plugin_abi =
    SLOWWORK_PLUGIN_ABI + 1;

int run(struct slowwork_plugin_ctx *ctx, const char *arg);

int run(struct slowwork_plugin_ctx *ctx, const char *arg)
{
        (void)ctx;
        (void)arg;
        return 0;
}
