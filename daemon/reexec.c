/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "config.h"
#include "jobs/daemon.h"
#include "server/conn.h"
#include "server/listener.h"
#include "server/notify.h"
#include "proto.h"
#include "reexec.h"
#include "run/run.h"
#include "store/store.h"
#include "util/env-fd.h"
#include "util/log.h"
#include "util/write-all.h"

#define REEXEC_ENV "SLOWWORKD_REEXEC_FD"
/* How long the new program's --check-config may take. */
#define CHECK_MS 10000
/* How often a reexec looks whether the runs are all handed over. */
#define QUIET_CHECK_MS 20

extern char **environ;

static char *program;
static char **program_argv;

/* The one reexec under way. */
static struct {
        struct conn *c; /* whose request it answers (a reference), NULL: SIGUSR2's */
        json_object *id;
        uv_timer_t timer;
        double given_up_at; /* monotonic seconds */
        bool under_way;
} rx;

void reexec_set_program(const char *path, char **argv)
{
        free(program);
        program = path ? strdup(path) : NULL;
        program_argv = argv;
}

/* The program with the daemon's arguments and one more (NULL: none); NULL when out of memory. */
static char **argv_with(const char *more)
{
        size_t n = 0;
        char **argv;

        while (program_argv[n])
                n++;
        argv = calloc(n + 2, sizeof(*argv));
        if (!argv)
                return NULL;
        memcpy(argv, program_argv, n * sizeof(*argv));
        argv[n] = (char *)more;
        return argv;
}

/* What the program wrote (stdout and stderr) until it ended or CHECK_MS passed, and its exit
 * status (-1: it did not end, or was killed). */
static int run_check(char *out, size_t len)
{
        char **argv = argv_with("--check-config");
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        sigset_t none;
        size_t got = 0;
        int p[2], status = -1, r;
        pid_t pid;

        out[0] = '\0';
        if (!argv || pipe2(p, O_CLOEXEC) < 0) {
                free(argv);
                snprintf(out, len, "%s", strerror(argv ? errno : ENOMEM));
                return -1;
        }
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
        posix_spawn_file_actions_adddup2(&fa, p[1], STDERR_FILENO);
        posix_spawnattr_init(&attr);
        sigemptyset(&none);
        posix_spawnattr_setsigmask(&attr, &none);
        posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK);
        r = posix_spawn(&pid, program, &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
        free(argv);
        close(p[1]);
        if (r != 0) {
                close(p[0]);
                snprintf(out, len, "cannot run it: %s", strerror(r));
                return -1;
        }
        for (;;) {
                struct pollfd pfd = {.fd = p[0], .events = POLLIN};
                char buf[512];
                ssize_t n;

                if (poll(&pfd, 1, CHECK_MS) <= 0) {
                        kill(pid, SIGKILL);
                        snprintf(out, len, "its --check-config did not end in %d s",
                                 CHECK_MS / 1000);
                        break;
                }
                n = read(p[0], buf, sizeof(buf));
                if (n <= 0)
                        break;
                if (got + 1 < len) {
                        size_t take = (size_t)n < len - 1 - got ? (size_t)n : len - 1 - got;

                        memcpy(out + got, buf, take);
                        got += take;
                        out[got] = '\0';
                }
        }
        close(p[0]);
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* The program at the daemon's path now checks the configuration as a start would: 0, or -EINVAL
 * with what it said in err. */
static int check_program(char *err, size_t len)
{
        char out[1024];
        int status = run_check(out, sizeof(out));

        if (status == 0)
                return 0;
        out[strcspn(out, "\n")] = '\0'; /* its first line says it */
        if (status > 0 && !out[0])
                snprintf(out, sizeof(out), "exit status %d", status);
        snprintf(err, len, "the program %s cannot start: %s; this one goes on", program,
                 status == 127 && !out[0] ? "it cannot be executed" : out);
        return -EINVAL;
}

static double mono_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A descriptor made to outlive the exec. */
static int keep_fd(int fd)
{
        int flags = fcntl(fd, F_GETFD);

        return flags < 0 || fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0 ? -errno : 0;
}

/* The handover's text in a memory file kept across the exec: its descriptor, or -errno. */
static int write_handover(struct reexec_ctx *m, int socket_fd, int reply_fd)
{
        json_object *o = run_handover_to_json(m->daemon->handed);
        const char *text;
        int fd, r;

        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "socket_fd", json_object_new_int(socket_fd));
        json_object_object_add(o, "socket_owned",
                               json_object_new_boolean(m->listener->activated_fd < 0 ||
                                                       m->listener->owned));
        json_object_object_add(o, "reply_fd", json_object_new_int(reply_fd));
        if (rx.id)
                json_object_object_add(o, "reply_id", json_object_get(rx.id));
        text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
        fd = memfd_create("slowworkd-reexec", 0);
        r = fd < 0 ? -errno : write_all(fd, text, strlen(text));
        if (r == 0 && lseek(fd, 0, SEEK_SET) < 0)
                r = -errno;
        json_object_put(o);
        if (r < 0 && fd >= 0)
                close(fd);
        return r < 0 ? r : fd;
}

