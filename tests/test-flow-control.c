/* SPDX-License-Identifier: MIT */
/* Job flow over the socket: pause, resume and drain; suspend and continue; signal. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;

static double wall_now(void)
{
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double double_member(json_object *o, const char *name)
{
        return json_object_get_double(json_object_object_get(o, name));
}

static bool bool_member(json_object *o, const char *name)
{
        json_object *v = json_object_object_get(o, name);

        ck_assert_msg(json_object_is_type(v, json_type_boolean), "%s is not a boolean", name);
        return json_object_get_boolean(v);
}

static bool stats_paused(int fd)
{
        json_object *st = call_ok(fd, "stats", NULL);
        bool paused = bool_member(st, "paused");

        json_object_put(st);
        return paused;
}

/* Until the pool has taken n items (a held run counts). */
static void wait_items_run(int fd, int64_t n)
{
        for (int i = 0;; i++) {
                json_object *st = call_ok(fd, "stats", NULL);
                int64_t run = int_member(st, "items_run");

                json_object_put(st);
                if (run >= n)
                        return;
                ck_assert_msg(i < 3000, "the pool took %lld items in 30 s, not %lld",
                              (long long)run, (long long)n);
                usleep(10000);
        }
}

static void pause_daemon(int fd)
{
        json_object *r = call_ok(fd, "pause", NULL);

        ck_assert(bool_member(r, "paused"));
        json_object_put(r);
}

static void resume_daemon(int fd)
{
        json_object *r = call_ok(fd, "resume", NULL);

        ck_assert(!bool_member(r, "paused"));
        json_object_put(r);
}

static json_object *id_call(int fd, const char *method, int64_t id)
{
        char params[64];

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        return call_ok(fd, method, params);
}

/* A job that runs until its gate (*ret_gate, a FIFO in the daemon's folder) is released; once
 * it runs. */
static int64_t submit_gated(int fd, char **ret_gate)
{
        char params[PATH_MAX + 64];
        int64_t id;

        *ret_gate = fifo_make(d.dir, "gate");
        snprintf(params, sizeof(params), "{\"command\":\"cat %s\"}", *ret_gate);
        id = job_submit(fd, params);
        job_wait_state(fd, id, "running");
        return id;
}

/* A job still pending that never started a run. */
static void assert_not_started(int fd, int64_t id)
{
        json_object *st = job_status(fd, id);

        ck_assert_str_eq(str_member(st, "state"), "pending");
        ck_assert_int_eq(int_member(st, "runs"), 0);
        json_object_put(st);
}

static char *read_text(const char *path)
{
        FILE *f = fopen(path, "re");
        char *text = calloc(1, 4096);

        ck_assert_ptr_nonnull(text);
        if (f) {
                size_t n = fread(text, 1, 4095, f);

                text[n] = '\0';
                fclose(f);
        }
        return text;
}

