/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <poll.h>
#include <stddef.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"

#ifndef SLOWWORKD
#error "SLOWWORKD must name the slowworkd binary under test"
#endif

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

        nanosleep(&ts, NULL);
}

/* In the child: a mount namespace of its own without cgroup2 at mount_point, and with the file
 * passwd as /etc/passwd (NULL: each as it is). */
static void own_mounts(const char *mount_point, const char *passwd)
{
        if ((mount_point || passwd) &&
            (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
             (mount_point && umount2(mount_point, MNT_DETACH) < 0) ||
             (passwd && mount(passwd, "/etc/passwd", NULL, MS_BIND, NULL) < 0)))
                _exit(126);
}

static uid_t run_as; /* 0: as the test */
static int clock_child_fd = -1; /* the daemon's end of its clock's socket, while it is started */

static pid_t spawn_hiding(char **argv, bool quiet, const char *hide, const char *passwd)
{
        char clock_fd[16];
        pid_t pid;

#ifdef SLOWWORK_FENCE
        /* The runs' fences of the build, not of an installed slowwork. */
        setenv("SLOWWORKD_FENCE", SLOWWORK_FENCE, 0);
#endif
        pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                own_mounts(hide, passwd);
                if (run_as && (setgroups(0, NULL) < 0 || setresgid(run_as, run_as, run_as) < 0 ||
                               setresuid(run_as, run_as, run_as) < 0))
                        _exit(126);
                if (quiet)
                        if (!freopen("/dev/null", "w", stdout))
                                _exit(127);
                if (clock_child_fd >= 0) {
                        snprintf(clock_fd, sizeof(clock_fd), "%d", clock_child_fd);
                        if (fcntl(clock_child_fd, F_SETFD, 0) < 0 ||
                            setenv("SLOWWORKD_TEST_CLOCK_FD", clock_fd, 1) < 0)
                                _exit(126);
                }
                execv(argv[0], argv);
                _exit(127);
        }
        return pid;
}

static pid_t spawn(char **argv, bool quiet)
{
        return spawn_hiding(argv, quiet, NULL, NULL);
}

static bool without_cgroups;
static const char *daemon_program = SLOWWORKD;

void daemons_from(const char *path)
{
        daemon_program = path;
}

void daemons_without_cgroups(void)
{
        without_cgroups = true;
}

void daemons_as_user(uid_t uid)
{
        run_as = uid;
}

