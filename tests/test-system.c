/* SPDX-License-Identifier: MIT */
/*
 * The system instance through a real slowworkd: jobs run as their submitters, users see and touch
 * only their own items, admins everything. Needs root: it creates test users (and removes them),
 * and connects as them. Not root: the suite is skipped (exit 77).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/seccomp.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

#define SKIP 77 /* automake's exit status for a skipped test */

/* a: a plain user in group x; b: another plain user; c: a member of the admin group; gone: a user
 * removed while its job is held. */
static char user_a[32], user_b[32], user_c[32], user_gone[32], group_x[32], group_admin[32];
static pid_t main_pid;

static struct daemon d;
static int root_fd;

static void sleep_ms(int ms)
{
        struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L};

        nanosleep(&ts, NULL);
}

/* Runs a command quietly and returns its exit status (-1 when it did not exit). */
static int run(const char *const argv[])
{
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return -1;
        if (pid == 0) {
                if (!freopen("/dev/null", "w", stdout) || !freopen("/dev/null", "w", stderr))
                        _exit(127);
                execv(argv[0], (char *const *)argv);
                _exit(127);
        }
        if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
                return -1;
        return WEXITSTATUS(status);
}

/* useradd and friends fail while another one holds /etc/passwd's lock: try again a while. */
static int run_patiently(const char *const argv[])
{
        int i, r = -1;

        for (i = 0; i < 50 && (r = run(argv)) != 0 && r != 127; i++)
                sleep_ms(100);
        return r;
}

static void remove_users(void)
{
        const char *users[] = {user_a, user_b, user_c, user_gone};
        const char *groups[] = {group_x, group_admin};
        size_t i;

        if (getpid() != main_pid) /* a test's process exiting, not the suite */
                return;
        /* A failed test may leave a job of a user running a little longer (its daemon stops on
         * the test's end): such a user is removed all the same (-f). */
        for (i = 0; i < sizeof(users) / sizeof(users[0]); i++)
                if (getpwnam(users[i]) &&
                    run((const char *const[]){"/usr/sbin/userdel", users[i], NULL}) != 0)
                        run_patiently(
                            (const char *const[]){"/usr/sbin/userdel", "-f", users[i], NULL});
        for (i = 0; i < sizeof(groups) / sizeof(groups[0]); i++)
                if (getgrnam(groups[i]))
                        run_patiently((const char *const[]){"/usr/sbin/groupdel", groups[i], NULL});
}

static void on_fatal_signal(int sig)
{
        remove_users();
        signal(sig, SIG_DFL);
        raise(sig);
}

/* No home folder, no group of its own (so its primary group is not one of ours). */
static int add_user(const char *name, const char *group)
{
        if (!group)
                return run_patiently((const char *const[]){"/usr/sbin/useradd", "-M", "-N", "-s",
                                                           "/usr/sbin/nologin", name, NULL});
        return run_patiently((const char *const[]){"/usr/sbin/useradd", "-M", "-N", "-s",
                                                   "/usr/sbin/nologin", "-G", group, name, NULL});
}

static void name_users(void)
{
        int pid = (int)suite_pid();

        snprintf(user_a, sizeof(user_a), "swtest-a-%d", pid);
        snprintf(user_b, sizeof(user_b), "swtest-b-%d", pid);
        snprintf(user_c, sizeof(user_c), "swtest-c-%d", pid);
        snprintf(user_gone, sizeof(user_gone), "swtest-d-%d", pid);
        snprintf(group_x, sizeof(group_x), "swtest-x-%d", pid);
        snprintf(group_admin, sizeof(group_admin), "swtest-adm-%d", pid);
}

static int add_users(void)
{
        name_users();
        if (run_patiently((const char *const[]){"/usr/sbin/groupadd", group_x, NULL}) != 0 ||
            run_patiently((const char *const[]){"/usr/sbin/groupadd", group_admin, NULL}) != 0 ||
            add_user(user_a, group_x) != 0 || add_user(user_b, NULL) != 0 ||
            add_user(user_c, group_admin) != 0)
                return -1;
        return 0;
}

static struct passwd *user(const char *name)
{
        struct passwd *pw = getpwnam(name);

        ck_assert_msg(pw != NULL, "no user %s", name);
        return pw;
}

/* n connections made by one process with the user's uid, gid and groups (SO_PEERCRED takes the
 * connecting process's), handed back over a socket pair in batches of FDS_PER_MESSAGE. */
#define FDS_PER_MESSAGE 200
static void connect_many_as(const char *name, int n, int *fds)
{
        char data = 0, cmsgbuf[CMSG_SPACE(FDS_PER_MESSAGE * sizeof(int))];
        struct iovec iov = {.iov_base = &data, .iov_len = 1};
        struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
        struct cmsghdr *cmsg;
        int sv[2], status, got;
        pid_t pid;

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                struct sockaddr_un sa = {.sun_family = AF_UNIX};
                struct passwd *pw = getpwnam(name);
                gid_t groups[64];
                int ng = 64, batch[FDS_PER_MESSAGE];

                if (!pw || getgrouplist(name, pw->pw_gid, groups, &ng) < 0 ||
                    setgroups((size_t)ng, groups) < 0 || setgid(pw->pw_gid) < 0 ||
                    setuid(pw->pw_uid) < 0)
                        _exit(2);
                memcpy(sa.sun_path, d.sock, strlen(d.sock) + 1);
                for (int done = 0; done < n;) {
                        int k = n - done < FDS_PER_MESSAGE ? n - done : FDS_PER_MESSAGE;

                        for (int i = 0; i < k; i++) {
                                batch[i] = socket(AF_UNIX, SOCK_STREAM, 0);
                                if (batch[i] < 0 ||
                                    connect(batch[i], (struct sockaddr *)&sa, sizeof(sa)) < 0)
                                        _exit(3);
                        }
                        msg.msg_control = cmsgbuf;
                        msg.msg_controllen = CMSG_SPACE(k * sizeof(int));
                        cmsg = CMSG_FIRSTHDR(&msg);
                        cmsg->cmsg_level = SOL_SOCKET;
                        cmsg->cmsg_type = SCM_RIGHTS;
                        cmsg->cmsg_len = CMSG_LEN(k * sizeof(int));
                        memcpy(CMSG_DATA(cmsg), batch, k * sizeof(int));
                        if (sendmsg(sv[1], &msg, 0) != 1)
                                _exit(4);
                        for (int i = 0; i < k; i++)
                                close(batch[i]);
                        done += k;
                }
                _exit(0);
        }
        close(sv[1]);
        for (got = 0; got < n;) {
                int k;

                msg.msg_control = cmsgbuf;
                msg.msg_controllen = sizeof(cmsgbuf);
                ck_assert_int_eq(recvmsg(sv[0], &msg, MSG_CMSG_CLOEXEC), 1);
                cmsg = CMSG_FIRSTHDR(&msg);
                ck_assert_ptr_nonnull(cmsg);
                ck_assert_int_eq(cmsg->cmsg_type, SCM_RIGHTS);
                k = (int)((cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int));
                ck_assert_int_gt(k, 0);
                memcpy(fds + got, CMSG_DATA(cmsg), (size_t)k * sizeof(int));
                got += k;
        }
        close(sv[0]);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "cannot connect %d times as %s: status 0x%x", n, name, status);
}

/* One connection as the user. */
static int connect_as(const char *name)
{
        int fd;

        connect_many_as(name, 1, &fd);
        return fd;
}

/* The test users must reach the socket in the daemon's private temporary folder. */
static void open_daemon_dir(void)
{
        ck_assert_int_eq(chmod(d.dir, 0755), 0);
}

static void setup(void)
{
        int in = open("/etc/passwd", O_RDONLY | O_CLOEXEC);
        char config_path[64];
        FILE *f;

        /* The daemon's stdin is not /dev/null, so that a job's shows where it came from. */
        ck_assert_int_ge(in, 0);
        ck_assert_int_eq(dup2(in, 0), 0);
        close(in);
        snprintf(config_path, sizeof(config_path), "/tmp/swsystem-%d.conf", (int)getpid());
        f = fopen(config_path, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "admin-group = %s\n", group_admin);
        ck_assert_int_eq(fclose(f), 0);
        daemon_start(&d, "--system", "--config", config_path, "--kill-grace", "1", "--stop-timeout",
                     "1", "--plugin-dir", PLUGINS_BUILT, NULL);
        unlink(config_path);
        open_daemon_dir();
        root_fd = client_connect(d.sock);
        ck_assert_int_ge(root_fd, 0);
}

static void teardown(void)
{
        close(root_fd);
        daemon_stop(&d);
}

static int call_code(int fd, const char *method, const char *params)
{
        json_object *reply = client_call(fd, method, params);
        int code = reply_code(reply);

        json_object_put(reply);
        return code;
}

static int id_call_code(int fd, const char *method, int64_t id)
{
        char params[64];

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        return call_code(fd, method, params);
}

/* signal with USR1: the job's processes would end of it. */
static int signal_call_code(int fd, int64_t id)
{
        char params[64];

        snprintf(params, sizeof(params), "{\"id\":%lld,\"signal\":\"USR1\"}", (long long)id);
        return call_code(fd, "signal", params);
}

static bool listed(int fd, int64_t id)
{
        json_object *reply = client_call(fd, "list", NULL);
        json_object *items = json_object_object_get(reply_result(reply), "items");
        bool found = false;
        size_t i;

        for (i = 0; i < json_object_array_length(items); i++)
                if (int_member(json_object_array_get_idx(items, i), "id") == id)
                        found = true;
        json_object_put(reply);
        return found;
}

static size_t rq_rows(int fd)
{
        json_object *reply = client_call(fd, "stats", NULL);
        size_t n = json_object_array_length(json_object_object_get(reply_result(reply), "rq"));

        json_object_put(reply);
        return n;
}

static int64_t max_threads(int fd)
{
        json_object *reply = client_call(fd, "settings.get", NULL);
        int64_t n = int_member(reply_result(reply), "max-threads");

        json_object_put(reply);
        return n;
}

/* Submits as the connection's user, waits, checks the outcome and returns the log. */
static char *run_job(int fd, const char *params, const char *outcome, int exit_code)
{
        int64_t id = job_submit(fd, params);
        json_object *rec = job_wait(fd, id);

        ck_assert_str_eq(str_member(rec, "outcome"), outcome);
        ck_assert_int_eq(int_member(rec, "exit_code"), exit_code);
        json_object_put(rec);
        return job_log(fd, id);
}