/* Every run handed over, nothing else running: the program is executed. Past the supervisor's
 * let-go and the database's close there is no way back: an exec that fails ends the daemon
 * (its service restarts it, and the next start stops what the runs left). Returns only when
 * the handover cannot be written, before anything is let go. */
static void go(struct reexec_ctx *m)
{
        int socket_fd = -1, reply_fd = -1, fd, r = 0;
        size_t runs = 0;
        char text[32];

        uv_timer_stop(&rx.timer);
        uv_fileno((uv_handle_t *)&m->listener->pipe, &socket_fd);
        if (rx.c)
                reply_fd = conn_fd(rx.c);
        for (struct run_handover *h = m->daemon->handed; h && r == 0; h = h->next, runs++)
                r = run_handover_keep_fds(h);
        if (r == 0 && socket_fd >= 0)
                r = keep_fd(socket_fd);
        if (r == 0 && reply_fd >= 0)
                r = keep_fd(reply_fd);
        fd = r < 0 ? r : write_handover(m, socket_fd, reply_fd);
        if (fd < 0) {
                log_error("Cannot hand over to the next program: %s: going on as before",
                          strerror(-fd));
                return;
        }
        snprintf(text, sizeof(text), "%d", fd);
        setenv(REEXEC_ENV, text, 1);
        notify_hand_on(m->notify);
        supervisor_let_go(&m->daemon->supervisor);
        store_stop(m->store);
        log_info("Executing %s, with %zu run%s in progress", program, runs,
                 runs == 1 ? "" : "s");
        execv(program, program_argv);
        log_error("Cannot execute %s: %m: the daemon ends; its runs are stopped at the next start",
                  program);
        _exit(EXIT_FAILURE);
}

/* The reexec given up: everything goes on as before (systemd told so), and the request is
 * answered. */
static void finish(struct reexec_ctx *m, int code, const char *message)
{
        notify_ready(m->notify);
        if (rx.c) {
                conn_reply(rx.c, rx.id, NULL, code, message); /* which takes the id over */
                conn_unref(rx.c);
        } else
                json_object_put(rx.id);
        rx.c = NULL;
        rx.id = NULL;
        rx.under_way = false;
        uv_close((uv_handle_t *)&rx.timer, NULL);
}

void reexec_give_up(struct reexec_ctx *m, const char *why)
{
        if (!rx.under_way)
                return;
        log_warning("Reexec given up: %s", why);
        daemon_take_back(m->daemon);
        finish(m, SW_E_BUSY, why);
}

static void on_timer(uv_timer_t *timer)
{
        struct reexec_ctx *m = timer->data;
        char message[160];

        if (daemon_handed_over(m->daemon)) {
                go(m); /* returns only when the handover could not be written */
                daemon_take_back(m->daemon);
                finish(m, SW_E_INTERNAL, "cannot hand the runs over: the daemon goes on as before");
                return;
        }
        if (mono_now() < rx.given_up_at)
                return;
        snprintf(message, sizeof(message),
                 "runs still in progress after stop-timeout (%g s): a plugin's or an on-end "
                 "command's; the daemon goes on as before",
                 m->daemon->settings.stop_timeout);
        reexec_give_up(m, message);
}