bool user_can_run(uid_t uid, const char *program)
{
        char *argv[] = {(char *)program, (char *)"--version", NULL};
        int status;
        pid_t pid = fork();

        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int null = open("/dev/null", O_RDWR | O_CLOEXEC);

                if (null < 0 || dup2(null, STDOUT_FILENO) < 0 || dup2(null, STDERR_FILENO) < 0 ||
                    setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                    setresuid(uid, uid, uid) < 0)
                        _exit(126);
                execv(program, argv);
                _exit(127);
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

void skipped_out_of_reach(const char *test, uid_t uid, const char *program)
{
        size_t len = strlen(test);

        if (len > 3 && strcmp(test + len - 3, "_fn") == 0) /* START_TEST's name for it */
                len -= 3;
        fprintf(stderr,
                "skipped: %.*s: uid %d cannot run %s (the build tree is out of its reach)\n",
                (int)len, test, (int)uid, program);
}

static int collect_args(char **argv, int n, int max, va_list ap)
{
        const char *a;

        while ((a = va_arg(ap, const char *)) && n < max - 1)
                argv[n++] = (char *)a;
        argv[n] = NULL;
        return n;
}

static void wait_ready(struct daemon *d)
{
        int i, fd, status;

        for (i = 0; i < 2000; i++) {
                fd = client_connect(d->sock);
                if (fd >= 0) {
                        close(fd);
                        return;
                }
                ck_assert_msg(waitpid(d->pid, &status, WNOHANG) == 0,
                              "slowworkd exited at start (%s %d)",
                              WIFSIGNALED(status) ? "signal" : "status",
                              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
                sleep_ms(5);
        }
        ck_abort_msg("slowworkd did not answer on %s", d->sock);
}

const char *daemon_store(void)
{
        const char *store = getenv("SLOWWORK_TEST_STORE");

        return store && *store ? store : NULL;
}

void skipped_with_postgresql(const char *test, const char *why)
{
        size_t len = strlen(test);

        if (len > 3 && strcmp(test + len - 3, "_fn") == 0) /* START_TEST's name for it */
                len -= 3;
        fprintf(stderr, "skipped with PostgreSQL: %.*s: %s\n", (int)len, test, why);
}

/* The arguments for d's state: its folder, and its own schema in a PostgreSQL store (made on its
 * first start). */
static int state_args(struct daemon *d, char **argv, int n)
{
        static int started;

        argv[n++] = (char *)"--state-dir";
        argv[n++] = d->state;
        if (daemon_store()) {
                if (!d->schema[0])
                        snprintf(d->schema, sizeof(d->schema), "t_%d_%d", (int)getpid(), ++started);
                argv[n++] = (char *)"--store";
                argv[n++] = (char *)daemon_store();
                argv[n++] = (char *)"--store-schema";
                argv[n++] = d->schema;
                argv[n++] = (char *)"--cluster-key-file";
                argv[n++] = d->cluster_key[0] ? d->cluster_key : getenv("SLOWWORK_TEST_CLUSTER_KEY");
        }
        return n;
}

static void close_clock(struct daemon *d)
{
        if (d->clock_fd > 0)
                close(d->clock_fd);
        d->clock_fd = 0;
}

static void start(struct daemon *d, bool with_socket, va_list ap)
{
        char *argv[32] = {(char *)daemon_program}, mount[512];
        int n = state_args(d, argv, 1), sv[2];

        if (with_socket) {
                argv[n++] = (char *)"--socket";
                argv[n++] = d->sock;
        }
        collect_args(argv, n, 32, ap);
        if (run_as)
                ck_assert_int_eq(chown(d->dir, run_as, run_as), 0);
        if (without_cgroups)
                cgroup2_mount(mount, sizeof(mount));
        close_clock(d);
        if (d->with_clock) {
                ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
                clock_child_fd = sv[1];
        }
        d->pid = spawn_hiding(argv, false, without_cgroups ? mount : NULL,
                              d->passwd[0] ? d->passwd : NULL);
        if (d->with_clock) {
                close(sv[1]);
                clock_child_fd = -1;
                d->clock_fd = sv[0];
        }
        wait_ready(d);
}

static void start_new(struct daemon *d, bool with_clock, va_list ap)
{
        snprintf(d->dir, sizeof(d->dir), "/tmp/slowwork-test-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(d->dir));
        snprintf(d->sock, sizeof(d->sock), "%s/sock", d->dir);
        snprintf(d->state, sizeof(d->state), "%s/state", d->dir);
        d->schema[0] = d->cluster_key[0] = d->passwd[0] = '\0';
        d->own_dir = true;
        d->with_clock = with_clock;
        d->clock_fd = 0;
        start(d, true, ap);
}

void daemon_start(struct daemon *d, ...)
{
        va_list ap;

        va_start(ap, d);
        start_new(d, false, ap);
        va_end(ap);
}

void daemon_start_clocked(struct daemon *d, ...)
{
        va_list ap;

        va_start(ap, d);
        start_new(d, true, ap);
        va_end(ap);
}

void daemon_advance_clock(struct daemon *d, double seconds)
{
        char line[64];
        char *answer;

        ck_assert_msg(d->clock_fd > 0, "the daemon was not started with a test clock");
        snprintf(line, sizeof(line), "advance %.6f", seconds);
        client_send(d->clock_fd, line);
        answer = client_read_line(d->clock_fd);
        ck_assert_msg(answer && strcmp(answer, "advanced") == 0, "the test clock answered %s",
                      answer ? answer : "nothing");
        free(answer);
}

void daemon_start_again(struct daemon *d, ...)
{
        va_list ap;

        va_start(ap, d);
        start(d, true, ap);
        va_end(ap);
}

static void start_plain(struct daemon *d, ...)
{
        va_list ap;

        va_start(ap, d);
        start(d, false, ap);
        va_end(ap);
}

void daemon_start_default(struct daemon *d)
{
        snprintf(d->sock, sizeof(d->sock), "%s/slowwork/slowworkd.sock", getenv("XDG_RUNTIME_DIR"));
        snprintf(d->state, sizeof(d->state), "%s/state", getenv("XDG_RUNTIME_DIR"));
        d->schema[0] = d->cluster_key[0] = d->passwd[0] = '\0';
        d->own_dir = false;
        d->with_clock = false;
        d->clock_fd = 0;
        start_plain(d, NULL);
}

/* Runs slowworkd with argv, its output dropped, and returns its exit status. */
static int run_status(char **argv)
{
        pid_t pid = spawn(argv, true);
        int status;

        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        return WEXITSTATUS(status);
}

int daemon_run_status(const char *first, ...)
{
        char *argv[32] = {(char *)SLOWWORKD, (char *)first};
        va_list ap;

        va_start(ap, first);
        collect_args(argv, 2, 32, ap);
        va_end(ap);
        return run_status(argv);
}

int daemon_run_status_beside(struct daemon *d, ...)
{
        char *argv[32] = {(char *)SLOWWORKD};
        va_list ap;

        va_start(ap, d);
        collect_args(argv, state_args(d, argv, 1), 32, ap);
        va_end(ap);
        return run_status(argv);
}

int daemon_run_stderr(char **ret_err, const char *first, ...)
{
        char *argv[32] = {(char *)SLOWWORKD, (char *)first}, *err = NULL;
        size_t len = 0, size = 0;
        int status, p[2];
        va_list ap;
        ssize_t n;
        pid_t pid;

        va_start(ap, first);
        collect_args(argv, 2, 32, ap);
        va_end(ap);
        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (dup2(p[1], STDERR_FILENO) < 0 || !freopen("/dev/null", "w", stdout))
                        _exit(127);
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        do {
                if (size - len < 256) {
                        size = size ? size * 2 : 1024;
                        err = realloc(err, size);
                        ck_assert_ptr_nonnull(err);
                }
                n = read(p[0], err + len, size - len - 1);
                if (n > 0)
                        len += (size_t)n;
        } while (n > 0 || (n < 0 && errno == EINTR));
        err[len] = '\0';
        close(p[0]);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        *ret_err = err;
        return WEXITSTATUS(status);
}

static int remove_one(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
        return remove(path);
}

static void remove_tree(const char *path)
{
        nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

bool daemon_alive(struct daemon *d)
{
        int status;

        return waitpid(d->pid, &status, WNOHANG) == 0;
}

void daemon_remove(struct daemon *d)
{
        remove_tree(d->state);
        if (d->own_dir)
                remove_tree(d->dir); /* with what the test made there (FIFOs) */
}

int daemon_reap(struct daemon *d)
{
        int status;

        ck_assert_int_eq(waitpid(d->pid, &status, 0), d->pid);
        close_clock(d);
        daemon_remove(d);
        return status;
}

void daemon_stop(struct daemon *d)
{
        struct stat st;
        int status;

        ck_assert_int_eq(kill(d->pid, SIGTERM), 0);
        status = daemon_reap(d);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "slowworkd ended with status 0x%x", status);
        ck_assert_int_eq(stat(d->sock, &st), -1);
}

int client_connect(const char *sock)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        ck_assert_uint_lt(strlen(sock), sizeof(sa.sun_path));
        memcpy(sa.sun_path, sock, strlen(sock) + 1);
        if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
                int e = errno;

                close(fd);
                errno = e;
                return -1;
        }
        return fd;
}

void client_write(int fd, const char *data, size_t len)
{
        while (len > 0) {
                ssize_t n = send(fd, data, len, MSG_NOSIGNAL);

                ck_assert_msg(n > 0, "write to slowworkd: %s", strerror(errno));
                data += n;
                len -= (size_t)n;
        }
}

void client_send(int fd, const char *text)
{
        client_write(fd, text, strlen(text));
        client_write(fd, "\n", 1);
}

/* What fd holds, up to and with the first newline, is peeked at and then read, so a line costs a
 * few system calls, not a few a byte (a pipe, which cannot be peeked at, is read a byte at a time).
 * Its checks are plain ifs: each ck_assert that holds writes check's mark point to a file. */
char *client_read_line(int fd)
{
        size_t len = 0, size = 4096;
        char *line = malloc(size);
        bool peek = true;

        if (!line)
                ck_abort_msg("out of memory");
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t n, take;
                char *nl;

                if (poll(&p, 1, 20000) != 1)
                        ck_abort_msg("no reply from slowworkd in 20 s");
                if (size - len < 2048) {
                        size *= 2;
                        line = realloc(line, size);
                        if (!line)
                                ck_abort_msg("out of memory");
                }
                n = peek ? recv(fd, line + len, size - len - 1, MSG_PEEK) : read(fd, line + len, 1);
                if (n < 0 && errno == ENOTSOCK) {
                        peek = false;
                        continue;
                }
                if (n == 0 || (n < 0 && errno == ECONNRESET)) {
                        free(line);
                        return NULL;
                }
                if (n < 0)
                        ck_abort_msg("read from slowworkd: %s", strerror(errno));
                nl = memchr(line + len, '\n', (size_t)n);
                take = nl ? nl - (line + len) + 1 : n;
                if (peek && read(fd, line + len, (size_t)take) != take)
                        ck_abort_msg("read from slowworkd: %s", strerror(errno));
                len += (size_t)take;
                if (nl) {
                        line[len - 1] = '\0';
                        return line;
                }
        }
}