START_TEST(the_socket_is_open_to_every_user_and_the_state_private)
{
        char logs[PATH_MAX + 8];
        struct stat st;
        int fd;

        ck_assert_int_eq(stat(d.sock, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0666);
        ck_assert_int_eq(stat(d.state, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
        snprintf(logs, sizeof(logs), "%s/logs", d.state);
        ck_assert_int_eq(stat(logs, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
        fd = connect_as(user_b);
        ck_assert_int_eq(call_code(fd, "ping", NULL), 0);
        close(fd);
}
END_TEST

START_TEST(a_job_runs_with_its_submitters_ids_groups_and_home)
{
        struct passwd *pw = user(user_a);
        struct group *gr = getgrnam(group_x);
        char want[512], *log, logpath[PATH_MAX + 64];
        int fd = connect_as(user_a);
        json_object *rec;
        struct stat st;
        int64_t id;

        ck_assert_ptr_nonnull(gr);
        snprintf(want, sizeof(want), "%u\n%u\n%u %u\n%s %s %s\n", (unsigned)pw->pw_uid,
                 (unsigned)pw->pw_gid, (unsigned)pw->pw_gid, (unsigned)gr->gr_gid, pw->pw_dir,
                 user_a, user_a);
        /* What the client says of HOME, USER and LOGNAME does not count. */
        id = job_submit(fd, "{\"command\":\"id -u; id -g; id -G; echo $HOME $USER $LOGNAME\","
                            "\"env\":{\"PATH\":\"/usr/bin:/bin\",\"HOME\":\"/root\","
                            "\"USER\":\"root\",\"LOGNAME\":\"root\"}}");
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert_int_eq(int_member(rec, "owner"), pw->pw_uid);
        snprintf(logpath, sizeof(logpath), "%s", str_member(rec, "log"));
        json_object_put(rec);
        log = job_log(fd, id);
        ck_assert_str_eq(log, want);
        free(log);
        /* The log is the owner's alone. */
        ck_assert_int_eq(stat(logpath, &st), 0);
        ck_assert_uint_eq(st.st_uid, pw->pw_uid);
        ck_assert_uint_eq(st.st_mode & 07777, 0600);
        close(fd);
}
END_TEST

START_TEST(a_job_sent_without_an_environment_gets_a_path_and_the_users_names_only)
{
        struct passwd *pw = user(user_a);
        int fd = connect_as(user_a);
        char want[512], *log;

        /* Not the daemon's environment: that is root's. */
        snprintf(want, sizeof(want),
                 "PATH=/usr/local/bin:/usr/bin:/bin\nHOME=%s\nUSER=%s\n"
                 "LOGNAME=%s\n",
                 pw->pw_dir, user_a, user_a);
        log = run_job(fd, "{\"argv\":[\"env\"]}", "succeeded", 0);
        ck_assert_str_eq(log, want);
        free(log);
        close(fd);
}
END_TEST

START_TEST(a_users_job_has_its_own_group_no_stdin_default_signals_and_three_fds)
{
        int fd = connect_as(user_a);
        char *log, pid[32], pgid[32], rest[256];

        log = run_job(fd, "{\"argv\":[\"ls\",\"/proc/self/fd\"]}", "succeeded", 0);
        ck_assert_str_eq(log, "0\n1\n2\n3\n"); /* 3: the folder ls reads */
        free(log);
        log = run_job(fd,
                      "{\"command\":\"readlink /proc/$$/fd/0; echo $$; cut -d' ' -f5 "
                      "/proc/$$/stat; exec grep -E '^Sig(Blk|Ign):' /proc/self/status\"}",
                      "succeeded", 0);
        /* The shell blocks signals while it waits for a command: grep, exec'd in its place,
         * shows what the shell was started with. */
        ck_assert_int_eq(sscanf(log, "/dev/null\n%31s\n%31s\n%255[^$]", pid, pgid, rest), 3);
        ck_assert_str_eq(pid, pgid);
        ck_assert_str_eq(rest, "SigBlk:\t0000000000000000\nSigIgn:\t0000000000000000\n");
        free(log);
        close(fd);
}
END_TEST

START_TEST(a_folder_the_user_may_not_enter_fails_the_run)
{
        int fd = connect_as(user_a);
        char params[PATH_MAX + 64], want[PATH_MAX + 128], *log;

        /* The state folder is root's, 0700: root could enter it, the user cannot. */
        snprintf(params, sizeof(params), "{\"command\":\"pwd\",\"cwd\":\"%s\"}", d.state);
        log = run_job(fd, params, "failed", 127);
        snprintf(want, sizeof(want), "slowworkd: cannot change to %s as user %s: %s\n", d.state,
                 user_a, strerror(EACCES));
        ck_assert_str_eq(log, want);
        free(log);
        close(fd);
}
END_TEST

START_TEST(a_missing_program_fails_the_users_run_with_a_note)
{
        int fd = connect_as(user_a);
        char *log = run_job(fd, "{\"argv\":[\"/no-such-dir/program\"]}", "failed", 127);

        ck_assert_str_eq(log, "slowworkd: cannot run /no-such-dir/program: No such file or "
                              "directory\n");
        free(log);
        close(fd);
}
END_TEST

START_TEST(another_user_can_neither_see_nor_touch_a_live_job)
{
        int a = connect_as(user_a), b = connect_as(user_b);
        char params[64];
        json_object *rec;
        int64_t id;

        ck_assert_int_eq(call_code(b, "subscribe", NULL), 0);
        id = job_submit(a, "{\"command\":\"echo secret; sleep 30\",\"hold\":true}");
        job_wait_state(a, id, "running");
        /* No event of A's job reached B: the next line B reads is its ping's reply. */
        ck_assert_int_eq(call_code(b, "ping", NULL), 0);
        ck_assert_int_eq(id_call_code(b, "status", id), -32002);
        ck_assert_int_eq(id_call_code(b, "log", id), -32002);
        ck_assert_int_eq(id_call_code(b, "cancel", id), -32002);
        ck_assert_int_eq(id_call_code(b, "release", id), -32002);
        ck_assert_int_eq(id_call_code(b, "enqueue", id), -32002);
        ck_assert_int_eq(id_call_code(b, "wait", id), -32002);
        ck_assert_int_eq(signal_call_code(b, id), -32002);
        ck_assert_int_eq(id_call_code(b, "restart", id), -32002);
        ck_assert_str_eq(job_state_of(a, id), "running");
        ck_assert(!listed(b, id));
        ck_assert_uint_eq(rq_rows(b), 0);
        ck_assert(listed(a, id));
        ck_assert_uint_eq(rq_rows(a), 1);
        /* The owner can: its job stops. */
        ck_assert_int_eq(id_call_code(a, "cancel", id), 0);
        rec = job_wait(a, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        ck_assert_int_eq(call_code(a, "release", params), 0);
        close(a);
        close(b);
}
END_TEST

START_TEST(another_user_can_neither_edit_nor_release_a_stashed_job)
{
        int a = connect_as(user_a), b = connect_as(user_b);
        char params[128];
        json_object *st;
        int64_t id;

        id = job_submit(a, "{\"command\":\"echo mine\",\"stashed\":true,\"name\":\"n\"}");
        snprintf(params, sizeof(params), "{\"id\":%lld,\"name\":\"theirs\",\"priority\":9}",
                 (long long)id);
        ck_assert_int_eq(call_code(b, "edit", params), -32002);
        ck_assert_int_eq(id_call_code(b, "enqueue", id), -32002);
        ck_assert_int_eq(id_call_code(b, "cancel", id), -32002);
        st = job_status(a, id);
        ck_assert_str_eq(str_member(st, "state"), "stashed");
        ck_assert_str_eq(str_member(st, "name"), "n");
        ck_assert_int_eq(int_member(st, "priority"), 0);
        json_object_put(st);
        /* Root, an admin, may. */
        ck_assert_int_eq(call_code(root_fd, "edit", params), 0);
        ck_assert_int_eq(id_call_code(a, "cancel", id), 0);
        close(a);
        close(b);
}
END_TEST

START_TEST(a_job_cannot_wait_for_another_users_job)
{
        int a = connect_as(user_a), b = connect_as(user_b);
        int64_t live = job_submit(a, "{\"command\":\"sleep 30\"}");
        int64_t done = job_submit(a, "{\"command\":\"true\"}"), mine;
        char params[128];

        json_object_put(job_wait(a, done));
        snprintf(params, sizeof(params), "{\"command\":\"true\",\"after\":[%lld]}",
                 (long long)live);
        ck_assert_int_eq(call_code(b, "submit", params), -32002);
        snprintf(params, sizeof(params), "{\"command\":\"true\",\"after_any\":[%lld]}",
                 (long long)done);
        ck_assert_int_eq(call_code(b, "submit", params), -32002);
        /* Nothing was made; the owner may. */
        mine = job_submit(b, "{\"command\":\"true\"}");
        ck_assert_int_eq(mine, done + 1);
        snprintf(params, sizeof(params), "{\"command\":\"true\",\"after_any\":[%lld]}",
                 (long long)done);
        ck_assert_int_eq(call_code(a, "submit", params), 0);
        ck_assert_int_eq(id_call_code(a, "cancel", live), 0);
        close(a);
        close(b);
}
END_TEST

START_TEST(another_user_cannot_read_a_finished_jobs_record_or_log)
{
        int a = connect_as(user_a), b = connect_as(user_b);
        int64_t id = job_submit(a, "{\"command\":\"echo secret\"}");
        char *log;

        json_object_put(job_wait(a, id));
        /* Gone from the tables (no handle): what is left is in the history. */
        while (listed(a, id))
                sleep_ms(5);
        log = job_log(a, id);
        ck_assert_str_eq(log, "secret\n");
        free(log);
        ck_assert_int_eq(id_call_code(b, "status", id), -32002);
        ck_assert_int_eq(id_call_code(b, "wait", id), -32002);
        ck_assert_int_eq(id_call_code(b, "log", id), -32002);
        ck_assert_int_eq(signal_call_code(b, id), -32002);
        close(a);
        close(b);
}
END_TEST

/* restart: another user may not; an admin may, and the new job is its owner's, run as them. */
START_TEST(an_admin_restarts_a_users_ended_job_as_that_user)
{
        int a = connect_as(user_a), b = connect_as(user_b), c = connect_as(user_c);
        int64_t id = job_submit(a, "{\"command\":\"id -un\"}"), again;
        struct passwd *pw = getpwnam(user_a);
        char params[64], want[64], *log;
        json_object *r, *rec;

        ck_assert_ptr_nonnull(pw);
        json_object_put(job_wait(a, id));
        while (listed(a, id))
                sleep_ms(5);
        ck_assert_int_eq(id_call_code(b, "restart", id), -32002);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        r = call_ok(c, "restart", params);
        again = int_member(r, "id");
        json_object_put(r);
        ck_assert_int_gt(again, id);
        rec = job_wait(a, again);
        ck_assert_int_eq(int_member(rec, "owner"), (int64_t)pw->pw_uid);
        json_object_put(rec);
        log = job_log(a, again);
        snprintf(want, sizeof(want), "%s\n", user_a);
        ck_assert_str_eq(log, want);
        free(log);
        close(a);
        close(b);
        close(c);
}
END_TEST

/* The ids of a history reply's runs, newest first, as "5 3 1". */
static char *history_ids(int fd, const char *params)
{
        json_object *reply = client_call(fd, "history", params), *runs;
        char *ids = calloc(1, 256);
        size_t i, len = 0;

        ck_assert_msg(reply_code(reply) == 0, "%s", json_object_to_json_string(reply));
        runs = json_object_object_get(reply_result(reply), "runs");
        for (i = 0; i < json_object_array_length(runs); i++)
                len += (size_t)snprintf(
                    ids + len, 256 - len, "%s%lld", i ? " " : "",
                    (long long)int_member(json_object_array_get_idx(runs, i), "id"));
        json_object_put(reply);
        return ids;
}

START_TEST(history_shows_a_user_only_their_own_runs_and_admins_all)
{
        int a = connect_as(user_a), b = connect_as(user_b), c = connect_as(user_c);
        int64_t ida, idb;
        char params[64], want[64], *ids;

        /* One after the other: the history is in the order runs ended. */
        ida = job_submit(a, "{\"argv\":[\"true\"]}");
        json_object_put(job_wait(a, ida));
        idb = job_submit(b, "{\"argv\":[\"false\"]}");
        json_object_put(job_wait(b, idb));
        snprintf(want, sizeof(want), "%lld", (long long)ida);
        ids = history_ids(a, NULL);
        ck_assert_str_eq(ids, want);
        free(ids);
        snprintf(params, sizeof(params), "{\"owner\":%u}", (unsigned)user(user_a)->pw_uid);
        ids = history_ids(a, params);
        ck_assert_str_eq(ids, want);
        free(ids);
        snprintf(params, sizeof(params), "{\"owner\":%u}", (unsigned)user(user_b)->pw_uid);
        ck_assert_int_eq(call_code(a, "history", params), -32002);
        ck_assert_int_eq(call_code(a, "history", "{\"owner\":0}"), -32002);
        /* b's failed run is not a's either, whatever the filter. */
        ids = history_ids(a, "{\"outcome\":\"failed\"}");
        ck_assert_str_eq(ids, "");
        free(ids);
        /* Admins: root and a member of the admin group see both, and one owner's when asked. */
        snprintf(want, sizeof(want), "%lld %lld", (long long)idb, (long long)ida);
        ids = history_ids(root_fd, NULL);
        ck_assert_str_eq(ids, want);
        free(ids);
        ids = history_ids(c, NULL);
        ck_assert_str_eq(ids, want);
        free(ids);
        snprintf(want, sizeof(want), "%lld", (long long)idb);
        ids = history_ids(c, params);
        ck_assert_str_eq(ids, want);
        free(ids);
        close(a);
        close(b);
        close(c);
}
END_TEST

START_TEST(a_user_cannot_change_settings)
{
        int b = connect_as(user_b);
        json_object *reply = client_call(b, "settings.set", "{\"max-threads\":8}");

        ck_assert_int_eq(reply_code(reply), -32002);
        ck_assert_str_eq(str_member(json_object_object_get(reply, "error"), "data"), "EPERM");
        json_object_put(reply);
        ck_assert_int_eq(max_threads(root_fd), 4);
        ck_assert_int_eq(max_threads(b), 4); /* reading them is for everyone */
        close(b);
}
END_TEST

static bool daemon_paused(int fd)
{
        json_object *reply = client_call(fd, "stats", NULL);
        bool paused =
            json_object_get_boolean(json_object_object_get(reply_result(reply), "paused"));

        json_object_put(reply);
        return paused;
}

START_TEST(only_admins_pause_and_resume)
{
        int b = connect_as(user_b), c = connect_as(user_c);
        json_object *reply = client_call(b, "pause", NULL);

        ck_assert_int_eq(reply_code(reply), -32002);
        ck_assert_str_eq(str_member(json_object_object_get(reply, "error"), "data"), "EPERM");
        json_object_put(reply);
        ck_assert_int_eq(call_code(b, "pause", "{\"drain\":true}"), -32002);
        ck_assert(!daemon_paused(root_fd));
        /* A member of the admin group may. */
        ck_assert_int_eq(call_code(c, "pause", NULL), 0);
        ck_assert(daemon_paused(b));
        ck_assert_int_eq(call_code(b, "resume", NULL), -32002);
        ck_assert(daemon_paused(root_fd));
        ck_assert_int_eq(call_code(root_fd, "resume", NULL), 0);
        ck_assert(!daemon_paused(b));
        close(b);
        close(c);
}
END_TEST

START_TEST(only_admins_add_remove_change_or_pause_queues_and_users_use_them)
{
        int b = connect_as(user_b), c = connect_as(user_c);
        json_object *reply, *rec;
        int64_t id;

        ck_assert_int_eq(call_code(b, "queue.add", "{\"name\":\"mine\"}"), -32002);
        ck_assert_int_eq(call_code(c, "queue.add", "{\"name\":\"shared\",\"max-threads\":1}"),
                         0);
        ck_assert_int_eq(call_code(b, "settings.set", "{\"queue\":\"shared\",\"max-threads\":3}"),
                         -32002);
        ck_assert_int_eq(call_code(b, "pause", "{\"queue\":\"shared\"}"), -32002);
        ck_assert_int_eq(call_code(b, "resume", "{\"queue\":\"shared\"}"), -32002);
        ck_assert_int_eq(call_code(b, "queue.remove", "{\"name\":\"shared\"}"), -32002);
        /* Anyone lists them, reads their settings and runs jobs in them. */
        reply = client_call(b, "settings.get", "{\"queue\":\"shared\"}");
        ck_assert_int_eq(int_member(reply_result(reply), "max-threads"), 1);
        json_object_put(reply);
        ck_assert_int_eq(call_code(b, "queue.list", NULL), 0);
        id = job_submit(b, "{\"queue\":\"shared\",\"command\":\"id -u\"}");
        rec = job_wait(b, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        ck_assert_int_eq(call_code(root_fd, "queue.remove", "{\"name\":\"shared\"}"), 0);
        close(b);
        close(c);
}
END_TEST

START_TEST(a_user_suspends_their_own_job_but_not_anothers)
{
        int a = connect_as(user_a), b = connect_as(user_b);
        json_object *rec;
        int64_t id;

        id = job_submit(a, "{\"command\":\"sleep 30\"}");
        job_wait_state(a, id, "running");
        ck_assert_int_eq(id_call_code(b, "suspend", id), -32002);
        ck_assert_int_eq(id_call_code(a, "suspend", id), 0);
        ck_assert_int_eq(id_call_code(b, "continue", id), -32002);
        ck_assert_int_eq(id_call_code(a, "continue", id), 0);
        /* An admin may act on any job. */
        ck_assert_int_eq(id_call_code(root_fd, "suspend", id), 0);
        ck_assert_int_eq(id_call_code(a, "cancel", id), 0);
        rec = job_wait(a, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);
        close(a);
        close(b);
}
END_TEST

START_TEST(only_admins_reload_the_configuration)
{
        int b = connect_as(user_b);
        json_object *reply = client_call(b, "reload", NULL);

        ck_assert_int_eq(reply_code(reply), -32002);
        ck_assert_str_eq(str_member(json_object_object_get(reply, "error"), "message"),
                         "permission denied: only admins reload the configuration");
        json_object_put(reply);
        /* Root may: the file the daemon started with is gone, which it hears. */
        reply = client_call(root_fd, "reload", NULL);
        ck_assert_int_eq(reply_code(reply), -32001);
        ck_assert_ptr_nonnull(strstr(str_member(json_object_object_get(reply, "error"), "message"),
                                     "/tmp/swsystem-"));
        json_object_put(reply);
        close(b);
}
END_TEST

START_TEST(only_admins_reexec_the_daemon)
{
        int b = connect_as(user_b);
        json_object *reply = client_call(b, "reexec", NULL);

        ck_assert_int_eq(reply_code(reply), -32002);
        ck_assert_str_eq(str_member(json_object_object_get(reply, "error"), "message"),
                         "permission denied: only admins re-execute the daemon");
        json_object_put(reply);
        /* Root may: the new program checks the file the daemon started with, which is gone, so
         * it is not executed and the daemon goes on. */
        reply = client_call(root_fd, "reexec", NULL);
        ck_assert_int_eq(reply_code(reply), -32603);
        ck_assert_ptr_nonnull(strstr(str_member(json_object_object_get(reply, "error"), "message"),
                                     "cannot start"));
        json_object_put(reply);
        json_object_put(call_ok(root_fd, "ping", NULL));
        close(b);
}
END_TEST

/* nodes.forget is admins' alone; without a shared database the node knows only itself. */
START_TEST(only_admins_forget_nodes)
{
        int b = connect_as(user_b);
        json_object *reply = client_call(b, "nodes.forget", "{\"name\":\"gone\"}"), *nodes;
        const char *self;
        char params[128], msg[256];

        ck_assert_int_eq(reply_code(reply), -32002);
        ck_assert_str_eq(str_member(json_object_object_get(reply, "error"), "message"),
                         "permission denied: only admins forget nodes");
        json_object_put(reply);
        close(b);
        nodes = call_ok(root_fd, "nodes", NULL);
        self = str_member(json_object_array_get_idx(json_object_object_get(nodes, "nodes"), 0),
                          "name");
        ck_assert_str_eq(str_member(json_object_array_get_idx(json_object_object_get(nodes, "nodes"),
                                                               0),
                                    "state"),
                         "live");
        snprintf(params, sizeof(params), "{\"name\":\"%s\"}", self);
        ck_assert_int_eq(call_error(root_fd, "nodes.forget", params, msg, sizeof(msg)), -32003);
        ck_assert_int_eq(call_error(root_fd, "nodes.forget", "{\"name\":\"gone\"}", msg,
                                    sizeof(msg)),
                         -32001);
        ck_assert_str_eq(msg, "no node is named gone");
        json_object_put(nodes);
}
END_TEST

/* A plugin runs inside the daemon, as root: the admin group's members are not root. */
START_TEST(only_root_runs_plugin_jobs)
{
        static const char plugin[] = "{\"plugin\":\"hello\",\"entry\":\"hello\"}";
        int b = connect_as(user_b), c = connect_as(user_c);
        json_object *reply, *rec;

        for (int i = 0; i < 2; i++) {
                reply = client_call(i == 0 ? b : c, "submit", plugin); /* c is in the admin group */
                ck_assert_int_eq(reply_code(reply), -32002);
                ck_assert_ptr_nonnull(
                    strstr(str_member(json_object_object_get(reply, "error"), "message"),
                           "only root may run plugin jobs"));
                json_object_put(reply);
        }
        ck_assert(!listed(root_fd, 1));
        rec = job_wait(root_fd, job_submit(root_fd, plugin));
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        close(b);
        close(c);
}
END_TEST

/* The message of an error reply, which must have that code (the caller frees the reply). */
static const char *error_message(json_object *reply, int code)
{
        ck_assert_int_eq(reply_code(reply), code);
        return str_member(json_object_object_get(reply, "error"), "message");
}

static int64_t setting(int fd, const char *params, const char *name)
{
        json_object *reply = client_call(fd, "settings.get", params);
        int64_t v = int_member(reply_result(reply), name);

        json_object_put(reply);
        return v;
}

/* A job submitted stashed (so that it stays to be asked about): its limits as status gives them,
 * "name=value ..." in the order of the limits (but those of 0), then its run's log once
 * enqueued. */
static char *limits_and_run(int fd, const char *params, char **ret_log)
{
        int64_t id = job_submit(fd, params);
        json_object *st = job_status(fd, id), *limits, *rec;
        char text[256] = "";

        ck_assert_str_eq(str_member(st, "state"), "stashed");
        limits = json_object_object_get(st, "limits");
        json_object_object_foreach(limits, name, value)
        {
                size_t n = strlen(text);

                if (json_object_get_int64(value) == 0 && strcmp(name, "cpu_time") != 0)
                        continue; /* none; cpu_time's 0 is told, as the one an admin asks */
                snprintf(text + n, sizeof(text) - n, "%s%s=%lld", n ? " " : "", name,
                         (long long)json_object_get_int64(value));
        }
        json_object_put(st);
        ck_assert_int_eq(id_call_code(fd, "enqueue", id), 0);
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        *ret_log = job_log(fd, id);
        return strdup(text);
}

/* limits_and_run's two answers, as one text "LIMITS | LOG". */
static void assert_limits_and_run(int fd, const char *params, const char *want)
{
        char *log, *limits = limits_and_run(fd, params, &log), got[512];

        snprintf(got, sizeof(got), "%s | %s", limits, log);
        ck_assert_str_eq(got, want);
        free(limits);
        free(log);
}

#define SHOW_LIMITS "\"command\":\"echo $(ulimit -t) $(ulimit -n)\",\"stashed\":true"

START_TEST(a_users_job_stays_under_the_ceilings_and_gets_them_when_it_asks_none)
{
        int b = connect_as(user_b), c = connect_as(user_c);
        json_object *reply;

        ck_assert_int_eq(setting(b, NULL, "max-job-cpu-time"), 0); /* none by default */
        ck_assert_int_eq(call_code(root_fd, "settings.set",
                                   "{\"max-job-cpu-time\":3600,\"max-job-open-files\":200,"
                                   "\"default-cpu-time\":5}"),
                         0);
        ck_assert_int_eq(setting(b, NULL, "max-job-cpu-time"), 3600);
        /* Above a ceiling: refused, naming it, and nothing made. */
        reply = client_call(b, "submit", "{\"command\":\"true\",\"limits\":{\"cpu_time\":99999}}");
        ck_assert_str_eq(error_message(reply, -32602),
                         "limits.cpu_time 99999 is above max-job-cpu-time 3600");
        json_object_put(reply);
        reply = client_call(b, "submit", "{\"command\":\"true\",\"limits\":{\"open_files\":201}}");
        ck_assert_str_eq(error_message(reply, -32602),
                         "limits.open_files 201 is above max-job-open-files 200");
        json_object_put(reply);
        ck_assert(!listed(root_fd, 1));
        /* None asked (0, or absent without a default): the ceiling. A default under it stays. */
        assert_limits_and_run(b, "{" SHOW_LIMITS ",\"limits\":{\"cpu_time\":0,\"open_files\":0}}",
                              "open_files=200 cpu_time=3600 | 3600 200\n");
        assert_limits_and_run(b, "{" SHOW_LIMITS "}", "open_files=200 cpu_time=5 | 5 200\n");
        assert_limits_and_run(b, "{" SHOW_LIMITS ",\"limits\":{\"cpu_time\":60,\"open_files\":50}}",
                              "open_files=50 cpu_time=60 | 60 50\n");
        /* A default above the ceiling: the ceiling. */
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"default-cpu-time\":7200}"), 0);
        assert_limits_and_run(b, "{" SHOW_LIMITS "}", "open_files=200 cpu_time=3600 | 3600 200\n");
        /* An admin (here a member of the admin group) is not bound. */
        assert_limits_and_run(
            c, "{" SHOW_LIMITS ",\"limits\":{\"cpu_time\":99999,\"open_files\":300}}",
            "open_files=300 cpu_time=99999 | 99999 300\n");
        assert_limits_and_run(c, "{" SHOW_LIMITS ",\"limits\":{\"cpu_time\":0}}",
                              "cpu_time=0 | unlimited 1024\n");
        close(b);
        close(c);
}
END_TEST

START_TEST(a_queues_own_ceiling_overrides_the_daemons)
{
        int b = connect_as(user_b), c = connect_as(user_c);
        json_object *reply;

        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-job-cpu-time\":3600}"), 0);
        ck_assert_int_eq(call_code(c, "queue.add", "{\"name\":\"tight\",\"max-job-cpu-time\":60}"),
                         0);
        ck_assert_int_eq(call_code(c, "queue.add", "{\"name\":\"wide\"}"), 0);
        ck_assert_int_eq(
            call_code(c, "settings.set", "{\"queue\":\"wide\",\"max-job-cpu-time\":7200}"), 0);
        ck_assert_int_eq(setting(b, "{\"queue\":\"tight\"}", "max-job-cpu-time"), 60);
        ck_assert_int_eq(setting(b, "{\"queue\":\"wide\"}", "max-job-cpu-time"), 7200);
        reply = client_call(
            b, "submit", "{\"queue\":\"tight\",\"command\":\"true\",\"limits\":{\"cpu_time\":61}}");
        ck_assert_str_eq(error_message(reply, -32602),
                         "limits.cpu_time 61 is above queue.tight.max-job-cpu-time 60");
        json_object_put(reply);
        assert_limits_and_run(b, "{\"queue\":\"tight\"," SHOW_LIMITS "}",
                              "cpu_time=60 | 60 1024\n");
        assert_limits_and_run(b,
                              "{\"queue\":\"wide\"," SHOW_LIMITS ",\"limits\":{\"cpu_time\":5000}}",
                              "cpu_time=5000 | 5000 1024\n");
        /* The queue without one of its own has the daemon's. */
        reply = client_call(b, "submit", "{\"command\":\"true\",\"limits\":{\"cpu_time\":5000}}");
        ck_assert_str_eq(error_message(reply, -32602),
                         "limits.cpu_time 5000 is above max-job-cpu-time 3600");
        json_object_put(reply);
        close(b);
        close(c);
}
END_TEST

/* A restarted job keeps its limits, which its owner cannot change: brought under the ceiling in
 * force now, not refused. */
START_TEST(a_restarted_job_is_brought_under_a_lowered_ceiling)
{
        int b = connect_as(user_b);
        int64_t id = job_submit(b, "{\"command\":\"ulimit -t\",\"limits\":{\"cpu_time\":1000}}");
        json_object *rec = job_wait(b, id), *reply, *st;
        char params[64], *log;
        int64_t again;

        json_object_put(rec);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-job-cpu-time\":100}"), 0);
        /* Paused, so that the new job stays pending to be asked about. */
        ck_assert_int_eq(call_code(root_fd, "pause", NULL), 0);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        reply = client_call(b, "restart", params);
        ck_assert_int_eq(reply_code(reply), 0);
        again = int_member(reply_result(reply), "id");
        json_object_put(reply);
        st = job_status(b, again);
        ck_assert_int_eq(int_member(json_object_object_get(st, "limits"), "cpu_time"), 100);
        json_object_put(st);
        ck_assert_int_eq(call_code(root_fd, "resume", NULL), 0);
        json_object_put(job_wait(b, again));
        log = job_log(b, again);
        ck_assert_str_eq(log, "100\n");
        free(log);
        close(b);
}
END_TEST

START_TEST(only_admins_set_nice_below_0)
{
        int b = connect_as(user_b), c = connect_as(user_c);
        json_object *reply = client_call(b, "submit", "{\"command\":\"nice\",\"limits\":{\"nice\":-1}}");
        char *log;

        ck_assert_int_eq(reply_code(reply), -32002);
        ck_assert_ptr_nonnull(strstr(str_member(json_object_object_get(reply, "error"), "message"),
                                     "only admins may set limits.nice below 0"));
        json_object_put(reply);
        ck_assert(!listed(root_fd, 1));
        log = run_job(b, "{\"command\":\"nice\",\"limits\":{\"nice\":5}}", "succeeded", 0);
        ck_assert_str_eq(log, "5\n");
        free(log);
        log = run_job(c, "{\"command\":\"nice\",\"limits\":{\"nice\":-1}}", "succeeded", 0);
        ck_assert_str_eq(log, "-1\n"); /* c is in the admin group */
        free(log);
        close(b);
        close(c);
}
END_TEST

/*
 * The daemon here has limits of its own (as high as it may set them) and a session keyring of its
 * own (main() joined one): a user's job starts from a login's limits instead (never above the
 * daemon's ceilings), in a session keyring of its own; root's keep the daemon's.
 */
START_TEST(a_users_job_starts_from_a_logins_limits_in_its_own_keyring)
{
        static const char show[] = "{\"command\":\"ulimit -Sn; ulimit -Hn; ulimit -Sc; "
                                   "grep -c slowwork-test-daemon /proc/keys; "
                                   "awk '$9 == \\\"_ses:\\\" { print $6 }' /proc/keys | sort -u\"}";
        int a = connect_as(user_a);
        struct rlimit nofile, core;
        char want[256], *log;

        /* Soft up to hard: no privilege needed for that. */
        ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, NULL, &nofile), 0);
        ck_assert_int_eq(prlimit(d.pid, RLIMIT_CORE, NULL, &core), 0);
        ck_assert_msg(nofile.rlim_max > 1024 && core.rlim_max > 0,
                      "the daemon's limits are too low to tell a login's from them");
        nofile.rlim_cur = nofile.rlim_max;
        core.rlim_cur = core.rlim_max;
        ck_assert_int_eq(prlimit(d.pid, RLIMIT_NOFILE, &nofile, NULL), 0);
        ck_assert_int_eq(prlimit(d.pid, RLIMIT_CORE, &core, NULL), 0);
        log = run_job(a, show, "succeeded", 0);
        /* Session keyrings it may see: its own, and those of the user's earlier runs. */
        snprintf(want, sizeof(want), "1024\n%llu\n0\n0\n%u\n",
                 (unsigned long long)(nofile.rlim_max < 524288 ? nofile.rlim_max : 524288),
                 (unsigned)user(user_a)->pw_uid);
        ck_assert_str_eq(log, want);
        free(log);
        log = run_job(a, "{\"command\":\"ulimit -n\",\"limits\":{\"open_files\":100}}",
                      "succeeded", 0);
        ck_assert_str_eq(log, "100\n");
        free(log);
        log = run_job(root_fd, "{\"command\":\"ulimit -Sn; ulimit -Sc; "
                               "grep -c slowwork-test-daemon /proc/keys\"}",
                      "succeeded", 0);
        if (core.rlim_cur == RLIM_INFINITY)
                snprintf(want, sizeof(want), "%llu\nunlimited\n1\n",
                         (unsigned long long)nofile.rlim_cur);
        else
                snprintf(want, sizeof(want), "%llu\n%llu\n1\n", (unsigned long long)nofile.rlim_cur,
                         (unsigned long long)core.rlim_cur / 1024);
        ck_assert_str_eq(log, want);
        free(log);
        close(a);
}
END_TEST

