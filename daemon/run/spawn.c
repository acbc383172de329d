/* SPDX-License-Identifier: MIT */
/*
 * A job's process, started the way posix_spawn() starts one: clone(CLONE_VM | CLONE_VFORK) on a
 * stack of its own, so that nothing of the daemon's memory is copied (a fork of the daemon costs
 * page tables for all of it: 19 ms against 4 ms per `true` here). The child shares the daemon's
 * memory until exec, and the calling thread waits until then. So the child touches nothing but
 * its own stack and reads only what was made before the clone; it makes raw system calls only
 * (libc's setuid() would signal the daemon's threads, sanitizers' interceptors would run on the
 * calling thread's state), and reports a failure by writing it into the caller's memory.
 *
 * Where it can, the child is made by clone3() with CLONE_INTO_CGROUP, born in the run's cgroup:
 * moving it there by a write to cgroup.procs waits for an RCU grace period (milliseconds, with
 * the calling thread stopped). glibc does not export its clone3() wrapper, so ours is below for
 * x86-64; elsewhere, or where clone3() is refused (old kernels, seccomp filters), the child is
 * made by clone() and writes cgroup.procs itself.
 *
 * A shell command that the shell would only look up and start is started without it
 * (plain-command.c); the shell gets it when that lookup finds nothing to run.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <linux/keyctl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "run/plain-command.h"
#include "run/spawn.h"
#include "util/credentials.h"

/* The child's stack, beside what execvpe() keeps there for a script without #!: a new argv. */
#define STACK_SIZE (256 * 1024)

#define SYSCALL_STR_(n) #n
#define SYSCALL_STR(n) SYSCALL_STR_(n)

/* The 32-bit ids of the architectures that also have 16-bit ones. */
#ifdef SYS_setresuid32
#define SYS_SETRESUID SYS_setresuid32
#define SYS_SETRESGID SYS_setresgid32
#define SYS_SETGROUPS SYS_setgroups32
#else
#define SYS_SETRESUID SYS_setresuid
#define SYS_SETRESGID SYS_setresgid
#define SYS_SETGROUPS SYS_setgroups
#endif

#if defined(__clang__) || __GNUC__ >= 8
#define CHILD_CODE __attribute__((no_sanitize("address", "thread", "undefined"), noinline))
#else
#define CHILD_CODE __attribute__((noinline))
#endif

extern char **environ;

/* What the child was doing when it failed. */
enum stage { STAGE_SETUP, STAGE_CGROUP, STAGE_LIMITS, STAGE_USER, STAGE_CWD, STAGE_EXEC };

struct child {
        const struct spawn_params *p;
        char *const *envp;
        const struct plain_command *plain; /* tried before the shell, when not NULL */
        bool by_clone3;   /* born in its cgroup, its signal handlers cleared */
        uint64_t ignored; /* the signals ignored, bit sig - 1 */
        int stage;        /* written by the child when it fails */
        int err;          /* 0: exec succeeded */
};

/* dup2(), except that a descriptor already in place loses close-on-exec as a copy would. */
CHILD_CODE static long move_fd(int from, int to)
{
        if (from == to)
                return syscall(SYS_fcntl, to, F_SETFD, 0);
        return syscall(SYS_dup3, from, to, 0);
}

/* Every signal's handling to the default, and none blocked. Raw: glibc's sigaction() refuses
 * the signals it keeps for itself (32 and 33), which may still be ignored from whoever started
 * the daemon. A kernel sigaction of zeros is SIG_DFL with no flags on every layout. A child that
 * clone3() cleared of handlers (CLONE_CLEAR_SIGHAND) has only the ignored signals to reset. */
CHILD_CODE static long reset_signals(const struct child *c)
{
        unsigned long zeros[8] = {0};

        for (int sig = 1; sig < NSIG; sig++)
                if (sig != SIGKILL && sig != SIGSTOP &&
                    (!c->by_clone3 || (c->ignored >> (sig - 1) & 1)))
                        syscall(SYS_rt_sigaction, sig, zeros, NULL, (size_t)_NSIG / 8);
        return syscall(SYS_rt_sigprocmask, SIG_SETMASK, zeros, NULL, (size_t)_NSIG / 8);
}

CHILD_CODE static long apply_limits(const struct spawn_limits *l)
{
        for (unsigned i = 0; i < l->nrlimits; i++)
                if (syscall(SYS_prlimit64, 0, l->rlimits[i].resource, &l->rlimits[i].value, NULL) <
                    0)
                        return -1;
        /* The niceness is the process's own: it is set before the user's, to allow below 0. */
        if (l->set_nice && syscall(SYS_setpriority, PRIO_PROCESS, 0, l->nice) < 0)
                return -1;
        return 0;
}

