/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster-helpers.h"

#ifndef SLOWWORKD
#error "SLOWWORKD must name the slowworkd binary under test"
#endif
#ifndef PG_SERVER
#error "PG_SERVER must name tests/pg-server"
#endif

static double multiplier(void)
{
        const char *m = getenv("CK_TIMEOUT_MULTIPLIER");
        double v = m ? strtod(m, NULL) : 1;

        return v >= 1 ? v : 1;
}

double scaled(double seconds)
{
        return seconds * multiplier();
}

static double clock_now(clockid_t id)
{
        struct timespec ts;

        clock_gettime(id, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double mono_now(void)
{
        return clock_now(CLOCK_MONOTONIC);
}

double wall_now(void)
{
        return clock_now(CLOCK_REALTIME);
}

void short_pause(void)
{
        struct timespec ts = {.tv_nsec = 10 * 1000000L};

        nanosleep(&ts, NULL);
}

int cluster_suite_main(char **argv, int (*run)(void), bool own_server)
{
        const char *owner = own_server ? NULL : getenv("SLOWWORK_TEST_PG_OWNER");
        const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
        char self[4096];
        ssize_t len;

        if (getenv("SLOWWORK_TEST_PGDIR"))
                return run();
        if (!pg_available()) {
                printf("%s: skipped: PostgreSQL's server is not installed (scripts/deps installs "
                       "it)\n",
                       name);
                return 77;
        }
        len = readlink("/proc/self/exe", self, sizeof(self) - 1);
        if (len < 0) {
                perror("readlink /proc/self/exe");
                return 1;
        }
        self[len] = '\0';
        fflush(stdout);
        if (owner && *owner)
                execl(PG_SERVER, PG_SERVER, "shared", owner, self, (char *)NULL);
        else
                execl(PG_SERVER, PG_SERVER, "run", self, (char *)NULL);
        perror("exec " PG_SERVER);
        return 1;
}

/* The cluster of the running test, whose nodes its exit kills (a failed check exits at once). */
static struct cluster *current;

static void kill_left(void)
{
        if (!current)
                return;
        for (int k = 0; k < current->n; k++)
                if (current->running[k])
                        kill(current->node[k].pid, SIGKILL);
}

void cluster_init(struct cluster *c, int n)
{
        static bool registered;
        static int made;

        ck_assert_int_le(n, CLUSTER_MAX);
        memset(c, 0, sizeof(*c));
        ck_assert_msg(pg_from_env(&c->pg) && daemon_store(), "not under pg-server run");
        c->n = n;
        c->lease_time = multiplier() < 3 ? multiplier() : 3;
        c->lease_renew = c->lease_time / 5;
        snprintf(c->schema, sizeof(c->schema), "cluster_%d_%d", (int)getpid(), ++made);
        snprintf(c->dir, sizeof(c->dir), "/tmp/slowwork-cluster-XXXXXX");
        ck_assert_ptr_nonnull(mkdtemp(c->dir));
        for (int k = 0; k < n; k++) {
                struct daemon *d = &c->node[k];

                snprintf(c->name[k], sizeof(c->name[k]), "n%d", k + 1);
                c->max_threads[k] = 4;
                snprintf(d->dir, sizeof(d->dir), "/tmp/slowwork-test-XXXXXX");
                ck_assert_ptr_nonnull(mkdtemp(d->dir));
                snprintf(d->sock, sizeof(d->sock), "%s/sock", d->dir);
                snprintf(d->state, sizeof(d->state), "%s/state", d->dir);
                snprintf(d->schema, sizeof(d->schema), "%s", c->schema);
                d->own_dir = true;
        }
        current = c;
        if (!registered)
                atexit(kill_left);
        registered = true;
}

struct daemon *cluster_node(struct cluster *c, int k)
{
        ck_assert(k >= 1 && k <= c->n);
        return &c->node[k - 1];
}

static void lease_args(const struct cluster *c, char *time, char *renew, size_t len)
{
        snprintf(time, len, "%g", c->lease_time);
        snprintf(renew, len, "%g", c->lease_renew);
}

void cluster_start_node(struct cluster *c, int k)
{
        struct daemon *d = cluster_node(c, k);
        char time[32], renew[32], threads[16];

        lease_args(c, time, renew, sizeof(time));
        snprintf(threads, sizeof(threads), "%d", c->max_threads[k - 1]);
        daemon_start_again(d, "--node-name", c->name[k - 1], "--lease-time", time, "--lease-renew",
                           renew, "--min-threads", "1", "--max-threads", threads, "--stop-timeout",
                           "0.2", "--kill-grace", "0.2",
                           c->store[k - 1][0] ? "--store" : NULL, c->store[k - 1], NULL);
        c->running[k - 1] = true;
        /* It takes connections before its loop runs: a reply says that it is under way. */
        wait_for(cluster_answers(c, k), 20, "node %s does not answer a ping", c->name[k - 1]);
}

/* Whether every running node lists every running one. */
static bool settled(struct cluster *c)
{
        for (int k = 1; k <= c->n; k++)
                for (int j = 1; j <= c->n; j++)
                        if (c->running[k - 1] && c->running[j - 1] &&
                            !cluster_lists(c, k, c->name[j - 1]))
                                return false;
        return true;
}

void cluster_start(struct cluster *c)
{
        for (int k = 1; k <= c->n; k++)
                cluster_start_node(c, k);
        wait_for(settled(c), c->lease_renew + 10, "the nodes do not list each other");
        /* `nodes` reads the database; what a node does by its renewals' view (mail to a node's
         * epoch, adoption) waits for a renewal that saw them all. */
        cluster_wait_renewals(c, 0, 1);
}

void cluster_kill(struct cluster *c, int k)
{
        daemon_kill_hard(cluster_node(c, k));
        c->running[k - 1] = false;
}

/* The file's whole text (the caller frees it). */
static char *slurp(const char *path)
{
        char **lines = read_lines(path), *text = strdup("");

        ck_assert_ptr_nonnull(text);
        for (char **l = lines; *l; l++) {
                char *more;

                ck_assert_int_ge(asprintf(&more, "%s%s\n", text, *l), 0);
                free(text);
                text = more;
        }
        strv_free(lines);
        return text;
}

int cluster_run_stderr(struct cluster *c, const char *name, char **ret_err)
{
        char time[32], renew[32], sock[128], state[128], err[128];
        double end = mono_now() + scaled(10);
        int status = 0;
        pid_t pid;

        lease_args(c, time, renew, sizeof(time));
        snprintf(sock, sizeof(sock), "%s/%s.sock", c->dir, name);
        snprintf(state, sizeof(state), "%s/%s.state", c->dir, name);
        snprintf(err, sizeof(err), "%s/%s.stderr", c->dir, name);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

                if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 || !freopen("/dev/null", "w", stdout))
                        _exit(127);
                execl(SLOWWORKD, SLOWWORKD, "--socket", sock, "--state-dir", state, "--store",
                      daemon_store(), "--store-schema", c->schema, "--node-name", name,
                      "--lease-time", time, "--lease-renew", renew, "--cluster-key-file",
                      getenv("SLOWWORK_TEST_CLUSTER_KEY"), (char *)NULL);
                _exit(127);
        }
        /* One that wrongly starts must not outlive the test. */
        while (waitpid(pid, &status, WNOHANG) == 0) {
                if (mono_now() > end) {
                        kill(pid, SIGKILL);
                        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
                        ck_abort_msg("a slowworkd named %s still runs after %.0f s", name,
                                     scaled(10));
                }
                short_pause();
        }
        ck_assert(WIFEXITED(status));
        *ret_err = slurp(err);
        return WEXITSTATUS(status);
}

