/* SPDX-License-Identifier: MIT */
/* The state database: what a restart, a crash, or a bad database file does to the jobs. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <limits.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "pg-helpers.h"
#include "run-suite.h"

static struct daemon d;

/* The next line as a reply object (which the caller puts). */
static json_object *read_reply(int fd)
{
        char *line = client_read_line(fd);
        json_object *reply = json_tokener_parse(line);

        free(line);
        return reply;
}

/* The error code of a call (0 for a result). */
static int call_code(int fd, const char *method, const char *params)
{
        json_object *reply = client_call(fd, method, params);
        int code = reply_code(reply);

        json_object_put(reply);
        return code;
}

/* The job's status, or NULL when the daemon knows no such job. */
static json_object *status_or_null(int fd, int64_t id)
{
        char params[64];
        json_object *reply, *result;

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        reply = client_call(fd, "status", params);
        if (reply_code(reply) == -32001) {
                json_object_put(reply);
                return NULL;
        }
        ck_assert_int_eq(reply_code(reply), 0);
        result = json_object_get(reply_result(reply));
        json_object_put(reply);
        return result;
}

START_TEST(a_clean_restart_keeps_the_queue_the_held_and_the_history)
{
        json_object *st, *rec;
        double submitted, next_run;
        int fd, i;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", "--stop-timeout", "0.1",
                     "--kill-grace", "0.2", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"echo first\"}"), 1);
        json_object_put(job_wait(fd, 1));
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"sleep 30\"}"), 2);
        job_wait_state(fd, 2, "running");
        for (i = 3; i <= 5; i++)
                ck_assert_int_eq(
                    job_submit(fd, "{\"command\":\"echo $A\",\"env\":{\"A\":\"kept\"}}"), i);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\",\"key\":\"k\",\"persist\":true,"
                                        "\"delay\":3600}"),
                         6);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\",\"delay\":3600}"), 7);
        st = job_status(fd, 7);
        submitted = json_object_get_double(json_object_object_get(st, "submitted"));
        next_run = json_object_get_double(json_object_object_get(st, "next_run"));
        ck_assert(submitted > 0 && next_run >= submitted + 3600);
        json_object_put(st);
        close(fd);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &i, 0), d.pid);
        ck_assert(WIFEXITED(i) && WEXITSTATUS(i) == 0);

        daemon_start_again(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        /* The finished job is in the history; the cut one ran again; the queue ran in order. */
        rec = job_wait(fd, 1);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        job_wait_state(fd, 2, "running"); /* the restart may be a moment from starting it */
        st = job_status(fd, 2);
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "interrupted");
        ck_assert_int_eq(int_member(st, "runs"), 2);
        json_object_put(st);
        st = client_call(fd, "cancel", "{\"id\":2}");
        ck_assert_int_eq(reply_code(st), 0);
        json_object_put(st);
        for (i = 3; i <= 5; i++) {
                char *log;

                rec = job_wait(fd, i);
                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                json_object_put(rec);
                log = job_log(fd, i);
                ck_assert_str_eq(log, "kept\n"); /* its environment was kept with it */
                free(log);
        }
        st = job_status(fd, 6);
        ck_assert_str_eq(str_member(st, "state"), "pending"); /* still delayed */
        ck_assert_int_eq(int_member(st, "handles"), 1);
        ck_assert_str_eq(str_member(st, "key"), "k");
        json_object_put(st);
        st = job_status(fd, 7); /* delayed, not held: kept all the same */
        ck_assert_str_eq(str_member(st, "state"), "pending");
        /* The same payload as job 6's, read once: its own key (none) and handles. */
        ck_assert_ptr_null(json_object_object_get(st, "key"));
        ck_assert_int_eq(int_member(st, "handles"), 0);
        ck_assert_str_eq(str_member(st, "command"), "true");
        /* When it was submitted and when it is to run, as they were. */
        ck_assert(json_object_get_double(json_object_object_get(st, "submitted")) == submitted);
        ck_assert(json_object_get_double(json_object_object_get(st, "next_run")) == next_run);
        json_object_put(st);
        /* Ids go on from where they were. */
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\"}"), 8);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* Waits until the job's running process or plugin has written what (its pool thread may say
 * "running" a moment before the run is under way). */
static void wait_logged(int fd, int64_t id, const char *what)
{
        for (int i = 0; i < 2000; i++) {
                char *log = job_log(fd, id);
                bool found = strstr(log, what) != NULL;

                free(log);
                if (found)
                        return;
                usleep(10000);
        }
        ck_abort_msg("job %lld never logged \"%s\"", (long long)id, what);
}

/* Priorities, a stash and an edit are kept: the order after a restart is the one before. */
START_TEST(a_crash_keeps_priorities_stashed_jobs_and_edits)
{
        const int prio[] = {0, 5, -3, 5, 0};
        char order[PATH_MAX], params[PATH_MAX + 128], got[16] = "", line[16];
        int64_t ids[5], stashed;
        json_object *st;
        size_t n = 0;
        FILE *f;
        int fd;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        snprintf(order, sizeof(order), "%s/order", d.dir);
        json_object_put(call_ok(fd, "pause", NULL));
        for (int i = 0; i < 5; i++) {
                snprintf(params, sizeof(params), "{\"command\":\"echo %c >> %s\",\"priority\":%d}",
                         'A' + i, order, prio[i]);
                ids[i] = job_submit(fd, params);
        }
        snprintf(params, sizeof(params),
                 "{\"command\":\"echo S >> %s\",\"priority\":50,\"stashed\":true}", order);
        stashed = job_submit(fd, params);
        /* E goes after D, its elder at priority 5, and runs what it was changed to. */
        snprintf(params, sizeof(params),
                 "{\"id\":%lld,\"priority\":5,\"name\":\"e\",\"command\":\"echo e >> %s\"}",
                 (long long)ids[4], order);
        json_object_put(call_ok(fd, "edit", params));
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        st = status_or_null(fd, stashed);
        ck_assert_ptr_nonnull(st);
        ck_assert_str_eq(str_member(st, "state"), "stashed");
        ck_assert_int_eq(int_member(st, "priority"), 50);
        json_object_put(st);
        st = status_or_null(fd, ids[4]);
        ck_assert_ptr_nonnull(st);
        ck_assert_int_eq(int_member(st, "priority"), 5);
        ck_assert_str_eq(str_member(st, "name"), "e");
        snprintf(params, sizeof(params), "echo e >> %s", order);
        ck_assert_str_eq(str_member(st, "command"), params);
        json_object_put(st);
        json_object_put(call_ok(fd, "resume", NULL));
        for (int i = 0; i < 5; i++)
                json_object_put(job_wait(fd, ids[i]));
        ck_assert_str_eq(job_state_of(fd, stashed), "stashed");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)stashed);
        json_object_put(call_ok(fd, "enqueue", params));
        json_object_put(job_wait(fd, stashed));
        f = fopen(order, "r");
        ck_assert_ptr_nonnull(f);
        while (n + 1 < sizeof(got) && fgets(line, sizeof(line), f))
                got[n++] = line[0];
        fclose(f);
        ck_assert_str_eq(got, "BDeACS");
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* The runs that ran, in the order file, are jobs 0, 1, 2...: how many. */
static int runs_in_order(const char *order)
{
        char *text = file_text(order), *line, *next;
        int n = 0;

        for (line = text; (next = strchr(line, '\n')); line = next + 1, n++) {
                *next = '\0';
                ck_assert_msg(atoi(line) == n, "run %d was job %s's, not job %d's", n + 1, line, n);
        }
        free(text);
        return n;
}

