/* SPDX-License-Identifier: MIT */
/* A shell command that /bin/sh would only look up and start: started without the shell. */
#ifndef SLOWWORKD_PLAIN_COMMAND_H
#define SLOWWORKD_PLAIN_COMMAND_H

#include <stdbool.h>

/* The command's words and the files to try in turn, as the shell would: one block to free(). */
struct plain_command {
        char **argv;  /* its words */
        char **paths; /* argv[0] with a '/', or each folder of PATH with argv[0] after it */
};

/*
 * Whether /bin/sh -c command, started in cwd with envp, would do nothing but look argv[0] up in
 * envp's PATH and exec it with envp as it is: /bin/sh is dash (whose ways this follows); the
 * command is words of plain characters (no quoting, expansion, redirection, operator or
 * comment), not an assignment, and its first word no keyword or builtin (true and false alone
 * excepted: the programs do the same); every variable of envp has a name the shell keeps, PATH
 * is there (without dash's %options) and PWD is cwd (the shell would set it). If so, *ret is
 * that, free(ret->argv) when done.
 */
bool plain_command_parse(const char *command, char *const *envp, const char *cwd,
                         struct plain_command *ret);

#endif