json_object *client_call(int fd, const char *method, const char *params_json)
{
        static int next_id = 1;
        char *request, *line;
        json_object *reply;
        int id = __atomic_fetch_add(&next_id, 1, __ATOMIC_RELAXED); /* threads of one test */

        ck_assert_int_gt(asprintf(&request, "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"%s%s}",
                                  id, method, params_json ? ",\"params\":" : "",
                                  params_json ? params_json : ""),
                         0);
        client_send(fd, request);
        free(request);
        line = client_read_line(fd);
        ck_assert_ptr_nonnull(line);
        reply = json_tokener_parse(line);
        ck_assert_msg(reply != NULL, "not JSON: %s", line);
        free(line);
        ck_assert_int_eq(json_object_get_int(json_object_object_get(reply, "id")), id);
        return reply;
}

int reply_code(json_object *reply)
{
        json_object *error = json_object_object_get(reply, "error");

        return error ? json_object_get_int(json_object_object_get(error, "code")) : 0;
}

json_object *reply_result(json_object *reply)
{
        json_object *result = json_object_object_get(reply, "result");

        ck_assert_msg(result != NULL, "error reply: %s", json_object_to_json_string(reply));
        return result;
}

json_object *queue_entry(int fd, const char *name)
{
        json_object *r = call_ok(fd, "queue.list", NULL), *found = NULL;
        json_object *list = json_object_object_get(r, "queues");

        for (size_t i = 0; i < json_object_array_length(list); i++) {
                json_object *q = json_object_array_get_idx(list, i);

                if (strcmp(str_member(q, "name"), name) == 0)
                        found = json_object_get(q);
        }
        json_object_put(r);
        return found;
}