/* A resume that comes while the one thread still takes runs out of the queue to hold them, or
 * while one it held is on its way to the gate: each goes back to its place, and the runs still
 * queued behind it stay behind it. Where the resume falls is chance; sent right behind the submits
 * it nearly always falls among the holds of their runs (the gate that queued a held run again at
 * the tail failed there 44 times in 45), and at once after a restart, among those of the restored
 * runs, whose order the restart keeps. */
START_TEST(a_resume_while_runs_are_held_back_keeps_the_queue_order)
{
        enum { JOBS = 500, RESTARTS = 1, EACH = 5 };
        char order[PATH_MAX], request[PATH_MAX + 160], *line;
        int64_t ids[JOBS];
        json_object *reply;
        int fd, i, ran = 0;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        snprintf(order, sizeof(order), "%s/order", d.dir);
        json_object_put(call_ok(fd, "pause", NULL));
        for (i = 0; i < JOBS; i++) {
                snprintf(request, sizeof(request),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"submit\","
                         "\"params\":{\"command\":\"echo %d >> %s\"}}",
                         i, i, order);
                client_send(fd, request);
        }
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":-1,\"method\":\"resume\"}");
        for (i = 0; i <= JOBS; i++) {
                reply = json_tokener_parse(line = client_read_line(fd));
                ck_assert_int_eq(reply_code(reply), 0);
                if (i < JOBS)
                        ids[i] = int_member(reply_result(reply), "id");
                json_object_put(reply);
                free(line);
        }
        for (int round = 0; round <= RESTARTS; round++) {
                if (round > 0) {
                        close(fd);
                        daemon_kill_hard(&d);
                        daemon_start_again(&d, "--min-threads", "1", "--max-threads", "1", NULL);
                        fd = client_connect(d.sock);
                        json_object_put(call_ok(fd, "resume", NULL));
                }
                ck_assert_int_lt(ran + EACH, JOBS);
                json_object_put(job_wait(fd, ids[ran + EACH - 1]));
                /* Nothing runs when it is killed: no run is cut to run again. */
                json_object_put(call_ok(fd, "pause", "{\"drain\":true}"));
                i = runs_in_order(order);
                ck_assert_int_ge(i, ran + EACH);
                ran = i;
        }
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_crash_cuts_a_shell_run_which_runs_again_but_not_a_plugins)
{
        json_object *st;
        int fd;

        daemon_start(&d, "--plugin-dir", PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"echo started; sleep 30\"}"), 1);
        ck_assert_int_eq(job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"until_stopped\"}"), 2);
        wait_logged(fd, 1, "started");
        wait_logged(fd, 2, "waiting");
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, "--plugin-dir", PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        job_wait_state(fd, 1, "running");
        st = job_status(fd, 1);
        ck_assert_int_eq(int_member(st, "runs"), 2);
        ck_assert_int_eq(int_member(json_object_object_get(st, "last"), "run"), 1);
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "interrupted");
        json_object_put(st);
        st = job_status(fd, 2);
        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_int_eq(int_member(st, "runs"), 1);
        ck_assert_int_eq(int_member(st, "handles"), 1); /* held, for an enqueue or a release */
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "interrupted");
        json_object_put(st);
        ck_assert_int_eq(call_code(fd, "cancel", "{\"id\":1}"), 0);
        ck_assert_int_eq(call_code(fd, "release", "{\"id\":2}"), 0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_plugin_that_crashes_the_daemon_does_not_run_again_on_its_own)
{
        json_object *st;
        int fd, status;

        daemon_start(&d, "--plugin-dir", TEST_PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        /* Queued and on disk as pending, held by the pause until then; it takes the daemon down
         * as soon as the resume lets it start (the resume's reply may never come). */
        json_object_put(call_ok(fd, "pause", NULL));
        ck_assert_int_eq(job_submit(fd, "{\"plugin\":\"crash\",\"entry\":\"now\"}"), 1);
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"resume\"}");
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
        close(fd);

        daemon_start_again(&d, "--plugin-dir", TEST_PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        st = job_status(fd, 1);
        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_int_eq(int_member(st, "handles"), 1);
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "interrupted");
        json_object_put(st);
        ck_assert(daemon_alive(&d));
        ck_assert_int_eq(call_code(fd, "release", "{\"id\":1}"), 0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_kill_under_load_loses_no_acknowledged_job)
{
        /* Five kills take every path (a kill amid commits, the restore, cut runs run again); where
         * each falls is random, so each make check tries five more. */
        enum { ROUNDS = 5, MIN_SENT = 20, MAX_SENT = 100 };
        /* Mostly quick, so that runs end while submits come in; some long enough to be cut. */
        static const char *const commands[] = {"true", "true", "true",       "true",
                                               "true", "true", "sleep 0.01", "sleep 0.1"};
        int64_t acked_ids[ROUNDS * MAX_SENT];
        int nacked = 0, round, fd, i;
        int64_t base = 0; /* the last id before the round */

        srand((unsigned)time(NULL));
        daemon_start(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        for (round = 0; round < ROUNDS; round++) {
                int sent = MIN_SENT + rand() % (MAX_SENT - MIN_SENT), acked = rand() % (sent + 1);
                int recovered = 0;

                fd = client_connect(d.sock);
                ck_assert_int_ge(fd, 0);
                for (i = 0; i < sent; i++) {
                        char request[160];

                        snprintf(request, sizeof(request),
                                 "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"submit\","
                                 "\"params\":{\"command\":\"%s\"}}",
                                 i, commands[rand() % 8]);
                        client_send(fd, request);
                }
                for (i = 0; i < acked; i++) {
                        char *line = client_read_line(fd);
                        json_object *reply = json_tokener_parse(line);

                        ck_assert_int_eq(reply_code(reply), 0);
                        ck_assert_int_eq(int_member(reply_result(reply), "id"), base + 1 + i);
                        acked_ids[nacked++] = base + 1 + i;
                        json_object_put(reply);
                        free(line);
                }
                daemon_kill_hard(&d);
                close(fd);

                daemon_start_again(&d, "--min-threads", "4", "--max-threads", "4", NULL);
                fd = client_connect(d.sock);
                /* The acknowledged ones are all there; what was sent after them may be too
                 * (committed, its reply cut by the kill), but nothing more. */
                for (i = 1; i <= sent; i++) {
                        json_object *st = status_or_null(fd, base + i);

                        ck_assert_msg(st || i > acked, "round %d: acknowledged job %lld is lost",
                                      round, (long long)(base + i));
                        if (!st)
                                break;
                        recovered++;
                        json_object_put(st);
                }
                ck_assert_int_ge(recovered, acked);
                ck_assert_ptr_null(status_or_null(fd, base + sent + 1));
                base += recovered;
                close(fd);
        }
        /* Every acknowledged job ran to its end once, after runs that a kill cut. */
        fd = client_connect(d.sock);
        for (i = 0; i < nacked; i++) {
                json_object *rec = job_wait(fd, acked_ids[i]);

                ck_assert_msg(strcmp(str_member(rec, "outcome"), "succeeded") == 0, "job %lld: %s",
                              (long long)acked_ids[i], str_member(rec, "outcome"));
                json_object_put(rec);
        }
        close(fd);
        daemon_stop(&d);
}
END_TEST

static void write_file(const char *path, const char *text);

/* Whether a line arrives within ms milliseconds. */
static bool readable_within(int fd, int ms)
{
        struct pollfd pfd = {.fd = fd, .events = POLLIN};

        return poll(&pfd, 1, ms) == 1;
}

/* Whether a thread of the daemon sleeps in SQLite's busy handler (usleep: clock_nanosleep),
 * which only its store's thread does while it waits for the write lock the test holds
 * (ThreadSanitizer's own thread sleeps in nanosleep, another system call). */
static bool store_waits_for_the_lock(void)
{
        char path[320], line[64];
        struct dirent *e;
        bool waits = false;
        DIR *tasks;

        snprintf(path, sizeof(path), "/proc/%d/task", (int)d.pid);
        tasks = opendir(path);
        ck_assert_ptr_nonnull(tasks);
        while (!waits && (e = readdir(tasks))) {
                FILE *f;
                long nr;

                if (e->d_name[0] == '.')
                        continue;
                snprintf(path, sizeof(path), "/proc/%d/task/%s/syscall", (int)d.pid, e->d_name);
                f = fopen(path, "re");
                /* A sleep that a signal interrupted goes on as restart_syscall. */
                if (f && fgets(line, sizeof(line), f) && sscanf(line, "%ld", &nr) == 1)
                        waits = nr == SYS_clock_nanosleep || nr == SYS_restart_syscall;
                if (f)
                        fclose(f);
        }
        closedir(tasks);
        return waits;
}

/* The test holds the database's write lock, as a stuck disk would. */
static sqlite3 *lock_database(void)
{
        char path[PATH_MAX + 16];
        sqlite3 *db;

        snprintf(path, sizeof(path), "%s/slowworkd.db", d.state);
        ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000); /* the daemon may be committing */
        ck_assert_int_eq(sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);
        return db;
}

static void unlock_database(sqlite3 *db)
{
        ck_assert_int_eq(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(db);
}

/* A run whose start had not reached the database when the daemon was killed (its write waited
 * for the lock) is recorded interrupted at the next start, with what it left; the next run has
 * the next number. */
START_TEST(a_run_killed_before_its_start_was_written_is_recorded_interrupted)
{
        json_object *st, *last;
        sqlite3 *db;
        int fd, other;

        SKIP_UNLESS_SQLITE("it holds the SQLite file's write lock");
        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        other = client_connect(d.sock);
        json_object_put(call_ok(fd, "pause", NULL));
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"echo started; exec sleep 30\"}"), 1);
        db = lock_database();
        /* Answered once written, which it is not before the kill: the run starts all the same. */
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"resume\"}");
        wait_logged(other, 1, "started");
        daemon_kill_hard(&d);
        unlock_database(db);
        close(fd);
        close(other);

        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        st = job_status(fd, 1); /* paused still: the resume was not written either */
        last = json_object_object_get(st, "last");
        ck_assert_str_eq(str_member(last, "outcome"), "interrupted");
        ck_assert_int_eq(int_member(last, "run"), 1);
        ck_assert_int_ge(int_member(last, "leftovers"), 1); /* sleep */
        ck_assert_str_eq(str_member(st, "state"), "pending");
        json_object_put(st);
        json_object_put(call_ok(fd, "resume", NULL));
        job_wait_process(fd, 1);
        st = job_status(fd, 1);
        ck_assert_int_eq(int_member(st, "runs"), 2);
        json_object_put(st);
        ck_assert_int_eq(call_code(fd, "cancel", "{\"id\":1}"), 0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

static int64_t rows(const char *sql)
{
        char path[PATH_MAX + 16];
        sqlite3_stmt *st;
        sqlite3 *db;
        int64_t n;

        snprintf(path, sizeof(path), "%s/slowworkd.db", d.state);
        ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
        sqlite3_busy_timeout(db, 5000);
        ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
        ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
        n = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        return n;
}

START_TEST(a_submit_is_answered_only_once_its_job_is_on_disk)
{
        int fd, other, i;
        sqlite3 *db;
        json_object *reply;

        SKIP_UNLESS_SQLITE("it holds the SQLite file's write lock");
        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", "--stop-timeout", "0", NULL);
        fd = client_connect(d.sock);
        other = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"sleep 30\"}"), 1);
        job_wait_state(fd, 1, "running"); /* so that what comes next stays queued */
        db = lock_database();
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\","
                        "\"params\":{\"command\":\"true\",\"key\":\"k\"}}");
        for (i = 1; i < 3; i++)
                client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\","
                                "\"params\":{\"command\":\"true\",\"delay\":3600}}");
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}");
        ck_assert(!readable_within(fd, 500));
        /* Another client's submit of the same key would say "coalesced" about a job that is not
         * on disk yet: it waits too. A ping of its own does not. */
        client_send(other, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"submit\","
                           "\"params\":{\"command\":\"true\",\"key\":\"k\"}}");
        ck_assert(!readable_within(other, 300));
        unlock_database(db);
        for (i = 0; i < 3; i++) {
                reply = read_reply(fd);
                ck_assert_int_eq(int_member(reply_result(reply), "id"), i + 2);
                json_object_put(reply);
        }
        free(client_read_line(fd)); /* the ping's, in order */
        reply = read_reply(other);
        ck_assert_int_eq(int_member(reply_result(reply), "id"), 2);
        ck_assert(
            json_object_get_boolean(json_object_object_get(reply_result(reply), "coalesced")));
        json_object_put(reply);
        ck_assert_int_eq(rows("SELECT count(*) FROM jobs WHERE state = 'pending'"), 3);
        ck_assert_int_eq(call_code(other, "cancel", "{\"id\":1}"), 0);
        close(fd);
        close(other);
        daemon_stop(&d);
}
END_TEST