int reexec_begin(struct reexec_ctx *m, struct conn *c, json_object *id, char *err, size_t len)
{
        int r;

        if (rx.under_way) {
                snprintf(err, len, "a reexec is under way");
                return -EBUSY;
        }
        if (*m->stopping) {
                snprintf(err, len, "the daemon is stopping");
                return -EBUSY;
        }
        if (store_shared(m->store)) {
                snprintf(err, len, "reexec is not available to a node of a cluster (a shared job "
                                   "database) yet: restart it");
                return -EOPNOTSUPP;
        }
        if (!program || !program_argv) {
                snprintf(err, len, "the daemon's program is not known");
                return -ENOENT;
        }
        r = check_program(err, len);
        if (r < 0) {
                log_warning("Reexec refused: %s", err);
                return r;
        }
        rx.c = c ? conn_ref(c) : NULL;
        rx.id = id ? json_object_get(id) : NULL;
        rx.under_way = true;
        rx.given_up_at = mono_now() + m->daemon->settings.stop_timeout;
        log_info("Reexec: %s checked the configuration; the runs in progress are handed over",
                 program);
        notify_reloading(m->notify);
        daemon_hand_over(m->daemon);
        uv_timer_init(m->loop, &rx.timer);
        rx.timer.data = m;
        uv_timer_start(&rx.timer, on_timer, 0, QUIET_CHECK_MS);
        return 0;
}


static int close_on_exec(int fd)
{
        return fd < 0 || fcntl(fd, F_SETFD, FD_CLOEXEC) == 0 ? 0 : -errno;
}

int reexec_take(struct reexec_taken *t)
{
        int fd = env_fd(REEXEC_ENV), r;
        json_object *o;
        char *text = NULL;
        size_t len = 0;
        FILE *f;

        *t = (struct reexec_taken){.socket_fd = -1, .reply_fd = -1};
        if (fd == 0)
                return 0;
        if (fd < 0)
                return log_error_errno(fd, "%s names no handover", REEXEC_ENV);
        f = fdopen(fd, "r");
        if (!f || getdelim(&text, &len, '\0', f) < 0) {
                r = log_error_errno(-errno, "Cannot read the handover of the last program: %m");
                if (f)
                        fclose(f);
                else
                        close(fd);
                free(text);
                return r;
        }
        fclose(f);
        o = json_tokener_parse(text);
        free(text);
        r = o ? run_handover_from_json(o, &t->runs) : -EINVAL;
        if (r == 0) {
                t->socket_fd = json_object_get_int(json_object_object_get(o, "socket_fd"));
                t->socket_owned =
                    json_object_get_boolean(json_object_object_get(o, "socket_owned"));
                t->reply_fd = json_object_get_int(json_object_object_get(o, "reply_fd"));
                t->reply_id = json_object_get(json_object_object_get(o, "reply_id"));
        }
        json_object_put(o);
        if (r < 0)
                return log_error_errno(r, "The handover of the last program cannot be read");
        for (struct run_handover *h = t->runs; h && r == 0; h = h->next)
                if ((r = close_on_exec(h->out_fd)) == 0)
                        r = close_on_exec(h->log_fd);
        if (r == 0)
                r = close_on_exec(t->socket_fd);
        if (r == 0)
                r = close_on_exec(t->reply_fd);
        if (r < 0)
                return log_error_errno(r, "The handover's descriptors cannot be taken: %m");
        return 1;
}

void reexec_answer(struct reexec_taken *t, int r)
{
        char *line = NULL;

        if (t->reply_fd >= 0 && t->reply_id) {
                json_object *result = json_object_new_object();

                json_object_object_add(result, "pid", json_object_new_int64(getpid()));
                json_object_object_add(result, "version", json_object_new_string(PACKAGE_VERSION));
                line = r == 0 ? sw_result_line(json_object_get(t->reply_id), result)
                              : sw_error_line(json_object_get(t->reply_id), SW_E_INTERNAL,
                                              "the new program could not start");
                if (r != 0)
                        json_object_put(result);
                if (line && write_all(t->reply_fd, line, strlen(line)) < 0)
                        log_warning("Cannot answer the reexec's request: %m");
                free(line);
        }
        if (t->reply_fd >= 0)
                close(t->reply_fd);
        t->reply_fd = -1;
        json_object_put(t->reply_id);
        t->reply_id = NULL;
}