const char *str_member(json_object *o, const char *name)
{
        json_object *v = json_object_object_get(o, name);

        ck_assert_msg(v && json_object_is_type(v, json_type_string), "no string \"%s\" in %s", name,
                      json_object_to_json_string(o));
        return json_object_get_string(v);
}

int64_t int_member(json_object *o, const char *name)
{
        json_object *v = json_object_object_get(o, name);

        ck_assert_msg(v && json_object_is_type(v, json_type_int), "no integer \"%s\" in %s", name,
                      json_object_to_json_string(o));
        return json_object_get_int64(v);
}

json_object *call_ok(int fd, const char *method, const char *params)
{
        json_object *reply = client_call(fd, method, params);
        json_object *result;

        ck_assert_msg(reply_code(reply) == 0, "%s %s failed: %s", method, params ? params : "",
                      json_object_to_json_string(reply));
        result = json_object_get(reply_result(reply));
        json_object_put(reply);
        return result;
}

int call_error(int fd, const char *method, const char *params, char *msg, size_t len)
{
        json_object *reply = client_call(fd, method, params);
        json_object *error = json_object_object_get(reply, "error");
        int code = reply_code(reply);

        ck_assert_msg(code != 0, "%s %s did not fail", method, params ? params : "");
        snprintf(msg, len, "%s", json_object_get_string(json_object_object_get(error, "message")));
        json_object_put(reply);
        return code;
}

