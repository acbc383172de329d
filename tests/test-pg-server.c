/* SPDX-License-Identifier: MIT */
/* The throwaway PostgreSQL of the tests (tests/pg-server, tests/pg-helpers.c), without a daemon. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "pg-helpers.h"
#include "run-suite.h"

static struct pg_server pg;

static void setup(void)
{
        pg_setup(&pg);
}

static void teardown(void)
{
        pg_remove(&pg);
}

static char *query(const char *sql)
{
        char *out;

        ck_assert_msg(pg_query(&pg, sql, &out) == 0, "psql -c \"%s\" failed", sql);
        return out;
}

static void assert_query(const char *sql, const char *want)
{
        char *out = query(sql);

        ck_assert_str_eq(out, want);
        free(out);
}

/* Whether the process exits within 10 s: a postmaster removes its pid file, which pg_ctl waits
 * for, a moment before it exits. */
static bool exits(int pid)
{
        for (int i = 0; i < 1000; i++) {
                if (process_gone(pid))
                        return true;
                usleep(10000);
        }
        return false;
}

static bool exists(const char *path)
{
        struct stat st;

        return stat(path, &st) == 0;
}

START_TEST(the_role_slowwork_owns_the_database_slowwork_and_is_no_superuser)
{
        char want[PATH_MAX + 64];

        snprintf(want, sizeof(want), "postgresql:///slowwork?host=%s&user=slowwork", pg.dir);
        ck_assert_str_eq(pg.conninfo, want);
        assert_query("SELECT current_user, current_database(), rolsuper, rolcanlogin "
                     "FROM pg_roles WHERE rolname = current_user",
                     "slowwork|slowwork|f|t\n");
        assert_query("SELECT pg_get_userbyid(datdba) FROM pg_database "
                     "WHERE datname = current_database()",
                     "slowwork\n");
        /* What the daemon does with it: a schema of its own. */
        assert_query("CREATE SCHEMA t_1; CREATE TABLE t_1.jobs (id bigint); "
                     "SELECT count(*) FROM t_1.jobs",
                     "0\n");
}
END_TEST

/* Whether `ss -ltnp` lists a listening TCP socket of the process. */
static bool listens_on_tcp(int pid)
{
        char line[1024], needle[32];
        bool found = false;
        FILE *f = popen("ss -ltnpH", "re");

        ck_assert_ptr_nonnull(f);
        snprintf(needle, sizeof(needle), "pid=%d,", pid);
        while (fgets(line, sizeof(line), f))
                found = found || strstr(line, needle) != NULL;
        ck_assert_msg(pclose(f) == 0, "ss -ltnpH failed (Debian: iproute2, scripts/deps)");
        return found;
}

