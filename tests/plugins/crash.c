/* SPDX-License-Identifier: MIT */
/* A plugin that takes the daemon down, as a buggy one would. */
#include <stdlib.h>

#include "slowwork-plugin.h"

SLOWWORK_PLUGIN_DEFINE_ABI;

SLOWWORK_PLUGIN_ENTRY(now)
{
        (void)ctx;
        (void)arg;
        abort();
}
