/* SPDX-License-Identifier: MIT */
/* daemon/run/plain-command.c: which commands start without the shell, and where they are looked
 * for. (test-jobs runs them: the same output as through the shell.) */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "run/plain-command.h"
#include "run-suite.h"

/* An environment of string literals. */
#define ENV(...) ((char *const *)(const char *const[]){__VA_ARGS__, NULL})

static const char *const env_strings[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "PWD=/tmp",
                                          "HOME=/root", NULL};
static char *const *const env = (char *const *)env_strings;

/* Where /bin/sh is not dash, nothing starts without it. */
static bool sh_is_dash(void)
{
        char *real = realpath("/bin/sh", NULL);
        bool dash = real && strcmp(strrchr(real, '/'), "/dash") == 0;

        free(real);
        return dash;
}

static bool plain(const char *command)
{
        struct plain_command pc;

        if (!plain_command_parse(command, env, "/tmp", &pc))
                return false;
        free(pc.argv);
        return true;
}

/* The strings of a NULL-terminated array, each followed by '|'. */
static char *joined(char **strv)
{
        static char buf[1024];

        buf[0] = '\0';
        for (; *strv; strv++) {
                strcat(buf, *strv);
                strcat(buf, "|");
        }
        return buf;
}

START_TEST(words_and_the_places_to_look)
{
        struct plain_command pc;

        if (!sh_is_dash()) {
                ck_assert(!plain("ls"));
                return;
        }
        ck_assert(plain_command_parse("  make  -C src\tall --jobs=4 ", env, "/tmp", &pc));
        ck_assert_str_eq(joined(pc.argv), "make|-C|src|all|--jobs=4|");
        ck_assert_str_eq(joined(pc.paths), "/usr/local/bin/make|/usr/bin/make|/bin/make|");
        free(pc.argv);

        /* A name with a slash is the file itself; an empty folder of PATH the current one. */
        ck_assert(plain_command_parse("./build.sh x", env, "/tmp", &pc));
        ck_assert_str_eq(joined(pc.paths), "./build.sh|");
        free(pc.argv);
        ck_assert(plain_command_parse(
            "tool", ENV("PWD=/w", "PATH=:/bin:"), "/w", &pc));
        ck_assert_str_eq(joined(pc.paths), "tool|/bin/tool|tool|");
        free(pc.argv);
}
END_TEST

START_TEST(what_the_shell_would_do_something_with_goes_to_it)
{
        static const char *const shell[] = {
            "",          "   ",        "a; b",        "a | b",       "a > f",     "a < f",
            "a && b",    "a &",        "echo $HOME",  "echo 'x'",    "echo \"x\"", "a\\ b",
            "ls *.c",    "ls f?",      "ls [ab]",     "ls ~",        "a # note",  "X=1 env",
            "a\nb",      "(a)",        "{ a; }",      "`a`",         "!a",        "ls \xc3\xa9",
            "cd /",      "echo hi",    "exit 3",      "export A=1",  "test -e f", "[ -e f ]",
            "kill 1",    "pwd",        "printf x",    "read x",      "wait",      "if",
            "while",     "true --help", "false x",    ". f",         ": x",       "exec ls",
        };

        for (size_t i = 0; i < sizeof(shell) / sizeof(shell[0]); i++)
                ck_assert_msg(!plain(shell[i]), "\"%s\" would start without the shell", shell[i]);
        if (!sh_is_dash())
                return;
        ck_assert(plain("true"));
        ck_assert(plain("false"));
        ck_assert(plain("env"));
        ck_assert(plain("cp -a a.b c,d e:f g+h i@j k=l m%n"));
}
END_TEST

START_TEST(an_environment_the_shell_would_change_goes_to_it)
{
        struct plain_command pc;
        char *const *const changed[] = {
            ENV("PATH=/bin"),                        /* it would add PWD */
            ENV("PATH=/bin", "PWD=/elsewhere"),      /* or set it */
            ENV("PWD=/tmp"),                         /* its own PATH */
            ENV("PATH=/bin%builtin", "PWD=/tmp"),    /* dash's PATH options */
            ENV("PATH=/bin", "PWD=/tmp", "A-B=1"),   /* it drops A-B */
            ENV("PATH=/bin", "PWD=/tmp", "9A=1"),
            ENV("PATH=/bin", "PWD=/tmp", "NOEQUALS"),
            ENV("PATH=/bin", "PWD=/tmp", "=x"),
        };

        for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++)
                ck_assert_msg(!plain_command_parse("ls", changed[i], "/tmp", &pc), "env %zu", i);
        /* A relative folder to start in: the shell's PWD would be another string. */
        ck_assert(!plain_command_parse("ls", ENV("PATH=/bin", "PWD=tmp"), "tmp",
                                       &pc));
        if (!sh_is_dash())
                return;
        ck_assert(plain_command_parse("ls", ENV("PATH=/bin", "PWD=/tmp", "_x1="),
                                      "/tmp", &pc));
        free(pc.argv);
}
END_TEST

static Suite *plain_command_suite(void)
{
        Suite *s = suite_create("plain-command");
        TCase *tc = tcase_create("parse");

        tcase_add_test(tc, words_and_the_places_to_look);
        tcase_add_test(tc, what_the_shell_would_do_something_with_goes_to_it);
        tcase_add_test(tc, an_environment_the_shell_would_change_goes_to_it);
        suite_add_tcase(s, tc);
        return s;
}

int main(void)
{
        return run_suite(plain_command_suite());
}