START_TEST(it_listens_on_its_socket_and_on_no_tcp_port)
{
        struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        char socket_path[PATH_MAX + 32];
        struct stat st;
        int fd;

        snprintf(socket_path, sizeof(socket_path), "%s/.s.PGSQL.5432", pg.dir);
        ck_assert_int_eq(stat(socket_path, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert(!listens_on_tcp(pg_postmaster_pid(&pg)));
        assert_query("SHOW listen_addresses", "\n");
        /* ss sees a listener of a process when there is one: this one's. */
        fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        ck_assert_int_eq(listen(fd, 1), 0);
        ck_assert(listens_on_tcp(getpid()));
        close(fd);
}
END_TEST

START_TEST(a_restart_keeps_the_data_and_a_stop_loses_only_the_connections)
{
        int pid = pg_postmaster_pid(&pg);

        assert_query("CREATE TABLE kept (x int); INSERT INTO kept VALUES (42)", "");
        pg_restart(&pg);
        ck_assert_int_ne(pg_postmaster_pid(&pg), pid);
        assert_query("SELECT x FROM kept", "42\n");
        pid = pg_postmaster_pid(&pg);
        assert_query("INSERT INTO kept VALUES (43)", "");
        pg_stop(&pg);
        ck_assert(exits(pid));
        ck_assert_int_ne(pg_query(&pg, "SELECT 1", NULL), 0);
        pg_start(&pg);
        assert_query("SELECT x FROM kept ORDER BY x", "42\n43\n");
}
END_TEST

START_TEST(remove_stops_the_cluster_and_leaves_no_folder)
{
        struct pg_server other;
        int pid;

        pg_setup(&other);
        ck_assert_str_ne(other.dir, pg.dir);
        pid = pg_postmaster_pid(&other);
        ck_assert(!process_gone(pid));
        pg_remove(&other);
        ck_assert(exits(pid));
        ck_assert(!exists(other.dir));
        assert_query("SELECT 1", "1\n"); /* the other cluster goes on */
}
END_TEST

START_TEST(run_gives_the_command_the_conninfo_its_status_and_removes_the_folder)
{
        char dir[PATH_MAX], conninfo[PATH_MAX + 64], want[PATH_MAX + 64];
        FILE *f = popen(PG_SERVER " run /bin/sh -c '"
                                  "echo \"$SLOWWORK_TEST_PGDIR\"; echo \"$SLOWWORK_TEST_STORE\"; "
                                  "test -S \"$SLOWWORK_TEST_PGDIR/.s.PGSQL.5432\" && exit 3'",
                        "re");
        int status;

        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(dir, sizeof(dir), f));
        ck_assert_ptr_nonnull(fgets(conninfo, sizeof(conninfo), f));
        status = pclose(f);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 3);
        dir[strcspn(dir, "\n")] = '\0';
        ck_assert_msg(strncmp(dir, "/tmp/slowwork-pg-", 17) == 0, "folder %s", dir);
        snprintf(want, sizeof(want), "postgresql:///slowwork?host=%s&user=slowwork\n", dir);
        ck_assert_str_eq(conninfo, want);
        ck_assert(!exists(dir));
}
END_TEST

START_TEST(run_removes_the_folder_and_stops_everything_when_it_is_terminated)
{
        char line[PATH_MAX + 32];
        struct pg_server running;
        int p[2], status, command, postmaster;
        FILE *f;
        pid_t pid;

        ck_assert_int_eq(pipe(p), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                if (dup2(p[1], STDOUT_FILENO) < 0)
                        _exit(127);
                close(p[0]);
                close(p[1]);
                execl(PG_SERVER, PG_SERVER, "run", "/bin/sh", "-c",
                      "echo \"$SLOWWORK_TEST_PGDIR $$\"; exec sleep 600", (char *)NULL);
                _exit(127);
        }
        close(p[1]);
        f = fdopen(p[0], "r");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(line, sizeof(line), f));
        ck_assert_int_eq(sscanf(line, "%4095s %d", running.dir, &command), 2);
        postmaster = pg_postmaster_pid(&running);
        ck_assert_int_eq(kill(pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        ck_assert_int_eq(WEXITSTATUS(status), 128 + SIGTERM);
        fclose(f);
        ck_assert(!exists(running.dir));
        ck_assert(exits(postmaster));
        ck_assert(exits(command));
}
END_TEST

int main(void)
{
        Suite *s = suite_create("pg-server");
        TCase *cluster = tcase_create("cluster"), *lifecycle = tcase_create("lifecycle");

        if (!pg_available()) {
                printf("skipped: no PostgreSQL server binaries (scripts/deps installs them)\n");
                return 77;
        }
        tcase_set_timeout(cluster, 120);
        tcase_add_unchecked_fixture(cluster, setup, teardown);
        tcase_add_test(cluster, the_role_slowwork_owns_the_database_slowwork_and_is_no_superuser);
        tcase_add_test(cluster, it_listens_on_its_socket_and_on_no_tcp_port);
        tcase_add_test(cluster, a_restart_keeps_the_data_and_a_stop_loses_only_the_connections);
        tcase_add_test(cluster, remove_stops_the_cluster_and_leaves_no_folder);
        suite_add_tcase(s, cluster);
        tcase_set_timeout(lifecycle, 120);
        tcase_add_test(lifecycle,
                       run_gives_the_command_the_conninfo_its_status_and_removes_the_folder);
        tcase_add_test(lifecycle,
                       run_removes_the_folder_and_stops_everything_when_it_is_terminated);
        suite_add_tcase(s, lifecycle);
        return run_suite_in_order(s);
}