START_TEST(a_paused_daemon_queues_submits_and_resume_runs_them_in_order)
{
        char order[PATH_MAX], params[PATH_MAX + 64], *text;
        json_object *r, *rec;
        int fd;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        ck_assert(!stats_paused(fd));
        r = call_ok(fd, "pause", NULL);
        ck_assert(bool_member(r, "paused"));
        ck_assert_int_eq(int_member(r, "running"), 0);
        json_object_put(r);
        ck_assert(stats_paused(fd));
        snprintf(order, sizeof(order), "%s/order", d.dir);
        for (int i = 1; i <= 3; i++) {
                snprintf(params, sizeof(params), "{\"command\":\"echo %d >>%s\"}", i, order);
                ck_assert_int_eq(job_submit(fd, params), i);
        }
        /* The pool took the first and holds it. None starts while paused: an absence, which
         * no event shows, so the clock it is. */
        wait_items_run(fd, 1);
        usleep(500 * 1000);
        for (int i = 1; i <= 3; i++) {
                json_object *st = job_status(fd, i);

                assert_not_started(fd, i);
                ck_assert(bool_member(st, "held")); /* by the pause, the first as the others */
                json_object_put(st);
        }
        ck_assert_int_eq(access(order, F_OK), -1);
        /* Pausing again changes nothing. */
        pause_daemon(fd);
        resume_daemon(fd);
        ck_assert(!stats_paused(fd));
        for (int i = 1; i <= 3; i++) {
                rec = job_wait(fd, i);
                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                json_object_put(rec);
        }
        text = read_text(order);
        ck_assert_str_eq(text, "1\n2\n3\n");
        free(text);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_job_held_by_a_pause_can_be_cancelled_and_coalesces)
{
        json_object *r, *rec, *st;
        int fd;
        int64_t id;

        int64_t next;

        /* One thread: it holds the job, and runs nothing else before it is done with it. */
        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        pause_daemon(fd);
        id = job_submit(fd, "{\"command\":\"true\",\"key\":\"k\"}");
        /* Taken by a pool thread and held back by the pause before the second submit. */
        wait_items_run(fd, 1);
        r = call_ok(fd, "submit", "{\"command\":\"true\",\"key\":\"k\"}");
        ck_assert_int_eq(int_member(r, "id"), id);
        ck_assert(bool_member(r, "coalesced"));
        json_object_put(r);
        json_object_put(id_call(fd, "cancel", id));
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        ck_assert(double_member(rec, "started") == 0);
        json_object_put(rec);
        /* It does not run on resume: the one thread lets it go before it takes the next job
         * (queued after it, were it queued again), so once that one ended it is too late. */
        resume_daemon(fd);
        next = job_submit(fd, "{\"command\":\"true\"}");
        json_object_put(job_wait(fd, next));
        rec = job_wait(fd, id);
        ck_assert_int_eq(int_member(rec, "run"), 1);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);
        st = job_status(fd, id);
        ck_assert_int_eq(int_member(st, "runs"), 1);
        json_object_put(st);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_running_job_goes_on_while_paused)
{
        char *gate;
        json_object *rec;
        int fd;
        int64_t id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        id = submit_gated(fd, &gate);
        pause_daemon(fd);
        fifo_release(gate);
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_drain_is_answered_only_after_the_running_job_ended)
{
        char *gate, *line;
        struct pollfd pfd;
        json_object *reply, *result, *rec;
        double replied;
        int fd, other;
        int64_t id, queued;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        other = client_connect(d.sock);
        id = submit_gated(fd, &gate);
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":99,\"method\":\"pause\","
                        "\"params\":{\"drain\":true}}");
        pfd = (struct pollfd){.fd = fd, .events = POLLIN};
        ck_assert_int_eq(poll(&pfd, 1, 500), 0);
        /* Paused already: what comes meanwhile waits. */
        ck_assert(stats_paused(other));
        queued = job_submit(other, "{\"command\":\"true\"}");
        fifo_release(gate);
        line = client_read_line(fd);
        replied = wall_now();
        reply = json_tokener_parse(line);
        free(line);
        ck_assert_int_eq(reply_code(reply), 0);
        result = reply_result(reply);
        ck_assert(bool_member(result, "paused"));
        ck_assert_int_eq(int_member(result, "running"), 0);
        json_object_put(reply);
        rec = job_wait(other, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        ck_assert(double_member(rec, "ended") <= replied);
        json_object_put(rec);
        assert_not_started(other, queued);
        /* Nothing runs: a drain is answered at once. */
        reply = call_ok(fd, "pause", "{\"drain\":true}");
        ck_assert_int_eq(int_member(reply, "running"), 0);
        json_object_put(reply);
        free(gate);
        close(fd);
        close(other);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_resume_answers_a_drain_still_waiting)
{
        char *gate, *line;
        json_object *reply;
        int fd, other;
        int64_t id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        other = client_connect(d.sock);
        id = submit_gated(fd, &gate);
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"pause\","
                        "\"params\":{\"drain\":true}}");
        resume_daemon(other);
        line = client_read_line(fd);
        reply = json_tokener_parse(line);
        free(line);
        ck_assert_int_eq(reply_code(reply), 0);
        ck_assert(!bool_member(reply_result(reply), "paused"));
        ck_assert_int_eq(int_member(reply_result(reply), "running"), 1);
        json_object_put(reply);
        fifo_release(gate);
        json_object_put(job_wait(fd, id));
        free(gate);
        close(fd);
        close(other);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_restart_or_a_crash_keeps_a_paused_daemon_paused)
{
        json_object *rec;
        int fd;
        int64_t id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        pause_daemon(fd);
        id = job_submit(fd, "{\"command\":\"true\"}");
        close(fd);

        daemon_stop_clean(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert(stats_paused(fd));
        /* Taken by the pool again, and held. That it does not start is an absence, which no
         * event shows: by the clock. */
        wait_items_run(fd, 1);
        usleep(300 * 1000);
        assert_not_started(fd, id);
        close(fd);

        daemon_kill_hard(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert(stats_paused(fd));
        /* Taken by the pool again, and held. That it does not start is an absence, which no
         * event shows: by the clock. */
        wait_items_run(fd, 1);
        usleep(300 * 1000);
        assert_not_started(fd, id);
        /* A resume is kept as well. */
        resume_daemon(fd);
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        close(fd);

        daemon_kill_hard(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert(!stats_paused(fd));
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* The job's first process, which wrote its pid into the FIFO. */
static pid_t job_pid(const char *fifo)
{
        char *text = fifo_read_all(fifo);
        pid_t pid = (pid_t)atoi(text);

        free(text);
        ck_assert_int_gt(pid, 1);
        return pid;
}

/* The state letter and the process group of a process; 0 when it is gone. */
static char proc_state(pid_t pid, pid_t *pgrp)
{
        char path[64], *text, *paren;
        char state = 0;
        int group = 0;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        text = read_text(path);
        paren = strrchr(text, ')');
        if (paren && sscanf(paren + 1, " %c %*d %d", &state, &group) != 2)
                state = 0;
        *pgrp = group;
        free(text);
        return state;
}

/* Whether the job's process group (its first process leads it) is stopped: at least one process
 * stopped (T) and none running or sleeping. A shell stopped while it starts a command waits in
 * vfork() (D: dash starts commands so) for the child, stopped before its exec; an ended
 * child not yet reaped by its stopped parent is a zombie (Z). */
static bool group_stopped(pid_t leader)
{
        DIR *proc = opendir("/proc");
        struct dirent *e;
        bool one = false, other = false;
        pid_t pgrp;
        char state;

        ck_assert_ptr_nonnull(proc);
        while ((e = readdir(proc))) {
                pid_t pid = (pid_t)atoi(e->d_name);

                if (pid <= 0 || !(state = proc_state(pid, &pgrp)) || pgrp != leader)
                        continue;
                if (state == 'T')
                        one = true;
                else if (state != 'D' && state != 'Z')
                        other = true;
        }
        closedir(proc);
        return one && !other;
}

/* The cgroup2 folder of the process, "" when it is in the root (no cgroup of its own). */
static void proc_cgroup(pid_t pid, char *buf, size_t len)
{
        char path[64], mount[512], *text, *line;

        snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
        text = read_text(path);
        line = strstr(text, "0::");
        ck_assert_ptr_nonnull(line);
        line += 3;
        line[strcspn(line, "\n")] = '\0';
        buf[0] = '\0';
        if (strstr(line, "/run-")) {
                cgroup2_mount(mount, sizeof(mount));
                snprintf(buf, len, "%s%s", mount, line);
        }
        free(text);
}

/* Whether the job is stopped: frozen in its cgroup, or its process group stopped. */
static bool is_stopped(pid_t pid)
{
        char cg[1024], events[1100], *text;
        bool frozen;

        proc_cgroup(pid, cg, sizeof(cg));
        if (!cg[0])
                return group_stopped(pid);
        snprintf(events, sizeof(events), "%s/cgroup.events", cg);
        text = read_text(events);
        frozen = strstr(text, "frozen 1") != NULL;
        free(text);
        return frozen;
}

static void wait_stopped(pid_t pid, bool want)
{
        int i;

        for (i = 0; i < 500 && is_stopped(pid) != want; i++)
                usleep(10 * 1000);
        ck_assert_msg(i < 500, "process %d is%s stopped", (int)pid, want ? " not" : "");
}

static void suspend_and_continue(bool in_cgroup)
{
        char *fifo, params[2 * PATH_MAX + 96 + sizeof(WAIT_FOR_FILE)], cg[1024], go[PATH_MAX];
        json_object *r, *st, *rec;
        pid_t pid;
        int fd;
        int64_t id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        fifo = fifo_make(d.dir, "pid");
        snprintf(go, sizeof(go), "%s/go", d.dir);
        /* It runs until the file go is there. */
        snprintf(params, sizeof(params), "{\"command\":\"echo $$ >%s; " WAIT_FOR_FILE " %s\"}",
                 fifo, go);
        id = job_submit(fd, params);
        pid = job_pid(fifo);
        proc_cgroup(pid, cg, sizeof(cg));
        ck_assert_int_eq(cg[0] != '\0', in_cgroup);

        st = job_status(fd, id);
        ck_assert(!bool_member(st, "suspended"));
        json_object_put(st);
        r = id_call(fd, "suspend", id);
        ck_assert_int_eq(int_member(r, "id"), id);
        ck_assert(bool_member(r, "suspended"));
        ck_assert(bool_member(r, "changed"));
        json_object_put(r);
        wait_stopped(pid, true);
        st = job_status(fd, id);
        ck_assert(bool_member(st, "suspended"));
        json_object_put(st);
        /* Again: so it is already. */
        r = id_call(fd, "suspend", id);
        ck_assert(bool_member(r, "suspended"));
        ck_assert(!bool_member(r, "changed"));
        json_object_put(r);
        /* Running, it would see go within 10 ms and end: what a stopped process does not do is
         * no event, so the clock it is, a short while. */
        ck_assert_int_eq(close(open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)), 0);
        usleep(100 * 1000);
        ck_assert_str_eq(job_state_of(fd, id), "running");
        ck_assert(is_stopped(pid));

        r = id_call(fd, "continue", id);
        ck_assert(!bool_member(r, "suspended"));
        ck_assert(bool_member(r, "changed"));
        json_object_put(r);
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        free(fifo);
        close(fd);
        daemon_stop(&d);
}

START_TEST(a_suspended_jobs_cgroup_is_frozen_and_it_finishes_after_continue)
{
        if (!has_cgroups())
                return;
        suspend_and_continue(true);
}
END_TEST

START_TEST(a_suspended_job_without_a_cgroup_is_stopped_and_finishes_after_continue)
{
        if (has_cgroups())
                daemons_without_cgroups();
        suspend_and_continue(false);
}
END_TEST

START_TEST(a_continue_of_a_running_job_changes_nothing)
{
        char *gate;
        json_object *r;
        int fd;
        int64_t id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        id = submit_gated(fd, &gate);
        r = id_call(fd, "continue", id);
        ck_assert(!bool_member(r, "suspended"));
        ck_assert(!bool_member(r, "changed"));
        json_object_put(r);
        fifo_release(gate);
        json_object_put(job_wait(fd, id));
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(the_timeout_does_not_count_the_time_suspended)
{
        char *fifo, params[PATH_MAX + 96];
        json_object *rec;
        double took;
        int fd;
        int64_t id;

        /* The daemon's clocks move when the test says (daemon_advance_clock). */
        daemon_start_clocked(&d, NULL);
        fd = client_connect(d.sock);
        fifo = fifo_make(d.dir, "pid");
        snprintf(params, sizeof(params),
                 "{\"command\":\"echo $$ >%s; exec sleep 3000\",\"timeout\":600}", fifo);
        id = job_submit(fd, params);
        job_pid(fifo);
        json_object_put(id_call(fd, "suspend", id));
        /* Suspended for 1000 s of its clock: not timed out meanwhile. */
        daemon_advance_clock(&d, 1000);
        ck_assert_str_eq(job_state_of(fd, id), "running");
        json_object_put(id_call(fd, "continue", id));
        /* Were the time suspended counted, the continue would end it now; it has 600 s of its
         * own to go. */
        daemon_advance_clock(&d, 590);
        ck_assert_str_eq(job_state_of(fd, id), "running");
        daemon_advance_clock(&d, 20);
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "timed-out");
        took = double_member(rec, "ended") - double_member(rec, "started");
        /* 600 s of its own, 1000 suspended. */
        ck_assert_msg(took >= 1600 && took < 1620, "the run took %.2f s", took);
        json_object_put(rec);
        free(fifo);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_cancel_or_a_shutdown_ends_a_suspended_job_at_once)
{
        char *fifo, params[PATH_MAX + 96];
        json_object *r, *rec;
        double t0, took;
        int fd;
        int64_t id;

        /* kill-grace is long: only SIGTERM, handled, ends the job in time. */
        daemon_start(&d, "--kill-grace", "20", NULL);
        fd = client_connect(d.sock);
        fifo = fifo_make(d.dir, "pid");
        snprintf(params, sizeof(params),
                 "{\"command\":\"trap 'exit 3' TERM; echo $$ >%s; while :; do sleep 0.1; "
                 "done\"}",
                 fifo);
        id = job_submit(fd, params);
        wait_stopped(job_pid(fifo), false);
        json_object_put(id_call(fd, "suspend", id));
        t0 = wall_now();
        r = id_call(fd, "cancel", id);
        took = wall_now() - t0;
        ck_assert_msg(took < 5, "the cancel took %.2f s", took);
        json_object_put(r);
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "cancelled");
        json_object_put(rec);

        /* A shutdown does not wait for it either (stop-timeout is 30 s): it runs again later. */
        id = job_submit(fd, params);
        job_pid(fifo);
        json_object_put(id_call(fd, "suspend", id));
        close(fd);
        t0 = wall_now();
        daemon_stop(&d);
        took = wall_now() - t0;
        ck_assert_msg(took < 10, "the shutdown took %.2f s", took);
        free(fifo);
}
END_TEST

START_TEST(suspend_refuses_a_job_without_a_run_and_a_plugins)
{
        char msg[256];
        int fd;
        int64_t pending, plugin;

        daemon_start(&d, "--plugin-dir", PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(call_error(fd, "suspend", "{\"id\":42}", msg, sizeof(msg)), -32001);
        ck_assert_int_eq(call_error(fd, "continue", "{\"id\":42}", msg, sizeof(msg)), -32001);
        plugin = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"until_stopped\"}");
        job_wait_state(fd, plugin, "running");
        ck_assert_int_eq(call_error(fd, "suspend", "{\"id\":1}", msg, sizeof(msg)), -32003);
        ck_assert_ptr_nonnull(strstr(msg, "plugin"));
        pause_daemon(fd);
        pending = job_submit(fd, "{\"command\":\"true\",\"hold\":true}");
        ck_assert_int_eq(call_error(fd, "suspend", "{\"id\":2}", msg, sizeof(msg)), -32003);
        ck_assert_str_eq(msg, "job 2 is not running");
        ck_assert_int_eq(call_error(fd, "continue", "{\"id\":2}", msg, sizeof(msg)), -32003);
        resume_daemon(fd);
        json_object_put(job_wait(fd, pending));
        /* Idle, held by this connection. */
        ck_assert_int_eq(call_error(fd, "suspend", "{\"id\":2}", msg, sizeof(msg)), -32003);
        json_object_put(id_call(fd, "cancel", plugin));
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* A job whose shell and a child of it trap USR1, each writing its name into the file out; the
 * shell waits for the child. Returns once both have set their traps, with the shell's pid. */
static int64_t submit_trapping(int fd, const char *out, pid_t *ret_pid)
{
        char params[4 * PATH_MAX + 400], *r1, *r2, *text;
        int64_t id;

        r1 = fifo_make(d.dir, "ready1");
        r2 = fifo_make(d.dir, "ready2");
        snprintf(params, sizeof(params),
                 "{\"command\":\"trap 'echo shell >>%s' USR1; "
                 "sh -c 'trap \\\"echo child >>%s; exit 0\\\" USR1; echo >%s; "
                 "while :; do sleep 0.01; done' & echo $$ >%s; wait $!; wait $!\"}",
                 out, out, r2, r1);
        id = job_submit(fd, params);
        text = fifo_read_all(r1);
        *ret_pid = (pid_t)atoi(text);
        free(text);
        free(fifo_read_all(r2));
        free(r1);
        free(r2);
        return id;
}

static void signal_reaches_every_process(bool in_cgroup)
{
        char out[PATH_MAX], params[96], cg[1024], *text;
        json_object *r, *rec;
        pid_t pid;
        int fd;
        int64_t id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        snprintf(out, sizeof(out), "%s/out", d.dir);
        id = submit_trapping(fd, out, &pid);
        proc_cgroup(pid, cg, sizeof(cg));
        ck_assert_int_eq(cg[0] != '\0', in_cgroup);

        snprintf(params, sizeof(params), "{\"id\":%lld,\"signal\":\"USR1\"}", (long long)id);
        r = call_ok(fd, "signal", params);
        ck_assert_int_eq(int_member(r, "id"), id);
        ck_assert_int_eq(int_member(r, "signal"), SIGUSR1);
        json_object_put(r);
        /* The child ends once it got it, and the shell, which waits for it, then: without the
         * signal on both, the job would never end. */
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        text = read_text(out);
        ck_assert_msg(strstr(text, "shell\n") && strstr(text, "child\n"), "out: \"%s\"", text);
        free(text);
        close(fd);
        daemon_stop(&d);
}

START_TEST(a_signal_reaches_every_process_of_a_run_in_its_cgroup)
{
        if (!has_cgroups())
                return;
        signal_reaches_every_process(true);
}
END_TEST

START_TEST(a_signal_reaches_every_process_of_a_run_in_its_process_group)
{
        if (has_cgroups())
                daemons_without_cgroups();
        signal_reaches_every_process(false);
}
END_TEST

/* By number, and as SIGTERM by its name with SIG: the job's state is what the signal made it. */
START_TEST(a_signal_by_number_or_sig_name_changes_no_state_by_itself)
{
        char params[128], *gate;
        json_object *r, *rec;
        int fd;
        int64_t id;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        /* SIGWINCH, which no process of it takes up: it goes on running. */
        id = submit_gated(fd, &gate);
        job_wait_process(fd, id);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"signal\":%d}", (long long)id, SIGWINCH);
        r = call_ok(fd, "signal", params);
        ck_assert_int_eq(int_member(r, "signal"), SIGWINCH);
        json_object_put(r);
        ck_assert_str_eq(job_state_of(fd, id), "running");
        snprintf(params, sizeof(params), "{\"id\":%lld,\"signal\":\"SIGTERM\"}", (long long)id);
        json_object_put(call_ok(fd, "signal", params));
        rec = job_wait(fd, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "killed");
        ck_assert_int_eq(int_member(rec, "signal"), SIGTERM);
        json_object_put(rec);
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(signal_refuses_bad_signals_jobs_without_a_run_and_plugins)
{
        static const char *const bad[] = {
            "\"FOO\"",    "\"SIG\"",  "\"\"",        "0",        "-1",
            "65",         "100000",   "1.5",         "true",     "null",
            "[\"USR1\"]", "\"STOP\"", "\"SIGCONT\"", "\"TSTP\"", "19",
        };
        char msg[256], params[128], *gate;
        json_object *rec;
        int fd;
        int64_t running, pending, plugin, ended;

        daemon_start(&d, "--plugin-dir", PLUGINS_BUILT, NULL);
        fd = client_connect(d.sock);
        running = submit_gated(fd, &gate);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(params, sizeof(params), "{\"id\":%lld,\"signal\":%s}", (long long)running,
                         bad[i]);
                ck_assert_int_eq(call_error(fd, "signal", params, msg, sizeof(msg)), -32602);
                ck_assert_msg(strstr(msg, "signal"), "%s: \"%s\"", bad[i], msg);
        }
        ck_assert_int_eq(call_error(fd, "signal", "{\"id\":1}", msg, sizeof(msg)), -32602);
        ck_assert_int_eq(call_error(fd, "signal", "{\"signal\":\"USR1\"}", msg, sizeof(msg)),
                         -32602);
        /* Nothing was sent: the job still runs (cat would have died of most of them). */
        ck_assert_str_eq(job_state_of(fd, running), "running");
        ck_assert_int_eq(
            call_error(fd, "signal", "{\"id\":42,\"signal\":\"USR1\"}", msg, sizeof(msg)), -32001);

        plugin = job_submit(fd, "{\"plugin\":\"hello\",\"entry\":\"until_stopped\"}");
        job_wait_state(fd, plugin, "running");
        snprintf(params, sizeof(params), "{\"id\":%lld,\"signal\":\"USR1\"}", (long long)plugin);
        ck_assert_int_eq(call_error(fd, "signal", params, msg, sizeof(msg)), -32003);
        ck_assert_ptr_nonnull(strstr(msg, "plugin"));

        pause_daemon(fd);
        pending = job_submit(fd, "{\"command\":\"true\",\"hold\":true}");
        snprintf(params, sizeof(params), "{\"id\":%lld,\"signal\":\"USR1\"}", (long long)pending);
        ck_assert_int_eq(call_error(fd, "signal", params, msg, sizeof(msg)), -32003);
        resume_daemon(fd);
        json_object_put(job_wait(fd, pending));
        /* Idle, held by this connection. */
        ck_assert_int_eq(call_error(fd, "signal", params, msg, sizeof(msg)), -32003);
        /* Ended and gone from the tables: its record is in the history. */
        ended = job_submit(fd, "{\"command\":\"true\"}");
        json_object_put(job_wait(fd, ended));
        snprintf(params, sizeof(params), "{\"id\":%lld,\"signal\":\"USR1\"}", (long long)ended);
        ck_assert_int_eq(call_error(fd, "signal", params, msg, sizeof(msg)), -32003);

        fifo_release(gate);
        rec = job_wait(fd, running);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        json_object_put(id_call(fd, "cancel", plugin));
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(bad_params_are_refused_naming_the_field_and_change_nothing)
{
        static const struct {
                const char *method, *params, *field;
        } bad[] = {
            {"pause", "{\"drain\":\"yes\"}", "drain"},
            {"pause", "{\"drain\":1}", "drain"},
            {"pause", "{\"queue\":\"x\",\"drain\":true}", "queue"},
            {"resume", "{\"drain\":true}", "drain"},
            {"suspend", "{}", "id"},
            {"suspend", "{\"id\":0}", "id"},
            {"suspend", "{\"id\":\"1\"}", "id"},
            {"continue", "{\"id\":-3}", "id"},
            {"continue", "{\"pid\":3}", "pid"},
        };
        char msg[256];
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_int_eq(call_error(fd, bad[i].method, bad[i].params, msg, sizeof(msg)),
                                 -32602);
                ck_assert_msg(strstr(msg, bad[i].field), "%s %s: \"%s\" does not name %s",
                              bad[i].method, bad[i].params, msg, bad[i].field);
        }
        ck_assert(!stats_paused(fd));
        close(fd);
        daemon_stop(&d);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("flow-control");
        TCase *tc = tcase_create("flow-control");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, a_paused_daemon_queues_submits_and_resume_runs_them_in_order);
        tcase_add_test(tc, a_job_held_by_a_pause_can_be_cancelled_and_coalesces);
        tcase_add_test(tc, a_running_job_goes_on_while_paused);
        tcase_add_test(tc, a_drain_is_answered_only_after_the_running_job_ended);
        tcase_add_test(tc, a_resume_answers_a_drain_still_waiting);
        tcase_add_test(tc, a_restart_or_a_crash_keeps_a_paused_daemon_paused);
        tcase_add_test(tc, a_suspended_jobs_cgroup_is_frozen_and_it_finishes_after_continue);
        tcase_add_test(tc, a_suspended_job_without_a_cgroup_is_stopped_and_finishes_after_continue);
        tcase_add_test(tc, a_continue_of_a_running_job_changes_nothing);
        tcase_add_test(tc, the_timeout_does_not_count_the_time_suspended);
        tcase_add_test(tc, a_cancel_or_a_shutdown_ends_a_suspended_job_at_once);
        tcase_add_test(tc, suspend_refuses_a_job_without_a_run_and_a_plugins);
        tcase_add_test(tc, a_signal_reaches_every_process_of_a_run_in_its_cgroup);
        tcase_add_test(tc, a_signal_reaches_every_process_of_a_run_in_its_process_group);
        tcase_add_test(tc, a_signal_by_number_or_sig_name_changes_no_state_by_itself);
        tcase_add_test(tc, signal_refuses_bad_signals_jobs_without_a_run_and_plugins);
        tcase_add_test(tc, bad_params_are_refused_naming_the_field_and_change_nothing);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
