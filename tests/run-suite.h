/* SPDX-License-Identifier: MIT */
/* Every suite's main(): run it, and exit nonzero when a case failed. */
#ifndef SLOWWORK_TESTS_RUN_SUITE_H
#define SLOWWORK_TESTS_RUN_SUITE_H

#include <check.h>
#include <stdlib.h>

static inline int run_suite(Suite *s)
{
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#endif
