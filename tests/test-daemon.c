/* SPDX-License-Identifier: MIT */
/* slowworkd over its socket: the daemon-level methods, and bad input that must change nothing. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "daemon-helpers.h"
#include "run-suite.h"

static struct daemon d;

static int64_t result_int(json_object *reply, const char *name)
{
        json_object *v = json_object_object_get(reply_result(reply), name);

        ck_assert_msg(v != NULL, "no \"%s\" in %s", name, json_object_to_json_string(reply));
        return json_object_get_int64(v);
}

static int64_t setting(int fd, const char *name)
{
        json_object *reply = client_call(fd, "settings.get", NULL);
        int64_t v = result_int(reply, name);

        json_object_put(reply);
        return v;
}

/* The daemon still answers on a fresh connection. */
static void still_answers(void)
{
        int fd = client_connect(d.sock);
        json_object *reply;

        ck_assert_int_ge(fd, 0);
        reply = client_call(fd, "ping", NULL);
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "pong")));
        json_object_put(reply);
        close(fd);
        ck_assert(daemon_alive(&d));
}

static void expect_error(int fd, const char *request, int code)
{
        char *line;
        json_object *reply;

        client_send(fd, request);
        line = client_read_line(fd);
        ck_assert_ptr_nonnull(line);
        reply = json_tokener_parse(line);
        ck_assert_msg(reply_code(reply) == code, "%s -> %s, want code %d", request, line, code);
        json_object_put(reply);
        free(line);
}

START_TEST(ping_and_version_answer)
{
        int fd = client_connect(d.sock);
        json_object *reply;

        reply = client_call(fd, "ping", NULL);
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "pong")));
        json_object_put(reply);
        reply = client_call(fd, "version", "{}");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(reply_result(reply),
                                                                       "version")),
                         PACKAGE_VERSION);
        ck_assert_int_eq(result_int(reply, "protocol"), 1);
        json_object_put(reply);
        close(fd);
}
END_TEST

START_TEST(settings_get_shows_defaults_and_flags)
{
        int fd = client_connect(d.sock);
        json_object *reply = client_call(fd, "settings.get", NULL);
        json_object *s = reply_result(reply);

        ck_assert_int_eq(json_object_object_length(s), 31);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(s, "on-end")), "");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(s, "node-queues")), "*");
        ck_assert(json_object_is_type(json_object_object_get(s, "fair-share"), json_type_boolean) &&
                  !json_object_get_boolean(json_object_object_get(s, "fair-share")));
        ck_assert_int_eq(result_int(reply, "min-threads"), 2);
        ck_assert_int_eq(result_int(reply, "max-threads"), 6); /* from --max-threads 6 */
        ck_assert_int_eq(result_int(reply, "vslow-percentage"), 50);
        ck_assert_int_eq(result_int(reply, "history-limit"), 10000);
        ck_assert_int_eq(result_int(reply, "log-limit"), 16777216);
        ck_assert_double_eq(json_object_get_double(json_object_object_get(s, "idle-timeout")), 5.0);
        ck_assert_double_eq(json_object_get_double(json_object_object_get(s, "kill-grace")), 5.0);
        ck_assert_double_eq(json_object_get_double(json_object_object_get(s, "stop-timeout")), 30.0);
        /* No limits unless one is set. */
        ck_assert_int_eq(result_int(reply, "default-memory-max"), 0);
        ck_assert_int_eq(result_int(reply, "default-tasks-max"), 0);
        ck_assert_int_eq(result_int(reply, "default-cpu-weight"), 0);
        ck_assert_int_eq(result_int(reply, "default-nice"), 0);
        ck_assert_int_eq(result_int(reply, "default-open-files"), 0);
        ck_assert_int_eq(result_int(reply, "default-cpu-time"), 0);
        /* Nor ceilings. */
        ck_assert_int_eq(result_int(reply, "max-job-memory"), 0);
        ck_assert_int_eq(result_int(reply, "max-job-tasks"), 0);
        ck_assert_int_eq(result_int(reply, "max-job-open-files"), 0);
        ck_assert_int_eq(result_int(reply, "max-job-cpu-time"), 0);
        ck_assert_int_eq(result_int(reply, "max-connections-per-user"), 64);
        ck_assert_int_eq(result_int(reply, "max-log-bytes-per-user"), 1073741824);
        ck_assert_int_eq(result_int(reply, "min-free-space"), 5);
        ck_assert_int_eq(result_int(reply, "max-queued-per-user"), 0);
        ck_assert_int_eq(result_int(reply, "max-running-per-user"), 0);
        /* A user instance's jobs are its user's: no bound (the system instance's are in
         * test-system). */
        ck_assert_int_eq(result_int(reply, "max-jobs-per-user"), 0);
        ck_assert_int_eq(result_int(reply, "max-job-bytes-per-user"), 0);
        ck_assert_str_eq(str_member(s, "metrics-file"), ""); /* no file */
        ck_assert_double_eq(json_object_get_double(json_object_object_get(s, "metrics-interval")),
                            15.0);
        json_object_put(reply);
        close(fd);
}
END_TEST

START_TEST(settings_set_applies_all_or_nothing)
{
        int fd = client_connect(d.sock);
        json_object *reply;

        reply = client_call(fd, "settings.set", "{\"min-threads\":3,\"max-threads\":8}");
        ck_assert_int_eq(result_int(reply, "min-threads"), 3);
        ck_assert_int_eq(result_int(reply, "max-threads"), 8);
        json_object_put(reply);
        ck_assert_int_eq(setting(fd, "min-threads"), 3);

        /* Each of these is refused whole: nothing of it applies. */
        static const char *const bad[] = {
            "{\"min-threads\":9,\"max-threads\":4,\"vslow-percentage\":10}",
            "{\"vslow-percentage\":10,\"max-threads\":0}",
            "{\"vslow-percentage\":10,\"max-threads\":256}",
            "{\"vslow-percentage\":10,\"min-threads\":\"4\"}",
            "{\"vslow-percentage\":10,\"idle-timeout\":-1}",
            "{\"vslow-percentage\":10,\"bogus\":1}",
            "{\"vslow-percentage\":100}",
            "{\"vslow-percentage\":10,\"max-connections-per-user\":0}",
            "{\"vslow-percentage\":10,\"max-connections-per-user\":1025}",
            "{\"vslow-percentage\":10,\"max-log-bytes-per-user\":1023}",
            "{\"vslow-percentage\":10,\"max-log-bytes-per-user\":\"1G\"}",
            "{\"vslow-percentage\":10,\"min-free-space\":100}",
            "{\"vslow-percentage\":10,\"min-free-space\":-1}",
            "{\"vslow-percentage\":10,\"min-free-space\":5.5}",
            "{\"vslow-percentage\":10,\"max-queued-per-user\":-1}",
            "{\"vslow-percentage\":10,\"max-running-per-user\":\"2\"}",
        };
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                reply = client_call(fd, "settings.set", bad[i]);
                ck_assert_msg(reply_code(reply) == -32602, "%s accepted", bad[i]);
                json_object_put(reply);
                ck_assert_int_eq(setting(fd, "vslow-percentage"), 50);
                ck_assert_int_eq(setting(fd, "min-threads"), 3);
                ck_assert_int_eq(setting(fd, "max-threads"), 8);
                ck_assert_int_eq(setting(fd, "max-connections-per-user"), 64);
                ck_assert_int_eq(setting(fd, "max-log-bytes-per-user"), 1073741824);
                ck_assert_int_eq(setting(fd, "min-free-space"), 5);
        }
        close(fd);
}
END_TEST

START_TEST(settings_set_reaches_the_pool)
{
        int fd = client_connect(d.sock);
        json_object *reply;

        reply = client_call(fd, "settings.set", "{\"min-threads\":5,\"max-threads\":6}");
        json_object_put(reply);
        reply = client_call(fd, "stats", NULL);
        ck_assert_int_eq(result_int(reply, "threads"), 5);
        ck_assert_int_eq(result_int(reply, "very_slow_cap"), 3);
        ck_assert_int_eq(result_int(reply, "queued_slow"), 0);
        ck_assert(json_object_is_type(json_object_object_get(reply_result(reply), "rq"),
                                      json_type_array));
        json_object_put(reply);
        close(fd);
}
END_TEST

START_TEST(malformed_json_gets_a_parse_error_and_the_connection_stays)
{
        int fd = client_connect(d.sock);
        json_object *reply;

        expect_error(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":", -32700);
        expect_error(fd, "not json at all", -32700);
        expect_error(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"} trailing", -32700);
        expect_error(fd, "[1,2,3", -32700);
        expect_error(fd, "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}", -32600);
        reply = client_call(fd, "ping", NULL); /* same connection */
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        close(fd);
        still_answers();
}
END_TEST