/* An admin changes the settings, sees A's job, reads its log and cancels it. */
static void admin_can_do_everything(int admin)
{
        int a = connect_as(user_a);
        int64_t done = job_submit(a, "{\"command\":\"echo hers\"}"), id;
        json_object *rec;
        char *log;

        json_object_put(job_wait(a, done));
        log = job_log(admin, done); /* the daemon reads a log that is not the admin's */
        ck_assert_str_eq(log, "hers\n");
        free(log);
        id = job_submit(a, "{\"command\":\"sleep 30\"}");
        job_wait_state(a, id, "running");
        ck_assert(listed(admin, id));
        ck_assert_uint_eq(rq_rows(admin), 1);
        rec = job_status(admin, id);
        ck_assert_int_eq(int_member(rec, "owner"), user(user_a)->pw_uid);
        json_object_put(rec);
        ck_assert_int_eq(call_code(admin, "settings.set", "{\"max-threads\":8}"), 0);
        ck_assert_int_eq(max_threads(root_fd), 8);
        ck_assert_int_eq(id_call_code(admin, "cancel", id), 0);
        rec = job_wait(admin, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);
        close(a);
}

START_TEST(root_changes_settings_and_sees_and_touches_every_job)
{
        admin_can_do_everything(root_fd);
}
END_TEST

