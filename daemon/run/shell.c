/* SPDX-License-Identifier: MIT */
/*
 * One run of a shell job: /bin/sh -c COMMAND or an argv (in the system instance as the job's
 * owner), in its own session and process group, stdin from /dev/null, stdout and stderr through
 * a pipe into the run's log (cut at log-limit). The thread waits on the pipe, the process (pidfd)
 * and the job's kick eventfd: a cancel, a timeout or a shutdown sends SIGTERM to the group, and
 * SIGKILL after kill-grace.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "run/contain.h"
#include "run/context.h"
#include "run/fence.h"
#include "run/handover.h"
#include "run/inflight.h"
#include "run/limits.h"
#include "run/shell.h"
#include "run/spawn.h"
#include "run/suspend.h"
#include "store/run-record.h"
#include "util/cgroup.h"
#include "util/credentials.h"
#include "util/log.h"

/* How often a run without a pidfd looks whether its process has ended. */
#define NO_PIDFD_CHECK_MS 100
/* How long killed processes of a run's cgroup may take to be gone before the run ends anyway. */
#define KILLED_WAIT_MS 10000

struct run {
        const struct run_context *ctx;
        const struct run_job *job;
        struct cgroup_run *cgroup; /* where its processes are, NULL: its process group only */
        struct run_log log;
        const char *stopped_as; /* outcome when we stopped it: cancelled, timed-out, ... */
        double deadline;        /* monotonic seconds, 0: no timeout */
        double kill_at;         /* monotonic seconds, 0: no SIGKILL due */
        bool kept;              /* not handed over (out of memory): watched to its end here */
};

/* Copies what the pipe holds now; false at end of file. */
static bool drain(struct run *run, int fd)
{
        char buf[65536];
        ssize_t n;

        while ((n = read(fd, buf, sizeof(buf))) > 0)
                run_log_write(&run->log, buf, (size_t)n);
        return n < 0 && errno == EAGAIN;
}

/* sig to every process of the run: its cgroup's, whatever session or group they made, else its
 * process group's. */
static void signal_all(struct run *run, pid_t pid, int sig)
{
        if (!run->cgroup)
                kill(-pid, sig);
        else if (sig == SIGKILL)
                cgroup_run_kill(run->cgroup);
        else
                cgroup_run_signal(run->cgroup, sig);
}

static void stop(struct run *run, pid_t pid, const char *as)
{
        if (run->stopped_as)
                return;
        run->stopped_as = as;
        suspend_detach(run->job->suspend);
        signal_all(run, pid, run_fenced(run->ctx) ? SIGKILL : SIGTERM);
        run->kill_at = run_mono_now() + run_kill_grace(run->ctx);
}

/* Why the loop kicked us, if it wants the run stopped. */
static const char *stop_reason(const struct run_context *ctx, const struct run_job *job)
{
        if (__atomic_load_n(&ctx->stopping, __ATOMIC_ACQUIRE) || run_fenced(ctx))
                return "interrupted";
        if (__atomic_load_n(job->cancelling, __ATOMIC_ACQUIRE))
                return "cancelled";
        return NULL;
}

/* Whether anything of the run is left: in its cgroup, or in its process group, whose id stays
 * ours while any member lives. */
static bool anything_left(struct run *run, pid_t pid)
{
        return run->cgroup ? cgroup_run_populated(run->cgroup) > 0 : kill(-pid, 0) == 0;
}

/* Waits up to ms for the run to be empty: on its cgroup's events, else by looking every 20 ms. */
static void wait_empty(struct run *run, pid_t pid, int ms)
{
        if (run->cgroup) {
                cgroup_run_wait_empty(run->cgroup, ms);
                return;
        }
        for (double end = run_mono_now() + ms / 1000.0; anything_left(run, pid);) {
                if (run_mono_now() >= end)
                        return;
                poll(NULL, 0, 20);
        }
}

/*
 * The job's first process is gone; what is left of the run gets SIGTERM (unless the run was
 * stopped already), then SIGKILL when kill-grace is up. A run's end waits for its last process.
 */
