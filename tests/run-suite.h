/* SPDX-License-Identifier: MIT */
/* Every suite's main(): run its cases, SLOWWORK_TEST_JOBS at a time, and exit nonzero when one
 * failed.
 *
 * Most cases spend their time waiting for daemons, jobs and leases, so a suite runs each case in
 * a process of its own, several at once: it runs itself again with SLOWWORK_TEST_CASE=N, which
 * adds case N alone to the suite it builds. A case added with tcase_add_test_alone() runs with no
 * other case of its suite beside it. SLOWWORK_TEST_JOBS=1, CK_FORK=no, CK_RUN_SUITE or
 * CK_RUN_CASE run the suite as check does, in this process, a case after the other. Include this
 * header after check.h and before the suite is built: it redefines tcase_add_test and
 * tcase_add_loop_test. */
#ifndef SLOWWORK_TESTS_RUN_SUITE_H
#define SLOWWORK_TESTS_RUN_SUITE_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SUITE_CASES_MAX 256
#define SUITE_JOBS_MAX  16

static struct {
        int n;
        const char *name[SUITE_CASES_MAX];
        bool alone[SUITE_CASES_MAX];
} suite_cases;

/* Whether this process runs one case for a suite's first process (its parent). */
static inline bool suite_in_case(void)
{
        return getenv("SLOWWORK_TEST_CASE") != NULL;
}

static inline void suite_add_case(TCase *tc, const TTest *t, int start, int end, bool alone)
{
        int k = suite_cases.n++;

        if (k < SUITE_CASES_MAX) {
                suite_cases.name[k] = t->name;
                suite_cases.alone[k] = alone;
        }
        if (!suite_in_case() || atoi(getenv("SLOWWORK_TEST_CASE")) == k)
                _tcase_add_test(tc, t, 0, 0, start, end);
}

#undef tcase_add_test
#undef tcase_add_loop_test
#define tcase_add_test(tc, t)            suite_add_case((tc), (t), 0, 1, false)
#define tcase_add_loop_test(tc, t, s, e) suite_add_case((tc), (t), (s), (e), false)
/* A case that runs with no other case of its suite beside it: it stops PostgreSQL, or sees what
 * every daemon of the machine's root has (keyrings). */
#define tcase_add_test_alone(tc, t) suite_add_case((tc), (t), 0, 1, true)

static inline int suite_jobs(void)
{
        const char *jobs = getenv("SLOWWORK_TEST_JOBS");
        long cores = sysconf(_SC_NPROCESSORS_ONLN);

        if (getenv("CK_RUN_SUITE") || getenv("CK_RUN_CASE") ||
            (getenv("CK_FORK") && strcmp(getenv("CK_FORK"), "no") == 0))
                return 1;
        if (jobs)
                return atoi(jobs) > 0 ? atoi(jobs) : 1;
        return cores > 1 ? (int)cores + 1 : 2;
}

/* Whether this process runs cases itself, rather than processes that each run one. */
static inline bool suite_runs_here(void)
{
        return suite_in_case() || suite_jobs() <= 1;
}

/* The pid of the suite's first process, the same in every case's process: it names what the
 * cases share (users the suite makes once). */
static inline pid_t suite_pid(void)
{
        return suite_in_case() ? getppid() : getpid();
}

static inline double suite_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* This program's argv, from /proc/self/cmdline (at most 31 words). */
static inline void suite_argv(char *buf, size_t size, char **argv, int max)
{
        int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC), n = 0;
        ssize_t len = fd < 0 ? -1 : read(fd, buf, size - 1);

        if (fd >= 0)
                close(fd);
        if (len < 0)
                len = 0;
        buf[len] = '\0';
        for (char *p = buf; p < buf + len && n < max - 1; p += strlen(p) + 1)
                argv[n++] = p;
        argv[n] = NULL;
}