void daemon_kill_hard(struct daemon *d)
{
        int status, fd, i;

        ck_assert_int_eq(kill(d->pid, SIGKILL), 0);
        ck_assert_int_eq(waitpid(d->pid, &status, 0), d->pid);
        close_clock(d);
        /* A job being spawned at the kill holds a copy of the listening socket until its
         * closefrom(): the next daemon must not be taken for ready by talking to that one. */
        for (i = 0; i < 2000 && (fd = client_connect(d->sock)) >= 0; i++) {
                close(fd);
                usleep(1000);
        }
        ck_assert_int_lt(i, 2000);
}

void daemon_stop_clean(struct daemon *d)
{
        int status;

        ck_assert_int_eq(kill(d->pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d->pid, &status, 0), d->pid);
        close_clock(d);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

int64_t job_submit(int fd, const char *params_json)
{
        json_object *result = call_ok(fd, "submit", params_json);
        int64_t id = int_member(result, "id");

        json_object_put(result);
        return id;
}

static json_object *call_id(int fd, const char *method, int64_t id)
{
        char params[64];

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        return call_ok(fd, method, params);
}

json_object *job_wait(int fd, int64_t id)
{
        return call_id(fd, "wait", id);
}

json_object *job_status(int fd, int64_t id)
{
        return call_id(fd, "status", id);
}

char *job_log(int fd, int64_t id)
{
        json_object *result = call_id(fd, "log", id);
        char *data = strdup(str_member(result, "data"));

        json_object_put(result);
        return data;
}

int notify_listen(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
        memcpy(sa.sun_path, path, strlen(path) + 1);
        ck_assert_msg(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0, "bind %s: %s", path,
                      strerror(errno));
        return fd;
}

char *notify_read(int fd, int timeout_ms)
{
        struct pollfd p = {.fd = fd, .events = POLLIN};
        char buf[4096];
        ssize_t n;

        if (poll(&p, 1, timeout_ms) != 1)
                return NULL;
        n = recv(fd, buf, sizeof(buf) - 1, 0);
        ck_assert_int_ge(n, 0);
        buf[n] = '\0';
        return strdup(buf);
}

bool has_line(const char *message, const char *line)
{
        size_t len = strlen(line);
        const char *p;

        for (p = message; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
                if (strncmp(p, line, len) == 0 && (p[len] == '\n' || p[len] == '\0'))
                        return true;
        return false;
}

char *notify_wait(int fd, const char *line)
{
        struct timespec start, now;
        char *message;

        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                clock_gettime(CLOCK_MONOTONIC, &now);
                ck_assert_msg(now.tv_sec - start.tv_sec < 20, "no %s from slowworkd in 20 s", line);
                message = notify_read(fd, 1000);
                if (message && has_line(message, line))
                        return message;
                free(message);
        }
}

const char *job_state_of(int fd, int64_t id)
{
        static char state[16];
        json_object *st = job_status(fd, id);

        snprintf(state, sizeof(state), "%s", str_member(st, "state"));
        json_object_put(st);
        return state;
}

/* The path of the socket fd is connected to: the one its daemon listens on. */
static void peer_path(int fd, char *path, size_t size)
{
        struct sockaddr_un sa;
        socklen_t len = sizeof(sa);

        ck_assert_int_eq(getpeername(fd, (struct sockaddr *)&sa, &len), 0);
        ck_assert_int_eq(sa.sun_family, AF_UNIX);
        ck_assert_uint_gt(len, offsetof(struct sockaddr_un, sun_path));
        snprintf(path, size, "%.*s", (int)(len - offsetof(struct sockaddr_un, sun_path)),
                 sa.sun_path);
}

static int64_t ms_since(const struct timespec *start)
{
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (now.tv_sec - start->tv_sec) * 1000 + (now.tv_nsec - start->tv_nsec) / 1000000;
}

/* Whether the line is an event saying that the job is in the state. */
static bool is_event(const char *line, int64_t id, const char *state)
{
        json_object *msg = json_tokener_parse(line), *params, *v;
        bool match = false;

        ck_assert_msg(msg != NULL, "not JSON: %s", line);
        params = json_object_object_get(msg, "params");
        v = json_object_object_get(msg, "method");
        if (v && strcmp(json_object_get_string(v), "event") == 0 && params &&
            json_object_get_int64(json_object_object_get(params, "id")) == id)
                match = strcmp(str_member(params, "state"), state) == 0;
        json_object_put(msg);
        return match;
}

/*
 * Subscribed first, then the state asked: a change after the answer comes as an event, one
 * before it is in the answer. Only changes that send events can be waited for (PROTOCOL.md,
 * subscribe): a submit's "pending", "running", and the states at a run's end.
 */
char *file_text(const char *path)
{
        char *text = NULL;
        size_t len = 0;
        FILE *f = fopen(path, "r");

        ck_assert_msg(f, "cannot read %s", path);
        if (getdelim(&text, &len, '\0', f) < 0) {
                free(text);
                text = strdup("");
        }
        fclose(f);
        ck_assert_ptr_nonnull(text);
        return text;
}

/* Until the job's status has the member: a run in progress says when it started (its runner's
 * start, from which its timeout counts) and, a shell run's, its process. */
static void job_wait_member(int fd, int64_t id, const char *name)
{
        json_object *st = job_status(fd, id);

        for (int i = 0; i < 4000 && !json_object_object_get(st, name); i++) {
                json_object_put(st);
                usleep(5000);
                st = job_status(fd, id);
        }
        ck_assert_msg(json_object_object_get(st, name), "job %lld has no %s after 20 s",
                      (long long)id, name);
        json_object_put(st);
}

void job_wait_process(int fd, int64_t id)
{
        job_wait_member(fd, id, "pid");
}

void job_wait_started(int fd, int64_t id)
{
        job_wait_member(fd, id, "started");
}

void job_wait_retired(int fd, int64_t id)
{
        for (int i = 0;; i++) {
                json_object *st = job_status(fd, id);
                bool live = json_object_get_boolean(json_object_object_get(st, "live"));

                json_object_put(st);
                if (!live)
                        return;
                ck_assert_msg(i < 4000, "job %lld still live after 20 s", (long long)id);
                usleep(5000);
        }
}

void job_wait_state(int fd, int64_t id, const char *want)
{
        char sock[PATH_MAX], *line;
        struct timespec start;
        json_object *reply;
        int watcher;

        peer_path(fd, sock, sizeof(sock));
        watcher = client_connect(sock);
        ck_assert_int_ge(watcher, 0);
        reply = client_call(watcher, "subscribe", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        clock_gettime(CLOCK_MONOTONIC, &start);
        if (strcmp(job_state_of(fd, id), want) != 0) {
                for (;;) {
                        struct pollfd p = {.fd = watcher, .events = POLLIN};
                        int64_t left = 20000 - ms_since(&start);

                        ck_assert_msg(left > 0 && poll(&p, 1, (int)left) == 1,
                                      "job %lld not %s in 20 s: it is %s", (long long)id, want,
                                      job_state_of(fd, id));
                        line = client_read_line(watcher);
                        ck_assert_msg(line != NULL, "slowworkd closed a subscribed connection");
                        if (is_event(line, id, want)) {
                                free(line);
                                break;
                        }
                        free(line);
                }
        }
        close(watcher);
}

char *fifo_make(const char *dir, const char *name)
{
        char *path;

        ck_assert_int_gt(asprintf(&path, "%s/%s", dir, name), 0);
        ck_assert_msg(mkfifo(path, 0600) == 0, "mkfifo %s: %s", path, strerror(errno));
        return path;
}

void fifo_release(const char *path)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);

        ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
        close(fd);
}