static void finish_group(struct run *run, pid_t pid)
{
        double left_ms;

        if (!anything_left(run, pid))
                return;
        if (!run->kill_at) {
                signal_all(run, pid, SIGTERM);
                run->kill_at = run_mono_now() + run_kill_grace(run->ctx);
        }
        left_ms = (run->kill_at - run_mono_now()) * 1000.0;
        wait_empty(run, pid, left_ms > 0 ? (int)ceil(left_ms) : 0);
        if (anything_left(run, pid)) {
                signal_all(run, pid, SIGKILL);
                if (run->cgroup)
                        wait_empty(run, pid, KILLED_WAIT_MS);
        }
}

/*
 * pidfd_open(2) is a raw system call that ThreadSanitizer does not see, so closing the descriptor
 * looks like a race with the last user of its number; tests/tsan.supp names this function.
 */
__attribute__((noinline)) static void close_pidfd(int pidfd)
{
        close(pidfd);
}

/* Without a pidfd (none left, or a kernel or a filter that refuses the call): whether the
 * process has ended, leaving it to be reaped. */
static bool exited(pid_t pid)
{
        siginfo_t info = {0};

        return waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
               info.si_pid == pid;
}

int shell_watch_check(void)
{
        int fd = (int)pidfd_open(getpid(), 0);

        if (fd < 0)
                return -errno;
        close_pidfd(fd);
        return 0;
}

/* Whether the daemon's next program is to take the run up (reexec): one being stopped ends here
 * first, and an on-end command (which has nowhere to hand itself over) runs to its end. */
static bool handing_over(const struct run *run)
{
        return run->job->handed && !run->stopped_as && !run->kept &&
               __atomic_load_n(&run->ctx->handing_over, __ATOMIC_ACQUIRE);
}

/* Waits for the process to end, copying its output, and says how it ended; or, when the run is
 * handed over, lets go of it as it is (false). */
static bool watch(struct run *run, pid_t pid, int out_fd, int kick_fd, struct run_record *rec)
{
        const struct run_job *job = run->job;
        double deadline = run->deadline;
        int pidfd = (int)pidfd_open(pid, 0);
        bool out_open = true;
        siginfo_t info;

        for (;;) {
                struct pollfd fds[3] = {
                    {.fd = pidfd, .events = POLLIN},
                    {.fd = kick_fd, .events = POLLIN},
                    {.fd = out_open ? out_fd : -1, .events = POLLIN},
                };
                double now = run_mono_now(), next = 0;
                int timeout = -1;
                uint64_t kicks;

                double due = suspend_deadline(job->suspend, deadline);

                if (due > 0 && !run->stopped_as)
                        next = due;
                if (run->kill_at > 0 && (next == 0 || run->kill_at < next))
                        next = run->kill_at;
                if (next > 0)
                        timeout = next <= now ? 0 : (int)ceil((next - now) * 1000.0);
                if (pidfd < 0 && (timeout < 0 || timeout > NO_PIDFD_CHECK_MS))
                        timeout = NO_PIDFD_CHECK_MS;
                if (handing_over(run)) {
                        if (out_open)
                                drain(run, out_fd);
                        if (pidfd >= 0)
                                close_pidfd(pidfd);
                        return false;
                }
                poll(fds, 3, timeout);
                if (fds[2].revents)
                        out_open = drain(run, out_fd);
                /* A kick with no reason to stop: the clocks moved (the test hook). */
                if (fds[1].revents && read(kick_fd, &kicks, sizeof(kicks)) > 0 &&
                    stop_reason(run->ctx, job))
                        stop(run, pid, stop_reason(run->ctx, job));
                now = run_mono_now();
                due = suspend_deadline(job->suspend, deadline);
                if (due > 0 && now >= due)
                        stop(run, pid, "timed-out");
                if (run->kill_at > 0 && now >= run->kill_at) {
                        signal_all(run, pid, SIGKILL);
                        run->kill_at = 0;
                }
                if (pidfd >= 0 ? fds[0].revents != 0 : exited(pid))
                        break;
        }
        suspend_detach(job->suspend);
        if (pidfd >= 0)
                close_pidfd(pidfd);
        memset(&info, 0, sizeof(info));
        waitid(P_PID, (id_t)pid, &info, WEXITED);
        finish_group(run, pid);
        if (info.si_code == CLD_EXITED) {
                rec->exit_code = info.si_status;
                rec->outcome = rec->exit_code == 0 ? "succeeded" : "failed";
        } else {
                rec->signal = info.si_status;
                /* SIGKILL from the supervisor, past the lease, while the daemon was stopped. */
                rec->outcome = info.si_status == SIGKILL && run_fenced(run->ctx)
                                   ? "interrupted"
                                   : "killed";
        }
        if (run->stopped_as)
                rec->outcome = run->stopped_as;
        if (out_open)
                drain(run, out_fd);
        return true;
}

