/* SPDX-License-Identifier: MIT */
/* slowctl and libslowwork-client against a real slowworkd: commands, output, exit codes. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pwd.h>
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

#include "config.h"
#include "daemon-helpers.h"
#include "run-suite.h"
#include "slowwork-client.h"

#ifndef SLOWCTL
#error "SLOWCTL must name the slowctl binary under test"
#endif

static struct daemon d;

static void setup(void)
{
        daemon_start(&d, "--max-threads", "4", "--kill-grace", "1", "--plugin-dir", PLUGINS_BUILT,
                     NULL);
        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", d.sock, 1), 0);
}

static void teardown(void)
{
        daemon_stop(&d);
}

/* What one run of slowctl did. */
struct run {
        int status; /* the exit status; 128 + N for signal N */
        char *out, *err;
};

static void run_free(struct run *r)
{
        free(r->out);
        free(r->err);
}

struct sink {
        int fd;
        char *buf;
        size_t len, size;
};

static bool sink_read(struct sink *s)
{
        ssize_t n;

        if (s->len + 4096 + 1 > s->size) {
                s->size = 2 * s->size + 4096 + 1;
                s->buf = realloc(s->buf, s->size);
                ck_assert_ptr_nonnull(s->buf);
        }
        n = read(s->fd, s->buf + s->len, s->size - s->len - 1);
        ck_assert_int_ge(n, 0);
        s->len += (size_t)n;
        s->buf[s->len] = '\0';
        return n > 0;
}

#define ARGS_MAX 64

/* Appends the NULL-terminated arguments in ap to argv, which holds n already. */
static void collect(char **argv, int n, va_list ap)
{
        const char *a;

        while (n < ARGS_MAX - 1 && (a = va_arg(ap, const char *)))
                argv[n++] = (char *)a;
        argv[n] = NULL;
}

/* The uid slowctl runs as (0: the test's), for a daemon of another user's. */
static uid_t ctl_uid;

/* Runs slowctl with args (NULL-terminated) and input on its stdin (NULL: none). */
static void ctl_argv(struct run *r, const char *input, char *const *args)
{
        char *argv[ARGS_MAX + 1] = {(char *)SLOWCTL};
        int in[2], out[2], err[2], status, n;
        struct sink sinks[2] = {{.fd = -1}, {.fd = -1}};
        size_t written = 0, len = input ? strlen(input) : 0;
        pid_t pid;

        for (n = 0; args[n] && n < ARGS_MAX - 1; n++)
                argv[n + 1] = args[n];
        argv[n + 1] = NULL;
        ck_assert(pipe2(in, O_CLOEXEC) == 0 && pipe2(out, O_CLOEXEC) == 0 &&
                  pipe2(err, O_CLOEXEC) == 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                dup2(in[0], STDIN_FILENO);
                dup2(out[1], STDOUT_FILENO);
                dup2(err[1], STDERR_FILENO);
                if (ctl_uid &&
                    (setgroups(0, NULL) < 0 || setresgid(ctl_uid, ctl_uid, ctl_uid) < 0 ||
                     setresuid(ctl_uid, ctl_uid, ctl_uid) < 0))
                        _exit(126);
                execv(argv[0], argv);
                _exit(127);
        }
        close(in[0]);
        close(out[1]);
        close(err[1]);
        sinks[0].fd = out[0];
        sinks[1].fd = err[0];
        if (len == 0)
                close(in[1]);
        else
                fcntl(in[1], F_SETFL, O_NONBLOCK);
        while (sinks[0].fd >= 0 || sinks[1].fd >= 0) {
                struct pollfd p[3] = {
                    {.fd = sinks[0].fd, .events = POLLIN},
                    {.fd = sinks[1].fd, .events = POLLIN},
                    {.fd = written < len ? in[1] : -1, .events = POLLOUT},
                };
                int i;

                ck_assert_msg(poll(p, 3, 30000) > 0, "slowctl %s took more than 30 s", argv[1]);
                for (i = 0; i < 2; i++)
                        if (p[i].revents && !sink_read(&sinks[i])) {
                                close(sinks[i].fd);
                                sinks[i].fd = -1;
                        }
                if (p[2].revents & POLLOUT) {
                        ssize_t k = write(in[1], input + written, len - written);

                        ck_assert_int_gt(k, 0);
                        written += (size_t)k;
                        if (written == len)
                                close(in[1]);
                } else if (p[2].revents) {
                        close(in[1]);
                        written = len;
                }
        }
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        r->out = sinks[0].buf ? sinks[0].buf : strdup("");
        r->err = sinks[1].buf ? sinks[1].buf : strdup("");
}

static void ctl(struct run *r, const char *input, ...)
{
        char *argv[ARGS_MAX];
        va_list ap;

        va_start(ap, input);
        collect(argv, 0, ap);
        va_end(ap);
        ctl_argv(r, input, argv);
}

/* slowctl that must succeed; its output, which the caller frees. */
static char *ctl_ok(const char *first, ...)
{
        char *argv[ARGS_MAX] = {(char *)first};
        struct run r;
        va_list ap;

        va_start(ap, first);
        collect(argv, 1, ap);
        va_end(ap);
        ctl_argv(&r, NULL, argv);
        ck_assert_msg(r.status == 0, "slowctl %s: status %d: %s", first, r.status, r.err);
        ck_assert_str_eq(r.err, "");
        free(r.err);
        return r.out;
}

/* The id a submit printed. */
static int64_t submitted(const char *out)
{
        char *end;
        long long id = strtoll(out, &end, 10);

        ck_assert_msg(id > 0 && strcmp(end, "\n") == 0, "not an id: \"%s\"", out);
        return id;
}

static int64_t submit(const char *first, ...)
{
        char *argv[ARGS_MAX] = {(char *)"submit", (char *)first};
        struct run r;
        int64_t id;
        va_list ap;

        va_start(ap, first);
        collect(argv, 2, ap);
        va_end(ap);
        ctl_argv(&r, NULL, argv);
        ck_assert_msg(r.status == 0, "submit: status %d: %s", r.status, r.err);
        id = submitted(r.out);
        run_free(&r);
        return id;
}

static const char *idstr(int64_t id)
{
        static char buf[4][24];
        static int next;
        char *s = buf[next++ % 4];

        snprintf(s, sizeof(buf[0]), "%lld", (long long)id);
        return s;
}

/* The job's state, through the library. */
static char *state_of(int64_t id)
{
        struct sw_client *c;
        json_object *params = json_object_new_object(), *st;
        struct sw_client_error err;
        char *state;

        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        json_object_object_add(params, "id", json_object_new_int64(id));
        ck_assert_int_eq(sw_client_call(c, "status", params, &st, &err), 0);
        state = strdup(str_member(st, "state"));
        json_object_put(st);
        sw_client_free(c);
        return state;
}

/* The path of a gate file in the daemon's folder (a static buffer): a job waits for it with
 * gate_wait, the test opens it with gate_open. */
static const char *gate_path(const char *name)
{
        static char path[PATH_MAX];

        snprintf(path, sizeof(path), "%s/%s", d.dir, name);
        return path;
}

static void gate_open(const char *name)
{
        int fd = open(gate_path(name), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);

        ck_assert_int_ge(fd, 0);
        close(fd);
}

/* slowctl running beside the test: its pid, its stdout in *ret_out. */
static pid_t ctl_spawn(int *ret_out, ...)
{
        char *argv[ARGS_MAX + 1] = {(char *)SLOWCTL};
        int out[2], n = 1;
        va_list ap;
        pid_t pid;

        va_start(ap, ret_out);
        for (const char *a; n < ARGS_MAX && (a = va_arg(ap, const char *)); n++)
                argv[n] = (char *)a;
        va_end(ap);
        argv[n] = NULL;
        ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                dup2(out[1], STDOUT_FILENO);
                execv(argv[0], argv);
                _exit(127);
        }
        close(out[1]);
        *ret_out = out[0];
        return pid;
}

/* Reads fd into buf (of len, kept NUL-terminated, at *have) until it ends with want, or EOF;
 * fails after 20 s. */
static void read_until(int fd, char *buf, size_t len, size_t *have, const char *want)
{
        size_t wl = strlen(want);

        while (*have < wl || strcmp(buf + *have - wl, want) != 0) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t k;

                ck_assert_msg(poll(&p, 1, 20000) > 0, "no \"%s\" in 20 s, only \"%s\"", want, buf);
                k = read(fd, buf + *have, len - 1 - *have);
                ck_assert_msg(k > 0, "EOF before \"%s\", after \"%s\"", want, buf);
                *have += (size_t)k;
                buf[*have] = '\0';
        }
}

/* The exit code of slowctl spawned so, once it exits (fails after 20 s). */
static int ctl_reap(pid_t pid)
{
        int status, i;

        for (i = 0; i < 2000 && waitpid(pid, &status, WNOHANG) == 0; i++)
                usleep(10 * 1000);
        ck_assert_msg(i < 2000, "slowctl still runs after 20 s");
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void wait_running(int64_t id)
{
        char *state = NULL;
        int i;

        for (i = 0; i < 4000; i++) {
                free(state);
                state = state_of(id);
                if (strcmp(state, "running") == 0)
                        break;
                usleep(5000);
        }
        ck_assert_str_eq(state, "running");
        free(state);
}

START_TEST(submit_prints_an_id_and_wait_exits_with_the_jobs_code)
{
        int64_t id = submit("--", "sh", "-c", "exit 3", NULL);
        struct run r;
        char want[64];

        ctl(&r, NULL, "wait", idstr(id), NULL);
        ck_assert_int_eq(r.status, 3);
        snprintf(want, sizeof(want), "job %lld: failed (exit code 3)\n", (long long)id);
        ck_assert_str_eq(r.out, want);
        ck_assert_str_eq(r.err, "");
        run_free(&r);
}
END_TEST

/* The limit options reach the job; a size takes K, M, G or T; a bad one is a usage error. */
START_TEST(submit_limit_options_reach_the_job)
{
        int64_t id = submit("--open-files", "100", "--nice", "3", "--cpu-time", "9", "--", "sh",
                            "-c", "ulimit -n; ulimit -t; nice", NULL);
        char *out;
        struct run r;

        free(ctl_ok("wait", idstr(id), NULL));
        out = ctl_ok("log", idstr(id), NULL);
        ck_assert_str_eq(out, "100\n9\n3\n");
        free(out);
        /* CPU time is a span too, of whole seconds. */
        id = submit("--cpu-time", "2m", "--", "sh", "-c", "ulimit -t", NULL);
        free(ctl_ok("wait", idstr(id), NULL));
        out = ctl_ok("log", idstr(id), NULL);
        ck_assert_str_eq(out, "120\n");
        free(out);
        ctl(&r, NULL, "submit", "--cpu-time", "1.5s", "--", "true", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "--cpu-time takes whole seconds"));
        run_free(&r);
        ctl(&r, NULL, "submit", "--memory-max", "1X", "--", "true", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "--memory-max takes a number of bytes"));
        run_free(&r);
        ctl(&r, NULL, "submit", "--open-files", "many", "--", "true", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        /* 1G is 2^30 bytes: the daemon takes it or names the controller it lacks. */
        ctl(&r, NULL, "submit", "--memory-max", "1G", "--persist", "--", "true", NULL);
        if (r.status == 0) {
                json_object *status, *limits;

                out = ctl_ok("--json", "status", idstr(submitted(r.out)), NULL);
                status = json_tokener_parse(out);
                limits = json_object_object_get(status, "limits");
                ck_assert_msg(json_object_get_int64(json_object_object_get(limits, "memory_max")) ==
                                  1073741824,
                              "status: %s", out);
                json_object_put(status);
                free(out);
        } else {
                ck_assert_int_eq(r.status, 1);
                ck_assert_ptr_nonnull(strstr(r.err, "limits.memory_max"));
        }
        run_free(&r);
}
END_TEST

/* The flow options reach the daemon: a chain, a retried job, a recurring one; bad values are
 * usage errors (2) or the daemon's (1), and nothing is made. */
START_TEST(submit_flow_options_reach_the_job)
{
        char cmd[PATH_MAX + 64 + sizeof(WAIT_FOR_FILE)];
        int64_t a = (snprintf(cmd, sizeof(cmd), WAIT_FOR_FILE " %s; exit 3", gate_path("go")),
                     submit("--", "sh", "-c", cmd, NULL));
        int64_t b = submit("--after", idstr(a), "--", "true", NULL);
        int64_t c = submit("--after-any", idstr(a), "--retries", "2", "--retry-delay", "0.05", "--",
                           "false", NULL);
        int64_t e = submit("--cron", "0 3 * * *", "--", "true", NULL), f;
        static const char *const usage[][2] = {
            {"--after", "x"},     {"--after", "1,,2"}, {"--after", "0"},
            {"--after-any", ""},  {"--retries", "-1"}, {"--retries", "1001"},
            {"--retry-delay", "soon"}, {"--every", "x"},
        };
        char *out;
        struct run r;

        /* a runs until then: the others were submitted while it ran. */
        gate_open("go");
        ctl(&r, NULL, "wait", idstr(b), NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.out, "dependency-failed"));
        run_free(&r);
        ctl(&r, NULL, "wait", idstr(c), NULL);
        ck_assert_int_eq(r.status, 1);
        run_free(&r);
        out = ctl_ok("history", "--outcome", "failed", NULL);
        {
                int lines = 0;

                for (char *p = out; (p = strchr(p, '\n')); p++)
                        lines++;
                ck_assert_int_eq(lines, 1 + 3 + 1); /* header, c's three attempts, a */
        }
        free(out);
        out = ctl_ok("status", idstr(e), NULL);
        ck_assert_ptr_nonnull(strstr(out, "0 3 * * *"));
        ck_assert_ptr_nonnull(strstr(out, "next_run"));
        free(out);
        for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
                ctl(&r, NULL, "submit", usage[i][0], usage[i][1], "--", "true", NULL);
                ck_assert_msg(r.status == 2, "submit %s %s: %d", usage[i][0], usage[i][1], r.status);
                run_free(&r);
        }
        ctl(&r, NULL, "submit", "--every", "0", "--", "true", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "every"));
        run_free(&r);
        ctl(&r, NULL, "submit", "--cron", "* * * * 9", "--", "true", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "day-of-week"));
        run_free(&r);
        f = submit("--", "true", NULL);
        ck_assert_int_eq(f, e + 1);
}
END_TEST

/* The job's status member, through the library (the caller puts it). */
static json_object *status_of(int64_t id)
{
        struct sw_client *c;
        json_object *params = json_object_new_object(), *st;
        struct sw_client_error err;

        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        json_object_object_add(params, "id", json_object_new_int64(id));
        ck_assert_int_eq(sw_client_call(c, "status", params, &st, &err), 0);
        sw_client_free(c);
        return st;
}

/* --cron takes Vixie cron's @ forms and names: the job keeps the expression and its next_run is
 * a local midnight within a day (@daily), or a midnight of a weekday in January; @reboot and an
 * unknown name are the daemon's errors (1), saying why, and make nothing. */
START_TEST(submit_cron_takes_at_forms_and_names)
{
        int64_t daily = submit("--cron", "@daily", "--", "true", NULL);
        int64_t january = submit("--cron", "0 0 * JAN mon-fri", "--", "true", NULL);
        time_t now = time(NULL), next;
        json_object *st;
        struct run r;
        struct tm tm;
        char *out;

        out = ctl_ok("status", idstr(daily), NULL);
        ck_assert_ptr_nonnull(strstr(out, "@daily"));
        free(out);
        st = status_of(daily);
        next = (time_t)json_object_get_double(json_object_object_get(st, "next_run"));
        json_object_put(st);
        ck_assert_ptr_nonnull(localtime_r(&next, &tm));
        ck_assert_msg(tm.tm_hour == 0 && tm.tm_min == 0 && tm.tm_sec == 0 && next > now - 60 &&
                          next <= now + 25 * 3600,
                      "@daily: next_run %lld", (long long)next);
        st = status_of(january);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(st, "cron")),
                         "0 0 * JAN mon-fri");
        next = (time_t)json_object_get_double(json_object_object_get(st, "next_run"));
        json_object_put(st);
        ck_assert_ptr_nonnull(localtime_r(&next, &tm));
        ck_assert_msg(tm.tm_hour == 0 && tm.tm_min == 0 && tm.tm_mon == 0 && tm.tm_wday >= 1 &&
                          tm.tm_wday <= 5 && next > now - 60 && next <= now + 366 * 86400,
                      "0 0 * JAN mon-fri: next_run %lld", (long long)next);
        ctl(&r, NULL, "submit", "--cron", "@reboot", "--", "true", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "@reboot is not supported"));
        run_free(&r);
        ctl(&r, NULL, "submit", "--cron", "0 0 * * funday", "--", "true", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "day-of-week: unknown name \"funday\""));
        run_free(&r);
        ck_assert_int_eq(submit("--", "true", NULL), january + 1);
}
END_TEST

/* Waits until the job's process is in the runner's hands (status shows its pid): the job is
 * running from the moment a thread takes it, and its shell may run a command before its start
 * has returned to the runner. */
static void wait_process(int64_t id)
{
        json_object *st = status_of(id);

        for (int i = 0; i < 4000 && !json_object_object_get(st, "pid"); i++) {
                json_object_put(st);
                usleep(5000);
                st = status_of(id);
        }
        ck_assert_msg(json_object_object_get(st, "pid"), "job %lld has no process",
                      (long long)id);
        json_object_put(st);
}

