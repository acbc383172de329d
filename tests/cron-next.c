/* SPDX-License-Identifier: MIT */
/*
 * For tests/test-cron-oracle: reads lines "START COUNT EXPR" (START in epoch seconds, EXPR the
 * rest of the line) and answers each with one line: the next COUNT fire times after START in
 * local time (TZ from the environment), each counted from the one before, ending early at -1
 * when there is none; or "error: MESSAGE" when EXPR does not parse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/cron.h"

int main(void)
{
        char line[4096], err[256];
        long long start;
        struct cron c;
        time_t t;
        int count, used;

        tzset();
        while (fgets(line, sizeof(line), stdin)) {
                line[strcspn(line, "\n")] = '\0';
                if (sscanf(line, "%lld %d %n", &start, &count, &used) != 2) {
                        fprintf(stderr, "cron-next: bad line \"%s\"\n", line);
                        return EXIT_FAILURE;
                }
                if (cron_parse(line + used, &c, err, sizeof(err)) < 0) {
                        printf("error: %s\n", err);
                        continue;
                }
                t = (time_t)start;
                for (int i = 0; i < count; i++) {
                        t = cron_next(&c, t);
                        printf("%s%lld", i ? " " : "", (long long)t);
                        if (t < 0)
                                break;
                }
                printf("\n");
        }
        return ferror(stdin) ? EXIT_FAILURE : EXIT_SUCCESS;
}
