/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pg-helpers.h"

#ifndef PG_SERVER
#error "PG_SERVER must name tests/pg-server"
#endif

/* Starts the program with its standard output on a pipe (in *ret_out_fd). With hold >= 0 it
 * waits for a byte on hold before it runs the program, and ends when hold closes first; with
 * in >= 0 the program reads its standard input from in. */
static pid_t start(char *const argv[], int hold, int in, int *ret_out_fd)
{
        int p[2];
        pid_t pid;
        char go;

        ck_assert_int_eq(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (hold >= 0 && read(hold, &go, 1) != 1)
                        _exit(127);
                if (dup2(p[1], STDOUT_FILENO) < 0 || (in >= 0 && dup2(in, STDIN_FILENO) < 0))
                        _exit(127);
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        *ret_out_fd = p[0];
        return pid;
}

/* Waits for the program and returns its exit status (-1 for a signal), with what it wrote to its
 * standard output in *ret_out (the caller frees it) unless ret_out is NULL. */
static int finish(pid_t pid, int out_fd, char **ret_out)
{
        size_t len = 0, size = 256;
        char *out = malloc(size);
        int status;
        ssize_t n;

        ck_assert_ptr_nonnull(out);
        do {
                if (size - len < 128) {
                        size *= 2;
                        out = realloc(out, size);
                        ck_assert_ptr_nonnull(out);
                }
                n = read(out_fd, out + len, size - len - 1);
                if (n > 0)
                        len += (size_t)n;
        } while (n > 0 || (n < 0 && errno == EINTR));
        out[len] = '\0';
        close(out_fd);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        if (ret_out)
                *ret_out = out;
        else
                free(out);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run(char *const argv[], char **ret_out)
{
        int out_fd;
        pid_t pid = start(argv, -1, -1, &out_fd);

        return finish(pid, out_fd, ret_out);
}

/* pg-server with the arguments; it must succeed. What it printed, its last newline cut, in buf. */
static void pg_server(char *buf, size_t len, const char *action, const char *dir)
{
        char *argv[] = {(char *)PG_SERVER, (char *)action, (char *)dir, NULL}, *out;

        ck_assert_msg(run(argv, &out) == 0, "pg-server %s %s failed", action, dir ? dir : "");
        out[strcspn(out, "\n")] = '\0';
        if (buf)
                snprintf(buf, len, "%s", out);
        free(out);
}

bool pg_available(void)
{
        int status = system(PG_SERVER " bindir >/dev/null");

        return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void set_dir(struct pg_server *pg, const char *dir)
{
        snprintf(pg->dir, sizeof(pg->dir), "%s", dir);
        pg_server(pg->conninfo, sizeof(pg->conninfo), "conninfo", pg->dir);
}

bool pg_from_env(struct pg_server *pg)
{
        const char *dir = getenv("SLOWWORK_TEST_PGDIR"), *store = getenv("SLOWWORK_TEST_STORE");

        if (!dir)
                return false;
        set_dir(pg, dir);
        /* The suite's own database, where the cluster is shared (pg-server shared). */
        if (store && *store)
                snprintf(pg->conninfo, sizeof(pg->conninfo), "%s", store);
        return true;
}

void pg_setup(struct pg_server *pg)
{
        char dir[PATH_MAX];

        pg_server(dir, sizeof(dir), "setup", NULL);
        set_dir(pg, dir);
}

void pg_remove(struct pg_server *pg)
{
        pg_server(NULL, 0, "remove", pg->dir);
}

void pg_stop(const struct pg_server *pg)
{
        pg_server(NULL, 0, "stop", pg->dir);
}

void pg_start(const struct pg_server *pg)
{
        pg_server(NULL, 0, "start", pg->dir);
}

void pg_restart(const struct pg_server *pg)
{
        pg_server(NULL, 0, "restart", pg->dir);
}

void pg_restart_ready(const struct pg_server *pg, struct pg_restart *r)
{
        char *argv[] = {(char *)PG_SERVER, (char *)"restart", (char *)pg->dir, NULL};
        int hold[2];

        ck_assert_int_eq(pipe2(hold, O_CLOEXEC), 0);
        r->pid = start(argv, hold[0], -1, &r->out_fd);
        close(hold[0]);
        r->go_fd = hold[1];
}

void pg_restart_go(struct pg_restart *r)
{
        ck_assert_int_eq(write(r->go_fd, "", 1), 1);
        close(r->go_fd);
        ck_assert_msg(finish(r->pid, r->out_fd, NULL) == 0, "pg-server restart failed");
}

static void psql_path(char *psql, size_t len)
{
        pg_server(psql, len - 8, "bindir", NULL);
        strcat(psql, "/psql");
}

int pg_query(const struct pg_server *pg, const char *sql, char **ret_out)
{
        char psql[PATH_MAX], *out;
        char *argv[] = {psql,         (char *)"-XqAt",      (char *)"-v", (char *)"ON_ERROR_STOP=1",
                        (char *)"-d", (char *)pg->conninfo, (char *)"-c", (char *)sql,
                        NULL};
        int status;

        psql_path(psql, sizeof(psql));
        status = run(argv, &out);
        if (ret_out)
                *ret_out = out;
        else
                free(out);
        return status;
}

int pg_postmaster_pid(const struct pg_server *pg)
{
        char path[PATH_MAX + 32];
        FILE *f;
        int pid;

        snprintf(path, sizeof(path), "%s/data/postmaster.pid", pg->dir);
        f = fopen(path, "re");
        ck_assert_msg(f != NULL, "no %s: %s", path, strerror(errno));
        ck_assert_int_eq(fscanf(f, "%d", &pid), 1);
        fclose(f);
        return pid;
}

void pg_session_start(const struct pg_server *pg, struct pg_session *s)
{
        char psql[PATH_MAX];
        char *argv[] = {psql,         (char *)"-XqAt",      (char *)"-v", (char *)"ON_ERROR_STOP=1",
                        (char *)"-d", (char *)pg->conninfo, NULL};
        int in[2];

        psql_path(psql, sizeof(psql));
        ck_assert_int_eq(pipe2(in, O_CLOEXEC), 0);
        s->pid = start(argv, -1, in[0], &s->out_fd);
        close(in[0]);
        s->in_fd = in[1];
}

void pg_session_send(struct pg_session *s, const char *sql)
{
        size_t len = strlen(sql);

        ck_assert_int_eq(write(s->in_fd, sql, len), (ssize_t)len);
        ck_assert_int_eq(write(s->in_fd, "\n", 1), 1);
}

int pg_session_end(struct pg_session *s)
{
        close(s->in_fd);
        return finish(s->pid, s->out_fd, NULL);
}