/* The number of runs the pool has finished. */
static int64_t items_run(int fd)
{
        json_object *stats = call_ok(fd, "stats", NULL);
        int64_t n = int_member(stats, "items_run");

        json_object_put(stats);
        return n;
}

/* The live jobs, as the metrics count them (every slowwork_jobs sample added up). */
static int64_t live_jobs(int fd)
{
        json_object *reply = client_call(fd, "metrics", NULL);
        const char *line;
        int64_t n = 0;

        ck_assert_int_eq(reply_code(reply), 0);
        for (line = str_member(reply_result(reply), "text"); line; line = strchr(line, '\n')) {
                line += *line == '\n';
                if (strncmp(line, "slowwork_jobs{", 14) == 0)
                        n += strtoll(strchr(line, ' ') + 1, NULL, 10);
        }
        json_object_put(reply);
        return n;
}

START_TEST(a_job_that_ends_before_its_write_commits_is_kept_only_as_its_run)
{
        int fd, other, i;
        json_object *reply, *st;
        sqlite3 *db;

        SKIP_UNLESS_SQLITE("it holds the SQLite file's write lock and reads its tables");
        daemon_start(&d, "--plugin-dir", PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        other = client_connect(d.sock);
        /* What the daemon writes to the jobs table, seen by a trigger of the test's. */
        db = lock_database();
        ck_assert_int_eq(sqlite3_exec(db,
                                      "CREATE TABLE written (id INTEGER);"
                                      "CREATE TRIGGER jobs_written AFTER INSERT ON jobs "
                                      "BEGIN INSERT INTO written VALUES (new.id); END;",
                                      NULL, NULL, NULL),
                         SQLITE_OK);
        /* A delayed job: the store's thread waits for the lock to write it, and what comes
         * next makes one batch. In it, a job that runs and ends, one kept (persist) after its
         * run, one that waits for the first, and two deleted in the other order: a delayed
         * one cancelled after one that runs and ends. */
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\",\"params\":"
                        "{\"plugin\":\"hello\",\"entry\":\"noop\",\"delay\":3600}}");
        /* The store's thread took job 1's write and waits for the lock: what comes next is the
         * next batch. */
        for (i = 0; i < 2000 && !store_waits_for_the_lock(); i++)
                usleep(10000);
        ck_assert_msg(store_waits_for_the_lock(), "the store does not wait for the lock");
        ck_assert(!readable_within(fd, 0)); /* no reply before the commit */
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"submit\",\"params\":"
                        "{\"plugin\":\"hello\",\"entry\":\"noop\"}}");
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"submit\",\"params\":"
                        "{\"plugin\":\"hello\",\"entry\":\"noop\",\"persist\":true}}");
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"submit\",\"params\":"
                        "{\"plugin\":\"hello\",\"entry\":\"noop\",\"after\":[1]}}");
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"submit\",\"params\":"
                        "{\"plugin\":\"hello\",\"entry\":\"noop\",\"delay\":3600}}");
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"submit\",\"params\":"
                        "{\"plugin\":\"hello\",\"entry\":\"noop\"}}");
        for (i = 0; i < 500 && items_run(other) < 3; i++)
                usleep(10000);
        ck_assert_int_eq(items_run(other), 3);
        /* Jobs 2 and 6 gone from the tables (their deletes queued), not only run: 1, 3, 4 and 5
         * are left. */
        for (i = 0; i < 500 && live_jobs(other) != 4; i++)
                usleep(10000);
        ck_assert_int_eq(live_jobs(other), 4);
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"cancel\",\"params\":"
                        "{\"id\":5}}");
        unlock_database(db);
        for (i = 1; i <= 7; i++) {
                reply = read_reply(fd);
                ck_assert_int_eq(reply_code(reply), 0);
                json_object_put(reply);
        }
        /* The rows of jobs 2, 5 and 6 were never written, only their runs; the others' rows
         * are there. */
        ck_assert_int_eq(rows("SELECT count(*) FROM written WHERE id IN (2, 5, 6)"), 0);
        ck_assert_int_eq(rows("SELECT count(*) FROM runs WHERE id IN (5, 6)"), 2);
        ck_assert_int_eq(rows("SELECT count(*) FROM written WHERE id IN (1, 3, 4)"), 3);
        ck_assert_int_eq(rows("SELECT count(*) FROM jobs"), 3);
        ck_assert_int_eq(rows("SELECT count(*) FROM runs WHERE id = 2"), 1);
        ck_assert_int_eq(rows("SELECT count(*) FROM runs WHERE id = 3"), 1);
        close(fd);
        close(other);
        daemon_kill_hard(&d);

        daemon_start_again(&d, "--plugin-dir", PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        ck_assert_str_eq(job_state_of(fd, 1), "pending");
        st = job_status(fd, 2);
        ck_assert_int_eq(int_member(st, "runs"), 1);
        json_object_put(st);
        st = job_status(fd, 3);
        ck_assert_str_eq(str_member(st, "state"), "idle");
        ck_assert_int_eq(int_member(st, "runs"), 1);
        json_object_put(st);
        st = job_status(fd, 4); /* still waiting for job 1 */
        ck_assert_int_eq(int_member(st, "runs"), 0);
        json_object_put(st);
        ck_assert_int_eq(items_run(fd), 0); /* nothing ran again */
        ck_assert_int_eq(call_code(fd, "release", "{\"id\":3}"), 0);
        ck_assert_int_eq(call_code(fd, "cancel", "{\"id\":1}"), 0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(jobs_submitted_after_env_set_keep_its_environment_through_a_crash)
{
        json_object *reply, *rec;
        char *log;
        int fd, i;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        json_object_put(call_ok(fd, "pause", NULL)); /* what comes next stays queued */
        json_object_put(call_ok(fd, "env.set", "{\"env\":{\"A\":\"kept\",\"PATH\":\"/bin\"}}"));
        for (i = 0; i < 3; i++)
                client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\","
                                "\"params\":{\"command\":\"echo \\\"$A\\\"\"}}");
        for (i = 0; i < 3; i++) {
                reply = read_reply(fd);
                ck_assert_int_eq(int_member(reply_result(reply), "id"), i + 1);
                json_object_put(reply);
        }
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        json_object_put(call_ok(fd, "resume", NULL));
        for (i = 1; i <= 3; i++) {
                rec = job_wait(fd, i);
                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                json_object_put(rec);
                log = job_log(fd, i);
                ck_assert_str_eq(log, "kept\n");
                free(log);
        }
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_payload_is_kept_exactly_through_a_crash)
{
        static const char *const params[] = {
            "{\"command\":\"echo \\\"q\\\\b\\\"\\n\\tx\\u0001\\u001f \u00e9 \\u2603 "
            "\\ud83d\\ude00 /\",\"delay\":3600,\"timeout\":0.1,\"retries\":2,"
            "\"retry_delay\":0.3,\"limits\":{\"nice\":3}}",
            "{\"argv\":[\"a\\\"b\",\"c\\\\d\",\"\"],\"delay\":3600,\"cwd\":\"/tmp\"}",
            "{\"command\":\"true\",\"every\":3600.5,\"queue\":\"default\"}",
        };
        json_object *before[3], *after;
        int fd, i;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        for (i = 0; i < 3; i++) {
                ck_assert_int_eq(job_submit(fd, params[i]), i + 1);
                before[i] = job_status(fd, i + 1);
        }
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        for (i = 0; i < 3; i++) {
                after = job_status(fd, i + 1);
                json_object_object_del(before[i], "refs");
                json_object_object_del(after, "refs");
                ck_assert_msg(json_object_equal(before[i], after), "%s\nbecame\n%s",
                              json_object_to_json_string(before[i]),
                              json_object_to_json_string(after));
                json_object_put(before[i]);
                json_object_put(after);
        }
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* A job's payload keeps only the limits that ask for something, and one left out reads back as
 * 0 (none): a job with none writes no "limits" and still shows all of them as 0 after a crash.
 * A row written before, with every limit, loads as it was. */
START_TEST(a_payload_keeps_only_the_limits_that_ask_for_something)
{
        static const char *const old_limits =
            "\"limits\":{\"memory_max\":0,\"tasks_max\":0,\"cpu_weight\":0,\"nice\":5,"
            "\"open_files\":0,\"cpu_time\":0}";
        char sql[512];
        json_object *before, *after, *limits;
        sqlite3 *db;
        int fd;

        SKIP_UNLESS_SQLITE("it reads and rewrites the SQLite file's payloads");
        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\",\"delay\":3600}"), 1);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\",\"delay\":3600,"
                                        "\"limits\":{\"nice\":3,\"open_files\":0}}"),
                         2);
        before = job_status(fd, 1);
        close(fd);
        daemon_kill_hard(&d);

        ck_assert_int_eq(rows("SELECT count(*) FROM jobs WHERE id = 1 AND "
                              "payload NOT LIKE '%limits%'"),
                         1);
        ck_assert_int_eq(rows("SELECT count(*) FROM jobs WHERE id = 2 AND "
                              "payload LIKE '%\"limits\":{\"nice\":3}%'"),
                         1);
        /* Job 2's row as the daemon wrote it before: every limit, those of none as 0. */
        db = lock_database();
        snprintf(sql, sizeof(sql),
                 "UPDATE jobs SET payload = replace(payload, '\"limits\":{\"nice\":3}', '%s') "
                 "WHERE id = 2",
                 old_limits);
        ck_assert_int_eq(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
        ck_assert_int_eq(sqlite3_changes(db), 1);
        unlock_database(db);

        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        after = job_status(fd, 1);
        json_object_object_del(before, "refs");
        json_object_object_del(after, "refs");
        ck_assert_msg(json_object_equal(before, after), "%s\nbecame\n%s",
                      json_object_to_json_string(before), json_object_to_json_string(after));
        limits = json_object_object_get(after, "limits");
        ck_assert_int_eq(json_object_object_length(limits), 6);
        ck_assert_int_eq(int_member(limits, "nice"), 0);
        json_object_put(before);
        json_object_put(after);
        after = job_status(fd, 2);
        limits = json_object_object_get(after, "limits");
        ck_assert_msg(json_object_object_length(limits) == 6 && int_member(limits, "nice") == 5 &&
                          int_member(limits, "open_files") == 0 &&
                          int_member(limits, "memory_max") == 0,
                      "status: %s", json_object_to_json_string(after));
        json_object_put(after);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* A job's on_end is in its payload: a crash keeps it, and its next run runs it. */
START_TEST(on_end_is_kept_through_a_crash)
{
        char job[PATH_MAX + 128], *fifo, *said;
        json_object *st;
        int fd;

        daemon_start(&d, NULL);
        fifo = fifo_make(d.dir, "said");
        fd = client_connect(d.sock);
        snprintf(job, sizeof(job),
                 "{\"command\":\"true\",\"persist\":true,\"on_end\":\"echo run $SLOWWORK_RUN "
                 ">%s\"}",
                 fifo);
        ck_assert_int_eq(job_submit(fd, job), 1);
        said = fifo_read_all(fifo);
        ck_assert_str_eq(said, "run 1\n");
        free(said);
        json_object_put(job_wait(fd, 1));
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        st = job_status(fd, 1);
        snprintf(job, sizeof(job), "echo run $SLOWWORK_RUN >%s", fifo);
        ck_assert_str_eq(str_member(st, "on_end"), job);
        json_object_put(st);
        ck_assert_int_eq(call_code(fd, "enqueue", "{\"id\":1}"), 0);
        said = fifo_read_all(fifo);
        ck_assert_str_eq(said, "run 2\n");
        free(said);
        ck_assert_int_eq(call_code(fd, "release", "{\"id\":1}"), 0);
        close(fd);
        daemon_stop(&d);
        free(fifo);
}
END_TEST

/* The daemon's files may not grow beyond `bytes` (RLIMIT_FSIZE), as on a full disk. */
static void limit_file_size(pid_t pid, rlim_t bytes)
{
        struct rlimit rl = {.rlim_cur = bytes, .rlim_max = RLIM_INFINITY};

        ck_assert_int_eq(prlimit(pid, RLIMIT_FSIZE, &rl, NULL), 0);
}

START_TEST(a_full_state_folder_refuses_submits_and_loses_nothing_accepted)
{
        static const char submit[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\","
                                     "\"params\":{\"command\":\"true\",\"delay\":3600}}";
        json_object *reply = NULL;
        int fd, other, i;

        SKIP_UNLESS_SQLITE("it fills the state folder, where the SQLite file is");
        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        other = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\",\"delay\":3600}"), 1);
        limit_file_size(d.pid, 1);
        client_send(fd, submit);
        for (i = 0; i < 400; i++) {
                reply = client_call(other, "stats", NULL);
                if (json_object_object_get(reply_result(reply), "database_error"))
                        break;
                json_object_put(reply);
                reply = NULL;
                usleep(10000);
        }
        ck_assert_ptr_nonnull(reply);
        json_object_put(reply);
        /* New submits get a clear error at once; the daemon goes on. */
        reply = client_call(other, "submit", "{\"command\":\"true\"}");
        ck_assert_int_eq(reply_code(reply), -32603);
        ck_assert_ptr_nonnull(strstr(str_member(json_object_object_get(reply, "error"), "message"),
                                     "cannot save jobs: the state database fails"));
        json_object_put(reply);
        ck_assert_int_eq(reply_code(reply = client_call(other, "ping", NULL)), 0);
        json_object_put(reply);
        ck_assert(!readable_within(fd, 100));
        /* Room again: the accepted one is written and answered, the next ones accepted. */
        limit_file_size(d.pid, RLIM_INFINITY);
        reply = read_reply(fd);
        ck_assert_int_eq(int_member(reply_result(reply), "id"), 2);
        json_object_put(reply);
        ck_assert_int_eq(job_submit(other, "{\"command\":\"true\",\"delay\":3600}"), 3);
        close(fd);
        close(other);
        daemon_kill_hard(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        for (i = 1; i <= 3; i++) {
                json_object *st = job_status(fd, i);

                ck_assert_str_eq(str_member(st, "state"), "pending");
                json_object_put(st);
        }
        close(fd);
        daemon_stop(&d);
}
END_TEST

static double setting(int fd, const char *name)
{
        json_object *reply = client_call(fd, "settings.get", NULL);
        double v = json_object_get_double(json_object_object_get(reply_result(reply), name));

        json_object_put(reply);
        return v;
}

START_TEST(settings_set_is_kept_unless_runtime_and_flags_still_win)
{
        char config[64];
        int fd, i;
        json_object *reply;

        snprintf(config, sizeof(config), "/tmp/swdurable-%d.conf", (int)getpid());
        write_file(config, "max-threads = 5\n");
        daemon_start(&d, "--config", config, NULL);
        fd = client_connect(d.sock);
        ck_assert_double_eq(setting(fd, "max-threads"), 5);
        reply = client_call(fd, "settings.set",
                            "{\"max-threads\":7,\"kill-grace\":2.5,\"fair-share\":true}");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        reply = client_call(fd, "settings.set", "{\"log-limit\":4096,\"runtime\":true}");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, "--config", config, NULL);
        fd = client_connect(d.sock);
        reply = client_call(fd, "settings.get", NULL);
        ck_assert_int_eq(int_member(reply_result(reply), "max-threads"), 7);
        ck_assert_double_eq(
            json_object_get_double(json_object_object_get(reply_result(reply), "kill-grace")), 2.5);
        ck_assert_int_eq(int_member(reply_result(reply), "log-limit"), 16777216);
        /* A yes-or-no setting comes back as one. */
        ck_assert(json_object_is_type(json_object_object_get(reply_result(reply), "fair-share"),
                                      json_type_boolean) &&
                  json_object_get_boolean(json_object_object_get(reply_result(reply), "fair-share")));
        json_object_put(reply);
        /* A reload reads the file again, and what settings.set kept still wins over it. */
        write_file(config, "max-threads = 6\nidle-timeout = 9\n");
        ck_assert_int_eq(kill(d.pid, SIGHUP), 0);
        for (i = 0; i < 400 && setting(fd, "idle-timeout") != 9; i++)
                usleep(10000);
        ck_assert_double_eq(setting(fd, "idle-timeout"), 9);
        ck_assert_double_eq(setting(fd, "max-threads"), 7);
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, "--config", config, "--max-threads", "3", NULL);
        fd = client_connect(d.sock);
        reply = client_call(fd, "settings.get", NULL);
        ck_assert_int_eq(int_member(reply_result(reply), "max-threads"), 3);
        ck_assert_double_eq(
            json_object_get_double(json_object_object_get(reply_result(reply), "kill-grace")), 2.5);
        json_object_put(reply);
        close(fd);
        daemon_stop(&d);
        unlink(config);
}
END_TEST

