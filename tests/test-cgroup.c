/* SPDX-License-Identifier: MIT */
/*
 * daemon/util/cgroup.c on the real cgroup2 mount: needs root. main() makes a folder of its own,
 * <mount><own cgroup>/slowwork-test-<pid>, each case a subtree in it, and at the end kills what
 * is left in it and removes it. The runner's own process never moves: a case that moves a process
 * into a leaf does it in a child. SLOWWORK_TEST_NO_CGROUP=1 skips where cgroup2 or root is
 * missing; without it that is a failure.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/cgroup.h"
#include "run-suite.h"

/* The mount, and our folder relative to it ("/slowwork-test-N" under our own cgroup). */
static char mnt[512], base_rel[1024];
/* This case's subtree, its path relative to the mount, and what could be enabled in it. */
static char tree_rel[1100], tree_path[1700];
static struct cgroup_tree *tree;
static unsigned enabled;
static int case_number;

static void setup(void)
{
        snprintf(tree_rel, sizeof(tree_rel), "%s/t-%d-%d", base_rel, (int)getpid(), ++case_number);
        snprintf(tree_path, sizeof(tree_path), "%s%s", mnt, tree_rel);
        ck_assert_int_eq(cgroup_tree_open(tree_path, true, &tree), 0);
        ck_assert_int_eq(cgroup_tree_enable(tree, CGROUP_CTRL_ALL, &enabled), 0);
}

static void teardown(void)
{
        tree = cgroup_tree_unref(tree);
}

/* The "0::" line of /proc/PID/cgroup, read here rather than through the module. */
static void cgroup_of(pid_t pid, char *buf, size_t len)
{
        char file[64], line[PATH_MAX + 8];
        FILE *f;

        snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
        f = fopen(file, "re");
        ck_assert_msg(f != NULL, "cannot open %s: %s", file, strerror(errno));
        buf[0] = '\0';
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, "0::", 3) == 0) {
                        line[strcspn(line, "\n")] = '\0';
                        snprintf(buf, len, "%.*s", (int)len - 1, line + 3);
                }
        fclose(f);
}

/* "/slowwork-test-N/t-P-C/<leaf>": where a process placed in that cgroup must say it is. */
static void expected_path(const char *leaf, char *buf, size_t len)
{
        snprintf(buf, len, "%s/%.*s", tree_rel, NAME_MAX, leaf);
}

static void assert_in_cgroup(pid_t pid, const char *leaf)
{
        char got[PATH_MAX], want[PATH_MAX];

        cgroup_of(pid, got, sizeof(got));
        expected_path(leaf, want, sizeof(want));
        ck_assert_str_eq(got, want);
}

/* Moves a process into the run cgroup from outside (the daemon never does: its runs start in
 * their cgroup). 0, or -errno. */
static int attach(struct cgroup_run *run, pid_t pid)
{
        char text[32];
        int n = snprintf(text, sizeof(text), "%d", (int)pid);

        return write(cgroup_run_procs_fd(run), text, (size_t)n) == n ? 0 : -errno;
}

/* The CGROUP_CTRL_* bits a cgroup file lists (cgroup.controllers, cgroup.subtree_control). */
static unsigned controllers_in(const char *dir, const char *file)
{
        char path[PATH_MAX], *text = NULL;
        unsigned mask;
        size_t n = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, file);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        mask = getline(&text, &n, f) < 0 ? 0 : cgroup_controllers_parse(text);
        fclose(f);
        free(text);
        return mask;
}

/* What the subtree can enforce now. */
static unsigned subtree_controllers(void)
{
        return controllers_in(tree_path, "cgroup.subtree_control");
}

/* A child that waits for the end of a pipe, then exits 0. Returns the pipe's write end. */
static pid_t fork_waiting(int *ret_wfd)
{
        int p[2];
        pid_t pid;
        char c;

        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                close(p[1]);
                while (read(p[0], &c, 1) < 0 && errno == EINTR)
                        ;
                _exit(0);
        }
        close(p[0]);
        *ret_wfd = p[1];
        return pid;
}

static int wait_status(pid_t pid)
{
        int status;

        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        return status;
}