START_TEST(unknown_method_is_method_not_found)
{
        int fd = client_connect(d.sock);
        json_object *reply = client_call(fd, "frobnicate", NULL);

        ck_assert_int_eq(reply_code(reply), -32601);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(
                             json_object_object_get(reply, "error"), "data")),
                         "ENOSYS");
        json_object_put(reply);
        close(fd);
}
END_TEST

START_TEST(wrong_types_and_unknown_fields_are_invalid_params)
{
        int fd = client_connect(d.sock);
        json_object *reply;

        reply = client_call(fd, "ping", "{\"extra\":1}");
        ck_assert_int_eq(reply_code(reply), -32602);
        json_object_put(reply);
        reply = client_call(fd, "settings.set", "{\"max-threads\":4.5}");
        ck_assert_int_eq(reply_code(reply), -32602);
        json_object_put(reply);
        reply = client_call(fd, "settings.set", "{\"max-threads\":null}");
        ck_assert_int_eq(reply_code(reply), -32602);
        json_object_put(reply);
        expect_error(fd, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":[1]}",
                     -32602);
        expect_error(fd, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\",\"params\":1}", -32600);
        expect_error(fd, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":5}", -32600);
        close(fd);
        still_answers();
}
END_TEST

START_TEST(oversized_line_is_refused_and_the_next_request_answered)
{
        size_t size = 3 * 1024 * 1024;
        char *big = malloc(size);
        int fd = client_connect(d.sock);
        json_object *reply;
        char *line;

        memset(big, 'x', size);
        client_write(fd, big, size);
        client_write(fd, "\n", 1);
        free(big);
        line = client_read_line(fd);
        ck_assert_ptr_nonnull(line);
        reply = json_tokener_parse(line);
        ck_assert_int_eq(reply_code(reply), -32005);
        ck_assert(json_object_is_type(json_object_object_get(reply, "id"), json_type_null));
        json_object_put(reply);
        free(line);
        reply = client_call(fd, "ping", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        close(fd);
}
END_TEST

START_TEST(line_cut_by_a_disconnect_changes_nothing)
{
        int fd = client_connect(d.sock);

        client_write(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"settings.set\",\"params\":"
                         "{\"min-threads\":4",
                     60);
        close(fd);
        still_answers();
        fd = client_connect(d.sock);
        ck_assert_int_eq(setting(fd, "min-threads"), 2);
        close(fd);
}
END_TEST

/* A client that half-closes after a last request without a newline still gets its reply. */
START_TEST(a_last_request_without_a_newline_is_answered_at_half_close)
{
        static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}";
        int fd = client_connect(d.sock);
        json_object *reply;
        char *line;

        client_write(fd, ping, sizeof(ping) - 1);
        ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
        line = client_read_line(fd);
        ck_assert_ptr_nonnull(line);
        reply = json_tokener_parse(line);
        ck_assert_int_eq(reply_code(reply), 0);
        ck_assert_int_eq(json_object_get_int(json_object_object_get(reply, "id")), 7);
        json_object_put(reply);
        free(line);
        ck_assert_ptr_null(client_read_line(fd));
        close(fd);
}
END_TEST

START_TEST(pipelined_requests_are_answered_in_order)
{
        int fd = client_connect(d.sock);
        char request[128], *batch = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&batch, &len);
        int i;

        for (i = 1; i <= 200; i++) {
                snprintf(request, sizeof(request),
                         "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"}\n", i,
                         i % 2 ? "ping" : "settings.get");
                fputs(request, f);
        }
        fclose(f);
        client_write(fd, batch, len);
        free(batch);
        for (i = 1; i <= 200; i++) {
                char *line = client_read_line(fd);
                json_object *reply = json_tokener_parse(line);

                ck_assert_int_eq(json_object_get_int(json_object_object_get(reply, "id")), i);
                ck_assert_int_eq(reply_code(reply), 0);
                json_object_put(reply);
                free(line);
        }
        close(fd);
}
END_TEST

START_TEST(notification_gets_no_reply)
{
        int fd = client_connect(d.sock);
        json_object *reply;

        client_send(fd, "{\"jsonrpc\":\"2.0\",\"method\":\"ping\"}");
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"method\":\"nonexistent\"}");
        reply = client_call(fd, "version", NULL); /* the first reply is this one's */
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        close(fd);
}
END_TEST

START_TEST(two_hundred_connections_opened_and_dropped_at_once)
{
        int fds[200], i;

        for (i = 0; i < 200; i++) {
                fds[i] = client_connect(d.sock);
                ck_assert_int_ge(fds[i], 0);
        }
        for (i = 0; i < 200; i += 2)
                client_write(fds[i], "{\"jsonrpc\":\"2.0\",\"id\":1,\"meth", 30);
        for (i = 0; i < 200; i++)
                close(fds[i]);
        still_answers();
}
END_TEST

/* Sends data while reading what comes, then shuts the sending side and reads to the end: all
 * that came (the caller frees it). */
static char *read_all_while_sending(int fd, const char *data, size_t len)
{
        size_t got = 0, size = 65536;
        char *buf = malloc(size);

        ck_assert_ptr_nonnull(buf);
        if (len == 0)
                ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLIN | (len ? POLLOUT : 0)};
                ssize_t n;

                ck_assert_msg(poll(&p, 1, 20000) == 1, "slowworkd went quiet");
                if (len && (p.revents & POLLOUT)) {
                        n = send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
                        ck_assert_msg(n > 0 || errno == EAGAIN, "send: %s", strerror(errno));
                        if (n > 0) {
                                data += n;
                                len -= (size_t)n;
                                if (len == 0)
                                        ck_assert_int_eq(shutdown(fd, SHUT_WR), 0);
                        }
                }
                if (!(p.revents & (POLLIN | POLLHUP)))
                        continue;
                if (got + 1 >= size) {
                        size *= 2;
                        buf = realloc(buf, size);
                        ck_assert_ptr_nonnull(buf);
                }
                n = read(fd, buf + got, size - got - 1);
                ck_assert_msg(n >= 0, "read: %s", strerror(errno));
                if (n == 0)
                        break;
                got += (size_t)n;
        }
        ck_assert_msg(len == 0, "slowworkd closed before the last request was sent");
        buf[got] = '\0';
        return buf;
}

/*
 * A client that sends requests and reads none of the replies is not served beyond a bound: the
 * daemon stops reading its requests, does not drop it, and serves others. Once it reads, every
 * reply comes, in order.
 */
