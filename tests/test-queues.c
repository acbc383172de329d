/* SPDX-License-Identifier: MIT */
/* Named queues over the socket: a pool each, their settings, their pause, kept across restarts. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;

static void call_done(int fd, const char *method, const char *params)
{
        json_object_put(call_ok(fd, method, params));
}

static size_t queue_count(int fd)
{
        json_object *r = call_ok(fd, "queue.list", NULL);
        size_t n = json_object_array_length(json_object_object_get(r, "queues"));

        json_object_put(r);
        return n;
}

/* Until the queue's pool has taken n items (a held run counts). */
static void wait_items_run(int fd, const char *queue, int64_t n)
{
        char params[128];

        snprintf(params, sizeof(params), "{\"queue\":\"%s\"}", queue);
        for (int i = 0;; i++) {
                json_object *st = call_ok(fd, "stats", params);
                int64_t run = int_member(st, "items_run");

                json_object_put(st);
                if (run >= n) {
                        ck_assert_int_eq(run, n);
                        return;
                }
                ck_assert_msg(i < 3000, "queue %s took %lld items in 30 s, not %lld", queue,
                              (long long)run, (long long)n);
                usleep(10000);
        }
}

static int64_t setting_of(int fd, const char *queue, const char *name)
{
        char params[128] = "";
        json_object *r;
        int64_t v;

        if (queue)
                snprintf(params, sizeof(params), "{\"queue\":\"%s\"}", queue);
        r = call_ok(fd, "settings.get", queue ? params : NULL);
        v = int_member(r, name);
        json_object_put(r);
        return v;
}

/* A job that appends "S <ns>" and "E <ns>" around a sleep to file. */
static int64_t timed_job(int fd, const char *queue, const char *file, double seconds)
{
        char params[2 * PATH_MAX + 256];

        snprintf(params, sizeof(params),
                 "{\"queue\":\"%s\",\"command\":\"echo S $(date +%%s%%N) >> %s; sleep %.2f; "
                 "echo E $(date +%%s%%N) >> %s\"}",
                 queue, file, seconds, file);
        return job_submit(fd, params);
}

struct event {
        long long t;
        int delta; /* +1 a start, -1 an end */
};

static int by_time(const void *a, const void *b)
{
        const struct event *x = a, *y = b;

        if (x->t != y->t)
                return x->t < y->t ? -1 : 1;
        return x->delta - y->delta; /* an end before a start at the same time */
}

/* The most runs the file's starts and ends say were in progress at once; *nruns the runs. */
static int most_at_once(const char *file, int *nruns)
{
        struct event ev[256];
        char kind;
        long long t;
        int n = 0, now = 0, most = 0;
        FILE *f = fopen(file, "r");

        ck_assert_ptr_nonnull(f);
        while (n < 256 && fscanf(f, " %c %lld", &kind, &t) == 2)
                ev[n++] = (struct event){t, kind == 'S' ? 1 : -1};
        fclose(f);
        qsort(ev, (size_t)n, sizeof(ev[0]), by_time);
        for (int i = 0; i < n; i++) {
                now += ev[i].delta;
                most = now > most ? now : most;
        }
        *nruns = n / 2;
        return most;
}

/* A job of the queue "default" that appends its letter to file. */
static int64_t letter_job(int fd, const char *file, char letter, int priority, const char *more)
{
        char params[PATH_MAX + 256];

        snprintf(params, sizeof(params),
                 "{\"command\":\"echo %c >> %s\",\"priority\":%d%s}", letter, file, priority,
                 more ? more : "");
        return job_submit(fd, params);
}

/* The letters the jobs wrote, in order, once n of them have. */
static char *letters(const char *file, int64_t *ids, int n, int fd)
{
        static char got[64];
        size_t len = 0;
        char line[16];
        FILE *f;

        for (int i = 0; i < n; i++)
                json_object_put(job_wait(fd, ids[i]));
        f = fopen(file, "r");
        ck_assert_ptr_nonnull(f);
        while (len + 1 < sizeof(got) && fgets(line, sizeof(line), f))
                got[len++] = line[0];
        got[len] = '\0';
        fclose(f);
        return got;
}