static void end_run(const struct run_job *job, int kick_fd)
{
        pthread_mutex_lock(job->kick_lock);
        *job->kick_fd = -1;
        pthread_mutex_unlock(job->kick_lock);
        if (kick_fd >= 0)
                close(kick_fd);
}

/* A job runs as its owner, always: as the daemon only when the daemon is its owner. */
static bool runs_as_owner(const struct run_context *ctx, const struct run_job *job)
{
        return job->owner != ctx->uid;
}

/*
 * The owner's passwd entry and groups, looked up at each run so that a change to the user's groups
 * applies to the next run; their log is theirs alone.
 */
static int take_owner(const struct run_job *job, struct run_log *log, struct user_creds **ret, char *note,
                      size_t notelen)
{
        int r = credentials_lookup_user(job->owner, ret);

        if (r == -ENOENT) {
                snprintf(note, notelen, "cannot run job %lld: its owner, uid %u, no longer exists",
                         (long long)job->id, (unsigned)job->owner);
                log_warning("%s", note);
        } else if (r < 0) {
                snprintf(note, notelen, "cannot run job %lld: cannot look up uid %u: %s",
                         (long long)job->id, (unsigned)job->owner, strerror(-r));
                log_warning("%s", note);
        }
        log->uid = job->owner;
        if (r == 0)
                log->gid = (*ret)->gid;
        return r;
}

/* What the run's processes used, and whether the OOM killer struck, as far as the kernel says. */
static void account(struct run_record *rec, struct cgroup_run *cg)
{
        struct cgroup_stats st;

        if (cgroup_run_stats(cg, &st) < 0)
                return;
        if (st.cpu_usec != CGROUP_UNKNOWN)
                rec->cpu_time = (double)st.cpu_usec / 1e6;
        if (st.memory_peak != CGROUP_UNKNOWN)
                rec->memory_peak = (int64_t)st.memory_peak;
        rec->oom = st.oom_kills != CGROUP_UNKNOWN && st.oom_kills > 0;
}

/* A run no cgroup holds is marked in the inflight file until its last process is gone, so that
 * a start after a crash finds what it left. */
static int mark_inflight(const struct run_context *ctx, const struct run_job *job, int64_t number,
                         pid_t pid)
{
        struct inflight_run r = {.id = job->id, .run = job->on_end ? -number : number, .pid = pid};

        if (inflight_proc_stat(pid, &r.start, NULL, NULL) < 0)
                return -1; /* gone already: nothing to find */
        return inflight_enter(ctx->inflight, &r);
}

/* The run's fence, where the store is shared: before its first process when a cgroup holds the
 * run (cg), just after it (pid) when its process group does. 0: none. */
static pid_t fence(const struct run_context *ctx, const struct run_job *job, int64_t number,
                   struct cgroup_run *cg, pid_t pid)
{
        const struct fence_context *f = ctx->fence;

        if (!f || (cg && pid) || (!cg && !pid))
                return 0;
        return fence_start(f, job->id, number, cg ? cgroup_run_fd(cg) : -1, pid);
}

/* The run's own cgroup, where runs are contained; else (or when it cannot be made: said in the
 * log) NULL, and the run keeps to its process group. */
static struct cgroup_run *run_cgroup(const struct run_context *ctx, const struct run_job *job,
                                     int64_t number)
{
        struct cgroup_run *cg = NULL;
        int r = job->on_end ? contain_on_end_new(ctx->contain, job->id, number, &cg)
                            : contain_run_new(ctx->contain, job->id, number, &cg);

        if (r < 0)
                log_warning("Job %lld: cannot make a cgroup for %s %lld, it runs in its process "
                            "group only: %s",
                            (long long)job->id, job->on_end ? "the on-end command of run" : "run",
                            (long long)number, strerror(-r));
        return cg;
}

static bool watch_to_end(struct run *run, pid_t pid, int out_fd, int kick_fd, int slot,
                         struct run_record *rec);