void cluster_free(struct cluster *c)
{
        char cmd[128];

        for (int k = 1; k <= c->n; k++) {
                struct daemon *d = cluster_node(c, k);
                double end = mono_now() + scaled(5);

                if (!c->running[k - 1]) {
                        daemon_remove(d);
                        continue;
                }
                kill(d->pid, SIGCONT); /* a stopped one too */
                kill(d->pid, SIGTERM);
                while (!process_gone(d->pid) && mono_now() < end)
                        short_pause();
                if (!process_gone(d->pid))
                        kill(d->pid, SIGKILL);
                daemon_reap(d);
                c->running[k - 1] = false;
        }
        snprintf(cmd, sizeof(cmd), "rm -rf %s", c->dir);
        ck_assert_int_eq(system(cmd), 0);
        current = NULL;
}

int cluster_connect(struct cluster *c, int k)
{
        int fd = client_connect(cluster_node(c, k)->sock);

        ck_assert_msg(fd >= 0, "cannot connect to node %s: %s", c->name[k - 1], strerror(errno));
        return fd;
}

/* Lines read from a connection, through a buffer. */
struct reader {
        int fd;
        size_t len;
        char buf[1 << 16];
};

/* The next whole line in the buffer (its newline cut), or NULL; *used grows by its length. */
static char *buffered_line(struct reader *r, size_t *used)
{
        char *start = r->buf + *used, *nl = memchr(start, '\n', r->len - *used);

        if (!nl)
                return NULL;
        *nl = '\0';
        *used += (size_t)(nl - start) + 1;
        return start;
}