static int64_t now_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int64_t cpu_ms(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int count_lines_at(const char *dir, const char *file)
{
        char path[PATH_MAX * 2], line[64];
        int n = 0;
        FILE *f;

        snprintf(path, sizeof(path), "%s/%s", dir, file);
        f = fopen(path, "re");
        ck_assert_msg(f != NULL, "cannot open %s: %s", path, strerror(errno));
        while (fgets(line, sizeof(line), f))
                n++;
        fclose(f);
        return n;
}

START_TEST(mount_and_own_path_are_found)
{
        struct statfs sfs;
        char *m, *own, *child_path, got[PATH_MAX];
        int wfd;
        pid_t pid;

        ck_assert_int_eq(cgroup_find_mount(&m), 0);
        ck_assert_int_eq(statfs(m, &sfs), 0);
        ck_assert_msg(sfs.f_type == CGROUP2_SUPER_MAGIC, "%s is not cgroup2", m);
        ck_assert_int_eq(cgroup_pid_path(0, &own), 0);
        cgroup_of(getpid(), got, sizeof(got));
        ck_assert_str_eq(own, got);

        pid = fork_waiting(&wfd);
        ck_assert_int_eq(cgroup_pid_path(pid, &child_path), 0);
        ck_assert_str_eq(child_path, own);
        close(wfd);
        wait_status(pid);
        ck_assert_int_eq(cgroup_pid_path(999999999, &child_path), -ENOENT);
        free(child_path);
        free(own);
        free(m);
}
END_TEST

START_TEST(controller_lists_are_parsed_by_exact_name)
{
        ck_assert_uint_eq(cgroup_controllers_parse("cpuset cpu io memory hugetlb pids rdma\n"),
                          CGROUP_CTRL_ALL);
        ck_assert_uint_eq(cgroup_controllers_parse("cpuset hugetlb memoryx\n"), 0);
        ck_assert_uint_eq(cgroup_controllers_parse("pids"), CGROUP_CTRL_PIDS);
        ck_assert_uint_eq(cgroup_controllers_parse(""), 0);
}
END_TEST

START_TEST(run_names_are_validated)
{
        char long_name[NAME_MAX + 2];
        struct cgroup_run *run;

        ck_assert(cgroup_name_is_valid("run-12.3"));
        ck_assert(cgroup_name_is_valid("a"));
        ck_assert(!cgroup_name_is_valid(""));
        ck_assert(!cgroup_name_is_valid("."));
        ck_assert(!cgroup_name_is_valid(".."));
        ck_assert(!cgroup_name_is_valid(".hidden"));
        ck_assert(!cgroup_name_is_valid("a/b"));
        ck_assert(!cgroup_name_is_valid("../x"));
        ck_assert(!cgroup_name_is_valid("a b"));
        ck_assert(!cgroup_name_is_valid(CGROUP_TREE_LEAF));
        memset(long_name, 'x', sizeof(long_name) - 1);
        long_name[sizeof(long_name) - 1] = '\0';
        ck_assert(!cgroup_name_is_valid(long_name));
        ck_assert_int_eq(cgroup_run_create(tree, "../escape", &run), -EINVAL);
        ck_assert_int_eq(cgroup_run_create(tree, CGROUP_TREE_LEAF, &run), -EINVAL);
}
END_TEST

START_TEST(create_refuses_an_existing_run_and_open_finds_it)
{
        struct cgroup_run *a, *b;
        struct stat st;
        char path[PATH_MAX * 2];

        ck_assert_int_eq(cgroup_run_create(tree, "run-1", &a), 0);
        snprintf(path, sizeof(path), "%s/run-1", tree_path);
        ck_assert_int_eq(stat(path, &st), 0);
        ck_assert(S_ISDIR(st.st_mode));
        ck_assert_int_eq(cgroup_run_create(tree, "run-1", &b), -EEXIST);
        ck_assert_int_eq(cgroup_run_open(tree, "run-2", &b), -ENOENT);
        ck_assert_int_eq(cgroup_run_open(tree, "run-1", &b), 0);
        cgroup_run_unref(b);
        ck_assert_int_eq(cgroup_run_remove(a), 0);
        ck_assert_int_eq(stat(path, &st), -1);
        cgroup_run_unref(a);
}
END_TEST

START_TEST(tree_open_refuses_a_folder_that_is_not_cgroup2)
{
        struct cgroup_tree *t;

        ck_assert_int_eq(cgroup_tree_open("/tmp", false, &t), -ENOMEDIUM);
        ck_assert_int_eq(cgroup_tree_open("relative/path", false, &t), -EINVAL);
}
END_TEST

START_TEST(tree_open_refuses_a_subtree_not_delegated_to_the_caller)
{
        struct cgroup_tree *t;
        pid_t pid;
        int status;

        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                        _exit(100);
                _exit(cgroup_tree_open(tree_path, false, &t) == -EACCES ? 0 : 1);
        }
        status = wait_status(pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "nobody opened a root-owned subtree, status %d", status);
}
END_TEST

