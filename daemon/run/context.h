/* SPDX-License-Identifier: MIT */
/*
 * What every run has, a shell job's or a plugin's: the narrow context the runners work in (not
 * the daemon's whole state), the job as a runner sees it, their clocks, and their capped log.
 */
#ifndef SLOWWORKD_RUN_CONTEXT_H
#define SLOWWORKD_RUN_CONTEXT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "slowwork-plugin.h"

struct contain;
struct events;
struct fence_context;
struct pause;
struct inflight;
struct run_handover;
struct run_record;
struct suspend;
struct sw_limits;

/* Set up by daemon_init(); the loop writes the atomic members, the runners read them. */
struct run_context {
        const char *log_dir;
        int log_dir_fd;            /* the logs folder, opened once: logs are made inside it */
        int64_t log_limit;         /* atomic: log bytes kept per run */
        int64_t log_budget;        /* atomic: log bytes kept per user, so per run too */
        int64_t min_free_space;    /* atomic: percent of the logs' file system kept free */
        double kill_grace;         /* atomic: SIGTERM to SIGKILL */
        bool stopping;             /* atomic: shutting down, queued runs do not start */
        bool interrupting;         /* atomic: stop-timeout is up, running ones stop */
        bool fenced;               /* atomic: the node's lease ran out: runs stop at once (SIGKILL)
                                    * and queue again, none starts */
        double fence_at;           /* atomic: when (monotonic) it is fenced, if not renewed by then
                                    * (0: no lease), for threads that see it before the loop */
        bool handing_over;         /* atomic: the daemon re-executes itself (reexec): runs in
                                    * progress hand themselves over, none starts */
        bool system;               /* the system instance: jobs run as their owners */
        uid_t uid;                 /* the daemon's */
        struct rlimit jobs_nofile; /* RLIMIT_NOFILE as the daemon got it, before it raised its own */
        struct contain *contain;   /* where their processes are kept */
        struct inflight *inflight; /* the plugin runs, kept across a crash */
        /* Where the store is shared, each shell run's fence, should the node die; NULL: none */
        const struct fence_context *fence;
        /* The layer above's, kept here for it (jobs/item.c, jobs/gate.c); runners never look. */
        struct pause *pause;   /* the daemon's: whether new runs start, and those in progress */
        struct pause *node_pause; /* this node's own, the same (jobs/claims.c) */
        struct events *events; /* where a run's start and end are posted to the loop */
};

/*
 * A job as a runner sees it, for one run: what it runs, and where the run's state that the loop
 * reads or kicks lives. Made by the layer above on the pool thread; its pointers are into the
 * job, which outlives the run.
 */
struct run_job {
        int64_t id;
        uid_t owner;
        bool very_slow;
        double timeout;                  /* seconds, 0: none */
        char *const *argv;               /* a shell job's, and its cwd and environment */
        const char *cwd;
        char *const *envp;               /* NULL: the daemon's own */
        const struct sw_limits *limits;  /* a shell job's */
        slowwork_plugin_entry *plugin_entry; /* a plugin job's, and what it is given */
        const char *plugin_arg;
        const unsigned *cancelling;      /* atomic: cancels in progress; a run seeing it stops */
        pthread_mutex_t *kick_lock;      /* kick_fd is under it */
        int *kick_fd;                    /* the run's eventfd, -1 between runs */
        pid_t *pid;                      /* atomic: the run's process group, 0 when none */
        struct suspend *suspend;         /* its run's processes stopped (suspend, continue) */
        /* Not a run of the job but its on-end command after the run the record names (a shell
         * run only): its cgroup and its in-flight entry are told apart from the run's. */
        bool on_end;
        char *const *extra_env; /* set over the environment it would get (NULL: none) */
        char *output;           /* a run without a log (the record's NULL): its output's start, */
        size_t output_size;     /* NUL-terminated, in this many bytes (0: none kept) */
        /* A shell run the daemon's last program handed over, to take up (NULL: a new run); and
         * where the runner puts the run it hands over itself (it then does not end it). */
        const struct run_handover *resume;
        struct run_handover **handed;
        /* The run starts now (rec has its number and log): told before its process starts. */
        void (*started)(const struct run_job *job, struct run_record *rec);
        void *data;                      /* the layer above's, for started */
};

/* The daemon's clocks: the real ones, moved forward by whatever the test hook advanced them
 * (jobs/test-clock.c; 0 without it). Every "is it time yet" of the jobs and their runs reads
 * them: schedules, delays, retries, timeouts, kill-grace, suspensions, and run records' times. */
double run_mono_now(void); /* seconds, for deadlines */
double run_wall_now(void); /* Unix seconds, for records */
/* The monotonic clock as it is, never moved: leases and fences, which the supervisor and the
 * other nodes share. */
double run_mono_real(void);
/* Moves both clocks forward (seconds >= 0). The loop thread only: the test hook's. */
void run_clock_advance(double seconds);
double run_kill_grace(const struct run_context *ctx);
/* Whether the node's fence is on (the loop said so, or its time has come): runs stop, none
 * starts. Any thread. */
bool run_fenced(const struct run_context *ctx);

/* Whether the file system of the logs folder (dir_fd) has less than min_free percent of its
 * space free for users (statvfs f_bavail); never when min_free is 0. */
bool run_space_low(int dir_fd, int64_t min_free);

/* A run's log file, cut at log-limit (or max-log-bytes-per-user, when smaller), or once its file
 * system is below min-free-space, with a note that says so. The file is made by the first write:
 * a run that writes nothing costs no file. Without a path, no file: the output's start is kept in
 * memory, if asked (keep). */
struct run_log {
        int dir_fd;       /* the logs folder */
        const char *path; /* the file's, NULL: no log; its name is made in dir_fd */
        int fd;           /* -1 until the first write */
        int err;          /* the file could not be made: every write fails with it */
        uid_t uid;        /* whom the file is given to when made; (uid_t)-1: the daemon keeps it */
        gid_t gid;
        int64_t logged, limit; /* of the run's output */
        int64_t size;          /* of the file: the output kept and the notes */
        int64_t min_free;      /* percent */
        bool cut;
        /* Without a path: the output's start is kept here (keep_size bytes with the NUL that
         * ends it; NULL: none), the rest dropped. */
        char *keep;
        size_t keep_size, kept;
};

void run_log_init(struct run_log *log, const struct run_context *ctx, const char *path);
/* 0, or -errno. The first write makes the file (mode 0600) in the logs folder, in place of
 * whatever had its name (a link is removed, never followed), and gives it to uid and gid. */
int run_log_write(struct run_log *log, const void *data, size_t n);
void run_log_close(struct run_log *log);

#endif
