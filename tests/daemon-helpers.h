/* SPDX-License-Identifier: MIT */
/* A real slowworkd on a private socket, and a raw client for it. */
#ifndef SLOWWORK_TESTS_DAEMON_HELPERS_H
#define SLOWWORK_TESTS_DAEMON_HELPERS_H

#include <check.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <sys/types.h>

struct daemon {
        pid_t pid;
        bool own_dir; /* dir was made for this daemon and goes with it */
        char dir[64];
        char sock[PATH_MAX];
        char state[PATH_MAX]; /* --state-dir, removed with the daemon */
        char schema[32];      /* --store-schema, with a PostgreSQL store */
        char cluster_key[PATH_MAX]; /* its --cluster-key-file there ("": the suite's) */
        char passwd[PATH_MAX];      /* its /etc/passwd, in a mount namespace ("": the host's) */
        bool with_clock;            /* started by daemon_start_clocked (a start again keeps it) */
        int clock_fd; /* the test's end of its clock's socket while it runs, 0: none */
};

/*
 * The job database: with SLOWWORK_TEST_STORE set (a PostgreSQL conninfo, as tests/pg-server run
 * sets it), every daemon gets --store with it and a --store-schema of its own (a daemon started
 * again keeps its schema, as it keeps its state folder); unset, each keeps its SQLite file in its
 * state folder, as by default. daemon_store() is SLOWWORK_TEST_STORE, or NULL.
 */
const char *daemon_store(void);
/* For a case that needs the SQLite file itself: with a PostgreSQL store, says so and why on one
 * line, and returns from the case. */
#define SKIP_UNLESS_SQLITE(why)                                                                    \
        do {                                                                                       \
                if (daemon_store()) {                                                              \
                        skipped_with_postgresql(__func__, why);                                    \
                        return;                                                                    \
                }                                                                                  \
        } while (0)
void skipped_with_postgresql(const char *test, const char *why);

/* Starts slowworkd --socket DIR/sock with the extra arguments (NULL-terminated) and returns
 * once it answers. */
void daemon_start(struct daemon *d, ...);
/* daemon_start with the test hook on the clocks (SLOWWORKD_TEST_CLOCK_FD; HACKING.md, the
 * tests): the daemon's clocks are the real ones moved forward by daemon_advance_clock. */
void daemon_start_clocked(struct daemon *d, ...);
/* Moves the clocks of a daemon started so forward by seconds, and returns once it answers: by
 * then its recurring jobs due have been queued, its delayed runs queued again with what is left
 * of their delay, and its running jobs told to look at their timeout. Fails after 20 s. */
void daemon_advance_clock(struct daemon *d, double seconds);
/* The same on the socket path d already names (its folder exists). */
void daemon_start_again(struct daemon *d, ...);
/* Without --socket: the user instance's path under $XDG_RUNTIME_DIR. */
void daemon_start_default(struct daemon *d);
/* Runs slowworkd with the arguments and returns its exit status, for ones that must fail. */
int daemon_run_status(const char *first, ...);
/* The same beside d: on its state folder and its schema of the job database. */
int daemon_run_status_beside(struct daemon *d, ...);
/* Waits for it to exit and removes its folders: the wait status. */
int daemon_reap(struct daemon *d);
/* The same, with what it wrote to stderr in *ret_err (the caller frees it). */
int daemon_run_stderr(char **ret_err, const char *first, ...);
/* SIGTERM, then checks that it exited with 0 and removed its socket. */
void daemon_stop(struct daemon *d);
/* SIGTERM, and checks that it exited with 0 (its folders stay, for a start again). */
void daemon_stop_clean(struct daemon *d);
/* SIGKILL, and waits until nothing answers on its socket any more (folders stay). */
void daemon_kill_hard(struct daemon *d);
/* Removes its folders, once it was waited for (daemon_kill_hard). */
void daemon_remove(struct daemon *d);
bool daemon_alive(struct daemon *d);

/* Whether the process has exited (a zombie nobody reaped yet counts). */
bool process_gone(pid_t pid);
/* The pid a job wrote into the file, once it has (fails the test after 10 s). */
pid_t pid_in_file(const char *path);