START_TEST(submit_stashed_with_a_priority_then_edit_and_enqueue)
{
        int64_t id = submit("--stashed", "--priority", "7", "--name", "a", "--", "echo", "one",
                            NULL);
        int64_t cmd = submit("--stashed", "--", "echo x", NULL);
        static const char *const usage[][2] = {
            {"--priority", "101"}, {"--priority", "-101"}, {"--priority", "x"},
            {"--priority", "1.5"},
        };
        json_object *st;
        struct run r;
        char *out, *state;

        state = state_of(id);
        ck_assert_str_eq(state, "stashed");
        free(state);
        out = ctl_ok("status", idstr(id), NULL);
        ck_assert_ptr_nonnull(strstr(out, "stashed"));
        ck_assert_ptr_nonnull(strstr(out, "priority"));
        free(out);
        out = ctl_ok("list", NULL);
        ck_assert_ptr_nonnull(strstr(out, "stashed"));
        free(out);

        out = ctl_ok("edit", idstr(id), "--priority", "-2", "--name", "b", "--cwd", d.dir, "--",
                     "echo", "two", NULL);
        ck_assert_ptr_nonnull(strstr(out, "echo two"));
        free(out);
        st = status_of(id);
        ck_assert_int_eq(int_member(st, "priority"), -2);
        ck_assert_str_eq(str_member(st, "name"), "b");
        ck_assert_str_eq(str_member(st, "state"), "stashed");
        json_object_put(st);

        /* A command job takes --command; an argv job does not; nothing to change is usage. */
        free(ctl_ok("edit", idstr(cmd), "--command", "echo y", NULL));
        st = status_of(cmd);
        ck_assert_str_eq(str_member(st, "command"), "echo y");
        json_object_put(st);
        ctl(&r, NULL, "edit", idstr(id), "--command", "echo three", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "argv"));
        run_free(&r);
        ctl(&r, NULL, "edit", idstr(id), NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "edit", "999999", "--name", "x", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "999999"));
        run_free(&r);
        for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
                ctl(&r, NULL, "edit", idstr(id), usage[i][0], usage[i][1], NULL);
                ck_assert_msg(r.status == 2, "edit %s %s: %d", usage[i][0], usage[i][1], r.status);
                run_free(&r);
                ctl(&r, NULL, "submit", usage[i][0], usage[i][1], "--", "true", NULL);
                ck_assert_msg(r.status == 2, "submit %s %s: %d", usage[i][0], usage[i][1],
                              r.status);
                run_free(&r);
        }

        free(ctl_ok("enqueue", idstr(id), NULL));
        free(ctl_ok("wait", idstr(id), NULL));
        out = ctl_ok("log", idstr(id), NULL);
        ck_assert_str_eq(out, "two\n");
        free(out);
}
END_TEST

START_TEST(submit_on_end_runs_it_after_each_run_and_set_gives_the_daemons)
{
        char *fifo = fifo_make(d.dir, "said"), cmd[PATH_MAX + 96], *out;
        int64_t id;

        snprintf(cmd, sizeof(cmd), "echo $SLOWWORK_JOB $SLOWWORK_OUTCOME $SLOWWORK_EXIT_CODE >%s",
                 fifo);
        id = submit("--persist", "--on-end", cmd, "--", "sh", "-c", "exit 4", NULL);
        out = fifo_read_all(fifo);
        ck_assert_str_eq(out, strcat(strcpy(cmd, idstr(id)), " failed 4\n"));
        free(out);
        out = ctl_ok("status", idstr(id), NULL);
        ck_assert_ptr_nonnull(strstr(out, "on_end"));
        free(out);

        snprintf(cmd, sizeof(cmd), "echo daemon $SLOWWORK_RUN >%s", fifo);
        free(ctl_ok("set", "on-end", cmd, NULL));
        out = ctl_ok("get", "on-end", NULL);
        ck_assert_str_eq(out, strcat(cmd, "\n"));
        free(out);
        submit("--", "true", NULL);
        out = fifo_read_all(fifo);
        ck_assert_str_eq(out, "daemon 1\n");
        free(out);
        free(ctl_ok("set", "on-end", "", NULL));
        out = ctl_ok("get", "on-end", NULL);
        ck_assert_str_eq(out, "none\n");
        free(out);
        free(fifo);
}
END_TEST

static double seconds_now(void)
{
        struct timespec ts;

        ck_assert_int_eq(clock_gettime(CLOCK_REALTIME, &ts), 0);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The job's status as the daemon gives it (the caller puts it). */
static double double_member(json_object *o, const char *name)
{
        json_object *v;

        ck_assert_msg(json_object_object_get_ex(o, name, &v), "no \"%s\" in %s", name,
                      json_object_to_json_string(o));
        return json_object_get_double(v);
}

/* --delay 2m is 120 s at the daemon: its next_run is 120 s after the submit, and it runs once
 * the daemon's clock has moved on by that much. */
START_TEST(submit_delay_2m_reaches_the_daemon_as_120_seconds)
{
        struct daemon dc = {0};
        double before, after, next;
        json_object *st;
        int64_t id;
        char *out;

        daemon_start_clocked(&dc, NULL);
        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", dc.sock, 1), 0);
        before = seconds_now();
        id = submit("--delay", "2m", "--", "true", NULL);
        after = seconds_now();
        st = status_of(id);
        ck_assert_str_eq(str_member(st, "state"), "pending");
        next = double_member(st, "next_run");
        ck_assert_msg(next >= before + 120 - 0.01 && next <= after + 120 + 0.01,
                      "next_run %.3f, submitted between %.3f and %.3f", next, before, after);
        json_object_put(st);
        daemon_advance_clock(&dc, 120);
        out = ctl_ok("wait", idstr(id), NULL);
        ck_assert_ptr_nonnull(strstr(out, "succeeded"));
        free(out);
        daemon_stop(&dc);
        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", d.sock, 1), 0);
}
END_TEST

/* Every option of seconds reads spans with units; --delay also a time of day or a date; what it
 * cannot read, or a moment past, is a usage error that names the option. */
START_TEST(seconds_options_take_spans_and_delay_a_moment)
{
        static const char *const usage[][3] = {
            {"--delay", "soon", "--delay takes"},
            {"--delay", "2026-01-01T00:00", "--delay: 2026-01-01T00:00 is in the past"},
            {"--delay", "25:00", "--delay takes"},
            {"--timeout", "1h30", "--timeout takes"},
            {"--retry-delay", "-1s", "--retry-delay takes"},
            {"--every", "1m1h", "--every takes"},
        };
        int64_t every, retried, at;
        double before, next;
        json_object *st;
        struct run r;

        every = submit("--every", "1h", "--", "true", NULL);
        st = status_of(every);
        ck_assert_double_eq(double_member(st, "every"), 3600);
        json_object_put(st);
        free(ctl_ok("release", idstr(every), NULL));
        retried =
            submit("--persist", "--retries", "1", "--retry-delay", "1m30s", "--", "true", NULL);
        st = status_of(retried);
        ck_assert_double_eq(double_member(st, "retry_delay"), 90);
        json_object_put(st);
        free(ctl_ok("release", idstr(retried), NULL));
        ctl(&r, NULL, "submit", "--wait", "--timeout", "0.2s", "--", "sleep 30", NULL);
        ck_assert_int_eq(r.status, 1);
        st = status_of(strtoll(r.out, NULL, 10));
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "timed-out");
        json_object_put(st);
        run_free(&r);
        /* A time of day is the next one: within a day from now. */
        before = seconds_now();
        at = submit("--delay", "09:00", "--", "true", NULL);
        st = status_of(at);
        next = double_member(st, "next_run");
        ck_assert_msg(next > before && next <= before + 86400 + 3600 + 1, "next_run %.3f", next);
        json_object_put(st);
        free(ctl_ok("cancel", idstr(at), NULL));
        for (size_t i = 0; i < sizeof(usage) / sizeof(usage[0]); i++) {
                ctl(&r, NULL, "submit", usage[i][0], usage[i][1], "--", "true", NULL);
                ck_assert_msg(r.status == 2, "%s %s: %d", usage[i][0], usage[i][1], r.status);
                ck_assert_msg(strstr(r.err, usage[i][2]), "%s %s: %s", usage[i][0], usage[i][1],
                              r.err);
                run_free(&r);
        }
}
END_TEST

START_TEST(submit_wait_exits_with_the_jobs_code)
{
        struct run r;

        ctl(&r, NULL, "submit", "--wait", "--", "sh", "-c", "exit 5", NULL);
        ck_assert_int_eq(r.status, 5);
        submitted(r.out);
        run_free(&r);
        ctl(&r, NULL, "submit", "--wait", "--", "sh", "-c", "kill -KILL $$", NULL);
        ck_assert_int_eq(r.status, 128 + SIGKILL);
        run_free(&r);
        ctl(&r, NULL, "submit", "--wait", "--", "true", NULL);
        ck_assert_int_eq(r.status, 0);
        run_free(&r);
        ctl(&r, NULL, "submit", "--wait", "--timeout", "0.2", "--", "sleep 30", NULL);
        ck_assert_int_eq(r.status, 1); /* timed out */
        run_free(&r);
}
END_TEST

START_TEST(submit_plugin_runs_an_entry_point_with_its_arg)
{
        long long ids[3];
        struct run r;
        char *out, want[96];
        int64_t id;

        id = submit("--wait", "--plugin", "hello", "--entry", "hello", "--arg", "{\"n\": [1, 2]}",
                    NULL);
        out = ctl_ok("log", idstr(id), NULL);
        snprintf(want, sizeof(want), "hello from job %lld run 1 (slow), arg {\"n\":[1,2]}\n",
                 (long long)id);
        ck_assert_str_eq(out, want);
        free(out);
        ctl(&r, NULL, "submit", "--wait", "--plugin", "hello", "--entry", "exit_with", "--arg", "9",
            NULL);
        ck_assert_int_eq(r.status, 9);
        run_free(&r);
        ctl(&r, NULL, "submit", "--plugin", "hello", "--entry", "hello", "--arg", "[1] x", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "--arg takes JSON: invalid JSON"));
        run_free(&r);
        /* --stdin: one arg per line; a line that is not JSON (RFC 8259, as the daemon reads it)
         * is reported, the others run. */
        ctl(&r, "7\n\n[1,\"x\"]\n{bad\n7 8\n'q'\nnull\n", "submit", "--stdin", "--plugin", "hello",
            "--entry", "hello", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "line 4: not a JSON value"));
        ck_assert_ptr_nonnull(strstr(r.err, "line 5: not a JSON value: invalid JSON: characters after"));
        ck_assert_ptr_nonnull(strstr(r.err, "line 6: not a JSON value"));
        ck_assert_int_eq(sscanf(r.out, "%lld\n%lld\n%lld\n", &ids[0], &ids[1], &ids[2]), 3);
        run_free(&r);
        for (int i = 0; i < 3; i++) {
                static const char *const args[] = {"7", "[1,\"x\"]", "null"};

                ctl(&r, NULL, "wait", idstr(ids[i]), NULL);
                ck_assert_int_eq(r.status, 0);
                run_free(&r);
                out = ctl_ok("log", idstr(ids[i]), NULL);
                snprintf(want, sizeof(want), "hello from job %lld run 1 (slow), arg %s\n", ids[i],
                         args[i]);
                ck_assert_str_eq(out, want);
                free(out);
        }
        ctl(&r, NULL, "submit", "--plugin", "../hello", "--entry", "hello", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "no \"..\""));
        run_free(&r);
        ctl(&r, NULL, "submit", "--plugin", "hello", "--entry", "nothere", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "has no entry point \"nothere\""));
        run_free(&r);
}
END_TEST

START_TEST(one_argument_is_a_shell_command_several_are_argv)
{
        int64_t shell = submit("--wait", "--", "echo $((1+2)) \"$HOME_OF_TEST\"", NULL);
        int64_t argv = submit("--wait", "--", "echo", "$((1+2))", "a  b", NULL);
        char *out;

        out = ctl_ok("log", idstr(shell), NULL);
        ck_assert_str_eq(out, "3 from-slowctl\n");
        free(out);
        out = ctl_ok("log", idstr(argv), NULL);
        ck_assert_str_eq(out, "$((1+2)) a  b\n");
        free(out);
}
END_TEST

START_TEST(submit_sends_the_current_directory_or_cwd)
{
        int64_t here, there;
        char *out;

        ck_assert_int_eq(chdir(d.dir), 0);
        here = submit("--wait", "--", "pwd", NULL);
        there = submit("--wait", "--cwd", "/tmp", "--", "pwd", NULL);
        out = ctl_ok("log", idstr(here), NULL);
        ck_assert_int_eq(strncmp(out, d.dir, strlen(d.dir)), 0);
        ck_assert_str_eq(out + strlen(d.dir), "\n");
        free(out);
        out = ctl_ok("log", idstr(there), NULL);
        ck_assert_str_eq(out, "/tmp\n");
        free(out);
}
END_TEST

START_TEST(submit_stdin_gives_an_id_per_line_in_order_and_runs_them_all)
{
        char *input = malloc(500 * 32), *p = input, *line, *save = NULL;
        int64_t ids[500], last = 0;
        struct run r;
        int i, n = 0;

        for (i = 1; i <= 500; i++)
                p += sprintf(p, "%secho %d\n", i == 250 ? "\n" : "", i); /* a blank line too */
        ctl(&r, input, "submit", "--stdin", NULL);
        ck_assert_msg(r.status == 0, "%s", r.err);
        for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                ck_assert_int_lt(n, 500);
                ids[n] = strtoll(line, NULL, 10);
                ck_assert_int_gt(ids[n], last); /* distinct, in input order */
                last = ids[n++];
        }
        ck_assert_int_eq(n, 500);
        run_free(&r);
        ctl(&r, NULL, "wait", idstr(ids[497]), idstr(ids[498]), idstr(ids[499]), NULL);
        ck_assert_msg(r.status == 0, "%s", r.err);
        run_free(&r);
        for (i = 0; i < 500; i += 83) {
                char want[16], *out;

                ctl(&r, NULL, "wait", idstr(ids[i]), NULL);
                ck_assert_int_eq(r.status, 0);
                run_free(&r);
                out = ctl_ok("log", idstr(ids[i]), NULL);
                snprintf(want, sizeof(want), "%d\n", i + 1);
                ck_assert_str_eq(out, want);
                free(out);
        }
        free(input);
}
END_TEST

START_TEST(submit_stdin_jobs_see_the_callers_environment)
{
        char *line, *save = NULL, *out;
        struct run r;
        int n = 0;

        ck_assert_int_eq(setenv("STDIN_ENV_OF_TEST", "seen here", 1), 0);
        ctl(&r, "echo \"$STDIN_ENV_OF_TEST\"\nprintf '%s\\n' \"$STDIN_ENV_OF_TEST\"\n", "submit",
            "--stdin", NULL);
        ck_assert_int_eq(unsetenv("STDIN_ENV_OF_TEST"), 0);
        ck_assert_msg(r.status == 0, "%s", r.err);
        for (line = strtok_r(r.out, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                struct run w;

                n++;
                ctl(&w, NULL, "wait", line, NULL);
                ck_assert_int_eq(w.status, 0);
                run_free(&w);
                out = ctl_ok("log", line, NULL);
                ck_assert_str_eq(out, "seen here\n");
                free(out);
        }
        ck_assert_int_eq(n, 2);
        run_free(&r);
}
END_TEST

/* A daemon from before env.set, for one connection: env.set is no method; each submit is
 * answered, and the child's exit status is how many submits came without "env". */
static pid_t old_daemon(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        pid_t pid;

        ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
        memcpy(sa.sun_path, path, strlen(path) + 1);
        ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(lfd, 1), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int c = accept(lfd, NULL, NULL), without_env = 0, job = 0;
                char *line, reply[256];

                while (c >= 0 && (line = client_read_line(c))) {
                        json_object *req = json_tokener_parse(line), *params;
                        const char *method = str_member(req, "method");
                        int64_t id = int_member(req, "id");

                        params = json_object_object_get(req, "params");
                        if (strcmp(method, "submit") == 0) {
                                without_env += !json_object_object_get(params, "env");
                                snprintf(reply, sizeof(reply),
                                         "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"result\":"
                                         "{\"id\":%d,\"state\":\"pending\"}}",
                                         (long long)id, ++job);
                        } else {
                                snprintf(reply, sizeof(reply),
                                         "{\"jsonrpc\":\"2.0\",\"id\":%lld,\"error\":{\"code\":"
                                         "-32601,\"message\":\"no method \\\"%s\\\"\"}}",
                                         (long long)id, method);
                        }
                        client_send(c, reply);
                        json_object_put(req);
                        free(line);
                }
                _exit(without_env);
        }
        close(lfd);
        return pid;
}

START_TEST(submit_stdin_sends_the_environment_with_each_job_to_a_daemon_without_env_set)
{
        char path[PATH_MAX];
        struct run r;
        int status;
        pid_t pid;

        snprintf(path, sizeof(path), "%s/old.sock", d.dir);
        pid = old_daemon(path);
        ctl(&r, "true\ntrue\ntrue\n", "--socket", path, "submit", "--stdin", NULL);
        ck_assert_msg(r.status == 0, "%s", r.err);
        ck_assert_str_eq(r.out, "1\n2\n3\n");
        run_free(&r);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 0); /* every submit had its env */
}
END_TEST