START_TEST(priorities_order_waiting_jobs_higher_first_then_older)
{
        char order[PATH_MAX], *gate;
        const char want[] = "BDAEC";
        const int prio[] = {0, 5, -3, 5, 0};
        int64_t blocker, ids[5];
        json_object *st;
        char job[PATH_MAX + 64];
        int fd;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        gate = fifo_make(d.dir, "gate");
        snprintf(order, sizeof(order), "%s/order", d.dir);
        snprintf(job, sizeof(job), "{\"command\":\"cat %s\"}", gate);
        blocker = job_submit(fd, job);
        job_wait_state(fd, blocker, "running");
        for (int i = 0; i < 5; i++)
                ids[i] = letter_job(fd, order, (char)('A' + i), prio[i], NULL);
        st = job_status(fd, ids[1]);
        ck_assert_int_eq(int_member(st, "priority"), 5);
        ck_assert_str_eq(str_member(st, "state"), "pending");
        json_object_put(st);
        st = job_status(fd, ids[0]);
        ck_assert_int_eq(int_member(st, "priority"), 0);
        json_object_put(st);
        fifo_release(gate);
        ck_assert_str_eq(letters(order, ids, 5, fd), want);
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(an_edited_priority_moves_a_waiting_job_by_its_age)
{
        char order[PATH_MAX], *gate;
        int64_t blocker, ids[4];
        char job[PATH_MAX + 64];
        json_object *st;
        int fd;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", NULL);
        fd = client_connect(d.sock);
        gate = fifo_make(d.dir, "gate");
        snprintf(order, sizeof(order), "%s/order", d.dir);
        snprintf(job, sizeof(job), "{\"command\":\"cat %s\"}", gate);
        blocker = job_submit(fd, job);
        job_wait_state(fd, blocker, "running");
        ids[0] = letter_job(fd, order, 'A', 0, NULL);
        ids[1] = letter_job(fd, order, 'B', 3, NULL);
        ids[2] = letter_job(fd, order, 'C', 0, NULL);
        ids[3] = letter_job(fd, order, 'D', 3, NULL);
        /* C, older than D and younger than B, goes between them; A goes last. */
        snprintf(job, sizeof(job), "{\"id\":%lld,\"priority\":3}", (long long)ids[2]);
        st = call_ok(fd, "edit", job);
        ck_assert_int_eq(int_member(st, "priority"), 3);
        ck_assert_str_eq(str_member(st, "state"), "pending");
        json_object_put(st);
        snprintf(job, sizeof(job), "{\"id\":%lld,\"priority\":-1}", (long long)ids[0]);
        json_object_put(call_ok(fd, "edit", job));
        fifo_release(gate);
        ck_assert_str_eq(letters(order, ids, 4, fd), "BCDA");
        free(gate);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_bad_priority_is_refused_and_changes_nothing)
{
        static const char *const bad[] = {"101", "-101", "1.5", "\"5\"", "true", "null"};
        char params[128], msg[256];
        int64_t id;
        json_object *st;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "pause", NULL);
        id = job_submit(fd, "{\"command\":\"true\",\"priority\":7}");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                snprintf(params, sizeof(params), "{\"command\":\"true\",\"priority\":%s}", bad[i]);
                ck_assert_int_eq(call_error(fd, "submit", params, msg, sizeof(msg)), -32602);
                ck_assert_msg(strstr(msg, "priority"), "%s: %s", bad[i], msg);
                snprintf(params, sizeof(params), "{\"id\":%lld,\"priority\":%s}", (long long)id,
                         bad[i]);
                ck_assert_int_eq(call_error(fd, "edit", params, msg, sizeof(msg)), -32602);
        }
        st = call_ok(fd, "list", NULL);
        ck_assert_int_eq(json_object_array_length(json_object_object_get(st, "items")), 1);
        json_object_put(st);
        st = job_status(fd, id);
        ck_assert_int_eq(int_member(st, "priority"), 7);
        json_object_put(st);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_one_thread_queue_never_runs_two_jobs_while_default_runs_four)
{
        char gpu[PATH_MAX], cpu[PATH_MAX];
        int64_t ids[12];
        int fd, runs;

        daemon_start(&d, "--min-threads", "4", "--max-threads", "4", NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"gpu\",\"max-threads\":1}");
        snprintf(gpu, sizeof(gpu), "%s/gpu.times", d.dir);
        snprintf(cpu, sizeof(cpu), "%s/cpu.times", d.dir);
        for (int i = 0; i < 4; i++)
                ids[i] = timed_job(fd, "gpu", gpu, 0.3);
        for (int i = 4; i < 12; i++)
                ids[i] = timed_job(fd, "default", cpu, 0.6);
        for (int i = 0; i < 12; i++) {
                json_object *rec = job_wait(fd, ids[i]);

                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                json_object_put(rec);
        }
        ck_assert_int_eq(most_at_once(gpu, &runs), 1);
        ck_assert_int_eq(runs, 4);
        ck_assert_int_eq(most_at_once(cpu, &runs), 4);
        ck_assert_int_eq(runs, 8);
        /* The metrics count each queue's runs, threads and settings under its name. */
        {
                json_object *m = call_ok(fd, "metrics", NULL);
                const char *text = str_member(m, "text");
                static const char *const want[] = {
                    "slowwork_runs_total{queue=\"gpu\",class=\"slow\",outcome=\"succeeded\"} 4\n",
                    "slowwork_runs_total{queue=\"default\",class=\"slow\",outcome=\"succeeded\"} 8\n",
                    "slowwork_run_seconds_count{queue=\"gpu\",class=\"slow\"} 4\n",
                    "slowwork_setting_max_threads{queue=\"gpu\"} 1\n",
                    "slowwork_setting_max_threads{queue=\"default\"} 4\n",
                    "slowwork_threads{queue=\"gpu\",state=\"idle\"} 1\n",
                };

                for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
                        ck_assert_msg(strstr(text, want[i]), "no \"%s\" in the metrics", want[i]);
                json_object_put(m);
        }
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_queues_per_user_limits_bind_in_that_queue_only)
{
        char one[PATH_MAX], all[PATH_MAX], msg[256];
        int64_t ids[6];
        json_object *q;
        int fd, runs;

        daemon_start(&d, "--min-threads", "3", "--max-threads", "3", NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add",
                  "{\"name\":\"gpu\",\"max-threads\":3,\"max-running-per-user\":1}");
        call_done(fd, "queue.add", "{\"name\":\"small\",\"max-queued-per-user\":2}");
        q = call_ok(fd, "settings.get", "{\"queue\":\"gpu\"}");
        ck_assert_int_eq(int_member(q, "max-running-per-user"), 1);
        json_object_put(q);
        snprintf(one, sizeof(one), "%s/gpu.times", d.dir);
        snprintf(all, sizeof(all), "%s/default.times", d.dir);
        for (int i = 0; i < 3; i++)
                ids[i] = timed_job(fd, "gpu", one, 0.3);
        for (int i = 3; i < 6; i++)
                ids[i] = timed_job(fd, "default", all, 0.6);
        for (int i = 0; i < 6; i++)
                json_object_put(job_wait(fd, ids[i]));
        ck_assert_int_eq(most_at_once(one, &runs), 1);
        ck_assert_int_eq(runs, 3);
        ck_assert_int_eq(most_at_once(all, &runs), 3);
        /* The queued limit of one queue refuses there, naming it, and nowhere else. */
        job_submit(fd, "{\"queue\":\"small\",\"command\":\"true\",\"delay\":60}");
        job_submit(fd, "{\"queue\":\"small\",\"command\":\"true\",\"delay\":60}");
        ck_assert_int_eq(call_error(fd, "submit",
                                    "{\"queue\":\"small\",\"command\":\"true\",\"delay\":60}", msg,
                                    sizeof(msg)),
                         -32004);
        ck_assert_msg(strstr(msg, "has 2 jobs queued in queue small"), "%s", msg);
        job_submit(fd, "{\"command\":\"true\",\"delay\":60}");
        /* Lifted at run time, kept across a restart. */
        call_done(fd, "settings.set", "{\"queue\":\"small\",\"max-queued-per-user\":3}");
        job_submit(fd, "{\"queue\":\"small\",\"command\":\"true\",\"delay\":60}");
        close(fd);
        daemon_kill_hard(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(setting_of(fd, "small", "max-queued-per-user"), 3);
        ck_assert_int_eq(setting_of(fd, "gpu", "max-running-per-user"), 1);
        ck_assert_int_eq(call_error(fd, "submit",
                                    "{\"queue\":\"small\",\"command\":\"true\",\"delay\":60}", msg,
                                    sizeof(msg)),
                         -32004);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(one_queues_settings_change_at_run_time_without_touching_anothers)
{
        json_object *r;
        int fd;

        daemon_start(&d, "--max-threads", "6", NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"a\",\"max-threads\":2}");
        call_done(fd, "queue.add", "{\"name\":\"b\",\"max-threads\":3,\"idle-timeout\":2}");
        /* The settings may also come as an object. */
        call_done(fd, "queue.add", "{\"name\":\"c\",\"settings\":{\"max-threads\":2}}");
        ck_assert_int_eq(setting_of(fd, "c", "max-threads"), 2);
        r = call_ok(fd, "settings.set", "{\"queue\":\"a\",\"max-threads\":5,\"min-threads\":2}");
        ck_assert_str_eq(str_member(r, "queue"), "a");
        ck_assert_int_eq(int_member(r, "max-threads"), 5);
        json_object_put(r);
        ck_assert_int_eq(setting_of(fd, "a", "max-threads"), 5);
        ck_assert_int_eq(setting_of(fd, "a", "min-threads"), 2);
        ck_assert_int_eq(setting_of(fd, "b", "max-threads"), 3);
        ck_assert_int_eq(setting_of(fd, "b", "min-threads"), 1);
        ck_assert_int_eq(setting_of(fd, NULL, "max-threads"), 6);
        /* The pool took it: a's threads are at least its new min-threads. */
        r = queue_entry(fd, "a");
        ck_assert_int_ge(int_member(r, "threads"), 2);
        json_object_put(r);
        /* The default queue's are the daemon's own, with or without "queue". */
        call_done(fd, "settings.set", "{\"queue\":\"default\",\"max-threads\":7}");
        ck_assert_int_eq(setting_of(fd, NULL, "max-threads"), 7);
        ck_assert_int_eq(setting_of(fd, "default", "max-threads"), 7);
        ck_assert_int_eq(setting_of(fd, "a", "max-threads"), 5);
        /* stats of one queue are that queue's. */
        r = call_ok(fd, "stats", "{\"queue\":\"a\"}");
        ck_assert_str_eq(str_member(r, "queue"), "a");
        ck_assert_int_ge(int_member(r, "threads"), 2);
        json_object_put(r);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_restart_keeps_queues_their_settings_pause_and_jobs)
{
        json_object *q, *st, *rec;
        int64_t held, other;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"gpu\",\"max-threads\":1}");
        call_done(fd, "queue.add", "{\"name\":\"gone\"}");
        call_done(fd, "settings.set", "{\"queue\":\"gpu\",\"vslow-percentage\":20}");
        call_done(fd, "settings.set",
                  "{\"queue\":\"gpu\",\"vslow-percentage\":30,\"runtime\":true}");
        call_done(fd, "pause", "{\"queue\":\"gpu\"}");
        call_done(fd, "queue.remove", "{\"name\":\"gone\"}");
        held = job_submit(fd, "{\"queue\":\"gpu\",\"key\":\"k\",\"command\":\"true\"}");
        /* Keys are per queue: the same key in another queue is another job. */
        other = job_submit(fd, "{\"key\":\"k\",\"command\":\"sleep 60\",\"delay\":60}");
        ck_assert_int_ne(held, other);
        close(fd);

        daemon_kill_hard(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(queue_count(fd), 2);
        ck_assert_ptr_null(queue_entry(fd, "gone"));
        q = queue_entry(fd, "gpu");
        ck_assert_ptr_nonnull(q);
        ck_assert_int_eq(int_member(q, "max-threads"), 1);
        ck_assert_int_eq(int_member(q, "vslow-percentage"), 20); /* not the runtime change */
        ck_assert(json_object_get_boolean(json_object_object_get(q, "paused")));
        ck_assert_int_eq(int_member(q, "jobs"), 1);
        ck_assert_int_eq(int_member(q, "queued"), 1);
        json_object_put(q);
        st = job_status(fd, held);
        ck_assert_str_eq(str_member(st, "queue"), "gpu");
        ck_assert_str_eq(str_member(st, "state"), "pending");
        json_object_put(st);
        st = job_status(fd, other);
        ck_assert_str_eq(str_member(st, "queue"), "default");
        json_object_put(st);
        /* The key still names the same job in its queue. */
        ck_assert_int_eq(job_submit(fd, "{\"queue\":\"gpu\",\"key\":\"k\",\"command\":\"true\"}"),
                         held);
        call_done(fd, "resume", "{\"queue\":\"gpu\"}");
        rec = job_wait(fd, held);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_paused_queue_holds_only_its_own_jobs)
{
        json_object *st, *rec;
        int64_t gpu_job, cpu_job;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"gpu\",\"max-threads\":1}");
        st = call_ok(fd, "pause", "{\"queue\":\"gpu\"}");
        ck_assert_str_eq(str_member(st, "queue"), "gpu");
        ck_assert(json_object_get_boolean(json_object_object_get(st, "paused")));
        json_object_put(st);
        gpu_job = job_submit(fd, "{\"queue\":\"gpu\",\"command\":\"true\"}");
        cpu_job = job_submit(fd, "{\"command\":\"true\"}");
        rec = job_wait(fd, cpu_job);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        /* gpu's pool took its job and holds it. That it does not run is an absence, which no
         * event shows: by the clock. */
        wait_items_run(fd, "gpu", 1);
        usleep(200 * 1000);
        ck_assert_str_eq(job_state_of(fd, gpu_job), "pending");
        st = call_ok(fd, "stats", NULL);
        ck_assert(!json_object_get_boolean(json_object_object_get(st, "paused")));
        json_object_put(st);
        st = call_ok(fd, "stats", "{\"queue\":\"gpu\"}");
        ck_assert(json_object_get_boolean(json_object_object_get(st, "paused")));
        json_object_put(st);
        /* A drain of an idle queue answers at once. */
        call_done(fd, "pause", "{\"queue\":\"gpu\",\"drain\":true}");
        call_done(fd, "resume", "{\"queue\":\"gpu\"}");
        rec = job_wait(fd, gpu_job);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(bad_names_and_unknown_queues_are_refused_naming_the_field)
{
        static const struct {
                const char *method, *params, *field;
                int code;
        } bad[] = {
            {"queue.add", "{\"name\":\"two words\"}", "name", -32602},
            {"queue.add", "{\"name\":\"\"}", "name", -32602},
            {"queue.add", "{\"name\":\"a/b\"}", "name", -32602},
            {"queue.add",
             "{\"name\":\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}",
             "name", -32602},
            {"queue.add", "{\"name\":\"x\",\"max-threads\":0}", "max-threads", -32602},
            {"queue.add", "{\"name\":\"x\",\"min-threads\":3,\"max-threads\":2}", "min-threads",
             -32602},
            {"queue.add", "{\"name\":\"x\",\"history-limit\":3}", "history-limit", -32602},
            {"queue.add", "{\"name\":\"x\",\"settings\":5}", "settings", -32602},
            {"queue.add", "{\"name\":\"x\",\"settings\":{\"max-threads\":0}}", "max-threads",
             -32602},
            {"queue.add", "{\"name\":\"gpu\"}", "gpu", -32003},
            {"queue.add", "{\"name\":\"default\"}", "default", -32003},
            {"queue.remove", "{\"name\":\"nope\"}", "name", -32602},
            {"queue.remove", "{\"name\":\"default\"}", "name", -32602},
            {"queue.remove", "{\"name\":\"busy\"}", "busy", -32004},
            {"submit", "{\"queue\":\"nope\",\"command\":\"true\"}", "queue", -32602},
            {"submit", "{\"queue\":\"no pe\",\"command\":\"true\"}", "queue", -32602},
            {"submit", "{\"queue\":7,\"command\":\"true\"}", "queue", -32602},
            {"enqueue", "{\"key\":\"k\",\"queue\":\"nope\"}", "queue", -32602},
            {"settings.get", "{\"queue\":\"nope\"}", "queue", -32602},
            {"settings.set", "{\"queue\":\"nope\",\"max-threads\":2}", "queue", -32602},
            {"settings.set", "{\"queue\":\"gpu\",\"history-limit\":5}", "history-limit", -32602},
            {"settings.set", "{\"queue\":\"gpu\",\"min-threads\":9,\"max-threads\":2}",
             "min-threads", -32602},
            {"stats", "{\"queue\":\"nope\"}", "queue", -32602},
            {"pause", "{\"queue\":\"nope\"}", "queue", -32602},
            {"resume", "{\"queue\":\"nope\"}", "queue", -32602},
        };
        char msg[256];
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"gpu\",\"max-threads\":2}");
        call_done(fd, "queue.add", "{\"name\":\"busy\"}");
        job_submit(fd, "{\"queue\":\"busy\",\"command\":\"true\",\"delay\":60}");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_int_eq(call_error(fd, bad[i].method, bad[i].params, msg, sizeof(msg)),
                                 bad[i].code);
                ck_assert_msg(strstr(msg, bad[i].field), "%s %s: \"%s\" does not name %s",
                              bad[i].method, bad[i].params, msg, bad[i].field);
        }
        /* Nothing changed. */
        ck_assert_int_eq(queue_count(fd), 3);
        ck_assert_int_eq(setting_of(fd, "gpu", "max-threads"), 2);
        ck_assert_int_eq(setting_of(fd, "gpu", "min-threads"), 1);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(the_configuration_file_declares_queues_under_what_settings_set_kept)
{
        char conf[PATH_MAX], *err = NULL;
        json_object *q;
        FILE *f;
        int fd;

        daemon_start(&d, NULL);
        daemon_stop(&d);
        snprintf(conf, sizeof(conf), "/tmp/slowwork-queues-%d.conf", (int)getpid());
        f = fopen(conf, "w");
        ck_assert_ptr_nonnull(f);
        fputs("max-threads = 3\nqueue.gpu.max-threads = 1\nqueue.io.max-threads = 2\n"
              "queue.io.idle-timeout = 1.5\nqueue.gpu.max-job-cpu-time = 60\n",
              f);
        fclose(f);
        daemon_start(&d, "--config", conf, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(queue_count(fd), 3);
        ck_assert_int_eq(setting_of(fd, "gpu", "max-threads"), 1);
        ck_assert_int_eq(setting_of(fd, "gpu", "max-job-cpu-time"), 60);
        ck_assert_int_eq(setting_of(fd, "io", "max-job-cpu-time"), 0);
        ck_assert_int_eq(setting_of(fd, "io", "max-threads"), 2);
        q = call_ok(fd, "settings.get", "{\"queue\":\"io\"}");
        ck_assert_double_eq_tol(json_object_get_double(json_object_object_get(q, "idle-timeout")),
                                1.5, 1e-9);
        json_object_put(q);
        /* settings.set is kept, over the file's line. */
        call_done(fd, "settings.set", "{\"queue\":\"gpu\",\"max-threads\":4}");
        call_done(fd, "settings.set", "{\"queue\":\"io\",\"max-job-cpu-time\":30}");
        call_done(fd, "settings.set", "{\"max-job-open-files\":300}");
        close(fd);
        daemon_kill_hard(&d);
        daemon_start_again(&d, "--config", conf, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(setting_of(fd, "gpu", "max-threads"), 4);
        ck_assert_int_eq(setting_of(fd, "gpu", "max-job-cpu-time"), 60);
        ck_assert_int_eq(setting_of(fd, "io", "max-job-cpu-time"), 30);
        ck_assert_int_eq(setting_of(fd, NULL, "max-job-open-files"), 300);
        ck_assert_int_eq(setting_of(fd, "io", "max-threads"), 2);
        ck_assert_int_eq(setting_of(fd, NULL, "max-threads"), 3);
        /* A reload makes a queue the file now declares, and applies the file's lines again. */
        f = fopen(conf, "w");
        ck_assert_ptr_nonnull(f);
        fputs("queue.io.max-threads = 3\nqueue.late.max-threads = 2\n", f);
        fclose(f);
        call_done(fd, "reload", NULL);
        ck_assert_int_eq(setting_of(fd, "late", "max-threads"), 2);
        ck_assert_int_eq(setting_of(fd, "io", "max-threads"), 3);
        ck_assert_int_eq(setting_of(fd, "gpu", "max-threads"), 4);
        ck_assert_int_eq(setting_of(fd, NULL, "max-threads"), 4); /* back to its default */
        close(fd);
        daemon_stop(&d);

        /* Bad lines stop the daemon from starting, naming what is wrong. */
        static const char *const bad[][2] = {
            {"queue.gpu.max-threads = 0\n", "max-threads"},
            {"queue.two words.max-threads = 1\n", "queue"},
            {"queue.gpu.history-limit = 1\n", "history-limit"},
            {"queue.gpu.max-threads = 1\nqueue.gpu.max-threads = 2\n", "twice"},
            {"queue.gpu.min-threads = 3\nqueue.gpu.max-threads = 2\n", "min-threads"},
            {"queue.default.max-threads = 2\n", "max-threads = 2"},
            {"queue.gpu = 1\n", "queue.NAME.SETTING"},
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                f = fopen(conf, "w");
                ck_assert_ptr_nonnull(f);
                fputs(bad[i][0], f);
                fclose(f);
                ck_assert_int_eq(daemon_run_stderr(&err, "--config", conf, "--socket",
                                                   "/nonexistent/s", NULL),
                                 2);
                ck_assert_msg(strstr(err, bad[i][1]), "%s: \"%s\" does not name %s", bad[i][0],
                              err, bad[i][1]);
                free(err);
        }
        unlink(conf);
}
END_TEST

START_TEST(a_restart_keeps_queues_whose_names_hold_dots)
{
        json_object *q, *st;
        int64_t held;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"gpu\",\"max-threads\":2}");
        call_done(fd, "queue.add", "{\"name\":\"gpu.0\",\"max-threads\":1}");
        call_done(fd, "queue.add", "{\"name\":\"io\"}");
        call_done(fd, "queue.add", "{\"name\":\"io.slow\",\"max-threads\":3}");
        call_done(fd, "pause", "{\"queue\":\"gpu.0\"}");
        held = job_submit(fd, "{\"queue\":\"gpu.0\",\"command\":\"true\"}");
        /* Removing io leaves io.slow and its rows alone. */
        call_done(fd, "queue.remove", "{\"name\":\"io\"}");
        close(fd);

        daemon_kill_hard(&d);
        daemon_start_again(&d, NULL);
        fd = client_connect(d.sock);
        ck_assert_int_eq(queue_count(fd), 4); /* default, gpu, gpu.0, io.slow */
        ck_assert_ptr_null(queue_entry(fd, "io"));
        ck_assert_int_eq(setting_of(fd, "gpu", "max-threads"), 2);
        q = queue_entry(fd, "gpu.0");
        ck_assert_ptr_nonnull(q);
        ck_assert_int_eq(int_member(q, "max-threads"), 1);
        ck_assert(json_object_get_boolean(json_object_object_get(q, "paused")));
        json_object_put(q);
        q = queue_entry(fd, "io.slow");
        ck_assert_ptr_nonnull(q);
        ck_assert_int_eq(int_member(q, "max-threads"), 3);
        json_object_put(q);
        /* Its queue is still paused: its pool took the job again and holds it. That it does not
         * run is an absence, which no event shows: by the clock. */
        wait_items_run(fd, "gpu.0", 1);
        usleep(200 * 1000);
        st = job_status(fd, held);
        ck_assert_str_eq(str_member(st, "state"), "pending");
        json_object_put(st);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(runs_held_by_a_queues_pause_are_not_waiting_for_space)
{
        json_object *st;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"gpu\"}");
        call_done(fd, "pause", "{\"queue\":\"gpu\"}");
        job_submit(fd, "{\"queue\":\"gpu\",\"command\":\"true\"}");
        job_submit(fd, "{\"queue\":\"gpu\",\"command\":\"true\"}");
        wait_items_run(fd, "gpu", 2); /* both held back by the pause */
        st = call_ok(fd, "stats", NULL);
        ck_assert_int_eq(int_member(st, "waiting_for_space"), 0);
        json_object_put(st);
        st = call_ok(fd, "stats", "{\"queue\":\"default\"}");
        ck_assert_int_eq(int_member(st, "waiting_for_space"), 0);
        json_object_put(st);
        st = call_ok(fd, "stats", "{\"queue\":\"gpu\"}");
        ck_assert_int_eq(int_member(st, "waiting_for_space"), 0);
        json_object_put(st);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(a_reload_whose_queue_lines_clash_with_kept_settings_fails_and_says_so)
{
        char conf[PATH_MAX], msg[256];
        FILE *f;
        int fd;

        snprintf(conf, sizeof(conf), "/tmp/slowwork-queues-clash-%d.conf", (int)getpid());
        f = fopen(conf, "w");
        ck_assert_ptr_nonnull(f);
        fputs("queue.gpu.max-threads = 4\n", f);
        fclose(f);
        daemon_start(&d, "--config", conf, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "settings.set", "{\"queue\":\"gpu\",\"min-threads\":3}");
        f = fopen(conf, "w");
        ck_assert_ptr_nonnull(f);
        fputs("queue.gpu.max-threads = 2\n", f);
        fclose(f);
        call_error(fd, "reload", NULL, msg, sizeof(msg));
        ck_assert_msg(strstr(msg, "gpu"), "\"%s\" does not name the queue", msg);
        ck_assert_int_eq(setting_of(fd, "gpu", "min-threads"), 3);
        ck_assert_int_eq(setting_of(fd, "gpu", "max-threads"), 4);
        close(fd);
        daemon_stop(&d);
        unlink(conf);
}
END_TEST

START_TEST(a_resume_leaves_the_runs_another_queues_pause_holds_where_they_are)
{
        json_object *st;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"gpu\"}");
        call_done(fd, "pause", "{\"queue\":\"gpu\"}");
        for (int i = 0; i < 3; i++)
                job_submit(fd, "{\"queue\":\"gpu\",\"command\":\"true\"}");
        wait_items_run(fd, "gpu", 3); /* each held once */
        /* Resuming the daemon (not paused) or another queue does not take them through gpu's
         * pool again, to be held again. */
        call_done(fd, "resume", NULL);
        call_done(fd, "resume", "{\"queue\":\"default\"}");
        /* Not taken again: an absence, which no event shows (the pool would take them on its
         * own threads, after the answers), so by the clock. */
        usleep(300 * 1000);
        st = call_ok(fd, "stats", "{\"queue\":\"gpu\"}");
        ck_assert_int_eq(int_member(st, "items_run"), 3);
        json_object_put(st);
        /* Nor does resuming gpu while the daemon is paused. */
        call_done(fd, "pause", NULL);
        call_done(fd, "resume", "{\"queue\":\"gpu\"}");
        usleep(300 * 1000); /* an absence again, by the clock */
        st = call_ok(fd, "stats", "{\"queue\":\"gpu\"}");
        ck_assert_int_eq(int_member(st, "items_run"), 3);
        json_object_put(st);
        call_done(fd, "resume", NULL);
        /* Then they run, and leave the queue. */
        for (int i = 0;; i++) {
                st = queue_entry(fd, "gpu");
                if (int_member(st, "jobs") == 0)
                        break;
                ck_assert_msg(i < 2000, "gpu still holds %lld jobs 20 s after the resume",
                              (long long)int_member(st, "jobs"));
                json_object_put(st);
                usleep(10 * 1000);
        }
        json_object_put(st);
        close(fd);
        daemon_stop(&d);
}
END_TEST

START_TEST(enqueue_by_id_refuses_an_unknown_queue_or_another_queue)
{
        char params[128], msg[256];
        int64_t id;
        int fd;

        daemon_start(&d, NULL);
        fd = client_connect(d.sock);
        call_done(fd, "queue.add", "{\"name\":\"gpu\"}");
        id = job_submit(fd, "{\"queue\":\"gpu\",\"command\":\"true\",\"delay\":60}");
        snprintf(params, sizeof(params), "{\"id\":%lld,\"queue\":\"nope\"}", (long long)id);
        ck_assert_int_eq(call_error(fd, "enqueue", params, msg, sizeof(msg)), -32602);
        ck_assert_msg(strstr(msg, "queue"), "\"%s\" does not name the field", msg);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"queue\":\"default\"}", (long long)id);
        ck_assert_int_eq(call_error(fd, "enqueue", params, msg, sizeof(msg)), -32602);
        snprintf(params, sizeof(params), "{\"id\":%lld,\"queue\":\"gpu\"}", (long long)id);
        call_done(fd, "enqueue", params);
        close(fd);
        daemon_stop(&d);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("queues");
        TCase *tc = tcase_create("queues");

        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, a_one_thread_queue_never_runs_two_jobs_while_default_runs_four);
        tcase_add_test(tc, a_queues_per_user_limits_bind_in_that_queue_only);
        tcase_add_test(tc, one_queues_settings_change_at_run_time_without_touching_anothers);
        tcase_add_test(tc, a_restart_keeps_queues_their_settings_pause_and_jobs);
        tcase_add_test(tc, a_paused_queue_holds_only_its_own_jobs);
        tcase_add_test(tc, bad_names_and_unknown_queues_are_refused_naming_the_field);
        tcase_add_test(tc, the_configuration_file_declares_queues_under_what_settings_set_kept);
        tcase_add_test(tc, a_restart_keeps_queues_whose_names_hold_dots);
        tcase_add_test(tc, runs_held_by_a_queues_pause_are_not_waiting_for_space);
        tcase_add_test(tc, a_reload_whose_queue_lines_clash_with_kept_settings_fails_and_says_so);
        tcase_add_test(tc, a_resume_leaves_the_runs_another_queues_pause_holds_where_they_are);
        tcase_add_test(tc, enqueue_by_id_refuses_an_unknown_queue_or_another_queue);
        tcase_add_test(tc, priorities_order_waiting_jobs_higher_first_then_older);
        tcase_add_test(tc, an_edited_priority_moves_a_waiting_job_by_its_age);
        tcase_add_test(tc, a_bad_priority_is_refused_and_changes_nothing);
        suite_add_tcase(s, tc);
        return run_suite(s);
}