START_TEST(an_admin_group_member_changes_settings_and_sees_and_touches_every_job)
{
        int c = connect_as(user_c);

        /* Not c's primary group: the daemon finds the membership in the user database. */
        ck_assert_uint_ne(user(user_c)->pw_gid, getgrnam(group_admin)->gr_gid);
        admin_can_do_everything(c);
        close(c);
}
END_TEST

START_TEST(roots_job_runs_as_root_with_the_environment_it_sent)
{
        char *log = run_job(root_fd,
                            "{\"command\":\"id -u; id -g; echo $HOME\","
                            "\"env\":{\"PATH\":\"/usr/bin:/bin\",\"HOME\":\"/elsewhere\"}}",
                            "succeeded", 0);

        ck_assert_str_eq(log, "0\n0\n/elsewhere\n");
        free(log);
}
END_TEST

/* A FIFO in the daemon's folder that the test users may write to. */
static char *users_fifo(const char *name)
{
        char *path = fifo_make(d.dir, name);

        ck_assert_int_eq(chmod(path, 0666), 0);
        return path;
}

START_TEST(on_end_commands_run_as_the_jobs_owner)
{
        struct passwd *pw = user(user_a);
        char *fifo = users_fifo("said"), params[PATH_MAX + 128], want[128], *got;
        int a = connect_as(user_a);

        snprintf(params, sizeof(params),
                 "{\"command\":\"true\",\"on_end\":\"echo own $(id -u) $USER >%s\"}", fifo);
        job_submit(a, params);
        got = fifo_read_all(fifo);
        snprintf(want, sizeof(want), "own %u %s\n", (unsigned)pw->pw_uid, user_a);
        ck_assert_str_eq(got, want);
        free(got);
        /* The daemon's, which root set, runs as the owner too. */
        snprintf(params, sizeof(params), "{\"on-end\":\"echo setting $(id -u) >%s\"}", fifo);
        ck_assert_int_eq(call_code(root_fd, "settings.set", params), 0);
        job_submit(a, "{\"command\":\"true\"}");
        got = fifo_read_all(fifo);
        snprintf(want, sizeof(want), "setting %u\n", (unsigned)pw->pw_uid);
        ck_assert_str_eq(got, want);
        free(got);
        close(a);
        free(fifo);
}
END_TEST

START_TEST(only_root_sets_on_end_in_the_system_instance)
{
        int c = connect_as(user_c), a = connect_as(user_a);
        json_object *reply;

        ck_assert_int_eq(call_code(c, "settings.set", "{\"on-end\":\"echo hi\"}"), -32002);
        ck_assert_int_eq(call_code(c, "settings.set", "{\"max-threads\":7,\"on-end\":\"\"}"),
                         -32002);
        ck_assert_int_eq(call_code(a, "settings.set", "{\"on-end\":\"echo hi\"}"), -32002);
        ck_assert_int_eq(max_threads(root_fd), 4);
        /* c changes the other settings. */
        ck_assert_int_eq(call_code(c, "settings.set", "{\"max-threads\":7}"), 0);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"on-end\":\"echo hi\"}"), 0);
        reply = client_call(c, "settings.get", NULL);
        ck_assert_str_eq(str_member(reply_result(reply), "on-end"), "echo hi");
        json_object_put(reply);
        close(a);
        close(c);
}
END_TEST

/* The limits a ceiling gave a job are the job's: kept across a crash, as the ceiling is, and
 * whatever the ceiling is later. */
START_TEST(a_jobs_limits_from_a_ceiling_survive_a_crash)
{
        int b = connect_as(user_b);
        json_object *st;
        int64_t id;

        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-job-cpu-time\":3600}"), 0);
        id = job_submit(b, "{\"command\":\"ulimit -t\",\"delay\":600}");
        close(b);
        daemon_kill_hard(&d);
        daemon_start_again(&d, "--system", "--kill-grace", "1", NULL);
        close(root_fd);
        root_fd = client_connect(d.sock);
        ck_assert_int_eq(setting(root_fd, NULL, "max-job-cpu-time"), 3600);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-job-cpu-time\":100}"), 0);
        st = job_status(root_fd, id);
        ck_assert_str_eq(str_member(st, "state"), "pending");
        ck_assert_int_eq(int_member(json_object_object_get(st, "limits"), "cpu_time"), 3600);
        json_object_put(st);
}
END_TEST

/* The daemon writes the metrics file as root: an admin who is not root could have it overwrite
 * any file. Root's own setting works. */