static void *block_on(void *arg)
{
        char c;

        while (read(*(int *)arg, &c, 1) < 0 && errno == EINTR)
                ;
        return NULL;
}

/* In a child: cgroup_tree_setup() with a second thread running, as the daemon would. */
START_TEST(setup_moves_every_thread_into_the_leaf_and_enables_what_is_available)
{
        int ready[2], hold[2], tasks = 0;
        char sub_path[sizeof(tree_path) + 8], got[PATH_MAX], want[PATH_MAX], dir[64];
        unsigned reported, available;
        struct dirent *de;
        DIR *d;
        pid_t pid;

        snprintf(sub_path, sizeof(sub_path), "%s/sub", tree_path);
        ck_assert_int_eq(pipe2(ready, O_CLOEXEC), 0);
        ck_assert_int_eq(pipe2(hold, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                struct cgroup_tree *t;
                pthread_t thread;
                unsigned mask;

                close(ready[0]);
                close(hold[1]);
                if (pthread_create(&thread, NULL, block_on, &hold[0]) != 0)
                        _exit(1);
                if (cgroup_tree_setup(sub_path, CGROUP_CTRL_ALL, &t, &mask) < 0)
                        _exit(2);
                if (write(ready[1], &mask, sizeof(mask)) != sizeof(mask))
                        _exit(3);
                pthread_join(thread, NULL);
                cgroup_tree_unref(t);
                _exit(0);
        }
        close(ready[1]);
        close(hold[0]);
        ck_assert_int_eq(read(ready[0], &reported, sizeof(reported)), sizeof(reported));

        snprintf(want, sizeof(want), "%s/sub/%s", tree_rel, CGROUP_TREE_LEAF);
        snprintf(dir, sizeof(dir), "/proc/%d/task", (int)pid);
        d = opendir(dir);
        ck_assert_ptr_nonnull(d);
        while ((de = readdir(d))) {
                if (de->d_name[0] == '.')
                        continue;
                cgroup_of((pid_t)atoi(de->d_name), got, sizeof(got));
                ck_assert_str_eq(got, want);
                tasks++;
        }
        closedir(d);
        ck_assert_int_ge(tasks, 2); /* ours, and any a sanitizer runtime started */
        ck_assert_int_eq(count_lines_at(sub_path, "cgroup.procs"), 0);

        /* Enabled: exactly the wanted ones the subtree was offered. */
        available = controllers_in(sub_path, "cgroup.controllers");
        ck_assert_uint_eq(reported, available & CGROUP_CTRL_ALL);
        if (reported == 0)
                fprintf(stderr,
                        "test-cgroup: note: %s offers none of memory, pids, cpu: "
                        "setup enabled nothing, as it should here\n",
                        sub_path);

        close(hold[1]);
        ck_assert_int_eq(wait_status(pid), 0);
        close(ready[0]);
}
END_TEST

/* The spawn path: the child writes "0" to the inherited descriptor, then execs. */
START_TEST(child_writing_to_procs_fd_before_exec_runs_in_the_run_cgroup)
{
        char got[PATH_MAX + 8], want[PATH_MAX], *line;
        struct cgroup_run *run;
        int p[2], fd;
        ssize_t n, len = 0;
        pid_t pid;

        ck_assert_int_eq(cgroup_run_create(tree, "run-exec", &run), 0);
        fd = cgroup_run_procs_fd(run);
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (write(fd, "0", 1) != 1 || dup2(p[1], 1) < 0)
                        _exit(126);
                execl("/bin/cat", "cat", "/proc/self/cgroup", (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        while ((n = read(p[0], got + len, sizeof(got) - 1 - (size_t)len)) > 0)
                len += n;
        got[len] = '\0';
        close(p[0]);
        ck_assert_int_eq(wait_status(pid), 0);
        expected_path("run-exec", want, sizeof(want));
        line = strstr(got, "0::");
        ck_assert_msg(line && strncmp(line + 3, want, strlen(want)) == 0 &&
                          line[3 + strlen(want)] == '\n',
                      "cat /proc/self/cgroup said \"%s\", not 0::%s", got, want);
        ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

START_TEST(clone3_into_cgroup_starts_the_child_in_the_run_cgroup)
{
        struct clone_args args = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD};
        struct cgroup_run *run;
        int status;
        long pid;

        ck_assert_int_eq(cgroup_run_create(tree, "run-clone3", &run), 0);
        args.cgroup = (uint64_t)cgroup_run_fd(run);
        pid = syscall(SYS_clone3, &args, sizeof(args));
        if (pid < 0 && errno == ENOSYS) {
                fprintf(stderr, "test-cgroup: note: no clone3() here (ENOSYS): "
                                "CLONE_INTO_CGROUP not tested\n");
                cgroup_run_remove(run);
                cgroup_run_unref(run);
                return;
        }
        ck_assert_msg(pid >= 0, "clone3: %s", strerror(errno));
        if (pid == 0)
                for (;;) /* raw syscalls only: no libc state after a raw clone */
                        syscall(SYS_ppoll, NULL, 0, NULL, NULL, 0);
        assert_in_cgroup((pid_t)pid, "run-clone3");
        ck_assert_int_eq(cgroup_run_kill(run), 0);
        status = wait_status((pid_t)pid);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

/*
 * A child in the run that ignores `ignore`, and its grandchild that escaped: setsid() in a double
 * fork, so neither its process group nor its parent is the child's. We are the subreaper, so the
 * grandchild comes back to our waitpid(). Returns when the middle process has been reaped, so
 * that exactly these two are in the run: the grandchild sends its pid, the child a 0 once it has
 * reaped the middle. Returns the child; the grandchild's pid in *ret_grandchild.
 */
static pid_t fork_child_and_escaped_grandchild(struct cgroup_run *run, int ignore,
                                               pid_t *ret_grandchild)
{
        int fd = cgroup_run_procs_fd(run), p[2], i;
        pid_t pid, middle, got, grandchild = 0;

        ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (write(fd, "0", 1) != 1)
                        _exit(1);
                if (ignore)
                        signal(ignore, SIG_IGN);
                middle = fork();
                if (middle == 0) {
                        setsid();
                        if (fork() == 0) {
                                got = getpid();
                                if (write(p[1], &got, sizeof(got)) < 0)
                                        _exit(1);
                                for (;;)
                                        pause();
                        }
                        _exit(0);
                }
                got = 0;
                if (middle < 0 || waitpid(middle, NULL, 0) != middle ||
                    write(p[1], &got, sizeof(got)) < 0)
                        _exit(1);
                for (;;)
                        pause();
        }
        close(p[1]);
        for (i = 0; i < 2; i++) {
                ck_assert_int_eq(read(p[0], &got, sizeof(got)), sizeof(got));
                if (got != 0)
                        grandchild = got;
        }
        close(p[0]);
        ck_assert_int_gt(grandchild, 0);
        *ret_grandchild = grandchild;
        return pid;
}

START_TEST(kill_kills_a_child_ignoring_sigterm_and_its_escaped_grandchild)
{
        struct cgroup_run *run;
        pid_t child, grandchild;
        int status;

        ck_assert_int_eq(cgroup_run_create(tree, "run-kill", &run), 0);
        child = fork_child_and_escaped_grandchild(run, SIGTERM, &grandchild);
        ck_assert_int_ne(getpgid(grandchild), getpgid(child));
        assert_in_cgroup(grandchild, "run-kill");

        /* Both ignore SIGTERM: the polite signal reaches both and leaves both running. */
        ck_assert_int_eq(cgroup_run_signal(run, SIGTERM), 2);
        ck_assert_int_eq(waitpid(child, &status, WNOHANG), 0);
        ck_assert_int_eq(waitpid(grandchild, &status, WNOHANG), 0);

        ck_assert_int_eq(cgroup_run_kill(run), 0);
        status = wait_status(child);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        status = wait_status(grandchild);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

/* The loop cgroup_run_kill() falls back on where there is no cgroup.kill. */
START_TEST(signal_reaches_every_process_of_the_run_even_an_escaped_one)
{
        struct cgroup_run *run;
        pid_t child, grandchild;
        int status;

        ck_assert_int_eq(cgroup_run_create(tree, "run-signal", &run), 0);
        child = fork_child_and_escaped_grandchild(run, 0, &grandchild);
        ck_assert_int_eq(cgroup_run_signal(run, SIGKILL), 2);
        status = wait_status(child);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        status = wait_status(grandchild);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        ck_assert_int_eq(cgroup_run_signal(run, SIGTERM), 0);
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

START_TEST(populated_goes_from_1_to_0)
{
        struct cgroup_run *run;
        int wfd;
        pid_t pid;

        ck_assert_int_eq(cgroup_run_create(tree, "run-events", &run), 0);
        ck_assert_int_eq(cgroup_run_populated(run), 0);

        pid = fork_waiting(&wfd);
        ck_assert_int_eq(attach(run, pid), 0);
        assert_in_cgroup(pid, "run-events");
        ck_assert_int_eq(cgroup_run_populated(run), 1);

        close(wfd); /* the child exits; no waitpid() yet: a zombie is not in the cgroup */
        ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        ck_assert_int_eq(cgroup_run_populated(run), 0);
        ck_assert_int_eq(wait_status(pid), 0);
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

START_TEST(wait_empty_sleeps_until_the_timeout_then_returns_when_empty)
{
        struct cgroup_run *run;
        int64_t start, cpu_start;
        int wfd;
        pid_t pid;

        ck_assert_int_eq(cgroup_run_create(tree, "run-wait", &run), 0);
        ck_assert_int_eq(cgroup_run_wait_empty(run, 0), 0);
        pid = fork_waiting(&wfd);
        ck_assert_int_eq(attach(run, pid), 0);

        start = now_ms();
        cpu_start = cpu_ms();
        ck_assert_int_eq(cgroup_run_wait_empty(run, 300), -ETIMEDOUT);
        ck_assert_int_ge(now_ms() - start, 300);
        ck_assert_msg(cpu_ms() - cpu_start < 50, "waiting 300 ms took %d ms of CPU",
                      (int)(cpu_ms() - cpu_start));

        close(wfd);
        ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        ck_assert_int_eq(cgroup_run_populated(run), 0);
        ck_assert_int_eq(wait_status(pid), 0);
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

static int name_cmp(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

START_TEST(leftover_runs_are_listed_after_their_creator_forgets_them_and_removed)
{
        struct cgroup_run *run;
        struct cgroup_tree *again;
        char **names, leaf[PATH_MAX + 16], path[PATH_MAX + 16];
        int wfd, i;
        size_t n;
        pid_t pid;

        /* The daemon's leaf is not a run. */
        snprintf(leaf, sizeof(leaf), "%s/%s", tree_path, CGROUP_TREE_LEAF);
        ck_assert_int_eq(mkdir(leaf, 0755), 0);
        ck_assert_int_eq(cgroup_run_create(tree, "run-1.1", &run), 0);
        cgroup_run_unref(run);
        ck_assert_int_eq(cgroup_run_create(tree, "run-2.1", &run), 0);
        pid = fork_waiting(&wfd);
        ck_assert_int_eq(attach(run, pid), 0);
        cgroup_run_unref(run);
        tree = cgroup_tree_unref(tree); /* the daemon is gone */

        ck_assert_int_eq(cgroup_tree_open(tree_path, false, &again), 0);
        ck_assert_int_eq(cgroup_tree_list_runs(again, &names), 0);
        for (n = 0; names[n]; n++)
                ;
        ck_assert_uint_eq(n, 2);
        qsort(names, n, sizeof(*names), name_cmp);
        ck_assert_str_eq(names[0], "run-1.1");
        ck_assert_str_eq(names[1], "run-2.1");

        for (i = 0; names[i]; i++) {
                ck_assert_int_eq(cgroup_run_open(again, names[i], &run), 0);
                ck_assert_int_eq(cgroup_run_kill(run), 0);
                ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
                ck_assert_int_eq(cgroup_run_remove(run), 0);
                cgroup_run_unref(run);
                snprintf(path, sizeof(path), "%s/%s", tree_path, names[i]);
                ck_assert_int_eq(access(path, F_OK), -1);
                free(names[i]);
        }
        free(names);
        ck_assert(WIFSIGNALED(wait_status(pid)));

        ck_assert_int_eq(cgroup_tree_list_runs(again, &names), 0);
        ck_assert_ptr_null(names[0]);
        free(names);
        ck_assert_int_eq(access(leaf, F_OK), 0);
        ck_assert_int_eq(rmdir(leaf), 0);
        cgroup_tree_unref(again);
}
END_TEST

START_TEST(remove_refuses_a_populated_run_and_takes_nested_cgroups)
{
        struct cgroup_run *run;
        char nested[PATH_MAX + 32];
        int wfd;
        pid_t pid;

        ck_assert_int_eq(cgroup_run_create(tree, "run-rm", &run), 0);
        pid = fork_waiting(&wfd);
        ck_assert_int_eq(attach(run, pid), 0);
        ck_assert_int_eq(cgroup_run_remove(run), -EBUSY);
        ck_assert_int_eq(cgroup_run_populated(run), 1);
        close(wfd);
        ck_assert_int_eq(wait_status(pid), 0);
        ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);

        /* A job as root may make cgroups of its own inside its run. */
        snprintf(nested, sizeof(nested), "%s/run-rm/inner", tree_path);
        ck_assert_int_eq(mkdir(nested, 0755), 0);
        snprintf(nested, sizeof(nested), "%s/run-rm/inner/deeper", tree_path);
        ck_assert_int_eq(mkdir(nested, 0755), 0);
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        snprintf(nested, sizeof(nested), "%s/run-rm", tree_path);
        ck_assert_int_eq(access(nested, F_OK), -1);
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

/* A controller missing here is refused at the limit, and the query says it is missing. */
static bool limit_available_or_refused(struct cgroup_run *run, unsigned bit, const char *name)
{
        unsigned now = subtree_controllers();
        int r;

        ck_assert_uint_eq(now & bit, enabled & bit);
        if (now & bit)
                return true;
        switch (bit) {
        case CGROUP_CTRL_MEMORY:
                r = cgroup_run_set_memory_max(run, 64 << 20);
                break;
        case CGROUP_CTRL_PIDS:
                r = cgroup_run_set_pids_max(run, 5);
                break;
        default:
                r = cgroup_run_set_cpu_weight(run, 50);
                break;
        }
        ck_assert_int_eq(r, -EOPNOTSUPP);
        fprintf(stderr,
                "test-cgroup: note: no %s controller for %s: checked that its limit is "
                "refused with EOPNOTSUPP; enforcement NOT tested on this host\n",
                name, tree_path);
        return false;
}

START_TEST(pids_max_is_enforced_or_refused)
{
        struct cgroup_run *run;
        int fd, status;
        pid_t pid;

        ck_assert_int_eq(cgroup_run_create(tree, "run-pids", &run), 0);
        if (limit_available_or_refused(run, CGROUP_CTRL_PIDS, "pids")) {
                ck_assert_int_eq(cgroup_run_set_pids_max(run, 5), 0);
                fd = cgroup_run_procs_fd(run);
                pid = fork();
                ck_assert_int_ge(pid, 0);
                if (pid == 0) {
                        int forks = 0, tasks = 0;
                        struct dirent *de;
                        DIR *d;
                        pid_t p;

                        if (write(fd, "0", 1) != 1)
                                _exit(100);
                        /* pids counts threads: a sanitizer's own count against the 5 too. */
                        d = opendir("/proc/self/task");
                        if (!d)
                                _exit(101);
                        while ((de = readdir(d)))
                                tasks += de->d_name[0] != '.';
                        closedir(d);
                        while (forks < 10 && (p = fork()) >= 0) {
                                if (p == 0)
                                        for (;;)
                                                pause();
                                forks++;
                        }
                        _exit(tasks + forks == 5 ? 0 : 10 + forks);
                }
                status = wait_status(pid);
                ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                              "with pids.max 5, a 5th fork did not fail alone (status %d)", status);
                ck_assert_int_eq(cgroup_run_kill(run), 0);
                ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        }
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

START_TEST(memory_max_is_enforced_or_refused)
{
        struct cgroup_run *run;
        struct cgroup_stats st;
        int fd, status;
        pid_t pid;

        ck_assert_int_eq(cgroup_run_create(tree, "run-memory", &run), 0);
        if (limit_available_or_refused(run, CGROUP_CTRL_MEMORY, "memory")) {
                char swap[PATH_MAX + 32];
                int sfd;

                ck_assert_int_eq(cgroup_run_set_memory_max(run, 32 << 20), 0);
                /* No way around the limit through swap. */
                snprintf(swap, sizeof(swap), "%s/run-memory/memory.swap.max", tree_path);
                sfd = open(swap, O_WRONLY | O_CLOEXEC);
                if (sfd >= 0) {
                        ck_assert_int_eq(write(sfd, "0", 1), 1);
                        close(sfd);
                }
                fd = cgroup_run_procs_fd(run);
                pid = fork();
                ck_assert_int_ge(pid, 0);
                if (pid == 0) {
                        size_t len = 256 << 20;
                        char *p;

                        if (write(fd, "0", 1) != 1)
                                _exit(100);
                        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                                 0);
                        if (p == MAP_FAILED)
                                _exit(101);
                        memset(p, 1, len);
                        _exit(0);
                }
                status = wait_status(pid);
                ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
                              "256 MiB under memory.max 32 MiB: status %d", status);
                ck_assert_int_eq(cgroup_run_stats(run, &st), 0);
                ck_assert_uint_ge(st.oom_kills, 1);
                ck_assert(st.oom_kills != CGROUP_UNKNOWN);
                if (st.memory_peak != CGROUP_UNKNOWN)
                        ck_assert_uint_le(st.memory_peak, 32 << 20);
                ck_assert_int_eq(cgroup_run_set_memory_max(run, CGROUP_LIMIT_MAX), 0);
                ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        }
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

START_TEST(cpu_weight_is_set_or_refused_and_checked_for_range)
{
        char path[PATH_MAX + 32], text[32] = "";
        struct cgroup_run *run;
        FILE *f;

        ck_assert_int_eq(cgroup_run_create(tree, "run-cpu", &run), 0);
        ck_assert_int_eq(cgroup_run_set_cpu_weight(run, 0), -EINVAL);
        ck_assert_int_eq(cgroup_run_set_cpu_weight(run, 10001), -EINVAL);
        if (limit_available_or_refused(run, CGROUP_CTRL_CPU, "cpu")) {
                ck_assert_int_eq(cgroup_run_set_cpu_weight(run, 50), 0);
                snprintf(path, sizeof(path), "%s/run-cpu/cpu.weight", tree_path);
                f = fopen(path, "re");
                ck_assert_ptr_nonnull(f);
                ck_assert_ptr_nonnull(fgets(text, sizeof(text), f));
                fclose(f);
                ck_assert_str_eq(text, "50\n");
        }
        ck_assert_int_eq(cgroup_run_remove(run), 0);
        cgroup_run_unref(run);
}
END_TEST

START_TEST(stats_count_cpu_time_and_say_unknown_for_missing_files)
{
        char path[PATH_MAX + 32];
        struct cgroup_run *run;
        struct cgroup_stats st;
        int fd;
        pid_t pid;

        ck_assert_int_eq(cgroup_run_create(tree, "run-stats", &run), 0);
        fd = cgroup_run_procs_fd(run);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int64_t until;

                if (write(fd, "0", 1) != 1)
                        _exit(100);
                until = cpu_ms() + 200;
                while (cpu_ms() < until)
                        ;
                _exit(0);
        }
        ck_assert_int_eq(wait_status(pid), 0);
        ck_assert_int_eq(cgroup_run_wait_empty(run, 5000), 0);
        ck_assert_int_eq(cgroup_run_stats(run, &st), 0);
        ck_assert_msg(st.cpu_usec != CGROUP_UNKNOWN && st.cpu_usec >= 150000,
                      "200 ms of CPU counted as %llu us", (unsigned long long)st.cpu_usec);
        ck_assert_uint_le(st.user_usec + st.system_usec, st.cpu_usec + 1000);

        snprintf(path, sizeof(path), "%s/run-stats/memory.peak", tree_path);
        if (access(path, F_OK) < 0)
                ck_assert(st.memory_peak == CGROUP_UNKNOWN);
        else
                ck_assert(st.memory_peak != CGROUP_UNKNOWN && st.memory_peak > 0);
        snprintf(path, sizeof(path), "%s/run-stats/memory.events", tree_path);
        if (access(path, F_OK) < 0)
                ck_assert(st.oom_kills == CGROUP_UNKNOWN);
        else
                ck_assert_uint_eq(st.oom_kills, 0);

        ck_assert_int_eq(cgroup_run_remove(run), 0);
        ck_assert_int_eq(cgroup_run_stats(run, &st), -ENOENT);
        cgroup_run_unref(run);
}
END_TEST

static Suite *cgroup_suite(void)
{
        Suite *s = suite_create("cgroup");
        TCase *tc = tcase_create("cgroup");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 30);
        tcase_add_test(tc, mount_and_own_path_are_found);
        tcase_add_test(tc, controller_lists_are_parsed_by_exact_name);
        tcase_add_test(tc, run_names_are_validated);
        tcase_add_test(tc, create_refuses_an_existing_run_and_open_finds_it);
        tcase_add_test(tc, tree_open_refuses_a_folder_that_is_not_cgroup2);
        tcase_add_test(tc, tree_open_refuses_a_subtree_not_delegated_to_the_caller);
        tcase_add_test(tc, setup_moves_every_thread_into_the_leaf_and_enables_what_is_available);
        tcase_add_test(tc, child_writing_to_procs_fd_before_exec_runs_in_the_run_cgroup);
        tcase_add_test(tc, clone3_into_cgroup_starts_the_child_in_the_run_cgroup);
        tcase_add_test(tc, kill_kills_a_child_ignoring_sigterm_and_its_escaped_grandchild);
        tcase_add_test(tc, signal_reaches_every_process_of_the_run_even_an_escaped_one);
        tcase_add_test(tc, populated_goes_from_1_to_0);
        tcase_add_test(tc, wait_empty_sleeps_until_the_timeout_then_returns_when_empty);
        tcase_add_test(tc, leftover_runs_are_listed_after_their_creator_forgets_them_and_removed);
        tcase_add_test(tc, remove_refuses_a_populated_run_and_takes_nested_cgroups);
        tcase_add_test(tc, pids_max_is_enforced_or_refused);
        tcase_add_test(tc, memory_max_is_enforced_or_refused);
        tcase_add_test(tc, cpu_weight_is_set_or_refused_and_checked_for_range);
        tcase_add_test(tc, stats_count_cpu_time_and_say_unknown_for_missing_files);
        suite_add_tcase(s, tc);
        return s;
}

/* Kills what the cases left in our folder, waits for it to be empty, removes it all. */
static int remove_tree(const char *path)
{
        char sub[PATH_MAX];
        struct dirent *de;
        DIR *d;

        d = opendir(path);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        while ((de = readdir(d)))
                if (de->d_type == DT_DIR && de->d_name[0] != '.') {
                        snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
                        remove_tree(sub);
                }
        closedir(d);
        return rmdir(path) < 0 ? -errno : 0;
}

static void clean_base(const char *base)
{
        char file[PATH_MAX + 32], text[128];
        int i, fd;
        ssize_t n;

        snprintf(file, sizeof(file), "%s/cgroup.kill", base);
        fd = open(file, O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
                if (write(fd, "1", 1) < 0)
                        fprintf(stderr, "test-cgroup: %s: %s\n", file, strerror(errno));
                close(fd);
        }
        snprintf(file, sizeof(file), "%s/cgroup.events", base);
        for (i = 0; i < 500; i++) {
                fd = open(file, O_RDONLY | O_CLOEXEC);
                if (fd < 0)
                        break;
                n = read(fd, text, sizeof(text) - 1);
                close(fd);
                if (n <= 0)
                        break;
                text[n] = '\0';
                if (strstr(text, "populated 0"))
                        break;
                usleep(10000);
        }
        if (remove_tree(base) < 0)
                fprintf(stderr, "test-cgroup: cannot remove %s: %s\n", base, strerror(errno));
}

int main(void)
{
        const char *skip = getenv("SLOWWORK_TEST_NO_CGROUP");
        struct cgroup_tree *base;
        char *m = NULL, *own = NULL, base_path[PATH_MAX * 2];
        const char *why = NULL;
        int r = 0, result;

        if (geteuid() != 0)
                why = "not root";
        else if ((r = cgroup_find_mount(&m)) < 0)
                why = "no cgroup2 mount in /proc/self/mountinfo";
        else if ((r = cgroup_pid_path(0, &own)) < 0)
                why = "no 0:: line in /proc/self/cgroup";
        if (why) {
                fprintf(stderr, "test-cgroup: %s%s%s: these tests need root and cgroup2%s\n", why,
                        r < 0 ? ": " : "", r < 0 ? strerror(-r) : "",
                        skip && strcmp(skip, "1") == 0
                            ? "; skipped, as SLOWWORK_TEST_NO_CGROUP=1 says"
                            : " (SLOWWORK_TEST_NO_CGROUP=1 skips them)");
                return skip && strcmp(skip, "1") == 0 ? 77 : EXIT_FAILURE;
        }
        snprintf(mnt, sizeof(mnt), "%s", strcmp(m, "/") == 0 ? "" : m);
        snprintf(base_rel, sizeof(base_rel), "%s/slowwork-test-%d",
                 strcmp(own, "/") == 0 ? "" : own, (int)getpid());
        snprintf(base_path, sizeof(base_path), "%s%s", mnt, base_rel);
        free(m);
        free(own);

        r = cgroup_tree_open(base_path, true, &base);
        if (r < 0) {
                fprintf(stderr, "test-cgroup: cannot make %s: %s\n", base_path, strerror(-r));
                return EXIT_FAILURE;
        }
        /* What our cgroup offers, passed on to the cases' subtrees. */
        r = cgroup_tree_enable(base, CGROUP_CTRL_ALL, NULL);
        cgroup_tree_unref(base);
        if (r < 0) {
                fprintf(stderr, "test-cgroup: cannot enable controllers in %s: %s\n", base_path,
                        strerror(-r));
                clean_base(base_path);
                return EXIT_FAILURE;
        }
        result = run_suite(cgroup_suite());
        clean_base(base_path);
        return result;
}