static void write_file(const char *path, const char *text)
{
        FILE *f = fopen(path, "w");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
}

static void make_state(char *dir, size_t len, char *db, size_t dblen)
{
        snprintf(dir, len, "/tmp/swdurable-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(db, dblen, "%s/slowworkd.db", dir);
}

START_TEST(ids_go_on_after_every_job_and_run_with_a_higher_id_is_gone)
{
        char go[PATH_MAX], params[PATH_MAX + 96 + sizeof(WAIT_FOR_FILE)];
        json_object *rec;
        int fd;

        daemon_start(&d, "--history-limit", "1", NULL);
        fd = client_connect(d.sock);
        snprintf(go, sizeof(go), "%s/go", d.dir);
        snprintf(params, sizeof(params),
                 "{\"command\":\"" WAIT_FOR_FILE " %s\"}", go);
        ck_assert_int_eq(job_submit(fd, params), 1);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\"}"), 2);
        json_object_put(job_wait(fd, 2));
        write_file(go, "");
        rec = job_wait(fd, 1); /* ends last: its record pushes job 2's out of the history */
        json_object_put(rec);
        ck_assert_int_eq(call_code(fd, "status", "{\"id\":2}"), -32001);
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, "--history-limit", "1", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\"}"), 3);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* The one entry of nodes (the daemon alone on its database). */
static json_object *only_node(int fd)
{
        json_object *res = call_ok(fd, "nodes", NULL), *nodes, *node;

        nodes = json_object_object_get(res, "nodes");
        ck_assert_int_eq((int)json_object_array_length(nodes), 1);
        node = json_object_get(json_object_array_get_idx(nodes, 0));
        json_object_put(res);
        return node;
}