START_TEST(only_root_sets_the_metrics_file_in_the_system_instance)
{
        int c = connect_as(user_c);
        char path[PATH_MAX], params[PATH_MAX + 64], *text;
        json_object *reply;
        struct stat st;
        int fd;

        /* A file of root's that no one else may read or write. */
        snprintf(path, sizeof(path), "%s/roots", d.dir);
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, "secret\n", 7), 7);
        close(fd);
        snprintf(params, sizeof(params), "{\"metrics-file\":\"%s\"}", path);
        reply = client_call(c, "settings.set", params);
        ck_assert_str_eq(error_message(reply, -32002),
                         "permission denied: in the system instance only root sets metrics-file "
                         "(the daemon writes that file as root)");
        json_object_put(reply);
        snprintf(params, sizeof(params), "{\"max-threads\":7,\"metrics-file\":\"%s\"}", path);
        ck_assert_int_eq(call_code(c, "settings.set", params), -32002);
        ck_assert_int_eq(max_threads(root_fd), 4); /* all or nothing */
        reply = client_call(c, "settings.get", NULL);
        ck_assert_str_eq(str_member(reply_result(reply), "metrics-file"), "");
        json_object_put(reply);
        /* No setting names the plugin folder, which is the command line's alone. */
        ck_assert_int_eq(call_code(c, "settings.set", "{\"plugin-dir\":\"/tmp\"}"), -32602);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"plugin-dir\":\"/tmp\"}"), -32602);
        /* Root may; the daemon writes the file on its next loop turn, replaced through a
         * rename: once its text is the metrics', the refused requests above had written none. */
        snprintf(path, sizeof(path), "%s/metrics.prom", d.dir);
        snprintf(params, sizeof(params), "{\"metrics-file\":\"%s\"}", path);
        ck_assert_int_eq(call_code(root_fd, "settings.set", params), 0);
        for (int i = 0; i < 1000 && stat(path, &st) < 0; i++)
                sleep_ms(10);
        text = fifo_read_all(path);
        ck_assert_ptr_nonnull(strstr(text, "slowwork_"));
        free(text);
        snprintf(path, sizeof(path), "%s/roots", d.dir);
        text = fifo_read_all(path);
        ck_assert_str_eq(text, "secret\n");
        free(text);
        close(c);
}
END_TEST

/* A request's params as text: {"id":ID,REST} ("" rest: just the id). */
static const char *id_params(int64_t id, const char *rest)
{
        static char params[256];

        snprintf(params, sizeof(params), "{\"id\":%lld%s%s}", (long long)id, *rest ? "," : "",
                 rest);
        return params;
}

/* What c's edit or restart of root's job got: -32002, and the message saying why. */
static void assert_roots_to_choose(int c, const char *method, int64_t id, const char *rest)
{
        char msg[256], want[160];

        ck_assert_int_eq(call_error(c, method, id_params(id, rest), msg, sizeof(msg)), -32002);
        snprintf(want, sizeof(want),
                 "permission denied: job %lld is root's: only root changes what it runs (it "
                 "runs as root)",
                 (long long)id);
        ck_assert_str_eq(msg, want);
}

/*
 * admin-group is not root: its members manage root's jobs (enqueue, rename, restart them as
 * they were) but do not choose what they run (edit's command, argv and cwd, restart's command
 * and argv), which would run as root. Other users' jobs they may change, as root may.
 */
START_TEST(an_admin_does_not_choose_what_roots_jobs_run)
{
        int a = connect_as(user_a), c = connect_as(user_c);
        int64_t id, theirs, again;
        json_object *st, *r;
        char *log;

        id = job_submit(root_fd, "{\"command\":\"echo roots\",\"stashed\":true,\"name\":\"r\"}");
        theirs = job_submit(a, "{\"command\":\"echo as a\",\"stashed\":true}");

        assert_roots_to_choose(c, "edit", id, "\"command\":\"id\"");
        assert_roots_to_choose(c, "edit", id, "\"argv\":[\"id\"]");
        assert_roots_to_choose(c, "edit", id, "\"cwd\":\"/tmp\"");
        assert_roots_to_choose(c, "edit", id, "\"name\":\"n\",\"command\":\"id\"");
        st = job_status(root_fd, id);
        ck_assert_str_eq(str_member(st, "command"), "echo roots");
        ck_assert_str_eq(str_member(st, "name"), "r");
        json_object_put(st);
        ck_assert_int_eq(call_code(c, "edit", id_params(id, "\"name\":\"n\",\"priority\":5")), 0);
        st = job_status(root_fd, id);
        ck_assert_str_eq(str_member(st, "name"), "n");
        ck_assert_int_eq(int_member(st, "priority"), 5);
        json_object_put(st);
        ck_assert_int_eq(call_code(c, "edit", id_params(theirs, "\"command\":\"echo by c\"")), 0);
        ck_assert_int_eq(call_code(root_fd, "edit", id_params(id, "\"command\":\"echo by root\"")),
                         0);
        ck_assert_int_eq(id_call_code(c, "enqueue", id), 0);
        json_object_put(job_wait(c, id));
        log = job_log(c, id);
        ck_assert_str_eq(log, "by root\n");
        free(log);
        while (listed(root_fd, id))
                sleep_ms(5);
        /* Restarted as it was, it runs root's command again, as root. */
        assert_roots_to_choose(c, "restart", id, "\"command\":\"id\"");
        assert_roots_to_choose(c, "restart", id, "\"argv\":[\"id\"]");
        r = call_ok(c, "restart", id_params(id, ""));
        again = int_member(r, "id");
        json_object_put(r);
        r = job_wait(c, again);
        ck_assert_int_eq(int_member(r, "owner"), 0);
        json_object_put(r);
        log = job_log(c, again);
        ck_assert_str_eq(log, "by root\n");
        free(log);
        ck_assert_int_eq(id_call_code(a, "enqueue", theirs), 0);
        json_object_put(job_wait(a, theirs));
        log = job_log(a, theirs);
        ck_assert_str_eq(log, "by c\n");
        free(log);
        close(a);
        close(c);
}
END_TEST

START_TEST(a_job_whose_owner_is_gone_fails_with_a_note)
{
        char want[256], params[64], *log;
        json_object *rec;
        uid_t uid;
        int64_t id;
        int fd;

        ck_assert_int_eq(add_user(user_gone, NULL), 0);
        uid = user(user_gone)->pw_uid;
        fd = connect_as(user_gone);
        id = job_submit(fd, "{\"command\":\"id -u\",\"hold\":true}");
        json_object_put(job_wait(fd, id));
        ck_assert_int_eq(run_patiently((const char *const[]){"/usr/sbin/userdel", user_gone, NULL}),
                         0);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        ck_assert_int_eq(call_code(fd, "enqueue", params), 0);
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "failed");
        ck_assert_int_eq(int_member(rec, "exit_code"), 127);
        json_object_put(rec);
        log = job_log(fd, id);
        snprintf(want, sizeof(want),
                 "slowworkd: cannot run job %lld: its owner, uid %u, no longer exists\n",
                 (long long)id, (unsigned)uid);
        ck_assert_str_eq(log, want);
        free(log);
        close(fd);
}
END_TEST

START_TEST(the_user_instance_refuses_another_uid)
{
        static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";
        int fd;

        daemon_start(&d, NULL);
        open_daemon_dir();
        /* Past the socket's own mode: the daemon itself must refuse. */
        ck_assert_int_eq(chmod(d.sock, 0666), 0);
        fd = connect_as(user_a);
        /* The daemon may have closed it already: the write may fail, the read must. */
        if (send(fd, ping, strlen(ping), MSG_NOSIGNAL) < 0)
                ck_assert_msg(errno == EPIPE || errno == ECONNRESET, "send: %s", strerror(errno));
        ck_assert_ptr_null(client_read_line(fd));
        close(fd);
        fd = client_connect(d.sock);
        ck_assert_int_eq(call_code(fd, "ping", NULL), 0);
        ck_assert_int_eq(call_code(fd, "settings.set", "{\"max-threads\":8}"), 0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Who a job runs as comes from the job: a daemon started without --system on a system instance's
 * database (where users' jobs wait) refuses it, naming a job and its owner, and runs nothing. */
START_TEST(a_system_database_opened_without_system_is_refused)
{
        int fd = connect_as(user_a), status;
        char sock[PATH_MAX + 8], *err, owner[32];

        ck_assert_int_eq(job_submit(fd, "{\"command\":\"id -u\",\"delay\":600}"), 1);
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        snprintf(sock, sizeof(sock), "%s-user", d.sock);
        ck_assert_int_ne(daemon_run_stderr(&err, "--socket", sock, "--state-dir", d.state, NULL),
                         0);
        snprintf(owner, sizeof(owner), "uid %u", (unsigned)user(user_a)->pw_uid);
        ck_assert_msg(strstr(err, "holds job 1 of") && strstr(err, owner), "slowworkd said: %s",
                      err);
        free(err);
        /* The system instance takes it, and the job waits as it did. */
        daemon_start_again(&d, "--system", "--kill-grace", "1", NULL);
        close(root_fd);
        root_fd = client_connect(d.sock);
        ck_assert_str_eq(job_state_of(root_fd, 1), "pending");
}
END_TEST

/* What systemd-nspawn's and Docker's seccomp filters do to keyrings: EPERM, for this process
 * and everything it starts. */
static void refuse_keyrings(void)
{
        struct sock_filter code[] = {
            BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_keyctl, 2, 0),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_add_key, 1, 0),
            BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_request_key, 0, 1),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | EPERM),
            BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        };
        struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]), .filter = code};

        ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
        ck_assert_int_lt(syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL), 0);
        ck_assert_int_eq(errno, EPERM);
}

/* In a container whose seccomp filter refuses keyrings, a user's job runs as the user all the
 * same: the filter refuses it the daemon's session keyring too. */
START_TEST(a_users_job_runs_where_a_seccomp_filter_refuses_keyrings)
{
        char want[40], *log;
        int a;

        refuse_keyrings();
        daemon_start(&d, "--system", NULL);
        open_daemon_dir();
        a = connect_as(user_a);
        log = run_job(a, "{\"command\":\"id -un\"}", "succeeded", 0);
        snprintf(want, sizeof(want), "%s\n", user_a);
        ck_assert_str_eq(log, want);
        free(log);
        close(a);
        daemon_stop(&d);
}
END_TEST

/* A state folder (or its logs folder) that someone else could have prepared is refused at start,
 * naming the folder and the problem; nothing is made in it. */
START_TEST(a_state_folder_that_is_not_the_daemons_alone_is_refused)
{
        char dir[64] = "/tmp/slowwork-state-XXXXXX", state[128], logs[160], link[128], sock[128];
        struct {
                const char *what, *said;
        } cases[] = {
            {"owned by user a", "belongs to uid"},
            {"world-writable", "may be written by other users"},
            {"a symbolic link", "is a symbolic link"},
            {"logs owned by user a", "belongs to uid"},
        };
        char *err;

        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(state, sizeof(state), "%s/state", dir);
        snprintf(logs, sizeof(logs), "%s/logs", state);
        snprintf(link, sizeof(link), "%s/link", dir);
        snprintf(sock, sizeof(sock), "%s/sock", dir);
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                const char *given = state;

                ck_assert_int_eq(mkdir(state, 0700), 0);
                if (i == 0)
                        ck_assert_int_eq(chown(state, user(user_a)->pw_uid, 0), 0);
                if (i == 1)
                        ck_assert_int_eq(chmod(state, 0777), 0);
                if (i == 2) {
                        ck_assert_int_eq(symlink(state, link), 0);
                        given = link;
                }
                if (i == 3) {
                        ck_assert_int_eq(mkdir(logs, 0700), 0);
                        ck_assert_int_eq(chown(logs, user(user_a)->pw_uid, 0), 0);
                }
                ck_assert_msg(daemon_run_stderr(&err, "--socket", sock, "--state-dir", given,
                                                NULL) != 0,
                              "a state folder %s was taken", cases[i].what);
                ck_assert_msg(strstr(err, cases[i].said) && strstr(err, given),
                              "for a state folder %s slowworkd said: %s", cases[i].what, err);
                ck_assert_int_ne(access(i == 2 ? link : state, F_OK), -1);
                free(err);
                unlink(link);
                rmdir(logs);
                ck_assert_int_eq(rmdir(state), 0); /* nothing was made in it */
        }
        rmdir(dir);
}
END_TEST

/* A run's log is made in place of whatever has its name: a link there is removed, not followed,
 * and what it pointed to stays as it was. */