START_TEST(a_client_that_does_not_read_waits_and_loses_nothing)
{
        int fd = client_connect(d.sock), other = client_connect(d.sock), buf = 4096;
        char request[96], *line, *all, want[32];
        json_object *reply;
        size_t len, sent = 0;
        int n, i;

        /* String ids of one width: every request has the same length. */
        len = (size_t)snprintf(request, sizeof(request),
                               "{\"jsonrpc\":\"2.0\",\"id\":\"%06d\",\"method\":\"settings.get\"}\n",
                               0);
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
        /* Until the socket takes no more for a while, up to 100000 requests (20 MB of replies,
         * more than any bound the daemon keeps). */
        for (;;) {
                struct pollfd p = {.fd = fd, .events = POLLOUT};
                ssize_t w;

                if (sent / len >= 100000 || poll(&p, 1, 300) == 0)
                        break;
                ck_assert_msg(!(p.revents & (POLLERR | POLLHUP)),
                              "the daemon dropped a client after %zu requests", sent / len);
                snprintf(request, sizeof(request),
                         "{\"jsonrpc\":\"2.0\",\"id\":\"%06zu\",\"method\":\"settings.get\"}\n",
                         sent / len + 1);
                w = send(fd, request + sent % len, len - sent % len, MSG_NOSIGNAL | MSG_DONTWAIT);
                ck_assert_msg(w > 0 || errno == EAGAIN, "send after %zu requests: %s", sent / len,
                              strerror(errno));
                if (w > 0)
                        sent += (size_t)w;
        }
        ck_assert_int_lt(sent / len, 100000); /* it stopped reading them */
        reply = client_call(other, "ping", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        /* Now it reads, sends the rest of its last request and ends: every request it sent is
         * answered, in order. */
        n = (int)((sent + len - 1) / len);
        all = read_all_while_sending(fd, request + sent % len, sent % len ? len - sent % len : 0);
        for (i = 1, line = all; i <= n; i++) {
                char *nl = strchr(line, '\n');

                snprintf(want, sizeof(want), "\"id\":\"%06d\"", i);
                ck_assert_msg(nl != NULL, "%d replies of %d came", i - 1, n);
                *nl = '\0';
                ck_assert_msg(strstr(line, want), "reply %d of %d: %s", i, n, line);
                line = nl + 1;
        }
        ck_assert_str_eq(line, "");
        free(all);
        close(fd);
        close(other);
        still_answers();
}
END_TEST

/* Reads n reply lines, a whole buffer at a time, and checks that none is an error. */
static void read_results(int fd, int n)
{
        char buf[65536];

        while (n > 0) {
                struct pollfd p = {.fd = fd, .events = POLLIN};
                ssize_t got;

                ck_assert_msg(poll(&p, 1, 20000) == 1, "no reply from slowworkd in 20 s");
                got = read(fd, buf, sizeof(buf) - 1);
                ck_assert_msg(got > 0, "slowworkd closed the connection, %d replies due", n);
                buf[got] = '\0';
                ck_assert_msg(!strstr(buf, "\"error\""), "an error among the replies: %s", buf);
                for (char *nl = buf; (nl = memchr(nl, '\n', (size_t)(buf + got - nl))); nl++)
                        n--;
        }
        ck_assert_int_eq(n, 0);
}

/* Events are not paced by requests: a subscriber that reads none of them is dropped once more
 * than 1 MiB of them wait (some 14000), not kept while they pile up. */
START_TEST(a_subscriber_that_does_not_read_its_events_is_dropped)
{
        int sub = client_connect(d.sock), ctl = client_connect(d.sock), buf = 4096, i;
        struct pollfd p = {.fd = sub, .events = 0};
        json_object *reply = client_call(sub, "subscribe", NULL);

        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        setsockopt(sub, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf));
        /* Each submit of a delayed job sends one event, "pending", of some 75 bytes; they go
         * 1000 at a time, to share the state database's commits. */
        for (i = 0; i < 40000; i += 1000) {
                static const char submit[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\","
                                             "\"params\":{\"command\":\"true\",\"delay\":3600}}\n";
                static char batch[1000 * sizeof(submit)];

                for (int k = 0; k < 1000; k++)
                        memcpy(batch + k * (sizeof(submit) - 1), submit, sizeof(submit) - 1);
                client_write(ctl, batch, 1000 * (sizeof(submit) - 1));
                read_results(ctl, 1000);
                if (poll(&p, 1, 0) == 1 && (p.revents & (POLLHUP | POLLERR)))
                        break;
        }
        ck_assert_msg(p.revents & (POLLHUP | POLLERR),
                      "a subscriber that read none of %d events was kept", i);
        ck_assert_msg(i < 20000, "a subscriber was dropped only after %d unread events", i);
        close(sub);
        close(ctl);
        still_answers();
}
END_TEST

static void setup(void)
{
        daemon_start(&d, "--max-threads", "6", NULL);
}

static void teardown(void)
{
        daemon_stop(&d);
}

/* Outside the fixture: these start daemons of their own. */
START_TEST(live_daemon_is_not_displaced_and_stale_socket_is_replaced)
{
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        struct stat st;
        int fd;

        daemon_start(&d, NULL);
        /* A second daemon on the same socket refuses to start and leaves the first alone. */
        ck_assert_int_eq(daemon_run_status("--socket", d.sock, NULL), 1);
        still_answers();
        ck_assert_int_eq(stat(d.sock, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0600);
        daemon_stop(&d);

        /* A socket file nobody listens on, as a killed daemon leaves it, is taken over. */
        ck_assert_int_eq(mkdir(d.dir, 0700), 0);
        fd = socket(AF_UNIX, SOCK_STREAM, 0);
        ck_assert_uint_lt(strlen(d.sock), sizeof(sa.sun_path));
        memcpy(sa.sun_path, d.sock, strlen(d.sock) + 1);
        ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
        close(fd);
        daemon_start_again(&d, NULL);
        still_answers();
        daemon_stop(&d);
}
END_TEST

START_TEST(user_instance_socket_lives_in_a_private_runtime_folder)
{
        char runtime[] = "/tmp/slowwork-runtime-XXXXXX", dir[PATH_MAX];
        struct stat st;

        ck_assert_ptr_nonnull(mkdtemp(runtime));
        setenv("XDG_RUNTIME_DIR", runtime, 1);
        daemon_start_default(&d);
        snprintf(dir, sizeof(dir), "%s/slowwork", runtime);
        ck_assert_int_eq(stat(dir, &st), 0);
        ck_assert_int_eq(st.st_mode & 0777, 0700);
        ck_assert_int_eq(stat(d.sock, &st), 0);
        ck_assert(S_ISSOCK(st.st_mode));
        ck_assert_int_eq(st.st_mode & 0777, 0600);
        still_answers();
        daemon_stop(&d);
        rmdir(dir);
        rmdir(runtime);
}
END_TEST

/* A handle on a process that is not a child: it polls readable once the process has ended. */
static int pid_handle(pid_t pid)
{
        int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);

        ck_assert_msg(pidfd >= 0, "pidfd_open %d: %s", (int)pid, strerror(errno));
        return pidfd;
}

static bool ended_within(int pidfd, int timeout_ms)
{
        struct pollfd p = {.fd = pidfd, .events = POLLIN};

        return poll(&p, 1, timeout_ms) == 1;
}

static double seconds_between(const struct timespec *a, const struct timespec *b)
{
        return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

START_TEST(sigterm_stops_running_jobs_after_the_stop_timeout)
{
        char *gate, *out, job[3 * PATH_MAX], path[PATH_MAX + 32], *pids;
        int fd, status, shell_pid, cat_pid, shell, cat;
        struct timespec t0, t1;
        json_object *st, *last;
        double elapsed;
        char said_path[] = "/tmp/slowwork-said-XXXXXX", said[4096] = "";
        int said_fd = mkstemp(said_path), saved = dup(STDERR_FILENO);

        /* What the daemon says goes to a file of the test's. */
        ck_assert(said_fd >= 0 && saved >= 0);
        fflush(stderr);
        ck_assert_int_eq(dup2(said_fd, STDERR_FILENO), STDERR_FILENO);
        daemon_start(&d, "--min-threads", "1", "--max-threads", "1", "--stop-timeout", "1",
                     "--kill-grace", "0.5", NULL);
        ck_assert_int_eq(dup2(saved, STDERR_FILENO), STDERR_FILENO);
        close(saved);
        gate = fifo_make(d.dir, "gate");
        out = fifo_make(d.dir, "pids");
        fd = client_connect(d.sock);
        /* Deaf to SIGTERM, and so is its child: only SIGKILL ends them. */
        snprintf(job, sizeof(job), "{\"command\":\"trap '' TERM; cat %s & echo $$ $! >%s; wait\"}",
                 gate, out);
        ck_assert_int_eq(job_submit(fd, job), 1);
        ck_assert_int_eq(job_submit(fd, "{\"command\":\"echo never\"}"), 2); /* queued behind */
        pids = fifo_read_all(out); /* the job runs, its child too */
        ck_assert_int_eq(sscanf(pids, "%d %d", &shell_pid, &cat_pid), 2);
        free(pids);
        shell = pid_handle(shell_pid);
        cat = pid_handle(cat_pid);
        close(fd);

        clock_gettime(CLOCK_MONOTONIC, &t0);
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        ck_assert_int_eq(waitpid(d.pid, &status, 0), d.pid);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                      "slowworkd ended with status 0x%x", status);
        /* stop-timeout, then SIGTERM (ignored), kill-grace, then SIGKILL; the timers count
         * whole milliseconds, hence the 20 ms. The upper bound only says it did not hang. */
        elapsed = seconds_between(&t0, &t1);
        ck_assert_msg(elapsed >= 1 + 0.5 - 0.02,
                      "slowworkd stopped after %.3f s, before stop-timeout and kill-grace", elapsed);
        ck_assert_msg(elapsed < 10, "slowworkd took %.3f s to stop", elapsed);
        ck_assert_int_ge(pread(said_fd, said, sizeof(said) - 1, 0), 0);
        ck_assert_msg(strstr(said, "\n<4>slowworkd: Stop timeout: interrupting the jobs still "
                                   "running\n"),
                      "slowworkd said: %s", said);
        close(said_fd);
        unlink(said_path);
        ck_assert(ended_within(shell, 20000));
        ck_assert(ended_within(cat, 20000));
        close(shell);
        close(cat);
        /* The queued job did not start: it has no log. */
        snprintf(path, sizeof(path), "%s/logs/2.1.log", d.state);
        ck_assert_int_eq(access(path, F_OK), -1);

        /* The next daemon knows what became of the run: interrupted, by SIGKILL. */
        daemon_start_again(&d, "--min-threads", "1", "--max-threads", "1", "--stop-timeout", "0",
                           "--kill-grace", "0", NULL);
        fd = client_connect(d.sock);
        st = job_status(fd, 1);
        last = json_object_object_get(st, "last");
        ck_assert_int_eq(int_member(last, "run"), 1);
        ck_assert_str_eq(str_member(last, "outcome"), "interrupted");
        ck_assert_int_eq(int_member(last, "signal"), SIGKILL);
        json_object_put(st);
        /* The queued job is still queued, not started, not recorded. */
        st = job_status(fd, 2);
        ck_assert_int_eq(int_member(st, "runs"), 0);
        ck_assert_ptr_null(json_object_object_get(st, "last"));
        json_object_put(st);
        close(fd);
        daemon_stop(&d);
        free(gate);
        free(out);
}
END_TEST

/* Why no client sees -32004 "slowworkd is shutting down": at SIGTERM the daemon closes every
 * connection and its socket at once, while it still waits for its jobs. */
START_TEST(sigterm_closes_connections_at_once_while_jobs_finish)
{
        char *gate, job[PATH_MAX + 64], *line;
        int fd, status;

        daemon_start(&d, "--stop-timeout", "60", NULL);
        gate = fifo_make(d.dir, "gate");
        fd = client_connect(d.sock);
        snprintf(job, sizeof(job), "{\"command\":\"cat %s\"}", gate);
        job_wait_state(fd, job_submit(fd, job), "running");
        ck_assert_int_eq(kill(d.pid, SIGTERM), 0);
        line = client_read_line(fd);
        ck_assert_msg(line == NULL, "a connection stayed open at SIGTERM: %s", line);
        ck_assert_int_eq(client_connect(d.sock), -1);
        ck_assert(daemon_alive(&d)); /* its job still runs */
        fifo_release(gate);
        status = daemon_reap(&d);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(fd);
        free(gate);
}
END_TEST

/* The descriptors a process has open. */
static int open_fds(pid_t pid)
{
        char path[64];
        struct dirent *e;
        DIR *dir;
        int n = 0;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int)pid);
        dir = opendir(path);
        ck_assert_ptr_nonnull(dir);
        while ((e = readdir(dir)))
                n += e->d_name[0] != '.';
        closedir(dir);
        return n;
}