/* This daemon's entry of nodes (a node stopped a moment ago holds its lease a while). */
static json_object *self_node(int fd)
{
        json_object *res = call_ok(fd, "nodes", NULL), *nodes, *node = NULL;

        nodes = json_object_object_get(res, "nodes");
        for (size_t i = 0; i < json_object_array_length(nodes); i++) {
                json_object *o = json_object_array_get_idx(nodes, i);

                if (json_object_get_boolean(json_object_object_get(o, "self")))
                        node = json_object_get(o);
        }
        ck_assert_ptr_nonnull(node);
        json_object_put(res);
        return node;
}

START_TEST(runs_and_jobs_name_their_node_through_a_crash)
{
        char host[256] = "";
        json_object *rec, *st, *node;
        int fd;

        daemon_start(&d, "--node-name", "rack-1.n_2", NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\"}"), 1);
        rec = job_wait(fd, 1);
        ck_assert_str_eq(str_member(rec, "node"), "rack-1.n_2");
        json_object_put(rec);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"sleep 30\"}"), 2);
        job_wait_state(fd, 2, "running");
        st = job_status(fd, 2);
        ck_assert_str_eq(str_member(st, "node"), "rack-1.n_2");
        json_object_put(st);
        node = only_node(fd);
        ck_assert_str_eq(str_member(node, "name"), "rack-1.n_2");
        ck_assert_int_eq(int_member(node, "pid"), d.pid);
        ck_assert_int_eq(int_member(node, "running"), 1);
        ck_assert(json_object_get_boolean(json_object_object_get(node, "self")));
        ck_assert_double_lt(json_object_get_double(json_object_object_get(node, "lease_age")),
                            10);
        json_object_put(node);
        st = call_ok(fd, "status", NULL);
        ck_assert_str_eq(str_member(st, "node"), "rack-1.n_2");
        ck_assert(!json_object_get_boolean(json_object_object_get(st, "fenced")));
        json_object_put(st);
        close(fd);
        daemon_kill_hard(&d);

        /* Started again at once under its name: its last process is gone. */
        daemon_start_again(&d, "--node-name", "rack-1.n_2", NULL);
        fd = client_connect(d.sock);
        st = job_status(fd, 1);
        ck_assert_str_eq(str_member(st, "node"), "rack-1.n_2");
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "node"), "rack-1.n_2");
        json_object_put(st);
        job_wait_state(fd, 2, "running");
        st = job_status(fd, 2);
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "interrupted");
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "node"), "rack-1.n_2");
        json_object_put(st);
        json_object_put(call_ok(fd, "cancel", "{\"id\":2}"));
        close(fd);
        daemon_stop_clean(&d);

        /* Unnamed, a node is its host. */
        ck_assert_int_eq(gethostname(host, sizeof(host) - 1), 0);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        node = self_node(fd);
        ck_assert_str_eq(str_member(node, "name"), host);
        json_object_put(node);
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* The lines of a file (0 when it is not there). */
static int lines_of(const char *path, long *ret_last)
{
        FILE *f = fopen(path, "re");
        char line[64];
        int n = 0;

        while (f && fgets(line, sizeof(line), f)) {
                n++;
                if (ret_last)
                        *ret_last = strtol(line, NULL, 10);
        }
        if (f)
                fclose(f);
        return n;
}