START_TEST(a_link_in_the_logs_folder_is_never_followed)
{
        char victim[128], link[PATH_MAX + 32], *log, text[64] = "";
        int fd, victim_fd;
        json_object *rec;

        daemon_start(&d, NULL);
        snprintf(victim, sizeof(victim), "%s/victim", d.dir);
        victim_fd = open(victim, O_RDWR | O_CREAT | O_EXCL, 0600);
        ck_assert_int_ge(victim_fd, 0);
        ck_assert_int_eq(write(victim_fd, "root's own\n", 11), 11);
        snprintf(link, sizeof(link), "%s/logs/1.1.log", d.state);
        ck_assert_int_eq(symlink(victim, link), 0);
        fd = client_connect(d.sock);
        rec = job_wait(fd, job_submit(fd, "{\"command\":\"echo the run own\"}"));
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        log = job_log(fd, 1);
        ck_assert_str_eq(log, "the run own\n");
        ck_assert_int_eq(pread(victim_fd, text, sizeof(text) - 1, 0), 11);
        ck_assert_str_eq(text, "root's own\n");
        free(log);
        json_object_put(rec);
        close(victim_fd);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* A ping on a connection the daemon may have refused (and closed before reading), and the one
 * line that came back: the pong, or why it was refused; NULL when closed without a word. */
static char *ping_line(int fd)
{
        static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";

        if (send(fd, ping, sizeof(ping) - 1, MSG_NOSIGNAL) < 0)
                ck_assert_msg(errno == EPIPE || errno == ECONNRESET, "send: %s", strerror(errno));
        return client_read_line(fd);
}

static bool served(int fd)
{
        char *line = ping_line(fd);
        bool pong = line && strstr(line, "\"pong\":true");

        free(line);
        return pong;
}

/* Pings each connection: how many were served; each other one must have been told why. */
static int count_served(const int *fds, int n, const char *why)
{
        int pongs = 0;

        for (int i = 0; i < n; i++) {
                char *line = ping_line(fds[i]);

                ck_assert_msg(line != NULL,
                              "connection %d of %d was closed without a word (%d served before)",
                              i + 1, n, pongs);
                if (strstr(line, "\"pong\":true"))
                        pongs++;
                else
                        ck_assert_msg(strstr(line, "\"code\":-32004") && strstr(line, why),
                                      "connection %d of %d: %s", i + 1, n, line);
                free(line);
        }
        return pongs;
}

static void close_all(int *fds, int n)
{
        for (int i = 0; i < n; i++)
                close(fds[i]);
}

/* One user opening 1100 connections gets max-connections-per-user (64) of them; the others are
 * told why and closed. Root, an admin and another user still get in. */
START_TEST(one_user_cannot_take_the_connections_of_root_admins_or_others)
{
        enum { N = 1100 };
        int *fds = calloc(N, sizeof(int)), *more = calloc(70, sizeof(int)), fd, pongs;
        struct rlimit old, many;

        ck_assert(fds && more);
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
        many.rlim_cur = 4096;
        many.rlim_max = old.rlim_max > 4096 ? old.rlim_max : 4096;
        ck_assert_msg(setrlimit(RLIMIT_NOFILE, &many) == 0, "cannot open 4096 files: %s",
                      strerror(errno));
        connect_many_as(user_a, N, fds);
        pongs = count_served(fds, N, "max-connections-per-user");
        ck_assert_msg(pongs == 64, "%d of %d connections of one user were served, not 64", pongs,
                      N);
        ck_assert_msg(served(root_fd), "root's connection from before was dropped");
        fd = client_connect(d.sock);
        ck_assert_msg(served(fd), "root could not connect");
        close(fd);
        fd = connect_as(user_b);
        ck_assert_msg(served(fd), "another user could not connect");
        close(fd);
        /* An admin (by a supplementary group) has no cap once the daemon knows it is one. */
        fd = connect_as(user_c);
        ck_assert_msg(served(fd), "an admin could not connect");
        connect_many_as(user_c, 70, more);
        pongs = count_served(more, 70, "max-connections-per-user");
        ck_assert_msg(pongs == 70, "%d of 70 more connections of an admin were served", pongs);
        close_all(more, 70);
        close(fd);
        close_all(fds, N);
        free(fds);
        free(more);
        setrlimit(RLIMIT_NOFILE, &old);
}
END_TEST

/* The cap is a setting: checked as the others, and applied to new connections. */
START_TEST(max_connections_per_user_is_a_setting)
{
        static const char *const bad[] = {"0", "1025", "\"2\"", "2.5", "-1"};
        int fds[3];
        char params[96];

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(params, sizeof(params), "{\"max-connections-per-user\":%s}", bad[i]);
                ck_assert_int_eq(call_code(root_fd, "settings.set", params), -32602);
        }
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-connections-per-user\":2}"), 0);
        connect_many_as(user_b, 3, fds);
        ck_assert_int_eq(count_served(fds, 3, "uid"), 2);
        close_all(fds, 3);
}
END_TEST

/* The log budget is each user's own: one user's logs make room only among their own. */
START_TEST(one_users_logs_never_displace_anothers)
{
        static const char flood[] = "{\"command\":\"head -c 4000 /dev/zero | tr '\\\\0' x\"}";
        int a = connect_as(user_a), b = connect_as(user_b);
        char theirs[PATH_MAX], first[PATH_MAX];
        json_object *rec;

        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-log-bytes-per-user\":10000}"),
                         0);
        rec = job_wait(b, job_submit(b, flood));
        snprintf(theirs, sizeof(theirs), "%s", str_member(rec, "log"));
        json_object_put(rec);
        rec = job_wait(a, job_submit(a, flood));
        snprintf(first, sizeof(first), "%s", str_member(rec, "log"));
        json_object_put(rec);
        for (int i = 0; i < 3; i++)
                json_object_put(job_wait(a, job_submit(a, flood)));
        ck_assert_msg(access(first, F_OK) < 0, "user a's oldest log stayed");
        ck_assert_msg(access(theirs, F_OK) == 0, "user b's log went for user a's");
        close(a);
        close(b);
}
END_TEST

/* A number of the daemon's stats. */
static int64_t stat_of(int fd, const char *name)
{
        json_object *reply = client_call(fd, "stats", NULL);
        int64_t v = int_member(reply_result(reply), name);

        json_object_put(reply);
        return v;
}

/* n submits of the same params, sent 100 at a time before their replies are read. */
static void submit_many(int fd, const char *params, int n)
{
        char line[PATH_MAX * 4];

        for (int done = 0; done < n;) {
                int k = n - done < 100 ? n - done : 100;

                for (int i = 0; i < k; i++) {
                        snprintf(line, sizeof(line),
                                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"submit\","
                                 "\"params\":%s}",
                                 done + i, params);
                        client_send(fd, line);
                }
                for (int i = 0; i < k; i++) {
                        char *text = client_read_line(fd);
                        json_object *reply = json_tokener_parse(text);

                        ck_assert_msg(reply_code(reply) == 0, "submit failed: %s", text);
                        json_object_put(reply);
                        free(text);
                }
                done += k;
        }
}

/* The most runs at once in a file of "s" and "e" their jobs appended as they started and ended
 * (some may still run), and how many ended. */
static int most_at_once(const char *path, int *ret_ended)
{
        FILE *f = fopen(path, "r");
        int now = 0, most = 0, c;

        *ret_ended = 0;
        if (!f)
                return 0;
        while ((c = fgetc(f)) != EOF) {
                if (c == 's' && ++now > most)
                        most = now;
                else if (c == 'e') {
                        now--;
                        ++*ret_ended;
                }
        }
        fclose(f);
        return most;
}

static double wall_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * Issue 14's case: user a holds 1,000 queued jobs of 1 s each, max-running-per-user is 2 on a
 * pool of 4 threads. Never more than two of a's run at once, the rest wait held back, and user
 * b's job, submitted after a's 1,000, starts within one of a's runs' time. max-queued-per-user
 * refuses a's next submit but not b's.
 */
START_TEST(one_users_thousand_jobs_leave_room_for_another_users)
{
        int a = connect_as(user_a), b = connect_as(user_b), fd, ended = 0, most = 0;
        char path[PATH_MAX], go[PATH_MAX], params[3 * PATH_MAX + 128], want[128];
        json_object *rec;
        int64_t id;

        ck_assert_int_eq(call_code(root_fd, "settings.set",
                                   "{\"min-threads\":4,\"max-threads\":4,"
                                   "\"max-running-per-user\":2}"),
                         0);
        snprintf(path, sizeof(path), "%s/a-runs", d.dir);
        fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0666);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fchown(fd, user(user_a)->pw_uid, 0), 0);
        close(fd);
        /* a's jobs run until the file go is there. */
        snprintf(go, sizeof(go), "%s/go", d.dir);
        snprintf(params, sizeof(params),
                 "{\"command\":\"echo s >>%s; while [ ! -e %s ]; do sleep 0.01; done; "
                 "echo e >>%s\"}",
                 path, go, path);
        submit_many(a, params, 1000);
        /* Each of a's jobs reaches a pool thread to be held back: slow under the sanitizers. */
        for (double end = wall_now() + 60;
             wall_now() < end && stat_of(root_fd, "waiting_for_turn") < 990;)
                usleep(10 * 1000);
        ck_assert_int_ge(stat_of(root_fd, "waiting_for_turn"), 990);

        /* b's job runs while a's two run on, held by their gate: it waits neither for a's turn
         * nor for a thread a's held jobs took. */
        id = job_submit(b, "{\"command\":\"true\"}");
        rec = job_wait(b, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);

        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-queued-per-user\":10}"), 0);
        snprintf(want, sizeof(want), "user %u has ", (unsigned)user(user_a)->pw_uid);
        rec = client_call(a, "submit", "{\"command\":\"true\"}");
        ck_assert_int_eq(reply_code(rec), -32004);
        ck_assert(strstr(json_object_get_string(json_object_object_get(
                             json_object_object_get(rec, "error"), "message")),
                         want));
        json_object_put(rec);
        json_object_put(job_wait(b, job_submit(b, "{\"command\":\"true\"}")));

        /* Three rounds of a's runs, once they may end. */
        fd = open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        close(fd);
        for (double end = wall_now() + 30; wall_now() < end && ended < 6;) {
                usleep(10 * 1000);
                most = most_at_once(path, &ended);
        }
        ck_assert_int_ge(ended, 6);
        ck_assert_int_eq(most, 2);
        close(a);
        close(b);
}
END_TEST

/* The start of each job's run, in the order of ids: a's n, then b's one. */
static void starts_of(int a, const int64_t *ids_a, int n, int b, int64_t id_b, double *starts)
{
        for (int i = 0; i <= n; i++) {
                json_object *rec = i < n ? job_wait(a, ids_a[i]) : job_wait(b, id_b);

                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                starts[i] = json_object_get_double(json_object_object_get(rec, "started"));
                json_object_put(rec);
        }
}

/* One thread; a's job runs until the file go is there, three more of a's wait, then b's one,
 * submitted last: the starts of their runs, a's four then b's, once go is made. */
static void one_thread_behind_a_backlog(int a, int b, const char *go, bool fair,
                                        double *starts)
{
        char params[2 * PATH_MAX + 64];
        int64_t ids[4], id_b;
        int fd;

        snprintf(params, sizeof(params),
                 "{\"command\":\"while [ ! -e %s ]; do sleep 0.01; done\"}", go);
        for (int i = 0; i < 4; i++)
                ids[i] = job_submit(a, params);
        job_wait_state(a, ids[0], "running");
        id_b = job_submit(b, "{\"command\":\"true\"}");
        /* Fair share holds every run it has not let go, as max-running-per-user does;
         * without it, the runs wait in the pool's queue, b's at its end, from the submit on. */
        for (double end = wall_now() + 20;
             fair && wall_now() < end && stat_of(root_fd, "waiting_for_turn") < 4;)
                usleep(10 * 1000);
        fd = open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        close(fd);
        starts_of(a, ids, 4, b, id_b, starts);
}

/*
 * Fair share, the system instance's default: when the one thread frees, the next run is of the
 * user with the fewest runs in progress (the run that ended still counting for its owner), so
 * b's one job goes as soon as a's running one ends, before a's three older ones. With
 * fair-share no, runs go in the order of their jobs: b's last.
 */