/* Drops the lines consumed from the front of the buffer. */
static void consume(struct reader *r, size_t used)
{
        memmove(r->buf, r->buf + used, r->len - used);
        r->len -= used;
}

/* Reads what the connection has: false at its end (or a reset). */
static bool fill(struct reader *r)
{
        ssize_t n;

        ck_assert_msg(r->len < sizeof(r->buf), "a line of more than %zu bytes", sizeof(r->buf));
        n = recv(r->fd, r->buf + r->len, sizeof(r->buf) - r->len, MSG_DONTWAIT);
        if (n > 0) {
                r->len += (size_t)n;
                return true;
        }
        return n < 0 && (errno == EAGAIN || errno == EINTR);
}

json_object *cluster_call(struct cluster *c, int k, const char *method, const char *params)
{
        struct reader *r = calloc(1, sizeof(*r));
        json_object *reply = NULL;
        double end = mono_now() + scaled(5);
        char *request, *line = NULL;
        size_t used = 0;

        ck_assert_ptr_nonnull(r);
        r->fd = client_connect(cluster_node(c, k)->sock);
        if (r->fd < 0) {
                free(r);
                return NULL;
        }
        ck_assert_int_gt(asprintf(&request,
                                  "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"%s\"%s%s}\n", method,
                                  params ? ",\"params\":" : "", params ? params : ""),
                         0);
        if (send(r->fd, request, strlen(request), MSG_NOSIGNAL) == (ssize_t)strlen(request)) {
                while (!(line = buffered_line(r, &used)) && mono_now() < end) {
                        struct pollfd p = {.fd = r->fd, .events = POLLIN};

                        if (poll(&p, 1, 100) == 1 && !fill(r))
                                break;
                }
        }
        if (line) {
                reply = json_tokener_parse(line);
                ck_assert_msg(reply != NULL, "not JSON: %s", line);
        }
        free(request);
        close(r->fd);
        free(r);
        return reply;
}

bool cluster_answers(struct cluster *c, int k)
{
        json_object *reply = cluster_call(c, k, "ping", NULL);
        bool ok = reply && reply_code(reply) == 0;

        json_object_put(reply);
        return ok;
}

int64_t cluster_submit(struct cluster *c, int k, const char *params)
{
        int fd = cluster_connect(c, k);
        int64_t id = job_submit(fd, params);

        close(fd);
        return id;
}

json_object *cluster_call_ok(struct cluster *c, int k, const char *method, const char *params)
{
        json_object *reply = cluster_call(c, k, method, params), *result;

        ck_assert_msg(reply, "%s on %s: no reply", method, c->name[k - 1]);
        ck_assert_msg(reply_code(reply) == 0, "%s %s on %s: %s", method, params ? params : "",
                      c->name[k - 1], json_object_to_json_string(reply));
        result = json_object_get(reply_result(reply));
        json_object_put(reply);
        return result;
}

char *cluster_path(struct cluster *c, const char *name)
{
        char *path;

        ck_assert_int_ge(asprintf(&path, "%s/%s", c->dir, name), 0);
        return path;
}

void cluster_touch(struct cluster *c, const char *name)
{
        char *path = cluster_path(c, name);
        FILE *f = fopen(path, "we");

        ck_assert_ptr_nonnull(f);
        fclose(f);
        free(path);
}