static void wait_lines(const char *path, int want, long *ret_last)
{
        for (int i = 0; lines_of(path, ret_last) < want; i++) {
                ck_assert_msg(i < 1000, "%s has not %d lines after 10 s", path, want);
                usleep(10000);
        }
}

START_TEST(a_node_that_cannot_renew_its_lease_stops_its_runs_until_it_can)
{
        char marks[PATH_MAX + 16], submit[PATH_MAX + 96];
        struct pg_server pg;
        json_object *list, *st;
        char cancel[64];
        long pid = 0;
        int fd, i, id;

        if (!daemon_store() || !pg_from_env(&pg)) {
                fprintf(stderr, "skipped with SQLite: a_node_that_cannot_renew_its_lease_stops_its_"
                                "runs_until_it_can: leases are a shared database's\n");
                return;
        }
        daemon_start(&d, "--lease-renew", "0.2", "--lease-time", "1", NULL);
        snprintf(marks, sizeof(marks), "%s/marks", d.dir);
        snprintf(submit, sizeof(submit), "{\"command\":\"echo $$ >> %s; exec sleep 60\"}", marks);
        fd = client_connect(d.sock);
        id = job_submit(fd, submit);
        ck_assert_int_gt(id, 0);
        wait_lines(marks, 1, &pid);
        pg_stop(&pg);
        /* Within the lease (1 s), the run is killed, and nothing runs while it cannot renew. */
        for (i = 0; kill((pid_t)pid, 0) == 0; i++) {
                ck_assert_msg(i < 300, "the run of a node without a lease lives on after 3 s");
                usleep(10000);
        }
        /* Its end is recorded once its runner has reaped it: a moment after it is gone. */
        for (i = 0;; i++) {
                list = call_ok(fd, "list", NULL);
                st = json_object_array_get_idx(json_object_object_get(list, "items"), 0);
                if (json_object_object_get(st, "last"))
                        break;
                ck_assert_msg(i < 300, "the run's end is not recorded after 3 s");
                json_object_put(list);
                usleep(10000);
        }
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "interrupted");
        ck_assert_int_eq(int_member(json_object_object_get(st, "last"), "signal"), 9);
        json_object_put(list);
        /* Queued again, and held back while the node has no lease: a pool thread may hold it a
         * moment (shown running, with no event) before the gate takes it back. */
        for (i = 0; strcmp(job_state_of(fd, id), "pending") != 0; i++) {
                ck_assert_msg(i < 300, "job %d is not pending 3 s after its run was cut", id);
                usleep(10000);
        }
        st = call_ok(fd, "status", NULL);
        ck_assert(json_object_get_boolean(json_object_object_get(st, "fenced")));
        json_object_put(st);
        /* No run while the node has no lease: an absence, by the clock. */
        usleep(500000);
        ck_assert_int_eq(lines_of(marks, NULL), 1);
        pg_start(&pg);
        /* Once it renews, the cut run runs once more. */
        wait_lines(marks, 2, &pid);
        ck_assert_int_eq(kill((pid_t)pid, 0), 0);
        snprintf(cancel, sizeof(cancel), "{\"id\":%d}", id);
        json_object_put(call_ok(fd, "cancel", cancel));
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_second_daemon_on_the_same_state_folder_is_refused)
{
        char sock[PATH_MAX + 8], state[PATH_MAX + 8], *err;
        int fd;

        daemon_start(&d, NULL);
        snprintf(sock, sizeof(sock), "%s/other.sock", d.dir);
        ck_assert_int_eq(daemon_run_status_beside(&d, "--socket", sock, NULL), 1);
        if (daemon_store()) {
                /* In PostgreSQL, one live node of a name per schema, whatever its state folder. */
                snprintf(state, sizeof(state), "%s/other-state", d.dir);
                ck_assert_int_eq(daemon_run_stderr(&err, "--socket", sock, "--state-dir", state,
                                                   "--store", daemon_store(), "--store-schema",
                                                   d.schema, "--cluster-key-file",
                                                   getenv("SLOWWORK_TEST_CLUSTER_KEY"), NULL),
                                 1);
                ck_assert_msg(strstr(err, "Another live slowworkd node is named"),
                              "slowworkd said: %s", err);
                free(err);
        }
        fd = client_connect(d.sock);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\"}"), 1);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_damaged_database_stops_the_start_and_stays_as_it_was)
{
        char dir[64], db[96], sock[96], cmd[128];
        struct stat before, after;

        SKIP_UNLESS_SQLITE("it damages the SQLite file");
        make_state(dir, sizeof(dir), db, sizeof(db));
        snprintf(sock, sizeof(sock), "%s/sock", dir);
        write_file(db, "this is not a database, and must not be replaced by an empty one\n");
        ck_assert_int_eq(stat(db, &before), 0);
        ck_assert_int_eq(daemon_run_status("--socket", sock, "--state-dir", dir, NULL), 1);
        ck_assert_int_eq(stat(db, &after), 0);
        ck_assert_int_eq(before.st_size, after.st_size);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(a_database_from_a_newer_version_is_refused)
{
        char dir[64], db[96], sock[96], cmd[128];
        sqlite3 *s;

        SKIP_UNLESS_SQLITE("it writes the SQLite file's user_version");
        make_state(dir, sizeof(dir), db, sizeof(db));
        snprintf(sock, sizeof(sock), "%s/sock", dir);
        ck_assert_int_eq(sqlite3_open(db, &s), SQLITE_OK);
        ck_assert_int_eq(sqlite3_exec(s, "PRAGMA user_version = 99", NULL, NULL, NULL), SQLITE_OK);
        sqlite3_close(s);
        ck_assert_int_eq(daemon_run_status("--socket", sock, "--state-dir", dir, NULL), 1);
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* What a daemon started again on d's state said while it started: its standard error goes to a
 * file, read once it answers (the caller frees it). */
static char *start_again_saying(void)
{
        char path[PATH_MAX + 16], *said;
        int saved, fd;
        FILE *f;
        long n;

        snprintf(path, sizeof(path), "%s/stderr", d.dir);
        fflush(stderr);
        saved = dup(2);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert(saved >= 0 && fd >= 0 && dup2(fd, 2) == 2);
        close(fd);
        daemon_start_again(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        ck_assert_int_eq(dup2(saved, 2), 2);
        close(saved);
        /* The socket takes connections before the loop runs: a reply says the start is over. */
        fd = client_connect(d.sock);
        ck_assert_int_eq(call_code(fd, "ping", NULL), 0);
        close(fd);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
        n = ftell(f);
        rewind(f);
        said = calloc(1, (size_t)n + 1);
        ck_assert_ptr_nonnull(said);
        ck_assert_int_eq(fread(said, 1, (size_t)n, f), (size_t)n);
        fclose(f);
        return said;
}

START_TEST(a_crash_cut_run_keeps_its_start_and_is_logged)
{
        double before, after, started;
        json_object *st;
        char *said;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        before = (double)time(NULL);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"sleep 30\"}"), 1);
        job_wait_state(fd, 1, "running");
        after = (double)time(NULL) + 1;
        /* Its wait is answered once what came before is on disk: the run's start too. */
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"true\"}"), 2);
        json_object_put(job_wait(fd, 2));
        close(fd);
        daemon_kill_hard(&d);

        said = start_again_saying();
        ck_assert_msg(strstr(said, "<4>slowworkd: Job 1: run 1 was interrupted by the last "
                                   "daemon's end, and is queued again\n") &&
                          strstr(said, "<6>slowworkd: Restored 1 job from the state database\n"),
                      "slowworkd said: %s", said);
        free(said);
        fd = client_connect(d.sock);
        job_wait_state(fd, 1, "running");
        st = job_status(fd, 1);
        ck_assert_int_eq(int_member(st, "runs"), 2);
        ck_assert_str_eq(str_member(json_object_object_get(st, "last"), "outcome"), "interrupted");
        started = json_object_get_double(
            json_object_object_get(json_object_object_get(st, "last"), "started"));
        ck_assert_msg(started >= before && started <= after, "started %f, not in [%f, %f]", started,
                      before, after);
        json_object_put(st);
        ck_assert_int_eq(call_code(fd, "cancel", "{\"id\":1}"), 0);
        close(fd);
        daemon_stop(&d);
}
END_TEST