START_TEST(queued_jobs_hold_no_file_descriptors)
{
        struct rlimit few = {.rlim_cur = 64, .rlim_max = 64}, old;
        char *gates[2], name[16], job[PATH_MAX + 64];
        int64_t blockers[2], ids[300];
        json_object *rec;
        int fd, i, before, after;

        /* The daemon inherits the limit: 300 queued jobs must not need 300 descriptors. */
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
        ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &few), 0);
        daemon_start(&d, "--max-threads", "2", NULL);
        fd = client_connect(d.sock);
        for (i = 0; i < 2; i++) {
                snprintf(name, sizeof(name), "gate%d", i);
                gates[i] = fifo_make(d.dir, name);
                snprintf(job, sizeof(job), "{\"command\":\"cat %s\"}", gates[i]);
                blockers[i] = job_submit(fd, job);
                job_wait_state(fd, blockers[i], "running");
        }
        before = open_fds(d.pid);
        for (i = 0; i < 300; i++)
                ids[i] = job_submit(fd, "{\"command\":\"true\",\"env\":{\"A\":\"1\"}}");
        /* A few for the runs starting (logs, pipes), not one a queued job. */
        after = open_fds(d.pid);
        ck_assert_msg(after <= before + 8, "%d descriptors open with 300 jobs queued, %d before",
                      after, before);
        for (i = 0; i < 2; i++) {
                fifo_release(gates[i]);
                free(gates[i]);
        }
        for (i = 0; i < 300; i++) {
                rec = job_wait(fd, ids[i]);
                ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
                json_object_put(rec);
        }
        close(fd);
        daemon_stop(&d);
        setrlimit(RLIMIT_NOFILE, &old);
}
END_TEST

/* A request sent whatever becomes of it, and the reply line, or NULL when the daemon closed the
 * connection instead. */
static char *try_ping(int fd)
{
        static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n";

        if (send(fd, ping, sizeof(ping) - 1, MSG_NOSIGNAL) < 0)
                ck_assert_msg(errno == EPIPE || errno == ECONNRESET, "send: %s", strerror(errno));
        return client_read_line(fd);
}

static int64_t connections(int fd)
{
        json_object *reply = client_call(fd, "status", NULL);
        int64_t n = result_int(reply, "connections");

        json_object_put(reply);
        return n;
}

START_TEST(a_connection_beyond_1024_is_told_why_and_closed)
{
        struct rlimit old, many;
        int fds[1024], extra, i;
        char *line;

        /* The test and the daemon, which inherits the limit, need more than 1024 descriptors. */
        ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &old), 0);
        many.rlim_cur = 4096;
        many.rlim_max = old.rlim_max > 4096 ? old.rlim_max : 4096;
        ck_assert_msg(setrlimit(RLIMIT_NOFILE, &many) == 0, "cannot open 4096 files: %s",
                      strerror(errno));
        daemon_start(&d, NULL);
        /* Answered, so the daemon has also taken in the end of daemon_start()'s connection. */
        fds[0] = client_connect(d.sock);
        line = try_ping(fds[0]);
        ck_assert_ptr_nonnull(line);
        free(line);
        for (i = 1; i < 1024; i++) {
                fds[i] = client_connect(d.sock);
                ck_assert_int_ge(fds[i], 0);
        }
        for (i = 1; i < 1024; i++) {
                line = try_ping(fds[i]);
                ck_assert_msg(line != NULL, "connection %d of 1024 was closed", i + 1);
                free(line);
        }
        ck_assert_int_eq(connections(fds[0]), 1024);

        /* The kernel takes the 1025th; the daemon says why it does not read it, and closes it. */
        extra = client_connect(d.sock);
        ck_assert_int_ge(extra, 0);
        line = try_ping(extra);
        ck_assert_str_eq(line, "{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32004,"
                               "\"message\":\"too many connections: 1024 already\",\"data\":"
                               "\"EBUSY\"}}");
        free(line);
        ck_assert_ptr_null(client_read_line(extra));
        close(extra);
        ck_assert_int_eq(connections(fds[0]), 1024);

        /* Once some close, a new one is served. The status request, sent after the closes,
         * is read no sooner than they are: the new connection is accepted after them. */
        for (i = 1014; i < 1024; i++)
                close(fds[i]);
        connections(fds[0]);
        fds[1014] = client_connect(d.sock);
        line = try_ping(fds[1014]);
        ck_assert_msg(line != NULL, "a connection after 10 closed was refused");
        free(line);
        ck_assert_int_eq(connections(fds[1014]), 1015);
        for (i = 0; i <= 1014; i++)
                close(fds[i]);
        daemon_stop(&d);
        setrlimit(RLIMIT_NOFILE, &old);
}
END_TEST

/* The CPU time a process has used, all its threads, in milliseconds. */
static uint64_t process_cpu_ms(pid_t pid)
{
        unsigned long long utime = 0, stime = 0;
        char path[64], buf[2048], *p;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        p = strrchr(buf, ')'); /* after the command name, which may hold spaces */
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                                &utime, &stime),
                         2);
        return (utime + stime) * 1000u / (uint64_t)sysconf(_SC_CLK_TCK);
}

/* Over a second the daemon uses under 5% of one core: a spinning thread uses 20 times that. */
static void assert_daemon_idle_costs_nothing(void)
{
        uint64_t before = process_cpu_ms(d.pid), used;

        sleep(1); /* a span of the clock is what is measured */
        used = process_cpu_ms(d.pid) - before;
        ck_assert_msg(used < 50, "the idle daemon used %llu ms of CPU in 1 s",
                      (unsigned long long)used);
}

static int64_t stat_of(int fd, const char *name)
{
        json_object *reply = client_call(fd, "stats", NULL);
        int64_t v = result_int(reply, name);

        json_object_put(reply);
        return v;
}

START_TEST(idle_daemon_uses_no_cpu_fresh_and_after_a_burst)
{
        int64_t ids[12];
        int fd, i;

        daemon_start(&d, "--min-threads", "1", "--max-threads", "4", "--idle-timeout", "0.2",
                     NULL);
        fd = client_connect(d.sock);
        /* Answered once the start is over: what is measured next is the idle daemon. */
        ck_assert_int_eq(stat_of(fd, "threads"), 1);
        assert_daemon_idle_costs_nothing();

        for (i = 0; i < 12; i++)
                ids[i] = job_submit(fd, "{\"command\":\"sleep 0.1\"}");
        for (i = 0; i < 12; i++)
                json_object_put(job_wait(fd, ids[i]));
        ck_assert_int_eq(stat_of(fd, "items_run"), 12);
        for (i = 0; i < 400 && stat_of(fd, "threads") > 1; i++)
                usleep(10000);
        ck_assert_int_eq(stat_of(fd, "threads"), 1);
        assert_daemon_idle_costs_nothing();
        close(fd);
        daemon_stop(&d);
}
END_TEST