int cluster_holder(struct cluster *c, int64_t id)
{
        char params[64];

        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        for (int k = 1; k <= c->n; k++) {
                json_object *reply;
                bool found;

                if (!c->running[k - 1])
                        continue;
                reply = cluster_call(c, k, "status", params);
                found = reply && reply_code(reply) == 0;
                json_object_put(reply);
                if (found)
                        return k;
        }
        return 0;
}

long cluster_nodes_asked;

json_object *cluster_nodes(struct cluster *c, int k)
{
        int fd = cluster_connect(c, k);
        json_object *result = call_ok(fd, "nodes", NULL);

        cluster_nodes_asked++;
        close(fd);
        return result;
}

int cluster_slowctl(struct cluster *c, int k, char *out, size_t len, const char *args)
{
        char *cmd;
        size_t n;
        FILE *f;
        int status;

        ck_assert_int_ge(asprintf(&cmd, "%s --socket %s %s 2>&1", SLOWCTL,
                                  cluster_node(c, k)->sock, args),
                         0);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        n = fread(out, 1, len - 1, f);
        out[n] = '\0';
        status = pclose(f);
        free(cmd);
        return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

bool cluster_lists(struct cluster *c, int k, const char *name)
{
        json_object *result = cluster_nodes(c, k), *nodes = json_object_object_get(result, "nodes");
        bool found = false;

        ck_assert_msg(json_object_is_type(nodes, json_type_array), "nodes: %s",
                      json_object_to_json_string(result));
        for (size_t i = 0; i < json_object_array_length(nodes); i++) {
                json_object *node = json_object_array_get_idx(nodes, i);

                found = found || (strcmp(str_member(node, "name"), name) == 0 &&
                                  strcmp(str_member(node, "state"), "live") == 0);
        }
        json_object_put(result);
        return found;
}

int cluster_live_items(struct cluster *c, int k)
{
        int fd = cluster_connect(c, k);
        json_object *result = call_ok(fd, "list", NULL),
                    *items = json_object_object_get(result, "items");
        int n = 0;

        /* list tells every node's: node k's own are those it names. */
        for (size_t i = 0; i < json_object_array_length(items); i++)
                n += strcmp(str_member(json_object_array_get_idx(items, i), "node"),
                            c->name[k - 1]) == 0;

        json_object_put(result);
        close(fd);
        return n;
}

int cluster_live_items_left(struct cluster *c)
{
        int n = 0;

        for (int k = 1; k <= c->n; k++)
                if (c->running[k - 1])
                        n += cluster_live_items(c, k);
        return n;
}

double cluster_lease_age(struct cluster *c, int k)
{
        json_object *result = cluster_nodes(c, k), *nodes = json_object_object_get(result, "nodes");
        double age = -1;

        for (size_t i = 0; i < json_object_array_length(nodes); i++) {
                json_object *node = json_object_array_get_idx(nodes, i);

                if (json_object_get_boolean(json_object_object_get(node, "self")))
                        age = json_object_get_double(json_object_object_get(node, "lease_age"));
        }
        json_object_put(result);
        ck_assert_msg(age >= 0, "node %d does not list itself", k);
        return age;
}

void cluster_wait_renewals(struct cluster *c, int k, int n)
{
        double end = mono_now() + scaled(5.0 * n), last[CLUSTER_MAX];
        int left[CLUSTER_MAX], todo = 0;

        for (int j = 1; j <= c->n; j++) {
                left[j - 1] = c->running[j - 1] && (k == 0 || j == k) ? n : 0;
                if (left[j - 1])
                        last[j - 1] = cluster_lease_age(c, j);
                todo += left[j - 1];
        }
        while (todo > 0) {
                ck_assert_msg(mono_now() < end, "the nodes do not renew their leases");
                short_pause();
                for (int j = 1; j <= c->n; j++) {
                        double age;

                        if (!left[j - 1])
                                continue;
                        age = cluster_lease_age(c, j);
                        if (age < last[j - 1]) {
                                left[j - 1]--;
                                todo--;
                        }
                        last[j - 1] = age;
                }
        }
}

/* The requests, one a line, in one buffer (the caller frees it). */
static char *requests(const char *method, char *const *params, int n, size_t *ret_len)
{
        size_t len = 0, size = 4096;
        char *buf = malloc(size);

        ck_assert_ptr_nonnull(buf);
        for (int i = 0; i < n; i++) {
                const char *p = params ? params[i] : NULL;
                int w;

                for (;;) {
                        w = snprintf(buf + len, size - len,
                                     "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"%s\"%s%s}\n",
                                     i + 1, method, p ? ",\"params\":" : "", p ? p : "");
                        if ((size_t)w < size - len)
                                break;
                        size *= 2;
                        buf = realloc(buf, size);
                        ck_assert_ptr_nonnull(buf);
                }
                len += (size_t)w;
        }
        *ret_len = len;
        return buf;
}

/* Files the reply in the line by its id. */
static void file_reply(const char *line, json_object **replies, int n)
{
        json_object *reply = json_tokener_parse(line);
        int id;

        ck_assert_msg(reply != NULL, "not JSON: %s", line);
        id = json_object_get_int(json_object_object_get(reply, "id"));
        ck_assert_msg(id >= 1 && id <= n && !replies[id - 1], "a reply with id %d: %s", id, line);
        replies[id - 1] = reply;
}

int pipeline(int fd, const char *method, char *const *params, int n, json_object **replies,
             double seconds)
{
        struct reader *r = calloc(1, sizeof(*r));
        size_t len, sent = 0;
        char *out = requests(method, params, n, &len);
        double end = mono_now() + scaled(seconds);
        int got = 0;

        ck_assert_ptr_nonnull(r);
        r->fd = fd;
        memset(replies, 0, sizeof(*replies) * (size_t)n);
        while (got < n) {
                struct pollfd p = {.fd = fd, .events = POLLIN | (sent < len ? POLLOUT : 0)};
                size_t used = 0;
                char *line;
                int ready = poll(&p, 1, 100);

                ck_assert_msg(mono_now() < end, "%d replies of %d to %s in %.0f s", got, n, method,
                              scaled(seconds));
                if (ready <= 0)
                        continue;
                if (p.revents & POLLOUT) {
                        ssize_t w = send(fd, out + sent, len - sent, MSG_NOSIGNAL | MSG_DONTWAIT);

                        if (w > 0)
                                sent += (size_t)w;
                        else if (errno != EAGAIN && errno != EINTR)
                                sent = len; /* the peer is gone: what it answered is read */
                }
                if (!(p.revents & (POLLIN | POLLHUP | POLLERR)))
                        continue;
                if (!fill(r))
                        break;
                while ((line = buffered_line(r, &used))) {
                        file_reply(line, replies, n);
                        got++;
                        end = mono_now() + scaled(seconds);
                }
                consume(r, used);
        }
        free(out);
        free(r);
        return got;
}

char **read_lines(const char *path)
{
        char **lines = calloc(1, sizeof(char *)), *line = NULL;
        size_t n = 0, cap = 0;
        ssize_t len;
        FILE *f = fopen(path, "re");

        ck_assert_ptr_nonnull(lines);
        if (!f) {
                ck_assert_msg(errno == ENOENT, "open %s: %s", path, strerror(errno));
                return lines;
        }
        while ((len = getline(&line, &cap, f)) >= 0) {
                if (len > 0 && line[len - 1] == '\n')
                        line[len - 1] = '\0';
                lines = realloc(lines, (n + 2) * sizeof(char *));
                ck_assert_ptr_nonnull(lines);
                lines[n] = strdup(line);
                ck_assert_ptr_nonnull(lines[n]);
                lines[++n] = NULL;
        }
        free(line);
        fclose(f);
        return lines;
}

void strv_free(char **lines)
{
        for (char **l = lines; l && *l; l++)
                free(*l);
        free(lines);
}

int count_line(const char *path, const char *line)
{
        char **lines = read_lines(path);
        int n = 0;

        for (char **l = lines; *l; l++)
                n += strcmp(*l, line) == 0;
        strv_free(lines);
        return n;
}

int *count_tokens(const char *path, int n)
{
        char **lines = read_lines(path);
        int *counts = calloc((size_t)n, sizeof(int));

        ck_assert_ptr_nonnull(counts);
        for (char **l = lines; *l; l++) {
                int k, end = 0;

                ck_assert_msg(sscanf(*l, "t%d%n", &k, &end) == 1 && (*l)[end] == '\0' && k >= 0 &&
                                  k < n,
                              "%s: a line \"%s\"", path, *l);
                counts[k]++;
        }
        strv_free(lines);
        return counts;
}