static void run_jobs(int n)
{
        int fd = client_connect(d.sock);

        for (int i = 0; i < n; i++) {
                json_object *rec = job_wait(fd, job_submit(fd, "{\"command\":\"true\"}"));

                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                json_object_put(rec);
        }
        close(fd);
}

/* Flips bytes in the page of a frame in the middle of the write-ahead log's own generation (the
 * frames with its header's salts), as a bad sector would: its checksum fails. The frames after it
 * must hold commits. */
static void damage_wal(const char *wal)
{
        unsigned char hdr[32], fh[24], junk[8];
        int fd = open(wal, O_RDWR | O_CLOEXEC);
        uint32_t page_size;
        int64_t frames, ours = 0, target, k;
        struct stat st;

        ck_assert_msg(fd >= 0, "no write-ahead log %s: %s", wal, strerror(errno));
        ck_assert_int_eq(fstat(fd, &st), 0);
        ck_assert_int_eq(pread(fd, hdr, sizeof(hdr), 0), (ssize_t)sizeof(hdr));
        page_size =
            (uint32_t)hdr[8] << 24 | (uint32_t)hdr[9] << 16 | (uint32_t)hdr[10] << 8 | hdr[11];
        frames = (st.st_size - 32) / (24 + page_size);
        for (k = 0; k < frames; k++) {
                ck_assert_int_eq(pread(fd, fh, sizeof(fh), 32 + k * (24 + (off_t)page_size)), 24);
                if (memcmp(fh + 8, hdr + 16, 8) != 0)
                        break;
                ours++;
        }
        ck_assert_msg(ours >= 4, "only %lld frames in %s", (long long)ours, wal);
        target = ours / 2;
        k = 32 + target * (24 + (off_t)page_size) + 24 + page_size / 2;
        ck_assert_int_eq(pread(fd, junk, sizeof(junk), k), (ssize_t)sizeof(junk));
        for (size_t i = 0; i < sizeof(junk); i++)
                junk[i] ^= 0xa5;
        ck_assert_int_eq(pwrite(fd, junk, sizeof(junk), k), (ssize_t)sizeof(junk));
        close(fd);
}