int client_connect(const char *sock); /* -1 with errno when nothing answers */
void client_write(int fd, const char *data, size_t len);
void client_send(int fd, const char *text); /* text and a newline */
/* The next line, or NULL at EOF; fails the test after 20 s without one. */
char *client_read_line(int fd);
/* Sends a request and returns the reply object (which the caller puts). */
json_object *client_call(int fd, const char *method, const char *params_json);
/* The result of a call that must succeed (the caller puts it). */
json_object *call_ok(int fd, const char *method, const char *params);
/* The error code of a call that must fail, with its message in msg. */
int call_error(int fd, const char *method, const char *params, char *msg, size_t len);
/* The reply's error code, or 0 for a result. */
int reply_code(json_object *reply);
json_object *reply_result(json_object *reply);

/* Job helpers: each fails the test on an error reply. */
int64_t job_submit(int fd, const char *params_json);
json_object *job_wait(int fd, int64_t id);    /* the run record */
json_object *job_status(int fd, int64_t id);  /* the status object */
char *job_log(int fd, int64_t id);            /* the last run's log, whole */
const char *job_state_of(int fd, int64_t id); /* pending, running or idle (a static buffer) */
/* Waits for the job to be in the state want, on subscribe's events (on a connection of its own):
 * a state that sends none (an idle job leaving) cannot be waited for. Fails after 20 s. */
void job_wait_state(int fd, int64_t id, const char *want);
/* A file's whole text, which may be empty (malloc'd). */
char *file_text(const char *path);
/* Waits until the running job's process is in its runner's hands (status shows its pid): a job is
 * running from when a thread takes it, a moment before its process exists, and before its
 * timeout starts to count (a clock moved meanwhile does not count for it). Fails after 20 s. */
void job_wait_process(int fd, int64_t id);
/* The same for a plugin's run, which has no process: until its status says when it started. */
void job_wait_started(int fd, int64_t id);
/* Waits until the job has left the daemon's tables (its status comes from the history). */
void job_wait_retired(int fd, int64_t id);
const char *str_member(json_object *o, const char *name);
/* The queue.list entry of a queue (the caller puts it), or NULL. */
json_object *queue_entry(int fd, const char *name);
int64_t int_member(json_object *o, const char *name);

/* Gates for jobs. A FIFO at dir/name (the caller frees the path); the daemon's folder goes with
 * what is made in it. */
char *fifo_make(const char *dir, const char *name);
/* Lets a job blocked reading the FIFO (cat FIFO) go on: opens it for writing, which waits for the
 * reader, and closes it, which gives the reader its end of file. */
void fifo_release(const char *path);
/* What a job writes into the FIFO (echo ... >FIFO), once it closes it; fails after 20 s. */
char *fifo_read_all(const char *path);

/* systemd's notify socket, played by a datagram socket bound at path. */
int notify_listen(const char *path);
/* The next message, or NULL when none comes in timeout_ms. */
char *notify_read(int fd, int timeout_ms);
/* Reads messages until one has the line (as "READY=1"), and returns it; fails after 20 s. */
char *notify_wait(int fd, const char *line);
bool has_line(const char *message, const char *line);

/* Whether this machine lets the daemon contain runs in cgroups (root, and cgroup2 mounted);
 * where it does not, a cgroup case fails, unless SLOWWORK_TEST_NO_CGROUP=1 says to skip it. */
bool has_cgroups(void);
/* The mount point of cgroup2, from /proc/self/mountinfo. */
void cgroup2_mount(char *buf, size_t len);
/* Daemons started from now on (in this test) see no cgroup2 mount: they run in a mount namespace
 * of their own without it. Root only. */
void daemons_without_cgroups(void);
/* Daemons started from now on (in this test) are the program at path, not the build's. */
void daemons_from(const char *path);
/* Daemons started from now on (in this test) run as uid (its gid too, no other groups), each
 * with its folder made uid's: a user instance that is not root. Root only. */
void daemons_as_user(uid_t uid);
/* Whether uid can run the program (SLOWWORKD, SLOWCTL) of this build: found by running it with
 * --version as uid, its groups dropped. A build tree only its owner can enter (mktemp -d's 0700,
 * a root-only build folder) is out of another user's reach: a case that needs another user then
 * says so on stderr, naming the case, and returns (SKIP_UNLESS_USER_CAN_RUN). Root only. */
bool user_can_run(uid_t uid, const char *program);
#define SKIP_UNLESS_USER_CAN_RUN(uid, program)                                                     \
        do {                                                                                       \
                if (!user_can_run(uid, program)) {                                                 \
                        skipped_out_of_reach(__func__, uid, program);                              \
                        return;                                                                    \
                }                                                                                  \
        } while (0)
void skipped_out_of_reach(const char *test, uid_t uid, const char *program);

#endif