START_TEST(fair_share_lets_a_users_first_job_go_at_the_next_end_of_anothers_run)
{
        int a = connect_as(user_a), b = connect_as(user_b);
        char go[PATH_MAX];
        double starts[5];
        json_object *settings;

        settings = call_ok(root_fd, "settings.get", NULL);
        ck_assert(json_object_get_boolean(json_object_object_get(settings, "fair-share")));
        json_object_put(settings);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"min-threads\":1,\"max-threads\":1}"),
                         0);

        snprintf(go, sizeof(go), "%s/go1", d.dir);
        one_thread_behind_a_backlog(a, b, go, true, starts);
        ck_assert_msg(starts[0] < starts[4] && starts[4] < starts[1] && starts[1] < starts[2] &&
                          starts[2] < starts[3],
                      "a's runs started at %f %f %f %f, b's at %f", starts[0], starts[1],
                      starts[2], starts[3], starts[4]);

        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"fair-share\":false}"), 0);
        snprintf(go, sizeof(go), "%s/go2", d.dir);
        one_thread_behind_a_backlog(a, b, go, false, starts);
        ck_assert_msg(starts[3] < starts[4], "a's last run started at %f, b's at %f", starts[3],
                      starts[4]);
        close(a);
        close(b);
}
END_TEST

/* Percent of a file system free for users. */
static double free_percent(const char *path)
{
        struct statvfs st;

        ck_assert_int_eq(statvfs(path, &st), 0);
        return (double)st.f_bavail * 100.0 / (double)st.f_blocks;
}

/*
 * A user's job floods its log on a small state file system (8 MiB, min-free-space 40%): its log
 * is cut at the floor instead of filling the disk, the user's next run waits (pending, not
 * failed) while submits are still taken and root's jobs still run, and it starts once there is
 * room again.
 */
START_TEST(a_log_flood_stops_at_min_free_space_and_runs_wait_for_room)
{
        char mnt[] = "/tmp/slowwork-small-XXXXXX", state[64], flood_log[PATH_MAX], tail[128];
        int a, root, fd;
        int64_t flood, next, doomed;
        json_object *rec;
        struct stat st;
        char *log;

        /* In a mount namespace of this test's own, so that the mount goes with it, whatever
         * happens; the daemon it starts shares it. */
        ck_assert_msg(unshare(CLONE_NEWNS) == 0 &&
                          mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0,
                      "cannot make a mount namespace: %s", strerror(errno));
        ck_assert_ptr_nonnull(mkdtemp(mnt));
        ck_assert_msg(mount("tmpfs", mnt, "tmpfs", 0, "size=8m,mode=0700") == 0,
                      "cannot mount a small tmpfs on %s: %s", mnt, strerror(errno));
        snprintf(state, sizeof(state), "%s/state", mnt);
        daemon_start(&d, "--system", "--state-dir", state, "--min-free-space", "40",
                     "--min-threads", "1", "--max-threads", "1", NULL);
        open_daemon_dir();
        a = connect_as(user_a);
        root = client_connect(d.sock);

        /* 10 MiB of output into 8 MiB: cut once less than 40% is free, not at a full disk. */
        flood = job_submit(a, "{\"command\":\"head -c 10485760 /dev/zero | tr '\\\\0' x\"}");
        rec = job_wait(a, flood);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        snprintf(flood_log, sizeof(flood_log), "%s", str_member(rec, "log"));
        json_object_put(rec);
        fd = open(flood_log, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(fstat(fd, &st), 0);
        ck_assert_int_gt(pread(fd, tail, sizeof(tail) - 1, st.st_size - (off_t)sizeof(tail) + 1),
                         0);
        tail[sizeof(tail) - 1] = '\0';
        close(fd);
        ck_assert_msg(strstr(tail, "below min-free-space"), "the flood's log ends: %s", tail);
        ck_assert_msg(free_percent(mnt) >= 38 && free_percent(mnt) < 40,
                      "%.1f%% free after the flood (log of %lld bytes)", free_percent(mnt),
                      (long long)st.st_size);

        /* Below the floor: a submit is taken, its run waits, pending. */
        next = job_submit(a, "{\"command\":\"echo after the flood\"}");
        for (time_t end = time(NULL) + 20; stat_of(root, "waiting_for_space") < 1;)
                ck_assert_msg(time(NULL) < end, "the run below the floor did not wait");
        rec = job_status(a, next);
        ck_assert_str_eq(str_member(rec, "state"), "pending");
        ck_assert_int_eq(int_member(rec, "runs"), 0);
        json_object_put(rec);
        /* A cancel takes a waiting run away, as a queued one. */
        doomed = job_submit(a, "{\"command\":\"echo never\"}");
        for (time_t end = time(NULL) + 20; stat_of(root, "waiting_for_space") < 2;)
                ck_assert_msg(time(NULL) < end, "the second run below the floor did not wait");
        ck_assert_int_eq(id_call_code(a, "cancel", doomed), 0);
        rec = job_wait(a, doomed);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        ck_assert_double_eq(json_object_get_double(json_object_object_get(rec, "started")), 0);
        json_object_put(rec);
        ck_assert_int_eq(stat_of(root, "waiting_for_space"), 1);
        /* Root's jobs run whatever the free space (one may free it). */
        rec = job_wait(root, job_submit(root, "{\"command\":\"true\"}"));
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);

        /* Room again: the run starts by itself. */
        ck_assert_int_eq(unlink(flood_log), 0);
        rec = job_wait(a, next);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        log = job_log(a, next);
        ck_assert_str_eq(log, "after the flood\n");
        free(log);
        ck_assert_int_eq(stat_of(root, "waiting_for_space"), 0);
        close(a);
        close(root);
        daemon_stop(&d);
        ck_assert_int_eq(umount(mnt), 0);
        rmdir(mnt);
}
END_TEST

/*
 * Every user bounded: max-jobs-per-user, max-job-bytes-per-user and a history-limit per user.
 */

static int64_t setting_of(int fd, const char *name)
{
        json_object *reply = client_call(fd, "settings.get", NULL);
        int64_t v = int_member(reply_result(reply), name);

        json_object_put(reply);
        return v;
}

/* The restarted system daemon, after a kill, and root's connection to it. */
static void restart_hard(void)
{
        daemon_kill_hard(&d);
        daemon_start_again(&d, "--system", "--kill-grace", "1", "--stop-timeout", "1", NULL);
        open_daemon_dir();
        close(root_fd);
        root_fd = client_connect(d.sock);
        ck_assert_int_ge(root_fd, 0);
}

/* The system instance's defaults for them yield to the configuration file and to the flags. */
START_TEST(the_system_defaults_yield_to_the_file_and_the_flags)
{
        char config_path[64];
        FILE *f;

        snprintf(config_path, sizeof(config_path), "/tmp/swsystem-%d.conf", (int)getpid());
        f = fopen(config_path, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "max-job-bytes-per-user = 0\nmax-jobs-per-user = 7\n");
        ck_assert_int_eq(fclose(f), 0);
        daemon_stop_clean(&d);
        daemon_start_again(&d, "--system", "--config", config_path, "--max-jobs-per-user", "5",
                           NULL);
        unlink(config_path);
        close(root_fd);
        root_fd = client_connect(d.sock);
        ck_assert_int_eq(setting_of(root_fd, "max-jobs-per-user"), 5);
        ck_assert_int_eq(setting_of(root_fd, "max-job-bytes-per-user"), 0);
}
END_TEST

/* A refused submit: -32004, with a message that names the setting. */
static void assert_refused(int fd, const char *params, const char *setting)
{
        char msg[512];

        ck_assert_int_eq(call_error(fd, "submit", params, msg, sizeof(msg)), -32004);
        ck_assert_msg(strstr(msg, setting), "the refusal does not name %s: %s", setting, msg);
}

/* Waits (20 s at most) until the job has ended n runs. */
static void wait_runs(int fd, int64_t id, int64_t n)
{
        int64_t runs = -1;

        for (int i = 0; i < 2000; i++) {
                json_object *st = job_status(fd, id);

                runs = int_member(st, "runs");
                json_object_put(st);
                if (runs >= n && strcmp(job_state_of(fd, id), "running") != 0)
                        return;
                sleep_ms(10);
        }
        ck_abort_msg("job %lld ran %lld times, not %lld", (long long)id, (long long)runs,
                     (long long)n);
}

static const char delayed[] = "{\"command\":\"true\",\"delay\":3600}";

/*
 * max-jobs-per-user counts every live job of a user, whatever keeps it live: persist, a
 * schedule, a handle, a stash, a delay, a retry to come. One more is refused -32004; another
 * user and an admin are not bound; a job that retires makes room; a restart counts the jobs
 * it restores.
 */
START_TEST(max_jobs_per_user_counts_every_live_job_of_a_user)
{
        int a = connect_as(user_a), b = connect_as(user_b), c = connect_as(user_c);
        int64_t persist, hold, later, again;
        char params[64], msg[256];

        /* The system instance's default, then the test's. */
        ck_assert_int_eq(setting_of(root_fd, "max-jobs-per-user"), 10000);
        /* Only admins set it, and only to a count. */
        ck_assert_int_eq(call_code(a, "settings.set", "{\"max-jobs-per-user\":0}"), -32002);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-jobs-per-user\":-1}"), -32602);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-job-bytes-per-user\":\"1\"}"),
                         -32602);
        ck_assert_int_eq(setting_of(root_fd, "max-jobs-per-user"), 10000);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-jobs-per-user\":6}"), 0);
        persist = job_submit(a, "{\"command\":\"true\",\"persist\":true}");
        json_object_put(job_wait(a, persist));
        hold = job_submit(a, "{\"command\":\"true\",\"hold\":true}");
        json_object_put(job_wait(a, hold));
        job_submit(a, "{\"command\":\"true\",\"every\":3600}");
        job_submit(a, "{\"command\":\"true\",\"stashed\":true}");
        later = job_submit(a, delayed);
        wait_runs(a, job_submit(a, "{\"command\":\"false\",\"retries\":3,\"retry_delay\":3600}"),
                  1);
        assert_refused(a, "{\"command\":\"true\"}", "max-jobs-per-user is 6");
        assert_refused(a, "{\"command\":\"true\",\"stashed\":true}", "max-jobs-per-user");
        /* Neither another user nor an admin (root, a member of the admin group) is bound. */
        for (int i = 0; i < 7; i++) {
                if (i < 6)
                        job_submit(b, delayed);
                job_submit(c, delayed);
                job_submit(root_fd, delayed);
        }
        assert_refused(b, delayed, "max-jobs-per-user");
        /* A job that retires makes room for one, and no more. */
        ck_assert_int_eq(id_call_code(a, "cancel", later), 0);
        job_wait_retired(a, later);
        again = job_submit(a, delayed);
        assert_refused(a, delayed, "max-jobs-per-user");
        /* A restart makes a new job: counted as a submit is. */
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)later);
        ck_assert_int_eq(call_error(a, "restart", params, msg, sizeof(msg)), -32004);
        ck_assert_msg(strstr(msg, "max-jobs-per-user"), "%s", msg);
        /* The handle goes with a's connection: room for one again, also after a restart, which
         * counts the jobs it restores (and keeps the setting). */
        close(a);
        job_wait_retired(root_fd, hold);
        restart_hard();
        a = connect_as(user_a);
        ck_assert_str_eq(job_state_of(a, again), "pending");
        job_submit(a, delayed);
        assert_refused(a, delayed, "max-jobs-per-user is 6");
        /* 0: no limit. */
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-jobs-per-user\":0}"), 0);
        job_submit(a, delayed);
        close(a);
        close(b);
        close(c);
}
END_TEST

/*
 * A JSON-RPC batch of a user counts as its requests would sent alone: max-jobs-per-user refuses
 * the member past it, a member about another user's job is refused, the others are done, each
 * answered in its place; "id": null is answered with null, and positional params refused.
 */
START_TEST(a_users_batch_counts_as_its_requests_sent_alone)
{
        int a = connect_as(user_a), b = connect_as(user_b);
        int64_t theirs = job_submit(b, delayed);
        json_object *replies, *r;
        char batch[512], *line;

        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-jobs-per-user\":2}"), 0);
        snprintf(batch, sizeof(batch),
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\",\"params\":%s},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"cancel\",\"params\":{\"id\":%lld}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"submit\",\"params\":%s},"
                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"submit\",\"params\":%s},"
                 "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"status\",\"params\":[1]}]",
                 delayed, (long long)theirs, delayed, delayed);
        client_send(a, batch);
        line = client_read_line(a);
        ck_assert_ptr_nonnull(line);
        replies = json_tokener_parse(line);
        ck_assert_msg(json_object_is_type(replies, json_type_array) &&
                          json_object_array_length(replies) == 5,
                      "%s", line);
        ck_assert_int_eq(reply_code(json_object_array_get_idx(replies, 0)), 0);
        ck_assert_int_eq(reply_code(json_object_array_get_idx(replies, 1)), -32002);
        r = json_object_array_get_idx(replies, 2);
        ck_assert_int_eq(reply_code(r), 0);
        ck_assert(json_object_object_get_ex(r, "id", NULL) &&
                  json_object_get_type(json_object_object_get(r, "id")) == json_type_null);
        r = json_object_array_get_idx(replies, 3);
        ck_assert_int_eq(reply_code(r), -32004);
        ck_assert_msg(strstr(json_object_get_string(json_object_object_get(
                                 json_object_object_get(r, "error"), "message")),
                             "max-jobs-per-user"),
                      "%s", line);
        ck_assert_int_eq(reply_code(json_object_array_get_idx(replies, 4)), -32602);
        /* b's job is as it was. */
        ck_assert_str_eq(job_state_of(b, theirs), "pending");
        json_object_put(replies);
        free(line);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-jobs-per-user\":0}"), 0);
        close(a);
        close(b);
}
END_TEST