/* A field of /proc/PID/status in KiB (VmRSS, VmHWM: the peak). */
static long status_kib(pid_t pid, const char *field)
{
        char path[64], line[256];
        size_t n = strlen(field);
        long kib = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        while (kib < 0 && fgets(line, sizeof(line), f))
                if (strncmp(line, field, n) == 0 && line[n] == ':')
                        kib = strtol(line + n + 1, NULL, 10);
        fclose(f);
        ck_assert_msg(kib >= 0, "no %s in %s", field, path);
        return kib;
}

#define WAITERS       120
#define LOAD_QUIET_MS 300 /* a load phase ends once no socket took a byte for this long */

/* What each non-reading client sends: a wait for the gate, then this over and over. */
static char *pipeline_block(int64_t gate)
{
        char *block;

        ck_assert_int_gt(asprintf(&block,
                                  "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"list\"}\n"
                                  "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"status\","
                                  "\"params\":{\"id\":%lld}}\n"
                                  "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"settings.get\"}\n"
                                  "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"wait\","
                                  "\"params\":{\"id\":%lld}}\n"
                                  "{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"stats\"}\n",
                                  (long long)gate, (long long)gate),
                         0);
        return block;
}

/* Clients that send and never read: the first line, then the block over and over. */
struct senders {
        int fds[WAITERS];
        size_t sent[WAITERS];
        bool closed[WAITERS];
        const char *first, *block;
};

/* Sends from each client until no socket takes more for LOAD_QUIET_MS (the daemon stopped
 * reading them, or closed them) or 20 s have passed. */
static void load(struct senders *x)
{
        size_t first_len = strlen(x->first), block_len = strlen(x->block);
        struct pollfd p[WAITERS];
        int who[WAITERS];
        time_t end = time(NULL) + 20;

        while (time(NULL) < end) {
                int k = 0, ready;

                for (int i = 0; i < WAITERS; i++)
                        if (!x->closed[i]) {
                                who[k] = i;
                                p[k++] = (struct pollfd){.fd = x->fds[i], .events = POLLOUT};
                        }
                ready = poll(p, (nfds_t)k, LOAD_QUIET_MS);
                ck_assert_int_ge(ready, 0);
                if (ready == 0)
                        break;
                for (int j = 0; j < k; j++) {
                        int i = who[j];

                        while (p[j].revents) {
                                size_t at = x->sent[i], off = (at - first_len) % block_len;
                                bool head = at < first_len;
                                const char *from = head ? x->first + at : x->block + off;
                                size_t len = head ? first_len - at : block_len - off;
                                ssize_t w = send(x->fds[i], from, len, MSG_NOSIGNAL | MSG_DONTWAIT);

                                if (w > 0) {
                                        x->sent[i] += (size_t)w;
                                        continue;
                                }
                                x->closed[i] = w < 0 && (errno == EPIPE || errno == ECONNRESET);
                                ck_assert_msg(w < 0 && (errno == EAGAIN || x->closed[i]),
                                              "send: %s", strerror(errno));
                                break;
                        }
                }
        }
}

/* How many of the clients the daemon has closed. */
static int dropped(const struct senders *x)
{
        int n = 0;

        for (int i = 0; i < WAITERS; i++) {
                struct pollfd p = {.fd = x->fds[i], .events = 0};

                ck_assert_int_ge(poll(&p, 1, 0), 0);
                n += x->closed[i] || (p.revents & (POLLHUP | POLLERR)) != 0;
        }
        return n;
}

/* slowworkd runs on the malloc configure chose (jemalloc, unless --without-jemalloc or the
 * sanitizers): not on libc's because a link dropped the library or put it behind libc. */
START_TEST(slowworkd_runs_on_the_malloc_it_was_configured_with)
{
        char path[64], line[512];
        bool jemalloc = false;
        FILE *f;

        daemon_start(&d, NULL);
        snprintf(path, sizeof(path), "/proc/%d/maps", (int)d.pid);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f))
                jemalloc |= strstr(line, "/libjemalloc.so") != NULL;
        fclose(f);
#ifdef WITH_JEMALLOC
        ck_assert_msg(jemalloc, "configured with jemalloc, slowworkd has not loaded it");
#else
        ck_assert_msg(!jemalloc, "configured without jemalloc, slowworkd has loaded it");
#endif
        daemon_stop(&d);
}
END_TEST

/*
 * 120 clients wait for a job, pipeline more requests behind the wait (lists, statuses, settings,
 * more waits) and never read a reply. Their replies are bounded, so the daemon stays far below
 * 100 MB (it grew to 1.85 GB), serves others meanwhile, and gives the memory back when they go.
 */