/*
 * A crash leaves the write-ahead log with committed transactions, which the next start keeps,
 * without a word. A log damaged on disk makes SQLite roll back, silently, everything from the
 * damaged frame on: the daemon says so at start, naming the log and what was lost.
 */
START_TEST(a_damaged_write_ahead_log_is_reported_at_start)
{
        char wal[PATH_MAX + 32], *said;
        int status;

        SKIP_UNLESS_SQLITE("it damages the SQLite file's write-ahead log");
        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        run_jobs(1);
        /* A clean stop checkpoints: the log holds only what comes after. */
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        daemon_start_again(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        run_jobs(4);
        daemon_kill_hard(&d);

        said = start_again_saying();
        ck_assert_msg(!strstr(said, "write-ahead log"), "after a plain crash slowworkd said: %s",
                      said);
        free(said);
        run_jobs(4);
        daemon_kill_hard(&d);

        snprintf(wal, sizeof(wal), "%s/slowworkd.db-wal", d.state);
        damage_wal(wal);
        said = start_again_saying();
        ck_assert_msg(strstr(said, wal) && strstr(said, "is damaged at frame") &&
                          strstr(said, "rolled back"),
                      "with a damaged write-ahead log slowworkd said: %s", said);
        free(said);
        run_jobs(1); /* and it goes on */
        daemon_stop(&d);
}
END_TEST

/* restart of id: the new job's id, once it ended, and its log. */
static int64_t restart_and_wait(int fd, int64_t id, char **ret_log)
{
        char params[64];
        json_object *r;
        int64_t new_id;

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        r = call_ok(fd, "restart", params);
        new_id = int_member(r, "id");
        json_object_put(r);
        ck_assert_int_gt(new_id, id);
        json_object_put(job_wait(fd, new_id));
        *ret_log = job_log(fd, new_id);
        return new_id;
}

START_TEST(an_ended_jobs_spec_survives_a_restart_and_a_crash)
{
        char params[PATH_MAX + 256], *log, *again;
        int fd;
        int64_t id, new_id, sync;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        snprintf(params, sizeof(params),
                 "{\"command\":\"pwd; echo \\\"$COLOUR\\\"\",\"cwd\":\"%s\","
                 "\"env\":{\"COLOUR\":\"teal\"},\"name\":\"kept\"}",
                 d.dir);
        id = job_submit(fd, params);
        json_object_put(job_wait(fd, id));
        job_wait_retired(fd, id);
        log = job_log(fd, id);
        snprintf(params, sizeof(params), "%s\nteal\n", d.dir);
        ck_assert_str_eq(log, params);
        close(fd);
        daemon_stop_clean(&d);

        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        new_id = restart_and_wait(fd, id, &again);
        ck_assert_str_eq(again, log);
        free(again);
        job_wait_retired(fd, new_id);
        /* Its reply comes once its write is on disk, and the spec's was queued before. */
        sync = job_submit(fd, "{\"command\":\"true\"}");
        json_object_put(job_wait(fd, sync));
        close(fd);
        daemon_kill_hard(&d);

        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        restart_and_wait(fd, new_id, &again);
        ck_assert_str_eq(again, log);
        free(again);
        free(log);
        close(fd);
        daemon_stop(&d);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("durable");
        TCase *tc = tcase_create("durable");

        tcase_set_timeout(tc, 300);
        tcase_add_test_alone(tc, a_node_that_cannot_renew_its_lease_stops_its_runs_until_it_can);
        tcase_add_test(tc, a_kill_under_load_loses_no_acknowledged_job);
        tcase_add_test(tc, a_clean_restart_keeps_the_queue_the_held_and_the_history);
        tcase_add_test(tc, a_crash_cuts_a_shell_run_which_runs_again_but_not_a_plugins);
        tcase_add_test(tc, a_crash_cut_run_keeps_its_start_and_is_logged);
        tcase_add_test(tc, a_plugin_that_crashes_the_daemon_does_not_run_again_on_its_own);
        tcase_add_test(tc, a_submit_is_answered_only_once_its_job_is_on_disk);
        tcase_add_test(tc, a_job_that_ends_before_its_write_commits_is_kept_only_as_its_run);
        tcase_add_test(tc, jobs_submitted_after_env_set_keep_its_environment_through_a_crash);
        tcase_add_test(tc, a_payload_is_kept_exactly_through_a_crash);
        tcase_add_test(tc, a_payload_keeps_only_the_limits_that_ask_for_something);
        tcase_add_test(tc, on_end_is_kept_through_a_crash);
        tcase_add_test(tc, a_full_state_folder_refuses_submits_and_loses_nothing_accepted);
        tcase_add_test(tc, settings_set_is_kept_unless_runtime_and_flags_still_win);
        tcase_add_test(tc, a_damaged_database_stops_the_start_and_stays_as_it_was);
        tcase_add_test(tc, a_damaged_write_ahead_log_is_reported_at_start);
        tcase_add_test(tc, a_database_from_a_newer_version_is_refused);
        tcase_add_test(tc, a_second_daemon_on_the_same_state_folder_is_refused);
        tcase_add_test(tc, runs_and_jobs_name_their_node_through_a_crash);
        tcase_add_test(tc, ids_go_on_after_every_job_and_run_with_a_higher_id_is_gone);
        tcase_add_test(tc, a_crash_keeps_priorities_stashed_jobs_and_edits);
        tcase_add_test(tc, a_run_killed_before_its_start_was_written_is_recorded_interrupted);
        tcase_add_test(tc, a_resume_while_runs_are_held_back_keeps_the_queue_order);
        suite_add_tcase(s, tc);
        /* A case of its own: CK_RUN_CASE=restart runs it alone. */
        tc = tcase_create("restart");
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, an_ended_jobs_spec_survives_a_restart_and_a_crash);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
