/* SPDX-License-Identifier: MIT */
/*
 * A job that tries to type into its controlling terminal (TIOCSTI), as a hostile job of a system
 * instance started from root's shell would. Exits 0 when it could open /dev/tty and inject, 3
 * when it has no terminal, 4 when the terminal refused the injection.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

int main(void)
{
        const char *text = "echo INJECTED\n";
        int fd = open("/dev/tty", O_RDWR | O_NOCTTY);

        if (fd < 0) {
                printf("no terminal: %s\n", strerror(errno));
                return 3;
        }
        for (const char *p = text; *p; p++)
                if (ioctl(fd, TIOCSTI, p) < 0) {
                        printf("terminal refused: %s\n", strerror(errno));
                        return 4;
                }
        printf("injected\n");
        return 0;
}