START_TEST(clients_that_never_read_cost_bounded_memory_which_comes_back)
{
        char *gate, *line, params[8300], pad[8001];
        struct senders *x = calloc(1, sizeof(*x));
        int ctl, sync_fd, ndropped, small = 4096;
        long base, peak, held, after;
        int64_t id;

        ck_assert_ptr_nonnull(x);
        daemon_start(&d, NULL);
        ctl = client_connect(d.sock);
        gate = fifo_make(d.dir, "gate");
        /* Long commands make long replies: each list tells of 9 jobs of 8 kB. */
        memset(pad, 'x', sizeof(pad) - 1);
        pad[sizeof(pad) - 1] = '\0';
        snprintf(params, sizeof(params), "{\"command\":\"cat %s # %s\"}", gate, pad);
        id = job_submit(ctl, params);
        for (int i = 0; i < 8; i++) {
                snprintf(params, sizeof(params), "{\"command\":\"true # %s\",\"delay\":3600}", pad);
                job_submit(ctl, params);
        }
        base = status_kib(d.pid, "VmRSS");

        /* Its wait is answered after theirs (the last waiter first): then theirs all were. */
        sync_fd = client_connect(d.sock);
        snprintf(params, sizeof(params),
                 "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait\",\"params\":{\"id\":%lld}}\n",
                 (long long)id);
        client_write(sync_fd, params, strlen(params));
        x->first = strdup(params);
        x->block = pipeline_block(id);
        for (int i = 0; i < WAITERS; i++) {
                x->fds[i] = client_connect(d.sock);
                ck_assert_int_ge(x->fds[i], 0);
                setsockopt(x->fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        }
        load(x);
        fifo_release(gate);
        line = client_read_line(sync_fd);
        ck_assert_msg(line && strstr(line, "\"outcome\":\"succeeded\""), "the wait got: %s", line);
        free(line);
        /* The waits were answered: what the clients sent behind them is handled as far as it
         * goes, and they send what more the daemon takes. */
        load(x);
        ck_assert_int_eq(connections(ctl) - 2, WAITERS - (ndropped = dropped(x)));
        peak = status_kib(d.pid, "VmHWM");
        held = status_kib(d.pid, "VmRSS");

        for (int i = 0; i < WAITERS; i++)
                close(x->fds[i]);
        while (connections(ctl) > 2)
                ;
        /* Connections are freed after the loop turn that closed them, before it reads again. */
        connections(ctl);
        after = status_kib(d.pid, "VmRSS");
        fprintf(stderr,
                "%d clients that never read: slowworkd's RSS %ld MiB before, %ld MiB at the peak, "
                "%ld MiB with them connected, %ld MiB after they left; %d of them dropped\n",
                WAITERS, base / 1024, peak / 1024, held / 1024, after / 1024, ndropped);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        /* The sanitizers' own allocators and shadow memory make these figures no measure. */
        ck_assert_msg(peak < 100 * 1024,
                      "slowworkd grew to %ld MiB for %d clients that never read (from %ld MiB)",
                      peak / 1024, WAITERS, base / 1024);
        ck_assert_msg(after < base + 16 * 1024,
                      "slowworkd kept %ld MiB after the %d clients left (%ld MiB before them, "
                      "%ld MiB at the peak)",
                      after / 1024, WAITERS, base / 1024, peak / 1024);
#endif
        /* They are not dropped: they are not served until they read. */
        ck_assert_msg(ndropped == 0, "%d of %d clients were dropped", ndropped, WAITERS);
        free((char *)x->first);
        free((char *)x->block);
        free(x);
        free(gate);
        close(sync_fd);
        close(ctl);
        daemon_stop(&d);
}
END_TEST

#define BATCH_MEMBERS 2000

/*
 * A batch costs what its members would alone: 120 clients each send a batch of 2,000
 * settings.get (some 100 kB) and pings after it, and never read. Their replies, about 2 MB a
 * batch, are written as they come and bounded as a line's are, so the daemon stays far below
 * 100 MB (gathered whole, they took 250 MB, and 64 connections of a user could hold 256 MiB
 * each), serves others meanwhile, and a client that reads gets the whole array, then the pings'.
 */
START_TEST(batches_of_clients_that_never_read_cost_what_their_members_would)
{
        static const char member[] = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"settings.get\"}";
        struct senders *x = calloc(1, sizeof(*x));
        char *batch = malloc(BATCH_MEMBERS * 64), *line;
        size_t at = 0;
        int ctl, small = 4096, ndropped;
        long base, peak;
        json_object *reply;

        ck_assert(x && batch);
        daemon_start(&d, NULL);
        ctl = client_connect(d.sock);
        for (int i = 0; i < BATCH_MEMBERS; i++) {
                batch[at++] = i == 0 ? '[' : ',';
                at += (size_t)sprintf(batch + at, member, i);
        }
        strcpy(batch + at, "]\n");
        x->first = batch;
        x->block = "{\"jsonrpc\":\"2.0\",\"id\":\"p\",\"method\":\"ping\"}\n";
        base = status_kib(d.pid, "VmRSS");
        for (int i = 0; i < WAITERS; i++) {
                x->fds[i] = client_connect(d.sock);
                ck_assert_int_ge(x->fds[i], 0);
                setsockopt(x->fds[i], SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        }
        load(x);
        ck_assert_int_eq(connections(ctl) - 1, WAITERS - (ndropped = dropped(x)));
        peak = status_kib(d.pid, "VmHWM");
        fprintf(stderr,
                "%d clients with a batch of %d that never read: slowworkd's RSS %ld MiB before, "
                "%ld MiB at the peak\n",
                WAITERS, BATCH_MEMBERS, base / 1024, peak / 1024);
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
        ck_assert_msg(peak < 100 * 1024,
                      "slowworkd grew to %ld MiB for %d batches that were not read (from %ld MiB)",
                      peak / 1024, WAITERS, base / 1024);
#endif
        ck_assert_msg(ndropped == 0, "%d of %d clients were dropped", ndropped, WAITERS);
        /* The first client reads: its batch's line, whole and in order, then a ping's reply. */
        line = client_read_line(x->fds[0]);
        reply = json_tokener_parse(line);
        ck_assert_msg(json_object_is_type(reply, json_type_array), "not an array: %.200s", line);
        ck_assert_int_eq(json_object_array_length(reply), BATCH_MEMBERS);
        for (int i = 0; i < BATCH_MEMBERS; i++) {
                json_object *r = json_object_array_get_idx(reply, (size_t)i);

                ck_assert_int_eq(int_member(r, "id"), i);
                ck_assert_int_gt(int_member(reply_result(r), "max-threads"), 0);
        }
        json_object_put(reply);
        free(line);
        line = client_read_line(x->fds[0]);
        ck_assert_msg(line && strstr(line, "\"id\":\"p\""), "after the batch: %s", line);
        free(line);
        for (int i = 0; i < WAITERS; i++)
                close(x->fds[i]);
        while (connections(ctl) > 1)
                ;
        free(batch);
        free(x);
        close(ctl);
        daemon_stop(&d);
}
END_TEST

START_TEST(bad_flags_exit_with_usage_status)
{
        ck_assert_int_eq(daemon_run_status("--max-threads", "0", NULL), 2);
        ck_assert_int_eq(daemon_run_status("--min-threads", "5", "--max-threads", "4", NULL), 2);
        ck_assert_int_eq(daemon_run_status("--idle-timeout", "soon", NULL), 2);
        ck_assert_int_eq(daemon_run_status("--no-such-flag", NULL), 2);
        ck_assert_int_eq(daemon_run_status("--help", NULL), 0);
}
END_TEST

/* The ids of a list page, as "1,2,3", and its "more". */
static int64_t list_page(int fd, const char *params, char *ids, size_t len)
{
        json_object *reply = client_call(fd, "list", params), *items;
        int64_t more;
        size_t n = 0;

        ck_assert_msg(reply_code(reply) == 0, "list %s: %s", params,
                      json_object_to_json_string(reply));
        items = json_object_object_get(reply_result(reply), "items");
        ids[0] = '\0';
        for (size_t i = 0; i < json_object_array_length(items); i++)
                n += (size_t)snprintf(ids + n, len - n, "%s%lld", i ? "," : "",
                                      (long long)int_member(json_object_array_get_idx(items, i),
                                                            "id"));
        more = result_int(reply, "more");
        json_object_put(reply);
        return more;
}

START_TEST(list_pages_by_id_and_filters_by_state_and_owner)
{
        int fd = client_connect(d.sock);
        char ids[256], params[128];
        json_object *reply;

        for (int i = 0; i < 7; i++)
                job_submit(fd, i == 3 ? "{\"command\":\"true\",\"hold\":true}"
                                      : "{\"command\":\"true\",\"delay\":60}");
        job_wait_state(fd, 4, "idle");
        ck_assert_int_eq(list_page(fd, NULL, ids, sizeof(ids)), 0);
        ck_assert_str_eq(ids, "1,2,3,4,5,6,7");
        ck_assert_int_eq(list_page(fd, "{\"limit\":3}", ids, sizeof(ids)), 4);
        ck_assert_str_eq(ids, "1,2,3");
        ck_assert_int_eq(list_page(fd, "{\"limit\":3,\"after_id\":3}", ids, sizeof(ids)), 1);
        ck_assert_str_eq(ids, "4,5,6");
        ck_assert_int_eq(list_page(fd, "{\"state\":\"pending\",\"limit\":4}", ids, sizeof(ids)),
                         2);
        ck_assert_str_eq(ids, "1,2,3,5");
        ck_assert_int_eq(list_page(fd, "{\"state\":\"idle\"}", ids, sizeof(ids)), 0);
        ck_assert_str_eq(ids, "4");
        snprintf(params, sizeof(params), "{\"owner\":%u,\"limit\":1,\"after_id\":6}",
                 (unsigned)getuid());
        ck_assert_int_eq(list_page(fd, params, ids, sizeof(ids)), 0);
        ck_assert_str_eq(ids, "7");
        snprintf(params, sizeof(params), "{\"owner\":%u}", (unsigned)getuid() + 1);
        ck_assert_int_eq(list_page(fd, params, ids, sizeof(ids)), 0);
        ck_assert_str_eq(ids, "");
        /* A page may start after a job that is gone. */
        reply = client_call(fd, "cancel", "{\"id\":2}");
        json_object_put(reply);
        ck_assert_int_eq(list_page(fd, "{\"limit\":2,\"after_id\":2}", ids, sizeof(ids)), 3);
        ck_assert_str_eq(ids, "3,4");
        expect_error(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"list\",\"params\":{\"state\":\"done\"}}",
                     -32602);
        expect_error(fd, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"list\",\"params\":{\"limit\":0}}",
                     -32602);
        close(fd);
}
END_TEST

/* One line read from fd, as JSON. */
static json_object *read_reply(int fd)
{
        char *line = client_read_line(fd);
        json_object *reply;

        ck_assert_ptr_nonnull(line);
        reply = json_tokener_parse(line);
        ck_assert_msg(reply, "not JSON: %s", line);
        free(line);
        return reply;
}

/* The array a batch got, of n replies. */
static json_object *read_batch_reply(int fd, size_t n)
{
        json_object *reply = read_reply(fd);

        ck_assert_msg(json_object_is_type(reply, json_type_array), "not an array: %s",
                      json_object_to_json_string(reply));
        ck_assert_msg(json_object_array_length(reply) == n, "%zu replies, want %zu: %s",
                      json_object_array_length(reply), n, json_object_to_json_string(reply));
        return reply;
}

static json_object *member(json_object *array, size_t i)
{
        return json_object_array_get_idx(array, i);
}

static const char *id_text(json_object *reply)
{
        return json_object_to_json_string(json_object_object_get(reply, "id"));
}

START_TEST(batch_gets_one_array_of_the_replies_to_its_requests_in_order)
{
        int fd = client_connect(d.sock);
        json_object *replies, *r, *st;

        client_send(fd,
                    "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                    " {\"jsonrpc\":\"2.0\",\"method\":\"ping\"} ,"
                    "{\"jsonrpc\":\"2.0\",\"id\":\"s\",\"method\":\"settings.get\"},"
                    "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"submit\","
                    "\"params\":{\"command\":\"true\",\"name\":\"in [a, batch]\"}},"
                    "{\"jsonrpc\":\"2.0\",\"method\":\"submit\",\"params\":{\"command\":\"true\"}},"
                    "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"frobnicate\"},"
                    "{\"jsonrpc\":\"2.0\",\"method\":\"frobnicate\"},"
                    "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"status\",\"params\":{\"id\":1}}]");
        replies = read_batch_reply(fd, 5);
        r = member(replies, 0);
        ck_assert_str_eq(id_text(r), "1");
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(r), "pong")));
        r = member(replies, 1);
        ck_assert_str_eq(id_text(r), "\"s\"");
        ck_assert_int_eq(int_member(reply_result(r), "max-threads"), 6);
        r = member(replies, 2);
        ck_assert_str_eq(id_text(r), "3");
        ck_assert_int_eq(int_member(reply_result(r), "id"), 1);
        r = member(replies, 3);
        ck_assert_str_eq(id_text(r), "4");
        ck_assert_int_eq(reply_code(r), -32601);
        /* Handled in order: the status saw the submit before it. */
        r = member(replies, 4);
        ck_assert_str_eq(id_text(r), "5");
        ck_assert_str_eq(str_member(reply_result(r), "name"), "in [a, batch]");
        json_object_put(replies);
        /* The notifications were carried out: the second submit made job 2. */
        st = job_status(fd, 2);
        ck_assert_int_eq(int_member(st, "id"), 2);
        json_object_put(st);
        close(fd);
}
END_TEST