/* The column where the header's word starts, or ends for a column aligned to the right. */
static void check_column(char **rows, int n, const char *word, bool right)
{
        const char *at = strstr(rows[0], word);
        size_t col = (size_t)(at - rows[0]) + (right ? strlen(word) - 1 : 0);
        int i;

        ck_assert_ptr_nonnull(at);
        for (i = 1; i < n; i++) {
                ck_assert_msg(strlen(rows[i]) > col && rows[i][col] != ' ',
                              "column %s not aligned in \"%s\"", word, rows[i]);
                if (right)
                        ck_assert_msg(rows[i][col + 1] == ' ', "%s: \"%s\"", word, rows[i]);
                else
                        ck_assert_msg(rows[i][col - 1] == ' ', "%s: \"%s\"", word, rows[i]);
        }
}

START_TEST(list_shows_aligned_columns_with_a_header)
{
        int64_t a = submit("--name", "a", "--", "sleep 30", NULL);
        int64_t b = submit("--name", "a-longer-name", "--very-slow", "--", "sleep", "31", NULL);
        char *out, *rows[8], *save = NULL;
        int n = 0;

        wait_running(a);
        wait_running(b);
        out = ctl_ok("list", NULL);
        for (rows[n] = strtok_r(out, "\n", &save); rows[n] && n < 7;
             rows[n] = strtok_r(NULL, "\n", &save))
                n++;
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(strncmp(rows[0], "ID", 2), 0);
        check_column(rows, n, "ID", true);
        check_column(rows, n, "CLASS", false);
        check_column(rows, n, "STATE", false);
        check_column(rows, n, "TIME", false);
        check_column(rows, n, "RUNS", true);
        check_column(rows, n, "NAME", false);
        check_column(rows, n, "COMMAND", false);
        ck_assert_ptr_nonnull(strstr(rows[1], " a "));
        ck_assert_ptr_nonnull(strstr(rows[1], "running"));
        ck_assert_ptr_nonnull(strstr(rows[2], "very-slow"));
        ck_assert_ptr_nonnull(strstr(rows[2], "sleep 31"));
        free(out);
        free(ctl_ok("cancel", idstr(a), idstr(b), NULL));
}
END_TEST

START_TEST(log_prints_the_output_and_follows_a_running_job)
{
        int64_t id = submit("--wait", "--", "echo out; echo err >&2", NULL);
        char *out, cmd[2 * PATH_MAX + 128 + sizeof(WAIT_FOR_FILE)], buf[64] = "";
        size_t have = 0;
        pid_t pid;
        int fd;

        out = ctl_ok("log", idstr(id), NULL);
        ck_assert_str_eq(out, "out\nerr\n");
        free(out);
        /* It goes on when the test opens a gate: log -f prints each line as it comes. */
        snprintf(cmd, sizeof(cmd),
                 "echo one; " WAIT_FOR_FILE " %s/go1; echo two; " WAIT_FOR_FILE
                 " %s/go2; echo three",
                 d.dir, d.dir);
        id = submit("--", cmd, NULL);
        pid = ctl_spawn(&fd, "log", "-f", idstr(id), NULL);
        read_until(fd, buf, sizeof(buf), &have, "one\n");
        gate_open("go1");
        read_until(fd, buf, sizeof(buf), &have, "two\n");
        gate_open("go2");
        read_until(fd, buf, sizeof(buf), &have, "three\n");
        ck_assert_int_eq(read(fd, buf, 1), 0);
        close(fd);
        ck_assert_int_eq(ctl_reap(pid), 0);
        ck_assert_str_eq(buf, "one\ntwo\nthree\n");
}
END_TEST

/* log --run N prints that run's log; --lines N the last N lines, and with -f what follows. */
START_TEST(log_run_and_lines_pick_a_run_and_its_last_lines)
{
        char cmd[2 * PATH_MAX + 256 + sizeof(WAIT_FOR_FILE)], buf[256] = "", *out;
        size_t have = 0;
        struct run r;
        int64_t id;
        pid_t pid;
        int fd;

        snprintf(cmd, sizeof(cmd),
                 "n=$(cat %s/count 2>/dev/null || echo 0); n=$((n+1)); echo $n >%s/count; "
                 "for i in 1 2 3 4 5; do echo run $n line $i; done",
                 d.dir, d.dir);
        id = submit("--persist", "--", cmd, NULL);
        free(ctl_ok("wait", idstr(id), NULL));
        free(ctl_ok("enqueue", idstr(id), NULL));
        free(ctl_ok("wait", idstr(id), NULL));
        out = ctl_ok("log", idstr(id), "--run", "1", NULL);
        ck_assert_str_eq(out, "run 1 line 1\nrun 1 line 2\nrun 1 line 3\nrun 1 line 4\n"
                              "run 1 line 5\n");
        free(out);
        out = ctl_ok("log", idstr(id), "--lines", "2", NULL);
        ck_assert_str_eq(out, "run 2 line 4\nrun 2 line 5\n");
        free(out);
        out = ctl_ok("log", "--run", "1", "--lines", "1", idstr(id), NULL);
        ck_assert_str_eq(out, "run 1 line 5\n");
        free(out);
        out = ctl_ok("log", "--lines", "0", idstr(id), NULL);
        ck_assert_str_eq(out, "");
        free(out);
        ctl(&r, NULL, "log", idstr(id), "--run", "3", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "has no run 3"));
        run_free(&r);
        ctl(&r, NULL, "log", idstr(id), "--run", "0", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "--run takes"));
        run_free(&r);
        /* A job that never was is said so, not "no log yet". */
        ctl(&r, NULL, "log", "999999", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: log 999999: no job 999999\n");
        run_free(&r);
        ctl(&r, NULL, "log", idstr(id), "--lines", "x", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "--lines takes"));
        run_free(&r);
        free(ctl_ok("release", idstr(id), NULL));

        /* -f --lines 1 on a running job: its last line so far, then each one as it comes. */
        snprintf(cmd, sizeof(cmd), "echo one; echo two; " WAIT_FOR_FILE " %s/go1; echo three",
                 d.dir);
        id = submit("--", cmd, NULL);
        wait_running(id);
        /* Both first lines are out once the job waits on its gate: read them, then tail. */
        out = NULL;
        for (int i = 0; i < 2000 && (!out || strcmp(out, "one\ntwo\n") != 0); i++) {
                free(out);
                out = ctl_ok("log", idstr(id), NULL);
                if (strcmp(out, "one\ntwo\n") != 0)
                        usleep(10 * 1000);
        }
        ck_assert_str_eq(out, "one\ntwo\n");
        free(out);
        pid = ctl_spawn(&fd, "log", "-f", "--lines", "1", idstr(id), NULL);
        read_until(fd, buf, sizeof(buf), &have, "two\n");
        gate_open("go1");
        read_until(fd, buf, sizeof(buf), &have, "three\n");
        ck_assert_int_eq(read(fd, buf + have, 1), 0);
        close(fd);
        ck_assert_int_eq(ctl_reap(pid), 0);
        ck_assert_str_eq(buf, "two\nthree\n");
}
END_TEST

START_TEST(cancel_of_a_running_sleep_makes_wait_say_cancelled)
{
        int64_t id = submit("--", "sleep", "30", NULL);
        struct run r;

        wait_running(id);
        free(ctl_ok("cancel", idstr(id), NULL));
        ctl(&r, NULL, "wait", idstr(id), NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.out, "cancelled"));
        run_free(&r);
        ctl(&r, NULL, "cancel", "999", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: cancel 999: no live job 999\n");
        run_free(&r);
}
END_TEST