static void finish(struct run *run, int out_fd, int kick_fd, pid_t fenced, struct run_record *rec);

void shell_run(const struct run_context *ctx, const struct run_job *job, struct run_record *rec)
{
        struct run run = {.ctx = ctx, .job = job};
        struct spawn_limits limits;
        int pipefd[2] = {-1, -1}, kick_fd, r;
        struct user_creds *as = NULL;
        char note[512] = "";
        pid_t pid, fenced = 0;

        /* From now on a suspend is kept for the process, which comes in a moment. */
        suspend_begin(job->suspend);
        run_log_init(&run.log, ctx, rec->log);
        run.log.keep = job->output;
        run.log.keep_size = job->output_size;

        /* Published before stop_reason() is read: a cancel either is seen now, or kicks. */
        kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_lock(job->kick_lock);
        *job->kick_fd = kick_fd;
        pthread_mutex_unlock(job->kick_lock);
        if (stop_reason(ctx, job) || kick_fd < 0) {
                /* Cancelled or shut down before it could start. */
                rec->outcome = kick_fd < 0 ? "failed" : stop_reason(ctx, job);
                rec->ended = run_wall_now();
                suspend_detach(job->suspend);
                end_run(job, kick_fd);
                return;
        }
        /* From its start, as the loop sees it: a clock moved after that moves towards it. */
        if (job->timeout > 0)
                run.deadline = run_mono_now() + job->timeout;
        job->started(job, rec);
        r = runs_as_owner(ctx, job) ? take_owner(job, &run.log, &as, note, sizeof(note)) : 0;
        if (r == 0 && pipe2(pipefd, O_CLOEXEC) < 0)
                r = -errno;
        if (r == 0)
                run.cgroup = run_cgroup(ctx, job, rec->run);
        if (r == 0)
                r = limits_apply_cgroup(job->limits, run.cgroup, note, sizeof(note));
        limits_for_spawn(job->limits, runs_as_owner(ctx, job), &ctx->jobs_nofile, &limits);
        if (r == 0 && run.cgroup)
                fenced = fence(ctx, job, rec->run, run.cgroup, 0);
        if (r == 0)
                r = spawn_job(&(struct spawn_params){.argv = job->argv,
                                                     .envp = job->envp,
                                                     .extra_env = job->extra_env,
                                                     .cwd = job->cwd,
                                                     .out_fd = pipefd[1],
                                                     .as = as,
                                                     .cgroup_fd = run.cgroup
                                                                      ? cgroup_run_fd(run.cgroup)
                                                                      : -1,
                                                     .cgroup_procs_fd =
                                                         run.cgroup
                                                             ? cgroup_run_procs_fd(run.cgroup)
                                                             : -1,
                                                     .limits = &limits},
                              &pid, note, sizeof(note));
        if (pipefd[1] >= 0)
                close(pipefd[1]);
        user_creds_free(as);
        if (r < 0) {
                char line[600];
                int n;

                if (!note[0])
                        snprintf(note, sizeof(note), "cannot run %s: %s", job->argv[0],
                                 strerror(-r));
                n = snprintf(line, sizeof(line), "slowworkd: %s\n", note);
                run_log_write(&run.log, line,
                              (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
                rec->outcome = "failed";
                rec->exit_code = 127;
                suspend_detach(job->suspend);
        } else {
                int slot = run.cgroup ? -1 : mark_inflight(ctx, job, rec->run, pid);

                if (!run.cgroup)
                        fenced = fence(ctx, job, rec->run, NULL, pid);
                /* Suspend and signal reach it before status shows its pid. */
                suspend_attach(job->suspend, run.cgroup, pid);
                __atomic_store_n(job->pid, pid, __ATOMIC_RELEASE);
                fcntl(pipefd[0], F_SETFL, O_NONBLOCK);
                if (!watch_to_end(&run, pid, pipefd[0], kick_fd, slot, rec))
                        return;
        }
        finish(&run, pipefd[0], kick_fd, fenced, rec);
}

/* The run's output pipe, log and cgroup let go of, unless handed over; its record finished. */
static void finish(struct run *run, int out_fd, int kick_fd, pid_t fenced, struct run_record *rec)
{
        const struct run_job *job = run->job;
        int r;

        if (fenced > 0)
                fence_end(fenced);
        if (out_fd >= 0)
                close(out_fd);
        rec->log_bytes = run->log.size;
        run_log_close(&run->log);
        rec->ended = run_wall_now();
        if (run->cgroup)
                account(rec, run->cgroup);
        if (run->cgroup && (r = cgroup_run_remove(run->cgroup)) < 0)
                log_warning("Job %lld: cannot remove the cgroup of run %lld: %s",
                            (long long)job->id, (long long)rec->run, strerror(-r));
        cgroup_run_unref(run->cgroup);
        end_run(job, kick_fd);
}

/* The run's processes, its pipe and its log as the next program takes them up; NULL when out of
 * memory (the run is then watched to its end here). */
static struct run_handover *hand_over(struct run *run, pid_t pid, int out_fd,
                                      const struct run_record *rec)
{
        struct run_handover *h = calloc(1, sizeof(*h));

        if (!h)
                return NULL;
        *h = (struct run_handover){
            .id = run->job->id,
            .run = rec->run,
            .pid = pid,
            .out_fd = out_fd,
            .log_fd = run->log.fd,
            .cgroup = run->cgroup != NULL,
            .deadline = run->deadline,
            .started = rec->started,
            .logged = run->log.logged,
            .log_size = run->log.size,
            .cut = run->log.cut,
        };
        suspend_hand_over(run->job->suspend, &h->suspended, &h->since, &h->total);
        return h;
}

/* Watches the run (its process pid, its pipe, its inflight slot) to its end: true. Or it is
 * handed over: its processes go on, their pipe, log and cgroup are the next program's, and its
 * inflight slot stays for a crash meanwhile (false). */
static bool watch_to_end(struct run *run, pid_t pid, int out_fd, int kick_fd, int slot,
                         struct run_record *rec)
{
        const struct run_job *job = run->job;
        struct run_handover *h;

        while (!watch(run, pid, out_fd, kick_fd, rec)) {
                h = hand_over(run, pid, out_fd, rec);
                if (!h) {
                        /* It cannot be said: the reexec waits for the run's end. */
                        run->kept = true;
                        continue;
                }
                __atomic_store_n(job->pid, 0, __ATOMIC_RELEASE);
                *job->handed = h;
                cgroup_run_unref(run->cgroup);
                end_run(job, kick_fd);
                return false;
        }
        __atomic_store_n(job->pid, 0, __ATOMIC_RELEASE);
        inflight_leave(run->ctx->inflight, slot);
        return true;
}

void shell_resume(const struct run_context *ctx, const struct run_job *job,
                  struct run_record *rec)
{
        const struct run_handover *h = job->resume;
        struct run run = {.ctx = ctx, .job = job, .deadline = h->deadline};
        struct user_creds *as = NULL;
        int kick_fd, slot, r;
        char note[512];

        run_log_init(&run.log, ctx, rec->log);
        run.log.fd = h->log_fd;
        run.log.logged = h->logged;
        run.log.size = h->log_size;
        run.log.cut = h->cut;
        /* A log not made yet is made as a new run's is: its owner's. */
        if (runs_as_owner(ctx, job) && take_owner(job, &run.log, &as, note, sizeof(note)) == 0)
                user_creds_free(as);
        /* It goes on as it was: a cancel, a stop or a fence that comes now stops it. */
        kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        pthread_mutex_lock(job->kick_lock);
        *job->kick_fd = kick_fd;
        pthread_mutex_unlock(job->kick_lock);
        rec->started = h->started;
        job->started(job, rec);
        if (h->cgroup && (r = contain_run_open(ctx->contain, job->id, rec->run, &run.cgroup)) < 0)
                log_warning("Job %lld: cannot open the cgroup of run %lld: %s: its process group "
                            "stands for it",
                            (long long)job->id, (long long)rec->run, strerror(-r));
        slot = run.cgroup ? -1 : mark_inflight(ctx, job, rec->run, h->pid);
        suspend_attach(job->suspend, run.cgroup, h->pid); /* as suspend_expect() left it */
        __atomic_store_n(job->pid, h->pid, __ATOMIC_RELEASE);
        if (stop_reason(ctx, job))
                stop(&run, h->pid, stop_reason(ctx, job));
        if (!watch_to_end(&run, h->pid, h->out_fd, kick_fd, slot, rec))
                return;
        finish(&run, h->out_fd, kick_fd, 0, rec);
}