START_TEST(batch_of_notifications_only_gets_no_reply)
{
        int fd = client_connect(d.sock);
        json_object *reply, *st;

        client_send(fd,
                    "[{\"jsonrpc\":\"2.0\",\"method\":\"ping\"},"
                    "{\"jsonrpc\":\"2.0\",\"method\":\"submit\",\"params\":{\"command\":\"true\"}},"
                    "{\"jsonrpc\":\"2.0\",\"method\":\"frobnicate\"}]");
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}");
        reply = read_reply(fd); /* the next line is the ping's */
        ck_assert_str_eq(id_text(reply), "9");
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        st = job_status(fd, 1);
        ck_assert_int_eq(int_member(st, "id"), 1);
        json_object_put(st);
        close(fd);
}
END_TEST

START_TEST(empty_batch_is_one_error_and_invalid_members_get_theirs)
{
        int fd = client_connect(d.sock);
        json_object *reply, *r;

        client_send(fd, "[ ]");
        reply = read_reply(fd);
        ck_assert(json_object_is_type(reply, json_type_object));
        ck_assert_int_eq(reply_code(reply), -32600);
        ck_assert_str_eq(id_text(reply), "null");
        json_object_put(reply);

        client_send(fd, "[1,2]");
        reply = read_batch_reply(fd, 2);
        for (size_t i = 0; i < 2; i++) {
                ck_assert_int_eq(reply_code(member(reply, i)), -32600);
                ck_assert_str_eq(id_text(member(reply, i)), "null");
        }
        json_object_put(reply);

        /* Each member is read on its own: a bad one spoils only its own reply. */
        client_send(fd, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":[1]},"
                        "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\",\"method\":\"ping\"},"
                        "[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}],"
                        "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}]");
        reply = read_batch_reply(fd, 4);
        r = member(reply, 0);
        ck_assert_str_eq(id_text(r), "1");
        ck_assert_int_eq(reply_code(r), -32602);
        ck_assert_int_eq(reply_code(member(reply, 1)), -32600);
        ck_assert_int_eq(reply_code(member(reply, 2)), -32600); /* no batch in a batch */
        r = member(reply, 3);
        ck_assert_str_eq(id_text(r), "4");
        ck_assert_int_eq(reply_code(r), 0);
        json_object_put(reply);

        /* A batch that is not JSON is one parse error, as any line. */
        expect_error(fd, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},", -32700);
        close(fd);
        still_answers();
}
END_TEST

/* A member answered later holds the batch's reply back: it is one line, sent once the wait has
 * its run's record, and the ping after the wait is in it. */
START_TEST(batch_with_a_wait_replies_once_the_wait_is_answered)
{
        char params[PATH_MAX + 64], *gate = fifo_make(d.dir, "gate"), request[512];
        int fd = client_connect(d.sock), other = client_connect(d.sock);
        json_object *reply, *r;
        int64_t id;

        snprintf(params, sizeof(params), "{\"command\":\"cat %s\"}", gate);
        id = job_submit(other, params);
        job_wait_state(other, id, "running");
        snprintf(request, sizeof(request),
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"wait\",\"params\":{\"id\":%lld}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"ping\"}]",
                 (long long)id);
        client_send(fd, request);
        fifo_release(gate);
        reply = read_batch_reply(fd, 2);
        r = member(reply, 0);
        ck_assert_str_eq(id_text(r), "1");
        ck_assert_str_eq(str_member(reply_result(r), "outcome"), "succeeded");
        r = member(reply, 1);
        ck_assert_str_eq(id_text(r), "2");
        ck_assert_int_eq(reply_code(r), 0);
        json_object_put(reply);
        close(fd);
        close(other);
        free(gate);
}
END_TEST

/* A client that goes while its batch waits for a member: the replies gathered so far go, the
 * members after the wait are never handled, nothing is left behind (ASan), and the job and the
 * daemon go on. */
START_TEST(client_gone_while_its_batch_waits_changes_nothing_else)
{
        char params[PATH_MAX + 64], *gate = fifo_make(d.dir, "gate"), request[768];
        int fd = client_connect(d.sock), other = client_connect(d.sock);
        json_object *rec;
        int64_t id;

        snprintf(params, sizeof(params), "{\"command\":\"cat %s\"}", gate);
        id = job_submit(other, params);
        job_wait_state(other, id, "running");
        /* A reply it never reads: its close then resets the connection (Linux tells the peer of
         * an AF_UNIX socket closed with unread data ECONNRESET), which the daemon sees at once,
         * unlike an end of input, after which it would go on with the batch. */
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"ping\"}");
        snprintf(request, sizeof(request),
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"submit\","
                 "\"params\":{\"command\":\"true\",\"name\":\"before\"}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"wait\",\"params\":{\"id\":%lld}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"submit\","
                 "\"params\":{\"command\":\"true\",\"name\":\"after\"}}]",
                 (long long)id);
        client_send(fd, request);
        /* The submit before the wait was handled (once its job is known), so was the wait right
         * after it. */
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id + 1);
        for (;;) {
                json_object *reply = client_call(other, "status", params);
                int code = reply_code(reply);

                json_object_put(reply);
                if (code != -32001)
                        break;
                usleep(1000);
        }
        rec = job_wait(other, id + 1);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        close(fd);
        while (connections(other) > 1)
                usleep(1000);
        fifo_release(gate);
        rec = job_wait(other, id);
        ck_assert_str_eq(str_member(rec, "outcome"), "succeeded");
        json_object_put(rec);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id + 2);
        ck_assert_int_eq(call_error(other, "status", params, request, sizeof(request)), -32001);
        still_answers();
        close(other);
        free(gate);
}
END_TEST

/* A batch's reply line is written as its members are answered: the start of it comes while a
 * wait in it is not answered yet, and the events due meanwhile (a subscriber's own submit's)
 * come after the line's end, never inside it. */
START_TEST(batch_reply_line_is_written_as_its_members_are_answered)
{
        char params[PATH_MAX + 64], *gate = fifo_make(d.dir, "gate"), request[512], got[64];
        int fd = client_connect(d.sock), other = client_connect(d.sock);
        json_object *reply, *r;
        int64_t id, submitted;
        char *line, *whole;
        bool running = false, pending = false;

        json_object_put(call_ok(fd, "subscribe", NULL));
        snprintf(params, sizeof(params), "{\"command\":\"cat %s\"}", gate);
        id = job_submit(other, params);
        while (!running) { /* the events of other's job, up to its run's start */
                json_object *ev = read_reply(fd), *params_of = json_object_object_get(ev, "params");

                running = int_member(params_of, "id") == id &&
                          strcmp(str_member(params_of, "state"), "running") == 0;
                json_object_put(ev);
        }
        snprintf(request, sizeof(request),
                 "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                 "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"submit\","
                 "\"params\":{\"command\":\"true\",\"delay\":3600}},"
                 "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"wait\",\"params\":{\"id\":%lld}}]",
                 (long long)id);
        client_send(fd, request);
        /* The line's start, while the wait waits. */
        ck_assert_int_eq(recv(fd, got, 2, MSG_WAITALL), 2);
        ck_assert_int_eq(memcmp(got, "[{", 2), 0);
        fifo_release(gate);
        line = client_read_line(fd);
        ck_assert_int_gt(asprintf(&whole, "[{%s", line), 0);
        reply = json_tokener_parse(whole);
        ck_assert_msg(json_object_is_type(reply, json_type_array) &&
                          json_object_array_length(reply) == 3,
                      "%s", whole);
        ck_assert_int_eq(int_member(member(reply, 0), "id"), 1);
        r = member(reply, 1);
        ck_assert_int_eq(int_member(r, "id"), 2);
        submitted = int_member(reply_result(r), "id");
        r = member(reply, 2);
        ck_assert_int_eq(int_member(r, "id"), 3);
        ck_assert_str_eq(str_member(reply_result(r), "outcome"), "succeeded");
        json_object_put(reply);
        free(whole);
        free(line);
        /* Then the events: the submitted job's "pending" among them. */
        while (!pending) {
                json_object *ev = read_reply(fd), *params_of;

                ck_assert_str_eq(str_member(ev, "method"), "event");
                params_of = json_object_object_get(ev, "params");
                pending = int_member(params_of, "id") == submitted &&
                          strcmp(str_member(params_of, "state"), "pending") == 0;
                json_object_put(ev);
        }
        close(fd);
        close(other);
        free(gate);
}
END_TEST

