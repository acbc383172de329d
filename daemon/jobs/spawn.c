/* SPDX-License-Identifier: MIT */
/*
 * A job's process. As the daemon's own user and outside a cgroup, posix_spawn() does it all. As
 * another user, or into a run cgroup, it cannot (it has no way to change credentials, nor to
 * enter a cgroup), so we fork: everything the child needs is made before the fork, and the child
 * makes only async-signal-safe calls up to exec. It reports a failure through a close-on-exec
 * pipe, so that an end of file there means exec succeeded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "jobs/spawn.h"
#include "util/credentials.h"

extern char **environ;

static int spawn_as_daemon(const struct spawn_params *p, pid_t *ret_pid)
{
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none, all;
        int r;

        sigemptyset(&none);
        sigfillset(&all);
        posix_spawnattr_init(&attr);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK |
                                            POSIX_SPAWN_SETSIGDEF);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setsigdefault(&attr, &all);
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, p->out_fd, 1);
        posix_spawn_file_actions_adddup2(&fa, p->out_fd, 2);
        posix_spawn_file_actions_addchdir_np(&fa, p->cwd);
        /* Nothing else of the daemon's, not even what it inherited without close-on-exec. */
        posix_spawn_file_actions_addclosefrom_np(&fa, 3);
        r = posix_spawnp(ret_pid, p->argv[0], &fa, &attr, p->argv, p->envp ? p->envp : environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        return -r;
}

/* What the child was doing when it failed. */
enum stage { STAGE_SETUP, STAGE_CGROUP, STAGE_USER, STAGE_CWD, STAGE_EXEC };

struct child_error {
        int stage;
        int err;
};

/* dup2(), except that a descriptor already in place loses close-on-exec as a copy would. */
static int move_fd(int from, int to)
{
        if (from == to)
                return fcntl(to, F_SETFD, 0);
        return dup2(from, to) < 0 ? -1 : 0;
}

static int close_all_but(int keep)
{
        if (keep > 3 && close_range(3, (unsigned)keep - 1, 0) < 0)
                return -1;
        return close_range((unsigned)keep + 1, ~0u, 0);
}

/*
 * Sets the signal's handling to the default. glibc's sigaction() refuses the signals it keeps for
 * itself (32 and 33), which may still be ignored from whoever started the daemon: those go to the
 * kernel directly. SIG_DFL is 0, so a kernel sigaction of zeros is the same on every layout.
 */
static void reset_signal(int sig)
{
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        unsigned long zeros[8] = {0};

        if (sigaction(sig, &dfl, NULL) < 0 && errno == EINVAL)
                syscall(SYS_rt_sigaction, sig, zeros, NULL, (size_t)_NSIG / 8);
}

/* Between fork and exec: async-signal-safe calls only, on memory made before the fork. */
__attribute__((noreturn)) static void child(const struct spawn_params *p, char *const *envp,
                                            int err_fd)
{
        struct child_error e = {STAGE_SETUP, 0};
        sigset_t none;
        int sig, null_fd;

        /* Ignored signals stay ignored across exec (the daemon ignores SIGPIPE): reset them
         * all, then unblock what the parent blocked around the fork. */
        for (sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP)
                        reset_signal(sig);
        sigemptyset(&none);
        if (sigprocmask(SIG_SETMASK, &none, NULL) < 0 || setsid() < 0)
                goto fail;
        if (move_fd(p->out_fd, 1) < 0 || move_fd(p->out_fd, 2) < 0)
                goto fail;
        null_fd = open("/dev/null", O_RDONLY);
        if (null_fd < 0 || move_fd(null_fd, 0) < 0)
                goto fail;
        /* Into the run cgroup while still privileged to, before anything of the job runs. */
        e.stage = STAGE_CGROUP;
        if (p->cgroup_procs_fd >= 0 && write(p->cgroup_procs_fd, "0", 1) != 1)
                goto fail;
        e.stage = STAGE_USER;
        /* Groups first: after setgid and setuid we could change them no more. */
        if (p->as && (setgroups((size_t)p->as->ngroups, p->as->groups) < 0 ||
                      setresgid(p->as->gid, p->as->gid, p->as->gid) < 0 ||
                      setresuid(p->as->uid, p->as->uid, p->as->uid) < 0))
                goto fail;
        /* As the user: a folder they may not enter is theirs to be refused. */
        e.stage = STAGE_CWD;
        if (chdir(p->cwd) < 0)
                goto fail;
        e.stage = STAGE_SETUP;
        if (close_all_but(err_fd) < 0)
                goto fail;
        e.stage = STAGE_EXEC;
        execvpe(p->argv[0], p->argv, envp);
fail:
        e.err = errno;
        if (write(err_fd, &e, sizeof(e)) < 0) {
                /* the parent then takes the exit status 127 as a failed run anyway */
        }
        _exit(127);
}

