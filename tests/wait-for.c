/* SPDX-License-Identifier: MIT */
/* wait-for PATH...: returns once every PATH exists. The gate of the tests' jobs: a shell loop of
 * `sleep 0.01` costs a process every 10 ms, a quarter of a core-second a second; this looks every
 * 5 ms without one. Gives up after an hour (exit 1). */
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
        const struct timespec pause = {.tv_nsec = 5 * 1000000L};
        struct stat st;

        if (argc < 2) {
                fprintf(stderr, "usage: wait-for PATH...\n");
                return 2;
        }
        for (long i = 0; i < 3600L * 200; i++) {
                int k = 1;

                while (k < argc && stat(argv[k], &st) == 0)
                        k++;
                if (k == argc)
                        return 0;
                nanosleep(&pause, NULL);
        }
        return 1;
}