/* Each member of a batch counts as if it came alone: max-queued-per-user refuses the third
 * submit of a batch as it refuses a third submit alone, and a batch line longer than 1 MiB is
 * one -32005, as any line. */
START_TEST(batch_members_count_against_the_limits_one_by_one)
{
        static const char submit[] = "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"submit\","
                                     "\"params\":{\"command\":\"true\",\"delay\":3600}}";
        int fd = client_connect(d.sock);
        char request[1024], msg[256], one[256];
        json_object *reply;
        size_t size = 1100 * 1024, at = 0;
        char *big;

        json_object_put(
            call_ok(fd, "settings.set", "{\"max-queued-per-user\":2,\"runtime\":true}"));
        at = (size_t)snprintf(request, sizeof(request), "[");
        for (int i = 1; i <= 3; i++) {
                snprintf(one, sizeof(one), submit, i);
                at += (size_t)snprintf(request + at, sizeof(request) - at, "%s%s", one,
                                       i < 3 ? "," : "]");
        }
        client_send(fd, request);
        reply = read_batch_reply(fd, 3);
        ck_assert_int_eq(int_member(reply_result(member(reply, 0)), "id"), 1);
        ck_assert_int_eq(int_member(reply_result(member(reply, 1)), "id"), 2);
        ck_assert_int_eq(reply_code(member(reply, 2)), -32004);
        ck_assert_str_eq(id_text(member(reply, 2)), "3");
        json_object_put(reply);
        /* Alone, the same. */
        ck_assert_int_eq(call_error(fd, "submit", "{\"command\":\"true\"}", msg, sizeof(msg)),
                         -32004);
        ck_assert_int_eq(call_error(fd, "status", "{\"id\":3}", msg, sizeof(msg)), -32001);

        /* A batch of pings longer than 1 MiB. */
        big = malloc(size + 64);
        at = 0;
        big[at++] = '[';
        while (at < size) {
                at += (size_t)sprintf(big + at,
                                      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},");
        }
        big[at - 1] = ']';
        big[at++] = '\n';
        client_write(fd, big, at);
        free(big);
        reply = read_reply(fd);
        ck_assert(json_object_is_type(reply, json_type_object));
        ck_assert_int_eq(reply_code(reply), -32005);
        ck_assert_str_eq(id_text(reply), "null");
        json_object_put(reply);
        reply = client_call(fd, "ping", NULL);
        ck_assert_int_eq(reply_code(reply), 0);
        json_object_put(reply);
        close(fd);
}
END_TEST

/* "id": null is a request (JSON-RPC 2.0), answered to id null; only an absent id makes a
 * notification. */
START_TEST(request_with_id_null_is_answered_to_id_null)
{
        int fd = client_connect(d.sock);
        json_object *reply;

        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}");
        reply = read_reply(fd);
        ck_assert_str_eq(id_text(reply), "null");
        ck_assert(json_object_get_boolean(json_object_object_get(reply_result(reply), "pong")));
        json_object_put(reply);
        client_send(fd,
                    "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"wait\",\"params\":{\"id\":77}}");
        reply = read_reply(fd);
        ck_assert_str_eq(id_text(reply), "null");
        ck_assert_int_eq(reply_code(reply), -32001);
        json_object_put(reply);
        close(fd);
}
END_TEST

/* JSON-RPC's positional params (an array) are refused as bad params, and change nothing; a
 * notification with them gets no reply. */
START_TEST(positional_params_are_invalid_params)
{
        int fd = client_connect(d.sock);
        json_object *reply;
        const char *message;

        client_send(fd, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"settings.set\","
                        "\"params\":[{\"max-threads\":8}]}");
        reply = read_reply(fd);
        ck_assert_str_eq(id_text(reply), "7");
        ck_assert_int_eq(reply_code(reply), -32602);
        message = json_object_get_string(
            json_object_object_get(json_object_object_get(reply, "error"), "message"));
        ck_assert_str_eq(message, "params must be an object of named members");
        json_object_put(reply);
        client_send(fd, "{\"jsonrpc\":\"2.0\",\"method\":\"settings.set\","
                        "\"params\":[{\"max-threads\":8}]}");
        ck_assert_int_eq(setting(fd, "max-threads"), 6); /* and that reply came first */
        close(fd);
}
END_TEST

int main(void)
{
        Suite *s = suite_create("daemon");
        TCase *tc = tcase_create("requests");
        TCase *alone = tcase_create("startup");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, ping_and_version_answer);
        tcase_add_test(tc, list_pages_by_id_and_filters_by_state_and_owner);
        tcase_add_test(tc, settings_get_shows_defaults_and_flags);
        tcase_add_test(tc, settings_set_applies_all_or_nothing);
        tcase_add_test(tc, settings_set_reaches_the_pool);
        tcase_add_test(tc, malformed_json_gets_a_parse_error_and_the_connection_stays);
        tcase_add_test(tc, unknown_method_is_method_not_found);
        tcase_add_test(tc, wrong_types_and_unknown_fields_are_invalid_params);
        tcase_add_test(tc, oversized_line_is_refused_and_the_next_request_answered);
        tcase_add_test(tc, line_cut_by_a_disconnect_changes_nothing);
        tcase_add_test(tc, pipelined_requests_are_answered_in_order);
        tcase_add_test(tc, a_last_request_without_a_newline_is_answered_at_half_close);
        tcase_add_test(tc, notification_gets_no_reply);
        tcase_add_test(tc, two_hundred_connections_opened_and_dropped_at_once);
        tcase_add_test(tc, a_client_that_does_not_read_waits_and_loses_nothing);
        tcase_add_test(tc, a_subscriber_that_does_not_read_its_events_is_dropped);
        tcase_add_test(tc, batch_gets_one_array_of_the_replies_to_its_requests_in_order);
        tcase_add_test(tc, batch_of_notifications_only_gets_no_reply);
        tcase_add_test(tc, empty_batch_is_one_error_and_invalid_members_get_theirs);
        tcase_add_test(tc, batch_with_a_wait_replies_once_the_wait_is_answered);
        tcase_add_test(tc, batch_reply_line_is_written_as_its_members_are_answered);
        tcase_add_test(tc, client_gone_while_its_batch_waits_changes_nothing_else);
        tcase_add_test(tc, batch_members_count_against_the_limits_one_by_one);
        tcase_add_test(tc, request_with_id_null_is_answered_to_id_null);
        tcase_add_test(tc, positional_params_are_invalid_params);
        suite_add_tcase(s, tc);
        tcase_set_timeout(alone, 60);
        tcase_add_test(alone, live_daemon_is_not_displaced_and_stale_socket_is_replaced);
        tcase_add_test(alone, user_instance_socket_lives_in_a_private_runtime_folder);
        tcase_add_test(alone, sigterm_stops_running_jobs_after_the_stop_timeout);
        tcase_add_test(alone, queued_jobs_hold_no_file_descriptors);
        tcase_add_test(alone, a_connection_beyond_1024_is_told_why_and_closed);
        tcase_add_test(alone, sigterm_closes_connections_at_once_while_jobs_finish);
        tcase_add_test(alone, bad_flags_exit_with_usage_status);
        tcase_add_test(alone, idle_daemon_uses_no_cpu_fresh_and_after_a_burst);
        tcase_add_test(alone, slowworkd_runs_on_the_malloc_it_was_configured_with);
        tcase_add_test(alone, clients_that_never_read_cost_bounded_memory_which_comes_back);
        tcase_add_test(alone, batches_of_clients_that_never_read_cost_what_their_members_would);
        suite_add_tcase(s, alone);
        return run_suite(s);
}