static int has_name(const char *var, const char *name)
{
        size_t n = strlen(name);

        return strncmp(var, name, n) == 0 && var[n] == '=';
}

/*
 * base, with HOME, USER and LOGNAME the user's (in own[], which the caller frees). Without base,
 * a PATH only: the daemon's own environment is not for other users to read.
 */
static char **user_env(char *const *base, const struct user_creds *u, char *own[3])
{
        static char *const plain[] = {(char *)"PATH=" SPAWN_USER_PATH, NULL};
        size_t n = 0, i, k = 0;
        char **env;

        if (!base)
                base = plain;
        while (base && base[n])
                n++;
        env = malloc((n + 4) * sizeof(*env));
        if (!env)
                return NULL;
        for (i = 0; i < n; i++)
                if (!has_name(base[i], "HOME") && !has_name(base[i], "USER") &&
                    !has_name(base[i], "LOGNAME"))
                        env[k++] = base[i];
        if (asprintf(&own[0], "HOME=%s", u->home) < 0)
                own[0] = NULL;
        if (asprintf(&own[1], "USER=%s", u->name) < 0)
                own[1] = NULL;
        if (asprintf(&own[2], "LOGNAME=%s", u->name) < 0)
                own[2] = NULL;
        if (!own[0] || !own[1] || !own[2]) {
                free(env);
                return NULL;
        }
        env[k++] = own[0];
        env[k++] = own[1];
        env[k++] = own[2];
        env[k] = NULL;
        return env;
}

/* The child's report: 0 when exec succeeded, else -errno with the note filled in. */
static int child_result(const struct spawn_params *p, pid_t pid, int err_fd, char *note,
                        size_t notelen)
{
        struct child_error e;
        ssize_t n;

        do
                n = read(err_fd, &e, sizeof(e));
        while (n < 0 && errno == EINTR);
        if (n == 0)
                return 0;
        waitpid(pid, NULL, 0);
        if (n != (ssize_t)sizeof(e)) {
                snprintf(note, notelen, "cannot run %s: lost track of its process", p->argv[0]);
                return -EIO;
        }
        switch (e.stage) {
        case STAGE_CGROUP:
                snprintf(note, notelen, "cannot put %s into its cgroup: %s", p->argv[0],
                         strerror(e.err));
                break;
        case STAGE_USER:
                snprintf(note, notelen, "cannot run as user %s (uid %u): %s", p->as->name,
                         (unsigned)p->as->uid, strerror(e.err));
                break;
        case STAGE_CWD:
                snprintf(note, notelen, "cannot change to %s%s%s: %s", p->cwd,
                         p->as ? " as user " : "", p->as ? p->as->name : "", strerror(e.err));
                break;
        case STAGE_EXEC:
                snprintf(note, notelen, "cannot run %s: %s", p->argv[0], strerror(e.err));
                break;
        default:
                snprintf(note, notelen, "cannot set up the process for %s: %s", p->argv[0],
                         strerror(e.err));
                break;
        }
        return -e.err;
}

static int spawn_forked(const struct spawn_params *p, pid_t *ret_pid, char *note, size_t notelen)
{
        char *own[3] = {NULL, NULL, NULL};
        char **envp = p->as ? user_env(p->envp, p->as, own) : (char **)(p->envp ? p->envp : environ);
        int pipefd[2] = {-1, -1}, r;
        sigset_t all, old;
        pid_t pid;

        if (!envp) {
                r = -ENOMEM;
                goto out;
        }
        if (pipe2(pipefd, O_CLOEXEC) < 0) {
                r = -errno;
                goto out;
        }
        /* The child's 0, 1 and 2 are taken: its end of the pipe must lie above them. */
        if (pipefd[1] < 3) {
                int high = fcntl(pipefd[1], F_DUPFD_CLOEXEC, 3);

                close(pipefd[1]);
                pipefd[1] = high;
                if (high < 0) {
                        r = -errno;
                        close(pipefd[0]);
                        goto out;
                }
        }
        /* No signal handler of the daemon's may run in the child before it resets them. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        pid = fork();
        if (pid == 0)
                child(p, envp, pipefd[1]);
        r = pid < 0 ? -errno : 0;
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        close(pipefd[1]);
        if (r == 0)
                r = child_result(p, pid, pipefd[0], note, notelen);
        if (r == 0)
                *ret_pid = pid;
        close(pipefd[0]);
out:
        free(own[0]);
        free(own[1]);
        free(own[2]);
        if (p->as)
                free(envp);
        return r;
}

int spawn_job(const struct spawn_params *p, pid_t *ret_pid, char *note, size_t notelen)
{
        int r;

        note[0] = '\0';
        r = p->as || p->cgroup_procs_fd >= 0 ? spawn_forked(p, ret_pid, note, notelen)
                                             : spawn_as_daemon(p, ret_pid);
        if (r < 0 && !note[0])
                snprintf(note, notelen, "cannot run %s: %s", p->argv[0], strerror(-r));
        return r;
}