char *fifo_read_all(const char *path)
{
        int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        size_t len = 0, size = 256;
        char *data = malloc(size);
        struct timespec start;

        ck_assert_msg(fd >= 0, "open %s: %s", path, strerror(errno));
        ck_assert_ptr_nonnull(data);
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (;;) {
                /* Until a writer comes, the FIFO is neither readable nor at its end. */
                struct pollfd p = {.fd = fd, .events = POLLIN};
                int64_t left = 20000 - ms_since(&start);
                ssize_t n;

                ck_assert_msg(left > 0 && poll(&p, 1, (int)left) == 1,
                              "nothing written to %s in 20 s", path);
                if (len + 1 >= size) {
                        size *= 2;
                        data = realloc(data, size);
                        ck_assert_ptr_nonnull(data);
                }
                n = read(fd, data + len, size - len - 1);
                if (n == 0)
                        break;
                ck_assert_msg(n > 0 || errno == EAGAIN, "read %s: %s", path, strerror(errno));
                if (n > 0)
                        len += (size_t)n;
        }
        close(fd);
        data[len] = '\0';
        return data;
}

/* Whether this machine lets the daemon contain runs in cgroups (root, and cgroup2 mounted);
 * where it does not, the cgroup cases fail, unless SLOWWORK_TEST_NO_CGROUP=1 says to skip them. */