/* A delayed submit's params with an environment of about size bytes (BIG, of 'x's). */
static char *big_env_params(size_t size)
{
        static const char head[] = "{\"command\":\"true\",\"delay\":3600,\"env\":{\"BIG\":\"";
        char *params = malloc(sizeof(head) + size + 8), *at;

        ck_assert_ptr_nonnull(params);
        at = mempcpy(params, head, sizeof(head) - 1);
        memset(at, 'x', size);
        strcpy(at + size, "\"}}");
        return params;
}

/*
 * max-job-bytes-per-user sums what a user's live jobs keep: a big environment is refused -32004
 * naming the setting once the sum would pass it, another user and an admin are not bound, a
 * job that retires gives its bytes back, an edit that grows a job counts and changes nothing
 * when refused, and a restart counts the restored jobs' bytes.
 */
START_TEST(max_job_bytes_per_user_counts_what_a_users_live_jobs_keep)
{
        int a = connect_as(user_a), b = connect_as(user_b), c = connect_as(user_c);
        char *big = big_env_params(200000), *edit, msg[512];
        int64_t first, small;
        json_object *st;

        ck_assert_int_eq(setting_of(root_fd, "max-job-bytes-per-user"), 256 * 1024 * 1024);
        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"max-job-bytes-per-user\":250000}"),
                         0);
        first = job_submit(a, big);
        assert_refused(a, big, "max-job-bytes-per-user is 250000");
        job_submit(b, big);
        job_submit(c, big);
        job_submit(c, big);
        job_submit(root_fd, big);
        job_submit(root_fd, big);
        /* The first one's bytes come back when it retires. */
        ck_assert_int_eq(id_call_code(a, "cancel", first), 0);
        job_wait_retired(a, first);
        job_submit(a, big);
        assert_refused(a, big, "max-job-bytes-per-user");
        /* A small job fits; an edit that would make it big does not, and leaves it as it was. */
        small = job_submit(a, "{\"command\":\"echo small\",\"delay\":3600}");
        edit = malloc(200100);
        ck_assert_ptr_nonnull(edit);
        snprintf(edit, 200100, "{\"id\":%lld,\"command\":\"echo %0*d\"}", (long long)small, 60000,
                 0);
        ck_assert_int_eq(call_error(a, "edit", edit, msg, sizeof(msg)), -32004);
        ck_assert_msg(strstr(msg, "max-job-bytes-per-user"), "%s", msg);
        st = job_status(a, small);
        ck_assert_str_eq(str_member(st, "command"), "echo small");
        json_object_put(st);
        /* An edit that shrinks is taken. */
        snprintf(edit, 200100, "{\"id\":%lld,\"command\":\"true\"}", (long long)small);
        ck_assert_int_eq(call_code(a, "edit", edit), 0);
        /* After a restart, the restored jobs' bytes are counted again. */
        close(a);
        restart_hard();
        a = connect_as(user_a);
        assert_refused(a, big, "max-job-bytes-per-user is 250000");
        job_submit(a, "{\"command\":\"true\",\"delay\":3600}");
        free(edit);
        free(big);
        close(a);
        close(b);
        close(c);
}
END_TEST

/* A run of a finished job: its status and log, as its owner sees them. */
static void assert_kept(int fd, int64_t id, const char *log_text)
{
        json_object *st = job_status(fd, id);
        char *log;

        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "succeeded");
        json_object_put(st);
        log = job_log(fd, id);
        ck_assert_msg(strstr(log, log_text), "job %lld's log: %s", (long long)id, log);
        free(log);
}

/*
 * history-limit is per user: one user's retries and short jobs push out only that user's
 * oldest runs, never another user's finished job (its status and its log stay), in memory and
 * in the state database (a restart reads each user's last runs).
 */
START_TEST(one_users_runs_never_push_another_users_out_of_the_history)
{
        int a = connect_as(user_a), b = connect_as(user_b);
        int64_t theirs, retried, mine[3];
        char log_path[PATH_MAX], *ids, want[64];
        json_object *rec;

        ck_assert_int_eq(call_code(root_fd, "settings.set", "{\"history-limit\":3}"), 0);
        theirs = job_submit(b, "{\"command\":\"echo theirs\"}");
        rec = job_wait(b, theirs);
        snprintf(log_path, sizeof(log_path), "%s", str_member(rec, "log"));
        json_object_put(rec);
        retried = job_submit(a, "{\"command\":\"echo try; false\",\"retries\":4,\"retry_delay\":0}");
        rec = job_wait(a, retried);
        ck_assert_int_eq(int_member(rec, "attempt"), 5);
        json_object_put(rec);
        for (int i = 0; i < 3; i++) {
                mine[i] = job_submit(a, "{\"command\":\"echo mine\"}");
                json_object_put(job_wait(a, mine[i]));
        }
        for (int round = 0; round < 2; round++) {
                assert_kept(b, theirs, "theirs");
                ck_assert_msg(access(log_path, F_OK) == 0, "b's log went for a's runs");
                /* a's own oldest runs went: the retried job's five. */
                ck_assert_int_eq(id_call_code(a, "status", retried), -32001);
                for (int i = 0; i < 3; i++)
                        assert_kept(a, mine[i], "mine");
                ids = history_ids(a, NULL);
                snprintf(want, sizeof(want), "%lld %lld %lld", (long long)mine[2],
                         (long long)mine[1], (long long)mine[0]);
                ck_assert_str_eq(ids, want);
                free(ids);
                if (round == 0) {
                        close(a);
                        close(b);
                        restart_hard();
                        a = connect_as(user_a);
                        b = connect_as(user_b);
                }
        }
        close(a);
        close(b);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("system");
        TCase *tc = tcase_create("system"), *user_tc = tcase_create("user");
        TCase *caps_tc = tcase_create("caps");

        if (geteuid() != 0) {
                printf("test-system: skipped: only root can make the test users\n");
                return SKIP;
        }
        if (access("/usr/sbin/useradd", X_OK) < 0) {
                printf("test-system: skipped: no /usr/sbin/useradd\n");
                return SKIP;
        }
        main_pid = getpid();
        /* A session keyring of the daemons' own, which their users' jobs must not get (one: in
         * the process that runs the cases). */
        if (suite_runs_here() &&
            syscall(SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, "slowwork-test-daemon") < 0) {
                fprintf(stderr, "test-system: cannot join a session keyring: %s\n",
                        strerror(errno));
                return EXIT_FAILURE;
        }
        if (suite_in_case()) {
                name_users(); /* the suite's first process made them and removes them */
        } else {
                atexit(remove_users);
                signal(SIGINT, on_fatal_signal);
                signal(SIGTERM, on_fatal_signal);
                signal(SIGHUP, on_fatal_signal);
                if (add_users() < 0) {
                        fprintf(stderr, "test-system: cannot make the test users\n");
                        return EXIT_FAILURE;
                }
        }

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test_alone(tc, a_users_job_starts_from_a_logins_limits_in_its_own_keyring);
        tcase_add_test(tc, the_socket_is_open_to_every_user_and_the_state_private);
        tcase_add_test(tc, a_job_runs_with_its_submitters_ids_groups_and_home);
        tcase_add_test(tc, a_job_cannot_wait_for_another_users_job);
        tcase_add_test(tc, a_job_sent_without_an_environment_gets_a_path_and_the_users_names_only);
        tcase_add_test(tc, a_users_job_has_its_own_group_no_stdin_default_signals_and_three_fds);
        tcase_add_test(tc, a_folder_the_user_may_not_enter_fails_the_run);
        tcase_add_test(tc, a_missing_program_fails_the_users_run_with_a_note);
        tcase_add_test(tc, another_user_can_neither_see_nor_touch_a_live_job);
        tcase_add_test(tc, another_user_can_neither_edit_nor_release_a_stashed_job);
        tcase_add_test(tc, another_user_cannot_read_a_finished_jobs_record_or_log);
        tcase_add_test(tc, an_admin_restarts_a_users_ended_job_as_that_user);
        tcase_add_test(tc, history_shows_a_user_only_their_own_runs_and_admins_all);
        tcase_add_test(tc, a_user_cannot_change_settings);
        tcase_add_test(tc, on_end_commands_run_as_the_jobs_owner);
        tcase_add_test(tc, only_root_sets_on_end_in_the_system_instance);
        tcase_add_test(tc, only_admins_pause_and_resume);
        tcase_add_test(tc, only_admins_add_remove_change_or_pause_queues_and_users_use_them);
        tcase_add_test(tc, a_user_suspends_their_own_job_but_not_anothers);
        tcase_add_test(tc, only_admins_reload_the_configuration);
        tcase_add_test(tc, only_admins_reexec_the_daemon);
        tcase_add_test(tc, only_admins_forget_nodes);
        tcase_add_test(tc, only_root_runs_plugin_jobs);
        tcase_add_test(tc, a_users_job_stays_under_the_ceilings_and_gets_them_when_it_asks_none);
        tcase_add_test(tc, a_queues_own_ceiling_overrides_the_daemons);
        tcase_add_test(tc, a_restarted_job_is_brought_under_a_lowered_ceiling);
        tcase_add_test(tc, only_root_sets_the_metrics_file_in_the_system_instance);
        tcase_add_test(tc, an_admin_does_not_choose_what_roots_jobs_run);
        tcase_add_test(tc, a_jobs_limits_from_a_ceiling_survive_a_crash);
        tcase_add_test(tc, only_admins_set_nice_below_0);
        tcase_add_test(tc, root_changes_settings_and_sees_and_touches_every_job);
        tcase_add_test(tc, an_admin_group_member_changes_settings_and_sees_and_touches_every_job);
        tcase_add_test(tc, roots_job_runs_as_root_with_the_environment_it_sent);
        tcase_add_test(tc, a_job_whose_owner_is_gone_fails_with_a_note);
        tcase_add_test(tc, a_system_database_opened_without_system_is_refused);
        tcase_add_test(tc, one_user_cannot_take_the_connections_of_root_admins_or_others);
        tcase_add_test(tc, max_connections_per_user_is_a_setting);
        tcase_add_test(tc, one_users_logs_never_displace_anothers);
        tcase_add_test(tc, one_users_thousand_jobs_leave_room_for_another_users);
        tcase_add_test(tc, fair_share_lets_a_users_first_job_go_at_the_next_end_of_anothers_run);
        suite_add_tcase(s, tc);
        tcase_add_checked_fixture(caps_tc, setup, teardown);
        tcase_set_timeout(caps_tc, 60);
        tcase_add_test(caps_tc, the_system_defaults_yield_to_the_file_and_the_flags);
        tcase_add_test(caps_tc, max_jobs_per_user_counts_every_live_job_of_a_user);
        tcase_add_test(caps_tc, a_users_batch_counts_as_its_requests_sent_alone);
        tcase_add_test(caps_tc, max_job_bytes_per_user_counts_what_a_users_live_jobs_keep);
        tcase_add_test(caps_tc, one_users_runs_never_push_another_users_out_of_the_history);
        suite_add_tcase(s, caps_tc);
        tcase_set_timeout(user_tc, 60);
        tcase_add_test(user_tc, the_user_instance_refuses_another_uid);
        tcase_add_test(user_tc, a_state_folder_that_is_not_the_daemons_alone_is_refused);
        tcase_add_test(user_tc, a_link_in_the_logs_folder_is_never_followed);
        tcase_add_test(user_tc, a_log_flood_stops_at_min_free_space_and_runs_wait_for_room);
        tcase_add_test(user_tc, a_users_job_runs_where_a_seccomp_filter_refuses_keyrings);
        suite_add_tcase(s, user_tc);
        return run_suite(s);
}