static inline pid_t suite_spawn(int k)
{
        char buf[8192], *argv[32], number[16];
        pid_t ppid = getpid(), pid;

        suite_argv(buf, sizeof(buf), argv, 32);
        snprintf(number, sizeof(number), "%d", k);
        fflush(NULL);
        pid = fork();
        if (pid == 0) {
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != ppid)
                        _exit(1);
                setenv("SLOWWORK_TEST_CASE", number, 1);
                execv("/proc/self/exe", argv);
                perror("exec /proc/self/exe");
                _exit(1);
        }
        if (pid < 0)
                perror("fork");
        return pid;
}

/* In a case's own process (CK_SILENT): the case, and its failure if it failed. */
static inline int suite_run_here(Suite *s, enum print_output mode)
{
        SRunner *sr = srunner_create(s);
        int failed;

        srunner_run_all(sr, mode);
        failed = srunner_ntests_failed(sr);
        if (mode == CK_SILENT && failed) {
                TestResult **r = srunner_failures(sr);

                for (int i = 0; i < failed; i++)
                        printf("%s:%d:%s:%s: %s\n", tr_lfile(r[i]), tr_lno(r[i]),
                               tr_rtype(r[i]) == CK_ERROR ? "E" : "F", tr_tcname(r[i]),
                               tr_msg(r[i]));
                fflush(stdout);
                free(r);
        }
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

struct suite_slot {
        pid_t pid; /* 0: free */
        int k;
        double start;
};

/* Waits for one case's process to end and says how it went; returns whether it passed. */
static inline bool suite_reap(struct suite_slot *slot, int jobs)
{
        for (;;) {
                struct rusage ru;
                int status, i;
                pid_t pid = wait4(-1, &status, 0, &ru);

                if (pid < 0 && errno == EINTR)
                        continue;
                if (pid < 0) {
                        perror("wait");
                        exit(EXIT_FAILURE);
                }
                for (i = 0; i < jobs && slot[i].pid != pid; i++)
                        ;
                if (i == jobs)
                        continue;
                bool pass = WIFEXITED(status) && WEXITSTATUS(status) == 0;
                char how[32] = "";

                if (WIFSIGNALED(status))
                        snprintf(how, sizeof(how), ", signal %d", WTERMSIG(status));
                printf("%s %s (%.2f s, %.2f CPU-s%s)\n", pass ? "PASS" : "FAIL",
                       suite_cases.name[slot[i].k], suite_now() - slot[i].start,
                       (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                           (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6,
                       how);
                fflush(stdout);
                slot[i].pid = 0;
                return pass;
        }
}

static inline int run_suite(Suite *s)
{
        int jobs = suite_jobs(), n = suite_cases.n, failed = 0, running = 0, next = 0, i;
        struct suite_slot slot[SUITE_JOBS_MAX] = {{0}};
        bool alone_running = false;
        double began = suite_now();

        if (suite_in_case())
                return suite_run_here(s, CK_SILENT);
        if (jobs <= 1 || n <= 1 || n > SUITE_CASES_MAX)
                return suite_run_here(s, CK_NORMAL);
        srunner_free(srunner_create(s)); /* each case's process builds it again */
        if (jobs > SUITE_JOBS_MAX)
                jobs = SUITE_JOBS_MAX;
        while (next < n || running > 0) {
                bool alone = next < n && suite_cases.alone[next];

                if (next < n && (alone ? running == 0 : running < jobs && !alone_running)) {
                        for (i = 0; slot[i].pid; i++)
                                ;
                        slot[i] = (struct suite_slot){suite_spawn(next), next, suite_now()};
                        next++;
                        if (slot[i].pid < 0) {
                                slot[i].pid = 0;
                                failed++;
                                continue;
                        }
                        running++;
                        alone_running = alone;
                        continue;
                }
                failed += !suite_reap(slot, jobs);
                running--;
                alone_running = false;
        }
        printf("%d%%: Checks: %d, Failures: %d, in %.1f s, %d at a time\n",
               n ? 100 * (n - failed) / n : 100, n, failed, suite_now() - began, jobs);
        fflush(stdout);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* For a suite whose cases share what an unchecked fixture set up: this process runs them, in
 * their order. */
static inline int run_suite_in_order(Suite *s)
{
        return suite_run_here(s, CK_NORMAL);
}

#endif
