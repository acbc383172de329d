/* SPDX-License-Identifier: MIT */
/* restart: an ended job run again as a new job, whose id it prints (as submit does); --command
 * gives a shell job another command, a program after the id an argv job another argv. */
#include <stdio.h>
#include <stdlib.h>

#include "output.h"
#include "slowctl.h"

int cmd_restart(struct ctl *x, const struct opts *o, int argc, char **argv)
{
        int64_t id = ctl_parse_id(x, argv[0]);
        json_object *p;
        char what[64];

        if (id < 0)
                return EXIT_USAGE;
        if (o->command && argc > 1)
                return ctl_usage_error(x, "give --command or a program with its args, not both");
        p = ctl_id_params(id);
        if (o->command)
                json_object_object_add(p, "command", json_object_new_string(o->command));
        if (argc > 1)
                json_object_object_add(p, "argv", ctl_argv_array(argc - 1, argv + 1));
        snprintf(what, sizeof(what), "restart %lld", (long long)id);
        return ctl_call_print_id(x, what, "restart", p);
}