CHILD_CODE static long become(const struct user_creds *u)
{
        /* Groups first: after setgid and setuid we could change them no more. */
        if (syscall(SYS_SETGROUPS, (size_t)u->ngroups, u->groups) < 0 ||
            syscall(SYS_SETRESGID, u->gid, u->gid, u->gid) < 0 ||
            syscall(SYS_SETRESUID, u->uid, u->uid, u->uid) < 0)
                return -1;
        /* A session keyring of the user's own, not the daemon's. */
        if (syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL) >= 0)
                return 0;
        if (errno != EPERM && errno != ENOSYS)
                return -1;
        /* A seccomp filter that refuses keyrings (systemd-nspawn's, Docker's) refuses the job
         * the daemon's too: it inherits the filter. Anything else that refused the join is not
         * known to. */
        if (syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_SESSION_KEYRING, 0) >= 0) {
                errno = EPERM;
                return -1;
        }
        return errno == EPERM || errno == ENOSYS ? 0 : -1;
}

CHILD_CODE static int child_main(void *arg)
{
        struct child *c = arg;
        const struct spawn_params *p = c->p;
        long null_fd;

        c->stage = STAGE_SETUP;
        if (reset_signals(c) < 0 || syscall(SYS_setsid) < 0)
                goto fail;
        if (move_fd(p->out_fd, 1) < 0 || move_fd(p->out_fd, 2) < 0)
                goto fail;
        null_fd = syscall(SYS_openat, AT_FDCWD, "/dev/null", O_RDONLY);
        if (null_fd < 0 || move_fd((int)null_fd, 0) < 0)
                goto fail;
        /* Into the run cgroup while still privileged to, before anything of the job runs. */
        c->stage = STAGE_CGROUP;
        if (p->cgroup_fd >= 0 && !c->by_clone3 &&
            syscall(SYS_write, p->cgroup_procs_fd, "0", 1) != 1)
                goto fail;
        c->stage = STAGE_LIMITS;
        if (p->limits && apply_limits(p->limits) < 0)
                goto fail;
        c->stage = STAGE_USER;
        if (p->as && become(p->as) < 0)
                goto fail;
        /* As the user: a folder they may not enter is theirs to be refused. */
        c->stage = STAGE_CWD;
        if (syscall(SYS_chdir, p->cwd) < 0)
                goto fail;
        /* Nothing else of the daemon's, not even what it inherited without close-on-exec. */
        c->stage = STAGE_SETUP;
        if (syscall(SYS_close_range, 3u, ~0u, 0) < 0)
                goto fail;
        c->stage = STAGE_EXEC;
        /* A file that is no program the shell would run as a script: the shell's, then. */
        for (char *const *f = c->plain ? c->plain->paths : NULL; f && *f; f++)
                if (execve(*f, c->plain->argv, c->envp) < 0 && errno == ENOEXEC)
                        break;
        execvpe(p->argv[0], p->argv, c->envp);
fail:
        c->err = errno ? errno : EIO;
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

/* Whether var ("NAME=VALUE") names one of extra's variables. */
static bool set_by(const char *var, char *const *extra)
{
        const char *eq = strchr(var, '=');
        size_t n = eq ? (size_t)(eq - var) : strlen(var);

        for (; *extra; extra++)
                if (strncmp(*extra, var, n) == 0 && (*extra)[n] == '=')
                        return true;
        return false;
}

/* envp's variables but those extra sets, then extra's (the strings are theirs: the caller frees
 * the array alone); NULL when out of memory. */
static char **with_extra(char *const *envp, char *const *extra)
{
        size_t n = 0, m = 0, k = 0;
        char **env;

        while (envp[n])
                n++;
        while (extra[m])
                m++;
        env = malloc((n + m + 1) * sizeof(*env));
        if (!env)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (!set_by(envp[i], extra))
                        env[k++] = envp[i];
        for (size_t i = 0; i < m; i++)
                env[k++] = extra[i];
        env[k] = NULL;
        return env;
}

/*
 * libc's own clone(). ThreadSanitizer's takes every clone() for a fork() and resets its state in
 * the child, which here is the daemon's state too.
 */
typedef int clone_fn(int (*fn)(void *), void *stack, int flags, void *arg, ...);
static clone_fn *libc_clone = clone;
static pthread_once_t libc_clone_once = PTHREAD_ONCE_INIT;

static void find_libc_clone(void)
{
        void *libc = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
        void *fn = libc ? dlsym(libc, "clone") : NULL;

        if (fn)
                libc_clone = (clone_fn *)fn;
        if (libc)
                dlclose(libc);
}

/*
 * The child's stack, one per calling thread, kept for its next spawn: a new mapping for every
 * run cost a page fault per page touched and, when unmapped, a TLB flush on every CPU that runs
 * a thread of the daemon. Its lowest page is a guard: a child that overflows it dies alone.
 */
struct child_stack {
        void *base;
        size_t size;
};
static pthread_key_t stack_key;
static pthread_once_t stack_key_once = PTHREAD_ONCE_INIT;

static void stack_free(void *p)
{
        struct child_stack *st = p;

        munmap(st->base, st->size);
        free(st);
}

static void stack_key_make(void)
{
        if (pthread_key_create(&stack_key, stack_free) != 0)
                abort();
}

/* A stack of at least size bytes above its guard, NULL when none can be had. */
static struct child_stack *stack_get(size_t size)
{
        size_t page = (size_t)sysconf(_SC_PAGESIZE);
        struct child_stack *st;

        pthread_once(&stack_key_once, stack_key_make);
        size = (size + page - 1) / page * page + page;
        st = pthread_getspecific(stack_key);
        if (st && st->size >= size)
                return st;
        if (!st && !(st = calloc(1, sizeof(*st))))
                return NULL;
        if (st->base)
                munmap(st->base, st->size);
        st->size = size;
        st->base = mmap(NULL, size, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK | MAP_NORESERVE, -1, 0);
        if (st->base == MAP_FAILED || mprotect(st->base, page, PROT_NONE) < 0) {
                if (st->base != MAP_FAILED)
                        munmap(st->base, size);
                free(st);
                pthread_setspecific(stack_key, NULL);
                return NULL;
        }
        pthread_setspecific(stack_key, st);
        return st;
}

#if defined(__x86_64__) && defined(CLONE_INTO_CGROUP) && defined(CLONE_CLEAR_SIGHAND)
/*
 * clone3(args, size), the child calling fn(arg) on args->stack and exiting with what it returns,
 * as glibc's own (sysdeps/unix/sysv/linux/x86_64/clone3.S): -errno on failure.
 */
long spawn_clone3(struct clone_args *args, size_t size, int (*fn)(void *), void *arg);
__asm__(".text\n"
        ".globl spawn_clone3\n"
        ".hidden spawn_clone3\n"
        ".type spawn_clone3, @function\n"
        "spawn_clone3:\n"
        "        mov %rcx, %r8\n" /* arg, in a register the system call keeps */
        "        mov $" SYSCALL_STR(SYS_clone3) ", %eax\n"
        "        syscall\n"
        "        test %rax, %rax\n"
        "        jz 1f\n"
        "        ret\n"
        "1:      xor %ebp, %ebp\n" /* the child, on its own stack: the outermost frame */
        "        and $-16, %rsp\n"
        "        mov %r8, %rdi\n"
        "        call *%rdx\n"
        "        mov %rax, %rdi\n"
        "        mov $" SYSCALL_STR(SYS_exit) ", %eax\n"
        "        syscall\n"
        "        hlt\n"
        ".size spawn_clone3, .-spawn_clone3\n");

/* Whether clone3() may work here: not refused as unknown yet. */
static bool clone3_known = true;

/*
 * The signals ignored when the first job started (by the daemon, SIGPIPE, or by whoever started
 * it), which a job must not inherit. Signals a plugin ignores later stay ignored in the jobs that
 * clone3() starts; handlers are cleared whoever set them.
 */
static uint64_t ignored_signals;
static pthread_once_t ignored_once = PTHREAD_ONCE_INIT;

static void find_ignored_signals(void)
{
        unsigned long old[4];

        for (int sig = 1; sig < NSIG && sig <= 64; sig++)
                if (syscall(SYS_rt_sigaction, sig, NULL, old, (size_t)_NSIG / 8) == 0 &&
                    old[0] == (unsigned long)SIG_IGN)
                        ignored_signals |= (uint64_t)1 << (sig - 1);
}

/* The child, born in the run's cgroup (c->by_clone3), or -errno when clone3() cannot make it. */
static pid_t clone_into_cgroup(struct child *c, struct child_stack *st)
{
        struct clone_args args = {
            .flags = CLONE_VM | CLONE_VFORK | CLONE_INTO_CGROUP | CLONE_CLEAR_SIGHAND,
            .exit_signal = SIGCHLD,
            .stack = (uint64_t)(uintptr_t)st->base,
            .stack_size = st->size,
            .cgroup = (uint64_t)c->p->cgroup_fd,
        };
        long pid;

        if (!__atomic_load_n(&clone3_known, __ATOMIC_RELAXED))
                return -ENOSYS;
        pthread_once(&ignored_once, find_ignored_signals);
        c->ignored = ignored_signals;
        c->by_clone3 = true;
        pid = spawn_clone3(&args, sizeof(args), child_main, c);
        if (pid == -ENOSYS || pid == -E2BIG)
                __atomic_store_n(&clone3_known, false, __ATOMIC_RELAXED);
        if (pid < 0)
                c->by_clone3 = false;
        return (pid_t)pid;
}
#else
static pid_t clone_into_cgroup(struct child *c, struct child_stack *st)
{
        (void)c;
        (void)st;
        return -ENOSYS;
}
#endif

/* What failed in the child, for the run's log. */
static void describe(const struct spawn_params *p, const struct child *c, char *note,
                     size_t notelen)
{
        switch (c->stage) {
        case STAGE_CGROUP:
                snprintf(note, notelen, "cannot put %s into its cgroup: %s", p->argv[0],
                         strerror(c->err));
                break;
        case STAGE_LIMITS:
                snprintf(note, notelen, "cannot set the limits of %s: %s", p->argv[0],
                         strerror(c->err));
                break;
        case STAGE_USER:
                snprintf(note, notelen, "cannot run as user %s (uid %u): %s", p->as->name,
                         (unsigned)p->as->uid, strerror(c->err));
                break;
        case STAGE_CWD:
                snprintf(note, notelen, "cannot change to %s%s%s: %s", p->cwd,
                         p->as ? " as user " : "", p->as ? p->as->name : "", strerror(c->err));
                break;
        case STAGE_EXEC:
                snprintf(note, notelen, "cannot run %s: %s", p->argv[0], strerror(c->err));
                break;
        default:
                snprintf(note, notelen, "cannot set up the process for %s: %s", p->argv[0],
                         strerror(c->err));
                break;
        }
}

int spawn_job(const struct spawn_params *p, pid_t *ret_pid, char *note, size_t notelen)
{
        char *own[3] = {NULL, NULL, NULL}, **user_envp = NULL, **extra_envp = NULL;
        struct child c = {.p = p};
        struct plain_command plain = {NULL, NULL};
        sigset_t all, old;
        struct child_stack *stack;
        size_t argc = 0;
        pid_t pid;
        int r = 0;

        note[0] = '\0';
        if (p->as)
                c.envp = user_envp = user_env(p->envp, p->as, own);
        else
                c.envp = p->envp ? p->envp : environ;
        if (c.envp && p->extra_env)
                c.envp = extra_envp = with_extra(c.envp, p->extra_env);
        while (p->argv[argc])
                argc++;
        if (argc == 3 && strcmp(p->argv[0], "/bin/sh") == 0 && strcmp(p->argv[1], "-c") == 0 &&
            c.envp && plain_command_parse(p->argv[2], c.envp, p->cwd, &plain))
                c.plain = &plain;
        stack = stack_get(STACK_SIZE + (argc + 2) * sizeof(char *));
        if (!c.envp || !stack) {
                r = -ENOMEM;
                goto out;
        }
        /* No signal handler of the daemon's may run in the child before it resets them. */
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        /* Returns when the child has called exec, or has given up. */
        pid = p->cgroup_fd >= 0 ? clone_into_cgroup(&c, stack) : -ENOSYS;
        if (pid < 0) {
                pthread_once(&libc_clone_once, find_libc_clone);
                pid = libc_clone(child_main, (char *)stack->base + stack->size,
                                 CLONE_VM | CLONE_VFORK | SIGCHLD, &c);
                if (pid < 0)
                        r = -errno;
        }
        pthread_sigmask(SIG_SETMASK, &old, NULL);
        if (r == 0 && c.err) {
                waitpid(pid, NULL, 0);
                describe(p, &c, note, notelen);
                r = -c.err;
        }
        if (r == 0)
                *ret_pid = pid;
out:
        if (r < 0 && !note[0])
                snprintf(note, notelen, "cannot run %s: %s", p->argv[0], strerror(-r));
        free(plain.argv);
        free(own[0]);
        free(own[1]);
        free(own[2]);
        free(user_envp);
        free(extra_envp);
        return r;
}