bool has_cgroups(void)
{
        char line[1024];
        bool mounted = false;
        FILE *f = fopen("/proc/self/mountinfo", "re");

        ck_assert_ptr_nonnull(f);
        while (!mounted && fgets(line, sizeof(line), f))
                mounted = strstr(line, " - cgroup2 ") != NULL;
        fclose(f);
        if (geteuid() == 0 && mounted)
                return true;
        ck_assert_msg(getenv("SLOWWORK_TEST_NO_CGROUP"),
                      "cgroup tests need root and a cgroup2 mount (SLOWWORK_TEST_NO_CGROUP=1 skips "
                      "them)");
        fprintf(stderr, "skipped: no cgroups for runs here\n");
        return false;
}

/* The mount point of cgroup2, from /proc/self/mountinfo. */
void cgroup2_mount(char *buf, size_t len)
{
        char line[1024], point[512];
        FILE *f = fopen("/proc/self/mountinfo", "re");

        ck_assert_ptr_nonnull(f);
        buf[0] = '\0';
        while (fgets(line, sizeof(line), f))
                if (strstr(line, " - cgroup2 ") &&
                    sscanf(line, "%*s %*s %*s %*s %511s", point) == 1) {
                        snprintf(buf, len, "%s", point);
                        break;
                }
        fclose(f);
        ck_assert_msg(buf[0], "no cgroup2 mount");
}

bool process_gone(pid_t pid)
{
        char path[64], line[512], *p;
        bool zombie = false;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "re");
        if (!f)
                return true;
        if (fgets(line, sizeof(line), f) && (p = strrchr(line, ')')))
                zombie = p[1] == ' ' && p[2] == 'Z';
        fclose(f);
        return zombie;
}

pid_t pid_in_file(const char *path)
{
        for (int i = 0; i < 2000; i++) {
                FILE *f = fopen(path, "re");
                int pid = 0;

                if (f) {
                        int n = fscanf(f, "%d", &pid);

                        fclose(f);
                        if (n == 1 && pid > 0)
                                return pid;
                }
                usleep(5000);
        }
        ck_abort_msg("no pid in %s", path);
        return 0;
}