START_TEST(pause_queues_jobs_and_resume_runs_them)
{
        char *out = ctl_ok("pause", NULL), *state;
        int64_t id;
        struct run r;

        ck_assert_str_eq(out, "paused; 0 jobs running\n");
        free(out);
        id = submit("--", "true", NULL);
        /* The pool took it and holds it. That it does not start is an absence, which no event
         * shows: by the clock. */
        {
                int fd = client_connect(d.sock);

                for (int i = 0;; i++) {
                        json_object *st = call_ok(fd, "stats", NULL);
                        int64_t taken = int_member(st, "items_run");

                        json_object_put(st);
                        if (taken >= 1)
                                break;
                        ck_assert_msg(i < 2000, "the pool did not take the job in 20 s");
                        usleep(10 * 1000);
                }
                close(fd);
        }
        usleep(200 * 1000);
        state = state_of(id);
        ck_assert_str_eq(state, "pending");
        free(state);
        /* The job it lets go may be running already. */
        out = ctl_ok("resume", NULL);
        ck_assert_msg(strncmp(out, "not paused; ", 12) == 0, "resume said \"%s\"", out);
        free(out);
        free(ctl_ok("wait", idstr(id), NULL));
        ctl(&r, NULL, "pause", "now", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "resume", "--wait", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
}
END_TEST

START_TEST(pause_wait_returns_once_the_running_job_ended)
{
        char cmd[PATH_MAX + 64 + sizeof(WAIT_FOR_FILE)], buf[128] = "";
        int64_t id = (snprintf(cmd, sizeof(cmd), WAIT_FOR_FILE " %s", gate_path("go")),
                      submit("--", cmd, NULL));
        char *state;
        size_t have = 0;
        pid_t pid;
        int fd;

        wait_running(id);
        /* It waits for the job, which ends once the daemon is paused (stats says so). */
        pid = ctl_spawn(&fd, "pause", "--wait", NULL);
        {
                int c = client_connect(d.sock);
                json_object *st;

                for (int i = 0;; i++) {
                        st = call_ok(c, "stats", NULL);
                        if (json_object_get_boolean(json_object_object_get(st, "paused")))
                                break;
                        json_object_put(st);
                        ck_assert_msg(i < 2000, "not paused in 20 s");
                        usleep(10 * 1000);
                }
                json_object_put(st);
                close(c);
        }
        state = state_of(id);
        ck_assert_str_eq(state, "running");
        free(state);
        {
                struct pollfd p = {.fd = fd, .events = POLLIN};

                ck_assert_msg(poll(&p, 1, 0) == 0, "pause --wait answered before the job ended");
        }
        gate_open("go");
        read_until(fd, buf, sizeof(buf), &have, "paused; 0 jobs running\n");
        close(fd);
        ck_assert_int_eq(ctl_reap(pid), 0);
        state = state_of(id);
        ck_assert_str_eq(state, "idle");
        free(state);
        free(ctl_ok("resume", NULL));
}
END_TEST

START_TEST(suspend_and_continue_say_what_the_job_is_now)
{
        int64_t id = submit("--", "sleep", "30", NULL);
        char want[64], *out;
        struct run r;

        wait_running(id);
        out = ctl_ok("suspend", idstr(id), NULL);
        snprintf(want, sizeof(want), "job %lld suspended\n", (long long)id);
        ck_assert_str_eq(out, want);
        free(out);
        out = ctl_ok("suspend", idstr(id), NULL);
        snprintf(want, sizeof(want), "job %lld was already suspended\n", (long long)id);
        ck_assert_str_eq(out, want);
        free(out);
        out = ctl_ok("continue", idstr(id), NULL);
        snprintf(want, sizeof(want), "job %lld running\n", (long long)id);
        ck_assert_str_eq(out, want);
        free(out);
        out = ctl_ok("continue", idstr(id), NULL);
        snprintf(want, sizeof(want), "job %lld was already running\n", (long long)id);
        ck_assert_str_eq(out, want);
        free(out);
        free(ctl_ok("cancel", idstr(id), NULL));
        ctl(&r, NULL, "suspend", "999", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: suspend 999: no live job 999\n");
        run_free(&r);
        ctl(&r, NULL, "continue", "x", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "suspend", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
}
END_TEST

START_TEST(signal_sends_a_named_or_numbered_signal_to_a_running_job)
{
        char cmd[PATH_MAX + 128], want[96], *out;
        struct run r;
        int64_t id;

        /* The job ends with 5 once it got USR1, after it said its trap is set. */
        snprintf(cmd, sizeof(cmd), "trap 'exit 5' USR1; touch %s; while :; do sleep 0.01; done",
                 gate_path("trapped"));
        id = submit("--", cmd, NULL);
        for (int i = 0; access(gate_path("trapped"), F_OK) != 0; i++) {
                ck_assert_msg(i < 4000, "job %lld set no trap in 20 s", (long long)id);
                usleep(5000);
        }
        wait_process(id);
        ctl(&r, NULL, "signal", idstr(id), "NOSUCH", NULL);
        ck_assert_int_eq(r.status, 1);
        snprintf(want, sizeof(want),
                 "slowctl: signal %lld: parameter \"signal\": no such signal: "
                 "\"NOSUCH\"\n",
                 (long long)id);
        ck_assert_str_eq(r.err, want);
        run_free(&r);
        ctl(&r, NULL, "signal", idstr(id), "STOP", NULL);
        ck_assert_int_eq(r.status, 1);
        run_free(&r);
        out = ctl_ok("signal", idstr(id), "SIGUSR1", NULL);
        snprintf(want, sizeof(want), "job %lld: signal SIGUSR1 sent\n", (long long)id);
        ck_assert_str_eq(out, want);
        free(out);
        ctl(&r, NULL, "wait", idstr(id), NULL);
        ck_assert_int_eq(r.status, 5);
        run_free(&r);

        /* By number, --json: what the daemon said. */
        id = submit("--", "sleep", "30", NULL);
        wait_running(id);
        out = ctl_ok("--json", "signal", idstr(id), "15", NULL);
        snprintf(want, sizeof(want), "{\"id\":%lld,\"signal\":15}\n", (long long)id);
        ck_assert_str_eq(out, want);
        free(out);
        ctl(&r, NULL, "wait", idstr(id), NULL);
        ck_assert_int_eq(r.status, 128 + 15);
        run_free(&r);

        ctl(&r, NULL, "signal", "999", "USR1", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: signal 999: no job 999\n");
        run_free(&r);
        ctl(&r, NULL, "signal", "x", "USR1", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "signal", idstr(id), NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
}
END_TEST

/* Until the job has left the daemon's tables (through the library: its status is not live). */
static void wait_retired(int64_t id)
{
        struct sw_client *c;
        struct sw_client_error err;
        json_object *params, *st;
        bool live = true;
        int i;

        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        for (i = 0; live && i < 4000; i++) {
                params = json_object_new_object();
                json_object_object_add(params, "id", json_object_new_int64(id));
                ck_assert_int_eq(sw_client_call(c, "status", params, &st, &err), 0);
                live = json_object_get_boolean(json_object_object_get(st, "live"));
                json_object_put(st);
                if (live)
                        usleep(5000);
        }
        sw_client_free(c);
        ck_assert_msg(!live, "job %lld still live after 20 s", (long long)id);
}

START_TEST(restart_prints_the_new_jobs_id_and_command_replaces_the_command)
{
        char cmd[PATH_MAX + 64], want[PATH_MAX + 64], *out;
        struct run r;
        int64_t id, again;

        snprintf(cmd, sizeof(cmd), "echo ran >>%s", gate_path("runs"));
        id = submit("--cwd", d.dir, "--name", "twice", "--", cmd, NULL);
        free(ctl_ok("wait", idstr(id), NULL));
        wait_retired(id);
        out = ctl_ok("restart", idstr(id), NULL);
        again = submitted(out);
        free(out);
        ck_assert_int_gt(again, id);
        free(ctl_ok("wait", idstr(again), NULL));
        out = ctl_ok("log", idstr(again), NULL);
        ck_assert_str_eq(out, "");
        free(out);
        snprintf(want, sizeof(want), "%s", gate_path("runs"));
        {
                FILE *f = fopen(want, "re");
                char buf[64] = "";

                ck_assert_ptr_nonnull(f);
                ck_assert_uint_eq(fread(buf, 1, sizeof(buf) - 1, f), 8);
                fclose(f);
                ck_assert_str_eq(buf, "ran\nran\n");
        }
        /* --command: in the same folder. */
        wait_retired(again);
        out = ctl_ok("restart", idstr(again), "--command", "pwd", NULL);
        again = submitted(out);
        free(out);
        free(ctl_ok("wait", idstr(again), NULL));
        out = ctl_ok("log", idstr(again), NULL);
        snprintf(want, sizeof(want), "%s\n", d.dir);
        ck_assert_str_eq(out, want);
        free(out);
        out = ctl_ok("--json", "restart", idstr(id), NULL);
        snprintf(want, sizeof(want), "{\"id\":%lld}\n", (long long)again + 1);
        ck_assert_str_eq(out, want);
        free(out);
        free(ctl_ok("wait", idstr(again + 1), NULL));

        /* A program job: another program after the id; --command is the daemon's error, and
         * both at once a usage error. */
        id = submit("--", "echo", "one", NULL);
        free(ctl_ok("wait", idstr(id), NULL));
        wait_retired(id);
        out = ctl_ok("restart", idstr(id), "--", "echo", "two", "three", NULL);
        again = submitted(out);
        free(out);
        free(ctl_ok("wait", idstr(again), NULL));
        out = ctl_ok("log", idstr(again), NULL);
        ck_assert_str_eq(out, "two three\n");
        free(out);
        ctl(&r, NULL, "restart", idstr(id), "--command", "echo four", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "runs an argv"));
        run_free(&r);
        ctl(&r, NULL, "restart", idstr(id), "--command", "echo four", "--", "echo", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);

        /* A live job, none, no id. */
        id = submit("--", "sleep", "30", NULL);
        ctl(&r, NULL, "restart", idstr(id), NULL);
        ck_assert_int_eq(r.status, 1);
        snprintf(want, sizeof(want), "slowctl: restart %lld: job %lld is live (", (long long)id,
                 (long long)id);
        ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "%s", r.err);
        run_free(&r);
        free(ctl_ok("cancel", idstr(id), NULL));
        ctl(&r, NULL, "restart", "999", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: restart 999: no job 999\n");
        run_free(&r);
        ctl(&r, NULL, "restart", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "restart", "x", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
}
END_TEST

START_TEST(wait_for_several_reports_each_and_exits_with_the_last)
{
        int64_t a = submit("--", "exit 7", NULL), b = submit("--", "exit 0", NULL);
        struct run r;

        ctl(&r, NULL, "wait", idstr(a), idstr(b), NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_ptr_nonnull(strstr(r.out, "failed (exit code 7)"));
        ck_assert_ptr_nonnull(strstr(r.out, "succeeded"));
        ck_assert_str_eq(r.err, ""); /* no progress line off a terminal */
        run_free(&r);
        ctl(&r, NULL, "wait", idstr(b), "424242", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: wait 424242: no job 424242\n");
        run_free(&r);
}
END_TEST

/* The id's "job N: ..." line is in out. */
static bool reported(const char *out, int64_t id)
{
        char want[32];

        snprintf(want, sizeof(want), "job %lld: ", (long long)id);
        return strstr(out, want) != NULL;
}

/* slowctl running beside the test with its stderr on a terminal (where wait shows its progress
 * line): its pid, its stdout in *ret_out, the terminal's end in *ret_tty. */
static pid_t ctl_spawn_tty(int *ret_out, int *ret_tty, ...)
{
        char *argv[ARGS_MAX + 1] = {(char *)SLOWCTL};
        int out[2], master, n = 1;
        va_list ap;
        pid_t pid;

        va_start(ap, ret_tty);
        for (const char *a; n < ARGS_MAX && (a = va_arg(ap, const char *)); n++)
                argv[n] = (char *)a;
        va_end(ap);
        argv[n] = NULL;
        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        ck_assert_int_ge(master, 0);
        ck_assert(grantpt(master) == 0 && unlockpt(master) == 0);
        ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int slave = open(ptsname(master), O_RDWR | O_NOCTTY);

                if (slave < 0 || dup2(slave, STDERR_FILENO) < 0)
                        _exit(127);
                dup2(out[1], STDOUT_FILENO);
                execv(argv[0], argv);
                _exit(127);
        }
        close(out[1]);
        *ret_out = out[0];
        *ret_tty = master;
        return pid;
}

/* Reads the terminal until want has come (fails after 20 s). */
static void tty_wait_for(int tty, const char *want)
{
        char buf[4096] = "";
        size_t have = 0;

        while (!strstr(buf, want)) {
                struct pollfd p = {.fd = tty, .events = POLLIN};
                ssize_t k;

                ck_assert_msg(poll(&p, 1, 20000) > 0, "no \"%s\" in 20 s, only \"%s\"", want, buf);
                if (have + 1 >= sizeof(buf))
                        have = 0; /* only the newest matters */
                k = read(tty, buf + have, sizeof(buf) - 1 - have);
                ck_assert_msg(k > 0, "the terminal closed before \"%s\"", want);
                have += (size_t)k;
                buf[have] = '\0';
        }
}

/* All a pipe gives until its end. */
static char *read_all(int fd)
{
        struct sink s = {.fd = fd};

        while (sink_read(&s))
                ;
        close(fd);
        return s.buf ? s.buf : strdup("");
}

/* A job that ends with code once the gate is opened: its id. */
static int64_t submit_gated(const char *gate, int code, const char *queue)
{
        char cmd[PATH_MAX + 128 + sizeof(WAIT_FOR_FILE)];

        snprintf(cmd, sizeof(cmd), WAIT_FOR_FILE " %s; exit %d", gate_path(gate), code);
        return queue ? submit("--queue", queue, "--", cmd, NULL) : submit("--", cmd, NULL);
}

/* wait --all waits for each live job of the caller that will end, --queue Q for those of Q; the
 * exit status is the worst of their outcomes. Persist, recurring and stashed jobs are left out
 * (a recurring or a stashed one never ends by itself: waiting for it would not return). The gates
 * open only once wait has sent its requests: its progress line says so. */
START_TEST(wait_all_and_queue_wait_for_the_jobs_that_will_end_and_exit_with_the_worst)
{
        int64_t kept, every, stashed, a, b, q, c1, c2, e;
        struct run r;
        char *out;
        pid_t pid;
        int fd, tty;

        free(ctl_ok("queue", "add", "q2", NULL));
        ctl(&r, NULL, "submit", "--persist", "--wait", "--", "exit 9", NULL);
        ck_assert_int_eq(r.status, 9);
        kept = submitted(r.out);
        run_free(&r);
        every = submit("--every", "1h", "--", "true", NULL);
        stashed = submit("--stashed", "--", "exit 8", NULL);
        a = submit_gated("go", 3, NULL);
        b = submit_gated("go", 0, NULL);
        q = submit_gated("goq", 5, "q2");
        pid = ctl_spawn_tty(&fd, &tty, "wait", "--all", NULL);
        tty_wait_for(tty, "waiting: 0 of 3 done");
        gate_open("go");
        gate_open("goq");
        out = read_all(fd);
        close(tty);
        ck_assert_int_eq(ctl_reap(pid), 5);
        ck_assert_msg(reported(out, a) && reported(out, b) && reported(out, q), "%s", out);
        ck_assert_msg(!reported(out, kept) && !reported(out, every) && !reported(out, stashed),
                      "%s", out);
        ck_assert_ptr_nonnull(strstr(out, "failed (exit code 3)"));
        free(out);

        /* --queue: only that queue's. */
        c1 = submit_gated("goc", 4, "q2");
        c2 = submit_gated("goc", 0, "q2");
        e = submit_gated("goe", 6, NULL);
        pid = ctl_spawn_tty(&fd, &tty, "wait", "--queue", "q2", NULL);
        tty_wait_for(tty, "waiting: 0 of 2 done");
        gate_open("goc");
        out = read_all(fd);
        close(tty);
        ck_assert_int_eq(ctl_reap(pid), 4);
        ck_assert_msg(reported(out, c1) && reported(out, c2) && !reported(out, e), "%s", out);
        free(out);
        gate_open("goe");
        ctl(&r, NULL, "wait", idstr(e), NULL);
        ck_assert_int_eq(r.status, 6);
        run_free(&r);

        /* Nothing left that will end: nothing to wait for. */
        ctl(&r, NULL, "wait", "--all", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, "");
        run_free(&r);
        ctl(&r, NULL, "wait", "--all", idstr(a), NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        /* A queue that is not there, mistyped, is no success. */
        ctl(&r, NULL, "wait", "--queue", "q3", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: wait: no queue \"q3\"\n");
        run_free(&r);
        free(ctl_ok("release", idstr(kept), idstr(every), NULL));
        free(ctl_ok("cancel", idstr(stashed), NULL));
}
END_TEST

/* The daemon's arguments in setup, for a start again on the same folders. */
#define SETUP_ARGS "--max-threads", "4", "--kill-grace", "1", "--plugin-dir", PLUGINS_BUILT

/* Waits until the daemon has n connections besides the one that asks (slowctl's, once it has
 * connected); fails after 20 s. */
static void wait_connections(int n)
{
        int fd = client_connect(d.sock), i;
        json_object *st = NULL;

        ck_assert_int_ge(fd, 0);
        for (i = 0; i < 20000; i++) {
                json_object_put(st);
                st = call_ok(fd, "status", NULL);
                if (int_member(st, "connections") >= n + 1)
                        break;
                usleep(1000);
        }
        ck_assert_msg(i < 20000, "%d connections after 20 s", (int)int_member(st, "connections"));
        json_object_put(st);
        close(fd);
}

/* SIGTERM to the daemon, and returns once its socket answers no more: it has closed its
 * connections too, and waits for its running jobs (stop-timeout) before it exits. */
static void stop_answering(void)
{
        int fd, i;

        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        for (i = 0; i < 20000 && (fd = client_connect(d.sock)) >= 0; i++) {
                close(fd);
                usleep(1000);
        }
        ck_assert_int_lt(i, 20000);
}

/* The daemon's exit (0) after stop_answering(); its folders stay, for a start again. */
static void stopped(void)
{
        int status;

        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "slowworkd status 0x%x",
                      status);
}

/* A wait begun before a restart goes on after it: its connection closed, slowctl connects again
 * and asks for what it still waits for. Here the jobs end while the daemon stops (it waits for its
 * running jobs after closing its connections), so the answers come from what it recorded. */
START_TEST(wait_outlives_a_restart_and_hears_of_jobs_that_ended_in_the_gap)
{
        int64_t a = submit_gated("ga", 0, NULL), b = submit_gated("gb", 3, NULL);
        char want[128], *out;
        pid_t pid;
        int fd;

        wait_running(a);
        wait_running(b);
        pid = ctl_spawn(&fd, "wait", idstr(a), idstr(b), NULL);
        wait_connections(1);
        stop_answering();
        gate_open("ga");
        gate_open("gb");
        stopped();
        daemon_start_again(&d, SETUP_ARGS, NULL);
        out = read_all(fd);
        ck_assert_int_eq(ctl_reap(pid), 3); /* the last job's code, as without the restart */
        snprintf(want, sizeof(want), "job %lld: succeeded\njob %lld: failed (exit code 3)\n",
                 (long long)a, (long long)b);
        ck_assert_str_eq(out, want);
        free(out);
}
END_TEST

/* A job running at a restart that does not wait for it (stop-timeout 0) is interrupted and runs
 * again: wait --all, begun before, ends with the code of that run, after the restart. */
START_TEST(wait_all_of_a_job_cut_by_a_restart_ends_with_its_next_runs_code)
{
        int64_t a = submit_gated("go", 5, NULL), b = submit_gated("go", 0, NULL);
        char want[128], *out;
        json_object *st;
        pid_t pid;
        int fd, tty, cfd;

        wait_running(a);
        wait_running(b);
        free(ctl_ok("set", "--runtime", "stop-timeout", "0", NULL));
        /* its progress line comes once its list was answered: the jobs it waits for are known
         * before the restart (a list asked again after it would find none once they end) */
        pid = ctl_spawn_tty(&fd, &tty, "wait", "--all", NULL);
        tty_wait_for(tty, "waiting: 0 of 2 done");
        daemon_stop_clean(&d);
        daemon_start_again(&d, SETUP_ARGS, NULL);
        wait_running(a); /* run 2: the gate is still shut */
        wait_running(b);
        gate_open("go");
        out = read_all(fd);
        ck_assert_int_eq(ctl_reap(pid), 5);
        close(tty);
        snprintf(want, sizeof(want), "job %lld: failed (exit code 5)\njob %lld: succeeded\n",
                 (long long)a, (long long)b);
        ck_assert_str_eq(out, want);
        free(out);
        cfd = client_connect(d.sock);
        st = job_status(cfd, a);
        ck_assert_int_eq(int_member(st, "runs"), 2);
        json_object_put(st);
        close(cfd);
}
END_TEST

/* submit --wait: the submit was answered before the restart (it is not sent again), its wait
 * goes on after it, with the code of the run after the one the restart cut. */
START_TEST(submit_wait_outlives_a_restart_without_submitting_again)
{
        char cmd[PATH_MAX + 128 + sizeof(WAIT_FOR_FILE)], buf[32] = "", *rest;
        json_object *st;
        size_t have = 0;
        int64_t id;
        pid_t pid;
        int fd, cfd;

        free(ctl_ok("set", "--runtime", "stop-timeout", "0", NULL));
        snprintf(cmd, sizeof(cmd), WAIT_FOR_FILE " %s; exit 7", gate_path("go"));
        pid = ctl_spawn(&fd, "submit", "--wait", "--", cmd, NULL);
        read_until(fd, buf, sizeof(buf), &have, "\n"); /* the id: now it waits */
        id = submitted(buf);
        wait_running(id);
        daemon_stop_clean(&d);
        daemon_start_again(&d, SETUP_ARGS, NULL);
        wait_running(id);
        gate_open("go");
        rest = read_all(fd);
        ck_assert_int_eq(ctl_reap(pid), 7);
        ck_assert_str_eq(rest, "");
        free(rest);
        cfd = client_connect(d.sock);
        st = job_status(cfd, id);
        ck_assert_int_eq(int_member(st, "runs"), 2);
        json_object_put(st);
        snprintf(cmd, sizeof(cmd), "{\"id\":%lld}", (long long)id + 1);
        ck_assert_int_eq(call_error(cfd, "status", cmd, buf, sizeof(buf)), -32001); /* one job */
        close(cfd);
}
END_TEST

/* No daemon comes back: after $SLOWWORK_RECONNECT_TIMEOUT (30 s unset), the message of a daemon
 * that cannot be reached, and 69, as for one that was never there. */
START_TEST(wait_without_a_daemon_coming_back_exits_69)
{
        int64_t a = submit_gated("go", 0, NULL);
        char *argv[] = {(char *)SLOWCTL, (char *)"wait", (char *)idstr(a), NULL};
        char want[PATH_MAX + 128], *err;
        int errp[2], status;
        pid_t pid;

        wait_running(a);
        free(ctl_ok("set", "--runtime", "stop-timeout", "0", NULL));
        ck_assert_int_eq(pipe2(errp, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                dup2(errp[1], STDERR_FILENO);
                setenv("SLOWWORK_RECONNECT_TIMEOUT", "0.3", 1);
                execv(argv[0], argv);
                _exit(127);
        }
        close(errp[1]);
        wait_connections(1);
        daemon_stop_clean(&d);
        err = read_all(errp[0]);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 69);
        snprintf(want, sizeof(want),
                 "slowctl: cannot connect to %s: No such file or directory "
                 "(is slowworkd running?)\n",
                 d.sock);
        ck_assert_str_eq(err, want);
        free(err);
        daemon_start_again(&d, SETUP_ARGS, NULL); /* for the teardown */
        gate_open("go");
}
END_TEST

/* A job printing a line at each gate, for log -f across restarts: its id. */
static int64_t submit_lines(void)
{
        char cmd[2 * PATH_MAX + 160 + sizeof(WAIT_FOR_FILE)];

        snprintf(cmd, sizeof(cmd),
                 "echo one; " WAIT_FOR_FILE " %s/go1; echo two; " WAIT_FOR_FILE
                 " %s/go2; echo three",
                 d.dir, d.dir);
        return submit("--", cmd, NULL);
}

/* The text of run's log file. */
static char *run_log(int64_t id, int run)
{
        char path[PATH_MAX + 64];

        snprintf(path, sizeof(path), "%s/logs/%lld.%d.log", d.state, (long long)id, run);
        return file_text(path);
}

/* log -f goes on across a restart from the byte it had printed: the lines its job wrote while no
 * daemon answered come once, after the ones before. */
START_TEST(log_follow_outlives_a_restart_printing_each_line_once)
{
        int64_t id = submit_lines();
        char buf[64] = "", *rest, *file;
        size_t have = 0;
        pid_t pid;
        int fd;

        pid = ctl_spawn(&fd, "log", "-f", idstr(id), NULL);
        read_until(fd, buf, sizeof(buf), &have, "one\n");
        stop_answering();
        gate_open("go1"); /* "two" and "three" while slowctl cannot read them */
        gate_open("go2");
        stopped();
        daemon_start_again(&d, SETUP_ARGS, NULL);
        rest = read_all(fd);
        ck_assert_int_eq(ctl_reap(pid), 0);
        ck_assert_str_eq(buf, "one\n");
        ck_assert_str_eq(rest, "two\nthree\n");
        file = run_log(id, 1);
        ck_assert_str_eq(file, "one\ntwo\nthree\n");
        free(file);
        free(rest);
}
END_TEST

/* slowctl reexec: the daemon runs its program again, and a wait and a log -f begun before carry on
 * with the same run, to its end: its lines once each, its exit code. */
START_TEST(reexec_keeps_the_run_that_wait_and_log_follow_see_to_its_end)
{
        int64_t id = submit_lines();
        char buf[64] = "", *rest, *out, want[64];
        size_t have = 0;
        pid_t log_pid, wait_pid;
        int log_fd, wait_fd;

        log_pid = ctl_spawn(&log_fd, "log", "-f", idstr(id), NULL);
        wait_pid = ctl_spawn(&wait_fd, "wait", idstr(id), NULL);
        read_until(log_fd, buf, sizeof(buf), &have, "one\n");
        out = ctl_ok("reexec", NULL);
        snprintf(want, sizeof(want), "slowworkd runs its program again (pid %d, version ",
                 (int)d.pid);
        ck_assert_msg(strncmp(out, want, strlen(want)) == 0, "%s", out);
        free(out);
        gate_open("go1");
        gate_open("go2");
        rest = read_all(log_fd);
        ck_assert_int_eq(ctl_reap(log_pid), 0);
        ck_assert_str_eq(rest, "two\nthree\n");
        free(rest);
        free(read_all(wait_fd));
        ck_assert_int_eq(ctl_reap(wait_pid), 0);
        rest = run_log(id, 1);
        ck_assert_str_eq(rest, "one\ntwo\nthree\n");
        free(rest);
}
END_TEST

/* A run that a restart interrupts: log -f prints the rest of it, then the run after it (the job
 * runs again) from its start, each line once: what the two log files hold. */
START_TEST(log_follow_goes_on_with_the_run_after_one_a_restart_cut)
{
        int64_t id = submit_lines();
        char buf[64] = "", *rest, *one, *two, want[256], printed[256];
        size_t have = 0;
        pid_t pid;
        int fd;

        free(ctl_ok("set", "--runtime", "stop-timeout", "0", NULL));
        pid = ctl_spawn(&fd, "log", "-f", idstr(id), NULL);
        read_until(fd, buf, sizeof(buf), &have, "one\n");
        daemon_stop_clean(&d);
        daemon_start_again(&d, SETUP_ARGS, NULL);
        gate_open("go1");
        gate_open("go2");
        rest = read_all(fd);
        ck_assert_int_eq(ctl_reap(pid), 0);
        one = run_log(id, 1);
        two = run_log(id, 2);
        ck_assert_str_eq(two, "one\ntwo\nthree\n");
        snprintf(want, sizeof(want), "%s%s", one, two);
        snprintf(printed, sizeof(printed), "%s%s", buf, rest);
        ck_assert_str_eq(printed, want);
        ck_assert_str_eq(printed, "one\none\ntwo\nthree\n");
        free(one);
        free(two);
        free(rest);
}
END_TEST

/* Runs slowctl (argv) with its stdin and stdout on a terminal (a pty) and NO_COLOR set to
 * no_color (NULL: unset); what it wrote there, with the terminal's \r\n as \n. With stop_at, a
 * live view (top) is sent q once its output holds that text. */
static char *pty_run(const char *no_color, const char *stop_at, char **argv)
{
        struct sink sink = {.fd = -1};
        int master, status;
        bool stopped = false;
        char *out, *p, *q;
        pid_t pid;

        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
        ck_assert_int_ge(master, 0);
        ck_assert(grantpt(master) == 0 && unlockpt(master) == 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int slave = open(ptsname(master), O_RDWR | O_NOCTTY);

                if (slave < 0 || dup2(slave, STDOUT_FILENO) < 0 || dup2(slave, STDIN_FILENO) < 0)
                        _exit(127);
                if (no_color ? setenv("NO_COLOR", no_color, 1) : unsetenv("NO_COLOR"))
                        _exit(127);
                execv(argv[0], argv);
                _exit(127);
        }
        sink.fd = master;
        /* The terminal's end gives EIO once the child's side is closed. */
        for (;;) {
                struct pollfd pfd = {.fd = master, .events = POLLIN};
                ssize_t n;

                ck_assert_msg(poll(&pfd, 1, 30000) > 0, "slowctl %s took more than 30 s", argv[1]);
                if (sink.len + 4096 + 1 > sink.size) {
                        sink.size = 2 * sink.size + 4096 + 1;
                        sink.buf = realloc(sink.buf, sink.size);
                        ck_assert_ptr_nonnull(sink.buf);
                }
                n = read(master, sink.buf + sink.len, sink.size - sink.len - 1);
                if (n <= 0)
                        break;
                sink.len += (size_t)n;
                sink.buf[sink.len] = '\0';
                /* Quit as a user does, with q on the terminal (a signal, which a sanitizer's
                 * runtime may hold back, once left top running under ThreadSanitizer). */
                if (stop_at && !stopped && strstr(sink.buf, stop_at)) {
                        ck_assert_int_eq(write(master, "q", 1), 1);
                        stopped = true;
                }
        }
        close(master);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) <= 3, "slowctl %s: status 0x%x",
                      argv[1], status);
        out = sink.buf ? sink.buf : strdup("");
        for (p = q = out; *p; p++)
                if (!(p[0] == '\r' && p[1] == '\n'))
                        *q++ = *p;
        *q = '\0';
        return out;
}

static char *ctl_pty(const char *no_color, const char *first, ...)
{
        char *argv[ARGS_MAX + 1] = {(char *)SLOWCTL, (char *)first};
        va_list ap;

        va_start(ap, first);
        collect(argv, 2, ap);
        va_end(ap);
        return pty_run(no_color, NULL, argv);
}

/* Three finished runs, one after the other: succeeded, failed with 3, killed; their ids. */
static void three_runs(int64_t ids[3])
{
        static const char *const commands[] = {"true", "exit 3", "kill -9 $$"};
        struct run r;
        int i;

        for (i = 0; i < 3; i++) {
                ctl(&r, NULL, "submit", "--wait", "--", commands[i], NULL);
                ids[i] = submitted(r.out);
                run_free(&r);
        }
}

/* The value of a NAME VALUE line of status's output (a static buffer), or NULL. */
static const char *value_of(const char *out, const char *name)
{
        static char value[256];
        const char *line = out;
        size_t len = strlen(name);

        for (; line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
                if (strncmp(line, name, len) == 0 && line[len] == ' ') {
                        line += len + strspn(line + len, " ");
                        snprintf(value, sizeof(value), "%.*s", (int)strcspn(line, "\n"), line);
                        return value;
                }
        }
        return NULL;
}

/* The rows of a table, in place (the caller frees out); n at most max. */
static int rows_of(char *out, char **rows, int max)
{
        char *save = NULL;
        int n = 0;

        for (rows[n] = strtok_r(out, "\n", &save); rows[n] && n < max - 1;
             rows[n] = strtok_r(NULL, "\n", &save))
                n++;
        return n;
}

/* A run's start in local time, as history and status print it. */
static void local_start(int64_t id, char *buf, size_t len)
{
        struct sw_client *c;
        json_object *params = json_object_new_object(), *st;
        struct sw_client_error err;
        struct tm tm;
        time_t t;

        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        json_object_object_add(params, "id", json_object_new_int64(id));
        ck_assert_int_eq(sw_client_call(c, "wait", params, &st, &err), 0);
        t = (time_t)json_object_get_double(json_object_object_get(st, "started"));
        ck_assert_ptr_nonnull(localtime_r(&t, &tm));
        strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
        json_object_put(st);
        sw_client_free(c);
}

START_TEST(history_prints_the_runs_newest_first_as_a_table)
{
        char *out, *rows[8], want[64], started[32];
        int64_t ids[3];
        int n;

        three_runs(ids);
        out = ctl_ok("history", NULL);
        ck_assert_ptr_null(strchr(out, '\033'));
        n = rows_of(out, rows, 8);
        ck_assert_int_eq(n, 4);
        ck_assert_str_eq(rows[0], "ID  RUN  OUTCOME       EXIT  STARTED              DURATION  "
                                  "COMMAND");
        check_column(rows, n, "ID", true);
        check_column(rows, n, "RUN", true);
        check_column(rows, n, "OUTCOME", false);
        check_column(rows, n, "EXIT", true);
        check_column(rows, n, "STARTED", false);
        check_column(rows, n, "DURATION", true);
        check_column(rows, n, "COMMAND", false);
        snprintf(want, sizeof(want), "%lld    1  killed     SIGKILL", (long long)ids[2]);
        ck_assert_msg(strstr(rows[1], want) != NULL, "%s", rows[1]);
        ck_assert_ptr_nonnull(strstr(rows[1], "kill -9 $$"));
        snprintf(want, sizeof(want), "%lld    1  failed           3", (long long)ids[1]);
        ck_assert_msg(strstr(rows[2], want) != NULL, "%s", rows[2]);
        snprintf(want, sizeof(want), "%lld    1  succeeded        0", (long long)ids[0]);
        ck_assert_msg(strstr(rows[3], want) != NULL, "%s", rows[3]);
        local_start(ids[0], started, sizeof(started));
        ck_assert_msg(strstr(rows[3], started) != NULL, "%s: no %s", rows[3], started);
        /* A duration in ms for so short a run, not seconds as a float. */
        ck_assert_msg(strstr(rows[3], "ms  true") != NULL, "%s", rows[3]);
        free(out);
}
END_TEST

START_TEST(history_filters_failed_outcome_since_and_count)
{
        char *out, *rows[8];
        int64_t ids[3];

        three_runs(ids);
        out = ctl_ok("history", "--failed", NULL);
        ck_assert_int_eq(rows_of(out, rows, 8), 3);
        ck_assert_ptr_nonnull(strstr(rows[1], "killed"));
        ck_assert_ptr_nonnull(strstr(rows[2], "failed"));
        free(out);
        out = ctl_ok("history", "--outcome", "succeeded", NULL);
        ck_assert_int_eq(rows_of(out, rows, 8), 2);
        ck_assert_ptr_nonnull(strstr(rows[1], "succeeded"));
        free(out);
        out = ctl_ok("history", "-n", "1", NULL);
        ck_assert_int_eq(rows_of(out, rows, 8), 2);
        ck_assert_ptr_nonnull(strstr(rows[1], "killed"));
        free(out);
        out = ctl_ok("history", "--since", "1h", NULL);
        ck_assert_int_eq(rows_of(out, rows, 8), 4);
        free(out);
        out = ctl_ok("history", "--since", "2100-01-01 00:00", NULL);
        ck_assert_int_eq(rows_of(out, rows, 8), 1);
        free(out);
        /* --json: the daemon's reply, one line. */
        out = ctl_ok("--json", "history", "--failed", "-n", "1", NULL);
        {
                json_object *reply = json_tokener_parse(out), *runs;

                ck_assert_ptr_nonnull(reply);
                runs = json_object_object_get(reply, "runs");
                ck_assert_uint_eq(json_object_array_length(runs), 1);
                ck_assert_int_eq(int_member(json_object_array_get_idx(runs, 0), "id"), ids[2]);
                ck_assert(json_object_get_boolean(json_object_object_get(reply, "more")));
                json_object_put(reply);
        }
        ck_assert_ptr_eq(strchr(out, '\n'), out + strlen(out) - 1);
        free(out);
}
END_TEST

START_TEST(history_usage_errors_exit_2)
{
        static const char *const bad[][3] = {
            {"-n", "0", NULL},        {"-n", "10001", NULL},
            {"-n", "x", NULL},        {"--since", "soon", NULL},
            {"--since", "-2h", NULL}, {"--failed", "--outcome", "failed"},
        };
        struct run r;
        size_t i;

        for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ctl(&r, NULL, "history", bad[i][0], bad[i][1], bad[i][2], NULL);
                ck_assert_msg(r.status == 2, "history %s %s: %d", bad[i][0], bad[i][1], r.status);
                ck_assert_str_eq(r.out, "");
                run_free(&r);
        }
        ctl(&r, NULL, "history", "--outcome", "fine", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "outcome"));
        run_free(&r);
        ctl(&r, NULL, "list", "-n", "3", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
}
END_TEST

/* The row of list's output that shows the job. */
static const char *row_of(char **rows, int n, int64_t id)
{
        char want[32];

        snprintf(want, sizeof(want), "%lld ", (long long)id);
        for (int i = 1; i < n; i++)
                if (strncmp(rows[i] + strspn(rows[i], " "), want, strlen(want)) == 0)
                        return rows[i];
        ck_abort_msg("list shows no job %lld", (long long)id);
        return NULL;
}

/* Until the job's run is held back (by a pause or a limit), as its status says. */
static void wait_held(int64_t id)
{
        bool held = false;

        for (int i = 0; i < 4000 && !held; i++) {
                json_object *st = status_of(id);

                held = json_object_get_boolean(json_object_object_get(st, "held"));
                json_object_put(st);
                if (!held)
                        usleep(5000);
        }
        ck_assert_msg(held, "job %lld is not held", (long long)id);
}

START_TEST(list_shows_the_states_as_they_are_and_a_time)
{
        int64_t run = submit("--", "sleep 30", NULL), keyed = submit("--key", "k", "--", "sleep 31", NULL);
        int64_t later = submit("--delay", "600", "--", "true", NULL), after, held, stashed;
        char *out, *rows[12];
        const char *row;
        int n;

        wait_running(run);
        wait_running(keyed);
        after = submit("--after", idstr(run), "--", "true", NULL);
        free(ctl_ok("suspend", idstr(run), NULL));
        ck_assert_int_eq(submit("--key", "k", "--", "sleep 31", NULL), keyed); /* deferred */
        out = ctl_ok("list", NULL);
        n = rows_of(out, rows, 12);
        ck_assert_int_eq(n, 5);
        check_column(rows, n, "TIME", false);
        row = row_of(rows, n, run);
        ck_assert_msg(strstr(row, " suspended ") && !strstr(row, " ago "), "%s", row);
        /* Running, with one more run to come: the elapsed time, and 1+1 runs. */
        row = row_of(rows, n, keyed);
        ck_assert_msg(strstr(row, " running ") && strstr(row, " 1+1 ") && !strstr(row, " ago "),
                      "%s", row);
        row = row_of(rows, n, later);
        ck_assert_msg(strstr(row, " delayed ") && (strstr(row, " in 9m5") || strstr(row, " in 10m00s")),
                      "%s", row);
        row = row_of(rows, n, after);
        ck_assert_msg(strstr(row, " waiting ") && strstr(row, " ago "), "%s", row); /* its age */
        free(out);

        /* Held back by a pause: "held", not "pending"; stashed: "stashed"; both with their age. */
        free(ctl_ok("pause", NULL));
        held = submit("--", "true", NULL);
        stashed = submit("--stashed", "--", "true", NULL);
        wait_held(held);
        out = ctl_ok("list", NULL);
        n = rows_of(out, rows, 12);
        ck_assert_int_eq(n, 7);
        row = row_of(rows, n, held);
        ck_assert_msg(strstr(row, " held ") && strstr(row, " ago "), "%s", row);
        row = row_of(rows, n, stashed);
        ck_assert_msg(strstr(row, " stashed ") && strstr(row, " ago "), "%s", row);
        free(out);
        free(ctl_ok("resume", NULL));
        free(ctl_ok("cancel", idstr(after), idstr(run), idstr(keyed), idstr(later), NULL));
        free(ctl_ok("cancel", idstr(stashed), NULL));
        free(ctl_ok("wait", idstr(held), NULL));
}
END_TEST

START_TEST(list_all_shows_the_live_jobs_then_the_last_runs)
{
        int64_t live = submit("--", "sleep 30", NULL), ids[3];
        char *out, *rows[12], want[32];
        int n;

        three_runs(ids);
        wait_running(live);
        out = ctl_ok("list", "--all", "-n", "2", NULL);
        n = rows_of(out, rows, 12);
        ck_assert_int_eq(n, 5);
        ck_assert_int_eq(strncmp(rows[0], "ID  CLASS", 9), 0);
        snprintf(want, sizeof(want), "%lld  slow", (long long)live);
        ck_assert_msg(strstr(rows[1], want) != NULL, "%s", rows[1]);
        ck_assert_int_eq(strncmp(rows[2], "ID  RUN  OUTCOME", 16), 0);
        ck_assert_ptr_nonnull(strstr(rows[3], "killed"));
        ck_assert_ptr_nonnull(strstr(rows[4], "failed"));
        free(out);
        free(ctl_ok("cancel", idstr(live), NULL));
}
END_TEST

START_TEST(outcomes_are_coloured_on_a_terminal_only)
{
        char *out, want[64];
        int64_t ids[3];

        three_runs(ids);
        out = ctl_pty(NULL, "history", NULL);
        ck_assert_msg(strstr(out, "\033[31mkilled\033[0m") != NULL, "%s", out);
        ck_assert_msg(strstr(out, "\033[31mfailed\033[0m") != NULL, "%s", out);
        ck_assert_msg(strstr(out, "\033[32msucceeded\033[0m") != NULL, "%s", out);
        /* The colour's bytes take no column: the cells after them stay aligned. */
        ck_assert_ptr_nonnull(strstr(out, "\033[31mkilled\033[0m     SIGKILL"));
        free(out);
        out = ctl_pty(NULL, "wait", idstr(ids[1]), NULL);
        snprintf(want, sizeof(want), "job %lld: \033[31mfailed\033[0m (exit code 3)\n",
                 (long long)ids[1]);
        ck_assert_str_eq(out, want);
        free(out);
        out = ctl_pty(NULL, "status", idstr(ids[0]), NULL);
        ck_assert_str_eq(value_of(out, "last.outcome"), "\033[32msucceeded\033[0m");
        free(out);
        /* NO_COLOR, on a terminal too; and a pipe. */
        out = ctl_pty("1", "history", NULL);
        ck_assert_ptr_nonnull(strstr(out, "killed"));
        ck_assert_ptr_null(strchr(out, '\033'));
        free(out);
        out = ctl_pty("1", "status", idstr(ids[0]), NULL);
        ck_assert_ptr_null(strchr(out, '\033'));
        free(out);
        {
                struct run r;

                ctl(&r, NULL, "wait", idstr(ids[1]), NULL);
                ck_assert_int_eq(r.status, 3);
                ck_assert_ptr_nonnull(strstr(r.out, "failed (exit code 3)"));
                ck_assert_ptr_null(strchr(r.out, '\033'));
                run_free(&r);
        }
}
END_TEST

START_TEST(status_shows_local_times_durations_and_the_owners_name)
{
        int64_t ids[3], every;
        char *out, started[32];
        struct passwd *pw = getpwuid(getuid());

        three_runs(ids);
        out = ctl_ok("status", idstr(ids[0]), NULL);
        ck_assert_ptr_nonnull(pw);
        ck_assert_str_eq(value_of(out, "owner"), pw->pw_name);
        ck_assert_str_eq(value_of(out, "last.owner"), pw->pw_name);
        local_start(ids[0], started, sizeof(started));
        ck_assert_str_eq(value_of(out, "last.started"), started);
        ck_assert_int_eq(strlen(value_of(out, "last.ended")), strlen(started));
        /* The CPU time of a run of true: milliseconds. */
        if (value_of(out, "last.cpu_time"))
                ck_assert_msg(strstr(value_of(out, "last.cpu_time"), "ms"), "%s", out);
        /* No Unix time with a fraction anywhere. */
        ck_assert_msg(strstr(out, "17963") == NULL && strstr(out, "17964") == NULL, "%s", out);
        free(out);
        /* --json stays the daemon's numbers. */
        out = ctl_ok("--json", "status", idstr(ids[0]), NULL);
        ck_assert_msg(strstr(out, "\"started\":1") != NULL, "%s", out);
        free(out);

        /* A live job's spans as people say them; a limit that is off is none, not 0 B or 0ms. */
        every = submit("--every", "1h", "--retries", "1", "--retry-delay", "90", "--open-files",
                       "99", "--nice", "0", "--", "true", NULL);
        out = ctl_ok("status", idstr(every), NULL);
        ck_assert_str_eq(value_of(out, "every"), "1h00m");
        ck_assert_str_eq(value_of(out, "retry_delay"), "1m30s");
        ck_assert_str_eq(value_of(out, "limits.open_files"), "99");
        ck_assert_str_eq(value_of(out, "limits.memory_max"), "none");
        ck_assert_str_eq(value_of(out, "limits.cpu_time"), "none");
        ck_assert_str_eq(value_of(out, "limits.tasks_max"), "none");
        ck_assert_str_eq(value_of(out, "limits.nice"), "0");
        free(out);
        free(ctl_ok("release", idstr(every), NULL));
}
END_TEST

START_TEST(get_and_set_settings)
{
        struct run r;
        char *out;

        out = ctl_ok("get", "max-threads", NULL);
        ck_assert_str_eq(out, "4\n");
        free(out);
        free(ctl_ok("set", "max-threads", "6", NULL));
        out = ctl_ok("get", "max-threads", NULL);
        ck_assert_str_eq(out, "6\n");
        free(out);
        ctl(&r, NULL, "set", "min-threads", "9", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.out, "");
        ck_assert_ptr_nonnull(strstr(r.err, "slowctl: set: "));
        ck_assert_ptr_nonnull(strstr(r.err, "nothing was changed"));
        run_free(&r);
        out = ctl_ok("get", "min-threads", NULL);
        ck_assert_str_eq(out, "2\n");
        free(out);
        free(ctl_ok("set", "min-threads", "3", "kill-grace", "0.5", "--runtime", NULL));
        free(ctl_ok("set", "log-limit", "1572864", "max-queued-per-user", "0", NULL));
        out = ctl_ok("get", NULL);
        /* The values in one column after the longest name; sizes, times, percentages and limits
         * that are off as people say them. */
        ck_assert_msg(strncmp(out, "min-threads               3\n", 28) == 0,
                      "slowctl get printed:\n%s", out);
        ck_assert_msg(strstr(out, "\nkill-grace                500ms\n"),
                      "slowctl get printed:\n%s", out);
        ck_assert_msg(strstr(out, "\nmax-connections-per-user  64\n"),
                      "slowctl get printed:\n%s", out);
        ck_assert_msg(strstr(out, "\nlog-limit                 1.5 MiB\n"),
                      "slowctl get printed:\n%s", out);
        ck_assert_msg(strstr(out, "\nvslow-percentage          50%\n"),
                      "slowctl get printed:\n%s", out);
        ck_assert_msg(strstr(out, "\nmax-queued-per-user       none\n"),
                      "slowctl get printed:\n%s", out);
        ck_assert_msg(strstr(out, "\nmax-jobs-per-user         none\n"),
                      "slowctl get printed:\n%s", out);
        ck_assert_msg(strstr(out, "\nmax-job-bytes-per-user    none\n"),
                      "slowctl get printed:\n%s", out);
        free(out);
        free(ctl_ok("set", "max-jobs-per-user", "500", "max-job-bytes-per-user", "3145728", NULL));
        out = ctl_ok("get", NULL);
        ck_assert_msg(strstr(out, "\nmax-jobs-per-user         500\n"),
                      "slowctl get printed:\n%s", out);
        ck_assert_msg(strstr(out, "\nmax-job-bytes-per-user    3 MiB\n"),
                      "slowctl get printed:\n%s", out);
        free(out);
        ctl(&r, NULL, "set", "max-job-bytes-per-user", "1099511627777", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "max-job-bytes-per-user"));
        run_free(&r);
        free(ctl_ok("set", "max-jobs-per-user", "0", "max-job-bytes-per-user", "0", NULL));
        out = ctl_ok("get", "stop-timeout", NULL);
        ck_assert_str_eq(out, "30.0s\n");
        free(out);
        /* The ceilings: none by default, a time and a size as people say them. */
        out = ctl_ok("get", "max-job-memory", NULL);
        ck_assert_str_eq(out, "none\n");
        free(out);
        free(ctl_ok("set", "max-job-cpu-time", "5400", "max-job-memory", "1073741824", NULL));
        out = ctl_ok("get", "max-job-cpu-time", NULL);
        ck_assert_str_eq(out, "1h30m\n");
        free(out);
        out = ctl_ok("get", "max-job-memory", NULL);
        ck_assert_str_eq(out, "1 GiB\n");
        free(out);
        out = ctl_ok("--json", "get", NULL); /* numbers, as the daemon gives them */
        ck_assert_msg(strstr(out, "\"log-limit\":1572864") && strstr(out, "\"kill-grace\":0.5"),
                      "%s", out);
        free(out);
        ctl(&r, NULL, "set", "max-threads", "many", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        /* A yes-or-no setting: off in a user instance, said and taken as yes or no. */
        out = ctl_ok("get", "fair-share", NULL);
        ck_assert_str_eq(out, "no\n");
        free(out);
        free(ctl_ok("set", "fair-share", "yes", NULL));
        out = ctl_ok("get", "fair-share", NULL);
        ck_assert_str_eq(out, "yes\n");
        free(out);
        out = ctl_ok("--json", "get", "fair-share", NULL);
        ck_assert_msg(strstr(out, "\"fair-share\":true"), "%s", out);
        free(out);
        ctl(&r, NULL, "set", "fair-share", "1", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_msg(strncmp(r.err,
                              "slowctl: set: the value of fair-share must be yes or no, not "
                              "\"1\"\n",
                              65) == 0,
                      "%s", r.err);
        run_free(&r);
        ctl(&r, NULL, "get", "no-such-setting", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: get: no setting \"no-such-setting\"\n");
        run_free(&r);

        /* What get says, set takes: a time as a span, a limit that is off as none. */
        free(ctl_ok("set", "stop-timeout", "2m", "max-job-cpu-time", "1h", "max-queued-per-user",
                    "none", "min-free-space", "off", NULL));
        out = ctl_ok("--json", "get", NULL);
        ck_assert_msg(strstr(out, "\"stop-timeout\":120") &&
                          strstr(out, "\"max-job-cpu-time\":3600,") &&
                          strstr(out, "\"max-queued-per-user\":0,") &&
                          strstr(out, "\"min-free-space\":0,"),
                      "%s", out);
        free(out);
        out = ctl_ok("get", "stop-timeout", NULL);
        ck_assert_str_eq(out, "2m00s\n");
        free(out);
        ctl(&r, NULL, "set", "max-job-cpu-time", "1.5s", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "max-job-cpu-time must be whole seconds or a span"));
        run_free(&r);
        ctl(&r, NULL, "set", "kill-grace", "5x", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "kill-grace must be seconds or a span"));
        run_free(&r);
}
END_TEST

START_TEST(json_prints_the_daemons_results)
{
        int64_t id = submit("--wait", "--", "true", NULL);
        json_object *o;
        char *out;

        out = ctl_ok("--json", "status", NULL);
        o = json_tokener_parse(out);
        ck_assert_ptr_nonnull(o);
        ck_assert_int_ge(int_member(o, "threads"), 1);
        ck_assert_ptr_nonnull(json_object_object_get(o, "queued"));
        json_object_put(o);
        free(out);
        out = ctl_ok("--json", "wait", idstr(id), NULL);
        o = json_tokener_parse(out);
        ck_assert_ptr_nonnull(o);
        ck_assert_str_eq(str_member(o, "outcome"), "succeeded");
        json_object_put(o);
        free(out);
        out = ctl_ok("--json", "submit", "--", "true", NULL);
        o = json_tokener_parse(out);
        ck_assert_int_gt(int_member(o, "id"), id);
        json_object_put(o);
        free(out);
}
END_TEST

START_TEST(rq_prints_the_kernels_layout)
{
        int64_t id = submit("--name", "sleeper", "--", "sleep 30", NULL);
        char *out, *row;

        wait_running(id);
        out = ctl_ok("rq", NULL);
        ck_assert_int_eq(strncmp(out,
                                 "THR PID   ITEM ADDR        FL MARK  DESC\n"
                                 "=== ===== ================ == ===== ==========\n",
                                 88),
                         0);
        row = strstr(out, ": sleeper");
        ck_assert_ptr_nonnull(row);
        free(out);
        free(ctl_ok("cancel", idstr(id), NULL));
        out = ctl_ok("stats", NULL);
        ck_assert_ptr_nonnull(strstr(out, "threads "));
        ck_assert_ptr_nonnull(strstr(out, "queued_very_slow "));
        ck_assert_ptr_nonnull(strstr(out, "\nwaiting_for_space  0\n"));
        ck_assert_ptr_nonnull(strstr(out, "\nwaiting_for_turn   0\n"));
        free(out);
        out = ctl_ok("top", NULL); /* not a terminal: once */
        ck_assert_ptr_nonnull(strstr(out, "THR PID"));
        ck_assert_ptr_nonnull(strstr(out, "  waiting for space 0\n"));
        ck_assert_ptr_nonnull(strstr(out, "\nID  OWNER  QUEUE  ELAPSED  COMMAND\n\n")); /* none */
        free(out);
}
END_TEST

START_TEST(top_shows_the_runs_in_progress_beside_the_threads)
{
        int64_t run = submit("--", "sleep 30", NULL), queued, others[3];
        char *out, want[128], *line;

        wait_running(run);
        for (int i = 0; i < 3; i++) { /* four threads: none left for the queued one */
                others[i] = submit("--", "sleep 31", NULL);
                wait_running(others[i]);
        }
        queued = submit("--", "sleep 32", NULL);
        out = ctl_ok("top", NULL);
        /* The runs, oldest first (with their owner, queue and time so far), then the queue. */
        line = strstr(out, "\nID  OWNER  QUEUE    ELAPSED  COMMAND\n");
        ck_assert_msg(line, "%s", out);
        snprintf(want, sizeof(want), "\n%2lld  %-5s  default", (long long)run, getpwuid(getuid())->pw_name);
        ck_assert_msg(strstr(line, want) && strstr(strstr(line, want), "  sleep 30\n"), "%s", out);
        ck_assert_msg(strstr(line, "  sleep 31\n") && !strstr(line, "sleep 32\n  "), "%s", out);
        ck_assert_msg(strstr(strstr(out, "THR PID"), ": sleep 31"), "%s", out);
        free(out);
        free(ctl_ok("cancel", idstr(queued), idstr(run), NULL));
        free(ctl_ok("cancel", idstr(others[0]), idstr(others[1]), idstr(others[2]), NULL));
}
END_TEST

START_TEST(usage_errors_exit_2_and_help_exits_0)
{
        struct run r;

        ctl(&r, NULL, "frobnicate", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "unknown command \"frobnicate\""));
        run_free(&r);
        ctl(&r, NULL, NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "wait", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_ptr_nonnull(strstr(r.err, "Usage: slowctl wait ID..."));
        run_free(&r);
        ctl(&r, NULL, "wait", "12x", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "submit", "--bogus", "--", "true", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "submit", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "enqueue", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "set", "max-threads", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "--help", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_ptr_nonnull(strstr(r.out, "Usage: slowctl"));
        ck_assert_ptr_nonnull(strstr(r.out, "rq"));
        run_free(&r);
        ctl(&r, NULL, "log", "--help", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_ptr_nonnull(strstr(r.out, "Usage: slowctl log ID [-f]"));
        ck_assert_ptr_nonnull(strstr(r.out, "--follow"));
        run_free(&r);
}
END_TEST

/* help is --help's usage, and help COMMAND the command's --help; an unknown one is an error. */
START_TEST(help_prints_the_usage_or_a_commands)
{
        static const char *const commands[] = {"submit", "wait", "log", "help"};
        struct run r, with_flag;

        ctl(&r, NULL, "help", NULL);
        ctl(&with_flag, NULL, "--help", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.out, with_flag.out);
        ck_assert_ptr_nonnull(strstr(r.out, "Usage: slowctl"));
        ck_assert_ptr_nonnull(strstr(r.out, "  help "));
        ck_assert_str_eq(r.err, "");
        run_free(&r);
        run_free(&with_flag);
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
                char want[64];

                ctl(&r, NULL, "help", commands[i], NULL);
                ctl(&with_flag, NULL, commands[i], "--help", NULL);
                ck_assert_int_eq(r.status, 0);
                ck_assert_int_eq(with_flag.status, 0);
                ck_assert_str_eq(r.out, with_flag.out);
                snprintf(want, sizeof(want), "Usage: slowctl %s", commands[i]);
                ck_assert_ptr_nonnull(strstr(r.out, want));
                run_free(&r);
                run_free(&with_flag);
        }
        ctl(&r, NULL, "help", "wait", NULL);
        ck_assert_ptr_nonnull(strstr(r.out, "--all"));
        ck_assert_ptr_nonnull(strstr(r.out, "--queue Q"));
        run_free(&r);
        ctl(&r, NULL, "help", "frobnicate", NULL);
        ck_assert_int_eq(r.status, 2);
        ck_assert_str_eq(r.out, "");
        ck_assert_ptr_nonnull(strstr(r.err, "no command \"frobnicate\""));
        run_free(&r);
        ctl(&r, NULL, "help", "log", "wait", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        /* help needs no daemon. */
        ctl(&r, NULL, "--socket", "/nonexistent/sock", "help", "log", NULL);
        ck_assert_int_eq(r.status, 0);
        run_free(&r);
}
END_TEST

START_TEST(missing_daemon_exits_69_and_names_the_path)
{
        char path[PATH_MAX], want[PATH_MAX + 128];
        struct run r;

        snprintf(path, sizeof(path), "%s/no-such.sock", d.dir);
        snprintf(want, sizeof(want),
                 "slowctl: cannot connect to %s: No such file or directory "
                 "(is slowworkd running?)\n",
                 path);
        ctl(&r, NULL, "--socket", path, "ping", NULL);
        ck_assert_int_eq(r.status, 69);
        ck_assert_str_eq(r.err, want);
        ck_assert_str_eq(r.out, "");
        run_free(&r);
        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", path, 1), 0);
        ctl(&r, NULL, "list", NULL);
        ck_assert_int_eq(r.status, 69);
        ck_assert_str_eq(r.err, want);
        run_free(&r);
}
END_TEST

START_TEST(ping_and_version)
{
        char want[PATH_MAX + 64], *out;

        out = ctl_ok("ping", NULL);
        snprintf(want, sizeof(want), "pong from %s (user instance)\n", d.sock);
        ck_assert_str_eq(out, want);
        free(out);
        out = ctl_ok("version", NULL);
        ck_assert_str_eq(out, "slowctl " PACKAGE_VERSION "\nslowworkd " PACKAGE_VERSION
                              " (protocol 1)\n");
        free(out);
        out = ctl_ok("--json", "ping", NULL);
        ck_assert_str_eq(out, "{\"pong\":true,\"instance\":\"user\"}\n");
        free(out);
}
END_TEST

START_TEST(list_shows_the_first_thousand_jobs_and_says_how_many_more)
{
        size_t len = 1003 * strlen("sleep 60\n") + 1;
        char *input = malloc(len), *out, *last;
        struct run r;

        ck_assert_ptr_nonnull(input);
        input[0] = '\0';
        for (int i = 0; i < 1003; i++)
                strcat(input, "sleep 60\n");
        ctl(&r, input, "submit", "--delay", "60", "--stdin", NULL);
        ck_assert_int_eq(r.status, 0);
        run_free(&r);
        free(input);
        out = ctl_ok("list", NULL);
        last = strrchr(out, '\n');
        *last = '\0';
        last = strrchr(out, '\n');
        ck_assert_str_eq(last + 1, "... 3 more live jobs");
        ck_assert_ptr_nonnull(strstr(out, "\n1000  slow"));
        ck_assert_ptr_null(strstr(out, "\n1001  slow"));
        free(out);
}
END_TEST

START_TEST(queue_commands_add_list_use_pause_and_remove_queues)
{
        char *out, *rows[12];
        struct run r;
        int64_t id;
        int n;

        free(ctl_ok("queue", "add", "gpu", "--max-threads", "1", "--idle-timeout", "1m", NULL));
        out = ctl_ok("get", "--queue", "gpu", "idle-timeout", NULL);
        ck_assert_str_eq(out, "1m00s\n");
        free(out);
        out = ctl_ok("queue", "ls", NULL);
        n = rows_of(out, rows, 12);
        ck_assert_int_eq(n, 3);
        ck_assert_int_eq(strncmp(rows[0], "QUEUE", 5), 0);
        ck_assert_int_eq(strncmp(rows[1], "default", 7), 0);
        ck_assert_msg(strncmp(rows[2], "gpu", 3) == 0 && strstr(rows[2], " 1 "), "%s", rows[2]);
        free(out);
        out = ctl_ok("get", "--queue", "gpu", "max-threads", NULL);
        ck_assert_str_eq(out, "1\n");
        free(out);
        free(ctl_ok("set", "--queue", "gpu", "max-threads", "2", NULL));
        out = ctl_ok("get", "--queue", "gpu", "max-threads", NULL);
        ck_assert_str_eq(out, "2\n");
        free(out);
        out = ctl_ok("pause", "--queue", "gpu", NULL);
        ck_assert_str_eq(out, "queue gpu paused; 0 jobs running\n");
        free(out);
        id = submit("--queue", "gpu", "--", "true", NULL);
        out = ctl_ok("list", NULL);
        n = rows_of(out, rows, 12);
        ck_assert_int_eq(n, 2);
        ck_assert_int_eq(strncmp(rows[0], "ID  CLASS  QUEUE", 16), 0);
        ck_assert_msg(strstr(rows[1], "slow   gpu    held"), "%s", rows[1]); /* by the pause */
        free(out);
        ctl(&r, NULL, "queue", "rm", "gpu", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "queue gpu holds 1 job"));
        run_free(&r);
        free(ctl_ok("resume", "--queue", "gpu", NULL));
        free(ctl_ok("wait", idstr(id), NULL));
        ctl(&r, NULL, "submit", "--queue", "nope", "--", "true", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_ptr_nonnull(strstr(r.err, "no queue \"nope\""));
        run_free(&r);
        ctl(&r, NULL, "queue", "frob", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
        ctl(&r, NULL, "queue", "add", "x", "--max-threads", "lots", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
}
END_TEST

static void write_text(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
}

/* Alone on its SQLite database the daemon lists itself, live; forget names no other node. */
START_TEST(nodes_shows_the_state_and_forget_refuses_a_live_or_unknown_node)
{
        char host[256] = "", *out, *self;
        struct run r;

        ck_assert_int_eq(gethostname(host, sizeof(host) - 1), 0);
        out = ctl_ok("nodes", NULL);
        ck_assert_msg(strncmp(out, "NODE", 4) == 0 && strstr(out, " STATE ") &&
                          strstr(out, " live "),
                      "slowctl nodes printed %s", out);
        free(out);
        ctl(&r, NULL, "nodes", "forget", "elsewhere", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.err, "slowctl: nodes: no node is named elsewhere\n");
        run_free(&r);
        self = host;
        ctl(&r, NULL, "nodes", "forget", self, NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(strstr(r.err, " is live"), "stderr \"%s\"", r.err);
        run_free(&r);
        ctl(&r, NULL, "nodes", "drop", "x", NULL);
        ck_assert_int_eq(r.status, 2);
        run_free(&r);
}
END_TEST

START_TEST(reload_says_it_reloaded_or_fails_with_the_files_error)
{
        char conf[PATH_MAX], want[PATH_MAX + 160], *out;
        struct daemon e;
        struct run r;

        snprintf(conf, sizeof(conf), "%s/slowworkd.conf", d.dir);
        write_text(conf, "min-threads = 1\n");
        daemon_start(&e, "--config", conf, NULL);
        write_text(conf, "min-threads = 3\n");
        out = ctl_ok("--socket", e.sock, "reload", NULL);
        ck_assert_str_eq(out, "slowworkd reloaded its configuration\n");
        free(out);
        out = ctl_ok("--socket", e.sock, "get", "min-threads", NULL);
        ck_assert_str_eq(out, "3\n");
        free(out);

        write_text(conf, "min-threads = many\n");
        ctl(&r, NULL, "--socket", e.sock, "reload", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_str_eq(r.out, "");
        snprintf(want, sizeof(want),
                 "slowctl: reload: cannot reload the configuration, keeping the one in use: "
                 "%s:1: ",
                 conf);
        ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "stderr \"%s\"", r.err);
        run_free(&r);
        out = ctl_ok("--socket", e.sock, "get", "min-threads", NULL);
        ck_assert_str_eq(out, "3\n");
        free(out);
        daemon_stop(&e);
        unlink(conf);
}
END_TEST

/* A socket at path that is there and refuses connections (bound, not listening). */
static int refusing_socket(const char *path)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

        ck_assert_int_ge(fd, 0);
        ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
        strcpy(sa.sun_path, path);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        return fd;
}

static void expect_pong(const char *from)
{
        char want[PATH_MAX + 64], *out = ctl_ok("ping", NULL);

        snprintf(want, sizeof(want), "pong from %s\n", from);
        ck_assert_str_eq(out, want);
        free(out);
}

/* Root only: a /run of the test's own, a tmpfs that only this process's mount namespace sees (a
 * suite's case is a process of its own; under CK_FORK=no, umount2("/run") at its end). What the
 * case makes at the system instance's path is the only socket there: never the socket of a
 * system instance that runs on the machine. */
static void own_run(void)
{
        ck_assert_msg(unshare(CLONE_NEWNS) == 0 &&
                          mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0 &&
                          mount("tmpfs", "/run", "tmpfs", 0, "size=1m,mode=0755") == 0,
                      "cannot mount a /run of the test's own: %s", strerror(errno));
}

/* Root only: the system instance's socket is /run/slowwork/slowworkd.sock, in a tmpfs on /run
 * that only this test's mount namespace sees. */
START_TEST(without_a_user_instance_slowctl_falls_back_to_the_systems)
{
        char xdg[PATH_MAX], user_dir[PATH_MAX + 16], user_sock[PATH_MAX + 48], want[PATH_MAX + 128];
        struct daemon sys;
        struct run r;
        int refusing;

        if (geteuid() != 0) {
                printf("skipped: only root can mount a /run of its own\n");
                return;
        }
        daemon_start(&sys, "--system", NULL);
        own_run();
        ck_assert_int_eq(mkdir("/run/slowwork", 0755), 0);
        ck_assert_int_eq(symlink(sys.sock, "/run/slowwork/slowworkd.sock"), 0);
        snprintf(xdg, sizeof(xdg), "%s/xdg", d.dir);
        snprintf(user_dir, sizeof(user_dir), "%s/slowwork", xdg);
        snprintf(user_sock, sizeof(user_sock), "%s/slowworkd.sock", user_dir);
        ck_assert_int_eq(unsetenv("SLOWWORK_SOCKET"), 0);
        ck_assert_int_eq(setenv("XDG_RUNTIME_DIR", xdg, 1), 0);

        /* No user socket, then one that refuses: the system instance answers. */
        expect_pong("/run/slowwork/slowworkd.sock (system instance)");
        ck_assert_int_eq(mkdir(xdg, 0700), 0);
        ck_assert_int_eq(mkdir(user_dir, 0700), 0);
        refusing = refusing_socket(user_sock);
        expect_pong("/run/slowwork/slowworkd.sock (system instance)");
        /* What changes something says so, on stderr; what only looks does not. */
        ctl(&r, NULL, "pause", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.err, "slowctl: no user instance of slowworkd answered: pause goes to the "
                                "system instance on /run/slowwork/slowworkd.sock\n");
        run_free(&r);
        ctl(&r, NULL, "status", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.err, "");
        run_free(&r);
        /* Of queue's, ls only looks; add and rm say what they do. */
        ctl(&r, NULL, "queue", "ls", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.err, "");
        run_free(&r);
        ctl(&r, NULL, "queue", "add", "fallen", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.err, "slowctl: no user instance of slowworkd answered: queue add goes "
                                "to the system instance on /run/slowwork/slowworkd.sock\n");
        run_free(&r);
        ctl(&r, NULL, "queue", "rm", "fallen", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.err, "slowctl: no user instance of slowworkd answered: queue rm goes "
                                "to the system instance on /run/slowwork/slowworkd.sock\n");
        run_free(&r);
        ctl(&r, NULL, "resume", NULL);
        ck_assert_int_eq(r.status, 0);
        run_free(&r);

        /* A socket named by flag or environment is the one, answering or not. */
        snprintf(want, sizeof(want),
                 "slowctl: cannot connect to %s: Connection refused (is slowworkd running?)\n",
                 user_sock);
        ctl(&r, NULL, "--socket", user_sock, "ping", NULL);
        ck_assert_int_eq(r.status, 69);
        ck_assert_str_eq(r.err, want);
        run_free(&r);
        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", user_sock, 1), 0);
        ctl(&r, NULL, "ping", NULL);
        ck_assert_int_eq(r.status, 69);
        ck_assert_str_eq(r.err, want);
        run_free(&r);
        ck_assert_int_eq(unsetenv("SLOWWORK_SOCKET"), 0);

        /* A user instance that answers is the one. */
        close(refusing);
        ck_assert_int_eq(unlink(user_sock), 0);
        ck_assert_int_eq(symlink(d.sock, user_sock), 0);
        snprintf(want, sizeof(want), "%s (user instance)", user_sock);
        expect_pong(want);
        ctl(&r, NULL, "pause", NULL);
        ck_assert_int_eq(r.status, 0);
        ck_assert_str_eq(r.err, "");
        run_free(&r);
        free(ctl_ok("resume", NULL));

        unlink(user_sock);
        rmdir(user_dir);
        rmdir(xdg);
        ck_assert_int_eq(umount2("/run", MNT_DETACH), 0);
        ck_assert_int_eq(unsetenv("XDG_RUNTIME_DIR"), 0);
        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", d.sock, 1), 0);
        daemon_stop(&sys);
}
END_TEST

START_TEST(library_call_gives_results_and_daemon_errors)
{
        struct sw_client_error err = {0};
        json_object *result = NULL, *params;
        struct sw_client *c;

        ck_assert_int_eq(sw_client_connect(d.sock, &c), 0);
        ck_assert_str_eq(sw_client_socket(c), d.sock);
        ck_assert_int_eq(sw_client_call(c, "ping", NULL, &result, &err), 0);
        ck_assert(json_object_get_boolean(json_object_object_get(result, "pong")));
        json_object_put(result);
        params = json_object_new_object();
        json_object_object_add(params, "id", json_object_new_int64(999));
        ck_assert_int_eq(sw_client_call(c, "wait", params, &result, &err), 1);
        ck_assert_int_eq(err.code, -32001);
        ck_assert_str_eq(err.name, "ENOENT");
        ck_assert_str_eq(err.message, "no job 999");
        ck_assert_int_eq(sw_client_call(c, "no.such.method", NULL, NULL, &err), 1);
        ck_assert_int_eq(err.code, -32601);
        ck_assert_int_eq(sw_client_call(c, "ping", NULL, NULL, NULL), 0);
        ck_assert_ptr_null(sw_client_free(c));
        ck_assert_ptr_null(sw_client_free(NULL));
}
END_TEST

START_TEST(library_pipelined_requests_are_answered_in_order)
{
        struct sw_client_error err;
        int64_t sent[100], id;
        json_object *result;
        struct sw_client *c;
        int i;

        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        for (i = 0; i < 100; i++) {
                json_object *p = json_object_new_object();

                if (i % 10 == 9) {
                        json_object_object_add(p, "id", json_object_new_int64(424242));
                        ck_assert_int_eq(sw_client_send(c, "wait", p, &sent[i]), 0);
                } else if (i % 2) {
                        json_object_put(p);
                        ck_assert_int_eq(sw_client_send(c, "ping", NULL, &sent[i]), 0);
                } else {
                        json_object_object_add(p, "command", json_object_new_string("true"));
                        ck_assert_int_eq(sw_client_send(c, "submit", p, &sent[i]), 0);
                }
                ck_assert_int_gt(sent[i], i ? sent[i - 1] : 0);
        }
        ck_assert_uint_eq(sw_client_outstanding(c), 100);
        ck_assert_int_eq(sw_client_call(c, "ping", NULL, NULL, NULL), -EBUSY);
        for (i = 0; i < 100; i++) {
                if (i % 10 == 9) {
                        ck_assert_int_eq(sw_client_receive(c, &result, &err, &id), 1);
                        ck_assert_int_eq(id, sent[i]);
                        ck_assert_str_eq(err.name, "ENOENT");
                        continue;
                }
                ck_assert_int_eq(sw_client_receive(c, &result, &err, &id), 0);
                ck_assert_int_eq(id, sent[i]);
                ck_assert_ptr_nonnull(json_object_object_get(result, i % 2 ? "pong" : "state"));
                json_object_put(result);
        }
        ck_assert_uint_eq(sw_client_outstanding(c), 0);
        ck_assert_int_eq(sw_client_call(c, "ping", NULL, NULL, NULL), 0);
        sw_client_free(c);
}
END_TEST

/* How many live items list shows. */
static size_t live_items(struct sw_client *c)
{
        json_object *result;
        size_t n;

        ck_assert_int_eq(sw_client_call(c, "list", NULL, &result, NULL), 0);
        n = json_object_array_length(json_object_object_get(result, "items"));
        json_object_put(result);
        return n;
}

START_TEST(library_queued_requests_go_out_at_a_flush_or_a_receive)
{
        struct sw_client_error err;
        size_t before;
        struct sw_client *c, *other;
        int64_t sent[3000], id;
        json_object *result;
        char name[32];
        int i;

        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        ck_assert_int_eq(sw_client_connect(NULL, &other), 0);
        /* Queued: the daemon has not seen it, until the flush. */
        before = live_items(other);
        result = json_object_new_object();
        json_object_object_add(result, "command", json_object_new_string("true"));
        json_object_object_add(result, "delay", json_object_new_int(3600));
        ck_assert_int_eq(sw_client_queue(c, "submit", result, &sent[0]), 0);
        /* Not sent: an absence, which no event shows (the daemon has nothing to answer), so a
         * short while of the clock. */
        usleep(100 * 1000);
        ck_assert_uint_eq(live_items(other), before);
        ck_assert_int_eq(sw_client_flush(c), 0);
        ck_assert_int_eq(sw_client_receive(c, &result, &err, &id), 0);
        ck_assert_int_eq(id, sent[0]);
        json_object_put(result);
        ck_assert_uint_eq(live_items(other), before + 1);
        /* More than the client keeps (64 KiB) and more than the daemon reads ahead: all answered,
         * in order, the rest written by the receives. */
        for (i = 0; i < 3000; i++) {
                json_object *p = json_object_new_object();

                snprintf(name, sizeof(name), "queued-%d", i);
                json_object_object_add(p, "command", json_object_new_string("true"));
                json_object_object_add(p, "name", json_object_new_string(name));
                json_object_object_add(p, "delay", json_object_new_int(3600));
                ck_assert_int_eq(sw_client_queue(c, "submit", p, &sent[i]), 0);
        }
        for (i = 0; i < 3000; i++) {
                ck_assert_int_eq(sw_client_receive(c, &result, &err, &id), 0);
                ck_assert_int_eq(id, sent[i]);
                json_object_put(result);
        }
        ck_assert_uint_eq(sw_client_outstanding(c), 0);
        sw_client_free(c);
        sw_client_free(other);
}
END_TEST

START_TEST(library_receive_gives_notifications_with_id_minus_1)
{
        struct sw_client_error err;
        json_object *result;
        struct sw_client *c;
        int64_t job, id;
        char *outcome = NULL;
        int i;

        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        ck_assert_int_eq(sw_client_call(c, "subscribe", NULL, &result, &err), 0);
        json_object_put(result);
        job = submit("--", "exit 4", NULL);
        for (i = 0; i < 10 && !outcome; i++) {
                ck_assert_int_eq(sw_client_receive(c, &result, &err, &id), 0);
                ck_assert_int_eq(id, -1);
                ck_assert_int_eq(int_member(result, "id"), job);
                if (json_object_object_get(result, "outcome"))
                        outcome = strdup(str_member(result, "outcome"));
                json_object_put(result);
        }
        ck_assert_str_eq(outcome, "failed");
        free(outcome);
        ck_assert_uint_eq(sw_client_outstanding(c), 0);
        sw_client_free(c);
}
END_TEST

START_TEST(library_connect_resolves_the_socket_path)
{
        struct sw_client *c;

        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", "/nonexistent/a.sock", 1), 0);
        ck_assert_int_eq(sw_client_connect(NULL, &c), -ENOENT);
        ck_assert_str_eq(sw_client_socket(c), "/nonexistent/a.sock");
        ck_assert_int_eq(sw_client_call(c, "ping", NULL, NULL, NULL), -ENOTCONN);
        sw_client_free(c);
        ck_assert_int_eq(unsetenv("SLOWWORK_SOCKET"), 0);
        ck_assert_int_eq(sw_client_connect(d.sock, &c), 0);
        ck_assert_str_eq(sw_client_socket(c), d.sock);
        sw_client_free(c);

        /* The rest comes to the system instance's path, which a system instance running on the
         * machine would answer: the test's own /run holds what is there. */
        if (geteuid() != 0) {
                fprintf(stderr, "skipped: library_connect_resolves_the_socket_path: the system "
                                "instance's path, only root can mount a /run of its own\n");
                ck_assert_int_eq(setenv("SLOWWORK_SOCKET", d.sock, 1), 0);
                return;
        }
        own_run();
        /* Nothing there: the user instance's path (and its error), else the system's. */
        ck_assert_int_eq(setenv("XDG_RUNTIME_DIR", "/nonexistent/run", 1), 0);
        ck_assert_int_eq(sw_client_connect(NULL, &c), -ENOENT);
        ck_assert_str_eq(sw_client_socket(c), "/nonexistent/run/slowwork/slowworkd.sock");
        ck_assert(!sw_client_fell_back(c));
        sw_client_free(c);
        ck_assert_int_eq(unsetenv("XDG_RUNTIME_DIR"), 0);
        ck_assert_int_eq(sw_client_connect(NULL, &c), -ENOENT);
        ck_assert_str_eq(sw_client_socket(c), "/run/slowwork/slowworkd.sock");
        sw_client_free(c);
        /* A daemon there (the test's, root's): the user instance's path falls back to it. */
        ck_assert_int_eq(mkdir("/run/slowwork", 0755), 0);
        ck_assert_int_eq(symlink(d.sock, "/run/slowwork/slowworkd.sock"), 0);
        ck_assert_int_eq(setenv("XDG_RUNTIME_DIR", "/nonexistent/run", 1), 0);
        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        ck_assert_str_eq(sw_client_socket(c), "/run/slowwork/slowworkd.sock");
        ck_assert(sw_client_fell_back(c));
        ck_assert_int_eq(sw_client_call(c, "ping", NULL, NULL, NULL), 0);
        sw_client_free(c);
        ck_assert_int_eq(unsetenv("XDG_RUNTIME_DIR"), 0);
        ck_assert_int_eq(sw_client_connect(NULL, &c), 0);
        ck_assert_str_eq(sw_client_socket(c), "/run/slowwork/slowworkd.sock");
        ck_assert(!sw_client_fell_back(c));
        sw_client_free(c);
        ck_assert_int_eq(umount2("/run", MNT_DETACH), 0);
        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", d.sock, 1), 0);
}
END_TEST

/* A job's name and output that try the terminal of whoever looks: the window's title (OSC 0), the
 * screen cleared (CSI 2 J), the clipboard written (OSC 52), a C1 control (U+009B, CSI in one) and
 * DEL; and as slowctl shows them (slowctl(1), CONTROL CHARACTERS). */
#define HOSTILE_NAME         "x\033]0;PWNED\007\033[2J\302\233\177"
#define HOSTILE_NAME_SHOWN   "x\\e]0;PWNED\\a\\e[2J\\u009b\\x7f"
#define HOSTILE_OUTPUT       "\033]52;c;SGVsbG8=\007\033[2J\302\233\177\tend\n"
#define HOSTILE_OUTPUT_SHOWN "\\e]52;c;SGVsbG8=\\a\\e[2J\\u009b\\x7f\tend\n"
/* The end of the job's command: a comment with the same bytes. */
#define HOSTILE_COMMENT_SHOWN "# \\e]0;CMD\\a\\u009b\\x7f"

/* No byte of the daemon's data that a terminal acts on: ESC, BEL, DEL, a C1 control. top's own
 * "clear the screen" (ESC [ H ESC [ 2 J before each screen) is left out first. */
static void assert_no_controls(char *out, const char *what)
{
        static const char clear[] = "\033[H\033[2J";
        char *p;

        while ((p = strstr(out, clear)))
                memmove(p, p + strlen(clear), strlen(p + strlen(clear)) + 1);
        for (p = out; *p; p++) {
                unsigned char c = (unsigned char)*p;

                ck_assert_msg(
                    c != 0x1b && c != 0x07 && c != 0x7f &&
                        !(c == 0xc2 && (unsigned char)p[1] >= 0x80 && (unsigned char)p[1] <= 0x9f),
                    "%s wrote the control byte 0x%02x at %td: %s", what, c, p - out, out);
        }
}

START_TEST(human_output_shows_the_daemons_control_bytes_escaped_on_a_terminal)
{
        char *fifo = fifo_make(d.dir, "hold"), cmd[PATH_MAX + 160], *out;
        char *top_argv[] = {(char *)SLOWCTL, (char *)"top", NULL};
        static const struct {
                const char *command;
                bool with_id, shows_command;
        } views[] = {{"list", false, true}, {"status", true, true}, {"rq", false, false},
                     {"stats", false, false}};
        struct run r;
        int64_t id;

        snprintf(cmd, sizeof(cmd),
                 "printf '\\033]52;c;SGVsbG8=\\007\\033[2J\\302\\233\\177\\tend\\n'; cat %s "
                 "# \033]0;CMD\007\302\233\177",
                 fifo);
        id = submit("--name", HOSTILE_NAME, "--", cmd, NULL);
        wait_running(id);
        for (size_t i = 0; i < sizeof(views) / sizeof(views[0]); i++) {
                const char *what = views[i].command;

                out = ctl_pty("1", what, views[i].with_id ? idstr(id) : NULL, NULL);
                assert_no_controls(out, what);
                ck_assert_msg(strstr(out, HOSTILE_NAME_SHOWN), "%s: %s", what, out);
                ck_assert_msg(!views[i].shows_command || strstr(out, HOSTILE_COMMENT_SHOWN),
                              "%s: %s", what, out);
                free(out);
        }
        /* top, live on a terminal: quit once its first screen's run queue shows the job. */
        out = pty_run("1", HOSTILE_NAME_SHOWN, top_argv);
        ck_assert_msg(strstr(out, HOSTILE_COMMENT_SHOWN), "top: %s", out);
        assert_no_controls(out, "top");
        free(out);
        /* --json stays JSON: json-c writes the controls as \u escapes. */
        out = ctl_ok("--json", "status", idstr(id), NULL);
        ck_assert_msg(strstr(out, "\"x\\u001b]0;PWNED\\u0007\\u001b[2J"), "%s", out);
        ck_assert_ptr_null(strchr(out, '\033'));
        free(out);
        /* The daemon's error messages (which quote what they were given) too, on stderr. */
        ctl(&r, NULL, "stats", "--queue", "q\033]0;X\007", NULL);
        ck_assert_int_eq(r.status, 1);
        ck_assert_msg(!strchr(r.err, '\033') && !strchr(r.err, '\007'), "%s", r.err);
        run_free(&r);

        fifo_release(fifo);
        free(ctl_ok("wait", idstr(id), NULL));
        out = ctl_pty("1", "history", NULL);
        assert_no_controls(out, "history");
        ck_assert_msg(strstr(out, HOSTILE_COMMENT_SHOWN), "history: %s", out);
        free(out);
        free(fifo);
}
END_TEST

/* log: escaped on a terminal (newlines and tabs kept), as it is with --raw or into a pipe. */
START_TEST(log_escapes_controls_on_a_terminal_unless_raw)
{
        int64_t id =
            submit("--wait", "--",
                   "printf '\\033]52;c;SGVsbG8=\\007\\033[2J\\302\\233\\177\\tend\\n'", NULL);
        char *out;

        out = ctl_pty("1", "log", idstr(id), NULL);
        ck_assert_str_eq(out, HOSTILE_OUTPUT_SHOWN);
        free(out);
        out = ctl_pty("1", "log", "-f", idstr(id), NULL);
        ck_assert_str_eq(out, HOSTILE_OUTPUT_SHOWN);
        free(out);
        out = ctl_pty("1", "log", "--lines", "1", idstr(id), NULL);
        ck_assert_str_eq(out, HOSTILE_OUTPUT_SHOWN);
        free(out);
        out = ctl_pty("1", "log", "--raw", idstr(id), NULL);
        ck_assert_str_eq(out, HOSTILE_OUTPUT);
        free(out);
        out = ctl_ok("log", idstr(id), NULL);
        ck_assert_str_eq(out, HOSTILE_OUTPUT);
        free(out);
        /* A carriage return is shown too (it could hide what a line said before it). */
        id = submit("--wait", "--", "printf 'rm -rf /\\rls      \\n'", NULL);
        out = ctl_pty("1", "log", idstr(id), NULL);
        ck_assert_str_eq(out, "rm -rf /\\rls      \n");
        free(out);
}
END_TEST

/* A server of the test's own: bound at path as root, listening as uid (the credentials a client
 * reads with SO_PEERCRED are the listener's), it takes n connections one after the other and
 * reads each to its end. Returns once it listens; *ret_report gives the bytes it read, in all,
 * as text once it is done. */
static pid_t fake_server(const char *path, uid_t uid, int n, int *ret_report)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        int ready[2], report[2];
        char c;
        pid_t pid;

        ck_assert(pipe2(ready, O_CLOEXEC) == 0 && pipe2(report, O_CLOEXEC) == 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
                long long total = 0;
                char buf[4096];

                memcpy(sa.sun_path, path, strlen(path) + 1);
                if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
                    setgroups(0, NULL) < 0 || setresgid(uid, uid, uid) < 0 ||
                    setresuid(uid, uid, uid) < 0 || listen(fd, 4) < 0 ||
                    write(ready[1], "r", 1) != 1)
                        _exit(2);
                for (int i = 0; i < n; i++) {
                        int conn = accept(fd, NULL, NULL);
                        ssize_t k;

                        if (conn < 0)
                                _exit(3);
                        while ((k = read(conn, buf, sizeof(buf))) > 0)
                                total += k;
                        close(conn);
                }
                dprintf(report[1], "%lld", total);
                _exit(0);
        }
        close(ready[1]);
        close(report[1]);
        ck_assert_msg(read(ready[0], &c, 1) == 1, "the fake server did not start");
        close(ready[0]);
        *ret_report = report[0];
        return pid;
}

/* Root with a user's XDG_RUNTIME_DIR (su without -): the user's socket is not root's daemon.
 * slowctl and the library refuse it before they send anything. */
START_TEST(a_socket_served_by_another_user_gets_nothing_and_is_refused)
{
        char dir[128], path[PATH_MAX], want[PATH_MAX + 64], got[32] = "";
        struct sw_client *c;
        struct run r;
        int report, status;
        pid_t server;

        if (geteuid() != 0) {
                fprintf(stderr, "skipped: a server of another uid takes root\n");
                return;
        }
        snprintf(dir, sizeof(dir), "%s/xdg", d.dir);
        ck_assert_int_eq(mkdir(dir, 0700), 0);
        snprintf(path, sizeof(path), "%s/slowwork", dir);
        ck_assert_int_eq(mkdir(path, 0700), 0);
        snprintf(path, sizeof(path), "%s/slowwork/slowworkd.sock", dir);
        server = fake_server(path, 65534, 2, &report);
        ck_assert_int_eq(unsetenv("SLOWWORK_SOCKET"), 0);
        ck_assert_int_eq(setenv("XDG_RUNTIME_DIR", dir, 1), 0);
        ctl(&r, NULL, "submit", "--", "true", NULL);
        snprintf(want, sizeof(want), "slowctl: %s is served by uid 65534, not by you or root\n",
                 path);
        ck_assert_int_eq(r.status, 69);
        ck_assert_str_eq(r.err, want);
        ck_assert_str_eq(r.out, "");
        run_free(&r);
        ck_assert_int_eq(sw_client_connect(NULL, &c), -EPERM);
        ck_assert_int_eq(sw_client_server_uid(c), 65534);
        ck_assert_str_eq(sw_client_socket(c), path);
        ck_assert_int_eq(sw_client_call(c, "ping", NULL, NULL, NULL), -ENOTCONN);
        sw_client_free(c);
        /* Both connections ended with nothing read. */
        ck_assert_int_gt(read(report, got, sizeof(got) - 1), 0);
        close(report);
        ck_assert_int_eq(waitpid(server, &status, 0), server);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "server: 0x%x", status);
        ck_assert_str_eq(got, "0");
        ck_assert_int_eq(setenv("SLOWWORK_SOCKET", d.sock, 1), 0);
}
END_TEST

/* A daemon run by root (the system instance) answers users; the user's own is covered by every
 * other case. */
START_TEST(a_daemon_run_by_root_is_talked_to_by_a_user)
{
        struct daemon sys;
        struct run r;

        if (geteuid() != 0) {
                fprintf(stderr, "skipped: slowctl as another user takes root\n");
                return;
        }
        SKIP_UNLESS_USER_CAN_RUN(65534, SLOWCTL);
        daemon_start(&sys, "--system", NULL);
        ck_assert_int_eq(chmod(sys.dir, 0755), 0); /* mkdtemp's 0700: for the user to reach */
        ctl_uid = 65534;
        ctl(&r, NULL, "--socket", sys.sock, "ping", NULL);
        ctl_uid = 0;
        ck_assert_msg(r.status == 0, "status %d: %s", r.status, r.err);
        ck_assert_msg(strstr(r.out, "pong from"), "%s", r.out);
        run_free(&r);
        daemon_stop(&sys);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("slowctl");
        TCase *tc = tcase_create("slowctl");

        setenv("HOME_OF_TEST", "from-slowctl", 1);
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, submit_prints_an_id_and_wait_exits_with_the_jobs_code);
        tcase_add_test(tc, submit_wait_exits_with_the_jobs_code);
        tcase_add_test(tc, submit_limit_options_reach_the_job);
        tcase_add_test(tc, submit_flow_options_reach_the_job);
        tcase_add_test(tc, submit_cron_takes_at_forms_and_names);
        tcase_add_test(tc, submit_stashed_with_a_priority_then_edit_and_enqueue);
        tcase_add_test(tc, submit_on_end_runs_it_after_each_run_and_set_gives_the_daemons);
        tcase_add_test(tc, submit_delay_2m_reaches_the_daemon_as_120_seconds);
        tcase_add_test(tc, seconds_options_take_spans_and_delay_a_moment);
        tcase_add_test(tc, submit_plugin_runs_an_entry_point_with_its_arg);
        tcase_add_test(tc, one_argument_is_a_shell_command_several_are_argv);
        tcase_add_test(tc, submit_sends_the_current_directory_or_cwd);
        tcase_add_test(tc, submit_stdin_gives_an_id_per_line_in_order_and_runs_them_all);
        tcase_add_test(tc, submit_stdin_jobs_see_the_callers_environment);
        tcase_add_test(tc,
                       submit_stdin_sends_the_environment_with_each_job_to_a_daemon_without_env_set);
        tcase_add_test(tc, list_shows_aligned_columns_with_a_header);
        tcase_add_test(tc, log_prints_the_output_and_follows_a_running_job);
        tcase_add_test(tc, log_run_and_lines_pick_a_run_and_its_last_lines);
        tcase_add_test(tc, wait_outlives_a_restart_and_hears_of_jobs_that_ended_in_the_gap);
        tcase_add_test(tc, wait_all_of_a_job_cut_by_a_restart_ends_with_its_next_runs_code);
        tcase_add_test(tc, submit_wait_outlives_a_restart_without_submitting_again);
        tcase_add_test(tc, wait_without_a_daemon_coming_back_exits_69);
        tcase_add_test(tc, log_follow_outlives_a_restart_printing_each_line_once);
        tcase_add_test(tc, log_follow_goes_on_with_the_run_after_one_a_restart_cut);
        tcase_add_test(tc, reexec_keeps_the_run_that_wait_and_log_follow_see_to_its_end);
        tcase_add_test(tc, cancel_of_a_running_sleep_makes_wait_say_cancelled);
        tcase_add_test(tc, wait_for_several_reports_each_and_exits_with_the_last);
        tcase_add_test(tc,
                       wait_all_and_queue_wait_for_the_jobs_that_will_end_and_exit_with_the_worst);
        tcase_add_test(tc, history_prints_the_runs_newest_first_as_a_table);
        tcase_add_test(tc, history_filters_failed_outcome_since_and_count);
        tcase_add_test(tc, history_usage_errors_exit_2);
        tcase_add_test(tc, list_all_shows_the_live_jobs_then_the_last_runs);
        tcase_add_test(tc, list_shows_the_states_as_they_are_and_a_time);
        tcase_add_test(tc, top_shows_the_runs_in_progress_beside_the_threads);
        tcase_add_test(tc, outcomes_are_coloured_on_a_terminal_only);
        tcase_add_test(tc, status_shows_local_times_durations_and_the_owners_name);
        tcase_add_test(tc, get_and_set_settings);
        tcase_add_test(tc, json_prints_the_daemons_results);
        tcase_add_test(tc, rq_prints_the_kernels_layout);
        tcase_add_test(tc, usage_errors_exit_2_and_help_exits_0);
        tcase_add_test(tc, help_prints_the_usage_or_a_commands);
        tcase_add_test(tc, missing_daemon_exits_69_and_names_the_path);
        tcase_add_test(tc, ping_and_version);
        tcase_add_test(tc, reload_says_it_reloaded_or_fails_with_the_files_error);
        tcase_add_test(tc, nodes_shows_the_state_and_forget_refuses_a_live_or_unknown_node);
        tcase_add_test(tc, library_call_gives_results_and_daemon_errors);
        tcase_add_test(tc, pause_queues_jobs_and_resume_runs_them);
        tcase_add_test(tc, pause_wait_returns_once_the_running_job_ended);
        tcase_add_test(tc, suspend_and_continue_say_what_the_job_is_now);
        tcase_add_test(tc, signal_sends_a_named_or_numbered_signal_to_a_running_job);
        tcase_add_test(tc, restart_prints_the_new_jobs_id_and_command_replaces_the_command);
        tcase_add_test(tc, library_pipelined_requests_are_answered_in_order);
        tcase_add_test(tc, library_queued_requests_go_out_at_a_flush_or_a_receive);
        tcase_add_test(tc, library_receive_gives_notifications_with_id_minus_1);
        tcase_add_test(tc, library_connect_resolves_the_socket_path);
        tcase_add_test(tc, without_a_user_instance_slowctl_falls_back_to_the_systems);
        tcase_add_test(tc, queue_commands_add_list_use_pause_and_remove_queues);
        tcase_add_test(tc, list_shows_the_first_thousand_jobs_and_says_how_many_more);
        tcase_add_test(tc, human_output_shows_the_daemons_control_bytes_escaped_on_a_terminal);
        tcase_add_test(tc, log_escapes_controls_on_a_terminal_unless_raw);
        tcase_add_test(tc, a_socket_served_by_another_user_gets_nothing_and_is_refused);
        tcase_add_test(tc, a_daemon_run_by_root_is_talked_to_by_a_user);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
