/* SPDX-License-Identifier: MIT */
/* The job database is no root shell: rows that a writer of the schema forged, changed, moved or
 * replayed are not acted on; a node without the cluster key does not start; a user who is
 * another uid on the other node is refused there. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cluster-helpers.h"
#include "run-suite.h"

static struct cluster c;

static void teardown(void)
{
        cluster_free(&c);
}

/* Runs SQL in the cluster's schema as the database's writer would: its output (the caller frees
 * it). */
static char *sql(const char *fmt, ...)
{
        char *body, *all, *out = NULL;
        va_list ap;

        va_start(ap, fmt);
        ck_assert_int_ge(vasprintf(&body, fmt, ap), 0);
        va_end(ap);
        ck_assert_int_ge(asprintf(&all, "SET search_path TO %s; %s", c.schema, body), 0);
        ck_assert_msg(pg_query(&c.pg, all, &out) == 0, "psql failed: %s", body);
        free(all);
        free(body);
        return out;
}

static long long sql_int(const char *fmt, const char *arg)
{
        char *out = sql(fmt, arg);
        long long n = strtoll(out, NULL, 10);

        free(out);
        return n;
}

/* Node k's slowwork_rejected_rows_total{table}. */
static long long rejected(int k, const char *table)
{
        json_object *m = cluster_call_ok(&c, k, "metrics", NULL);
        char want[96];
        const char *at;
        long long n = -1;

        snprintf(want, sizeof(want), "slowwork_rejected_rows_total{table=\"%s\"} ", table);
        at = strstr(str_member(m, "text"), want);
        if (at)
                n = strtoll(at + strlen(want), NULL, 10);
        json_object_put(m);
        return n;
}

static bool exists(const char *path)
{
        return access(path, F_OK) == 0;
}

/* Mail rows inserted by hand, as from node `from` to node `to` (its epoch as the nodes table
 * says), for session 777: an open with root's credentials, and a line that submits a job which
 * makes the file. */
static void forge_session(const char *from, const char *to, const char *file)
{
        char *out =
            sql("INSERT INTO mail (to_node, from_node, epoch, session, kind, body,"
                " to_epoch, n, uid, user_name) SELECT '%s', '%s', f.epoch, 777, 'open',"
                " '{\"uid\":0,\"gid\":0,\"admin\":true}', t.epoch, 1000000, 0, 'root'"
                " FROM nodes f, nodes t WHERE f.name = '%s' AND t.name = '%s';"
                "INSERT INTO mail (to_node, from_node, epoch, session, kind, body, to_epoch,"
                " n, uid, user_name) SELECT '%s', '%s', f.epoch, 777, 'line',"
                " '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"submit\",\"params\":"
                "{\"command\":\"touch %s\"}}', t.epoch, 1000001, NULL, NULL FROM nodes f,"
                " nodes t WHERE f.name = '%s' AND t.name = '%s';"
                "SELECT pg_notify('slowwork_mail', '%s/%s')",
                to, from, from, to, to, from, file, from, to, c.schema, to);

        free(out);
}

START_TEST(forged_mail_for_root_runs_nothing_and_is_counted)
{
        char *file;

        cluster_init(&c, 2);
        cluster_start(&c);
        file = cluster_path(&c, "pwned");
        forge_session("n1", "n2", file);
        wait_for(rejected(2, "mail") >= 2, 20, "n2 did not reject the forged open and line");
        ck_assert_msg(!exists(file), "a forged submit ran");
        ck_assert_int_eq(cluster_live_items_left(&c), 0);
        free(file);
}
END_TEST

/* The columns of mail a replay copies. */
#define MAIL_COLUMNS                                                                               \
        "to_node, from_node, epoch, session, kind, body, to_epoch, n, uid, user_name, mac"

START_TEST(captured_mail_changed_replayed_or_moved_is_rejected)
{
        char *file, *out, params[64];
        int64_t id;

        cluster_init(&c, 2);
        cluster_start(&c);
        file = cluster_path(&c, "pwned");
        /* What passes between the nodes, kept as a writer of the schema could. */
        free(sql("CREATE TABLE captured AS SELECT * FROM mail WITH NO DATA;"
                 "CREATE FUNCTION capture() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN"
                 " INSERT INTO captured SELECT NEW.*; RETURN NEW; END $$;"
                 "CREATE TRIGGER capture AFTER INSERT ON mail FOR EACH ROW"
                 " EXECUTE FUNCTION capture()"));
        /* A live job of n2's: a request about it from n1 goes there as mail. */
        id = cluster_submit(&c, 2, "{\"command\":\"sleep 60\"}");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        json_object_put(cluster_call_ok(&c, 1, "status", params));
        json_object_put(cluster_call_ok(&c, 2, "cancel", params));
        ck_assert_int_eq(sql_int("SELECT count(*) FROM captured WHERE kind = '%s'", "line"), 1);
        /* The line with another body; then open and line again as they were (a replay); the
         * line in another session; the line moved to node n1. */
        out = sql("DROP TRIGGER capture ON mail;"
                  "INSERT INTO mail (" MAIL_COLUMNS ") SELECT to_node, from_node, epoch, session,"
                  " kind, '{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"submit\",\"params\":"
                  "{\"command\":\"touch %s\"}}', to_epoch, n + 1000, uid, user_name, mac"
                  " FROM captured WHERE kind = 'line';"
                  "INSERT INTO mail (" MAIL_COLUMNS ") SELECT " MAIL_COLUMNS " FROM captured"
                  " WHERE kind IN ('open', 'line') ORDER BY seq;"
                  "INSERT INTO mail (" MAIL_COLUMNS ") SELECT to_node, from_node, epoch,"
                  " session + 1, kind, body, to_epoch, n + 2000, uid, user_name, mac"
                  " FROM captured WHERE kind = 'line';"
                  "INSERT INTO mail (" MAIL_COLUMNS ") SELECT 'n1', from_node, epoch, session,"
                  " kind, body, (SELECT epoch FROM nodes WHERE name = 'n1'), n + 3000, uid,"
                  " user_name, mac FROM captured WHERE kind = 'line';"
                  "SELECT pg_notify('slowwork_mail', '%s/n2'), pg_notify('slowwork_mail', '%s/n1')",
                  file, c.schema, c.schema);
        free(out);
        wait_for(
            rejected(2, "mail") >= 4 && rejected(1, "mail") >= 1, 20,
            "the nodes did not reject the changed, replayed and moved rows (n2: %lld, n1: %lld)",
            rejected(2, "mail"), rejected(1, "mail"));
        ck_assert_msg(!exists(file), "a changed row ran its submit");
        ck_assert_int_eq(rejected(2, "mail"), 4);
        ck_assert_int_eq(rejected(1, "mail"), 1);
        free(file);
}
END_TEST

/* A job on node 1 that appends its name to the file `ran`, with more params (",..." or ""). */
static int64_t named_job(const char *name, const char *more)
{
        char *ran = cluster_path(&c, "ran"), *params;
        int64_t id;

        ck_assert_int_ge(asprintf(&params, "{\"command\":\"echo %s >> %s\"%s}", name, ran, more),
                         0);
        id = cluster_submit(&c, 1, params);
        free(params);
        free(ran);
        return id;
}

/* A job on node 1 (of one thread) that runs until the file `gate` is there: the jobs after it
 * stay queued. */
static void block_node_1(void)
{
        char *gate = cluster_path(&c, "gate"), *params;

        ck_assert_int_ge(asprintf(&params, "{\"command\":\"" WAIT_FOR_FILE " %s\"}", gate), 0);
        cluster_submit(&c, 1, params);
        free(params);
        free(gate);
}

START_TEST(altered_job_rows_are_not_run_by_the_node_that_takes_them)
{
        char *ran, *out, altered[128];
        int64_t ids[5];

        cluster_init(&c, 2);
        c.max_threads[0] = 1;
        cluster_start(&c);
        ran = cluster_path(&c, "ran");
        block_node_1();
        /* Paused, n2 claims none of the jobs n1 cannot start: they stay n1's. */
        json_object_put(cluster_call_ok(&c, 2, "pause", NULL));
        ids[0] = named_job("kept", "");
        ids[1] = named_job("owner", "");
        ids[2] = named_job("payload", "");
        ids[3] = named_job("env", ",\"env\":{\"X\":\"1\"}");
        ids[4] = named_job("queue", "");
        cluster_kill(&c, 1);
        snprintf(altered, sizeof(altered), "%lld, %lld, %lld, %lld", (long long)ids[1],
                 (long long)ids[2], (long long)ids[3], (long long)ids[4]);
        out = sql("UPDATE jobs SET owner = 65534 WHERE id = %lld;"
                  "UPDATE jobs SET payload = replace(payload, 'payload', 'PWNED') WHERE id = %lld;"
                  "UPDATE envs SET vars = '[\"X=2\"]' WHERE id = (SELECT env FROM jobs"
                  " WHERE id = %lld);"
                  "UPDATE jobs SET payload = rtrim(payload, '}') || ',\"queue\":\"other\"}'"
                  " WHERE id = %lld",
                  (long long)ids[1], (long long)ids[2], (long long)ids[3], (long long)ids[4]);
        free(out);
        json_object_put(cluster_call_ok(&c, 2, "resume", NULL));
        /* n2 takes n1's jobs once its lease ran out: the unaltered ones run there once. */
        wait_for(count_line(ran, "kept") == 1, 30, "job %lld did not run on n2", (long long)ids[0]);
        wait_for(rejected(2, "jobs") >= 3 && rejected(2, "envs") >= 1, 10,
                 "n2 did not reject the altered rows");
        cluster_touch(&c, "gate");
        ck_assert_int_eq(rejected(2, "jobs"), 3);
        ck_assert_int_eq(rejected(2, "envs"), 1);
        ck_assert_int_eq(count_line(ran, "owner") + count_line(ran, "payload") +
                             count_line(ran, "PWNED") + count_line(ran, "env") +
                             count_line(ran, "queue"),
                         0);
        /* Left alone: neither run nor deleted. */
        ck_assert_int_eq(sql_int("SELECT count(*) FROM jobs WHERE id IN (%s)", altered), 4);
        free(ran);
}
END_TEST

/* A job run to its end on node 1 and retired there: its id. */
static int64_t ended_job(const char *name)
{
        int fd = cluster_connect(&c, 1);
        int64_t id = named_job(name, "");
        json_object *st;
        bool live = true;

        json_object_put(job_wait(fd, id));
        for (int i = 0; live; i++) {
                ck_assert_msg(i < 2000, "job %lld still live after 20 s", (long long)id);
                st = job_status(fd, id);
                live = json_object_get_boolean(json_object_object_get(st, "live"));
                json_object_put(st);
                if (live)
                        short_pause();
        }
        close(fd);
        return id;
}

/* restart runs a spec again: one changed in the database is refused (and counted), once the
 * node reads it back; the unchanged one runs. */
START_TEST(an_altered_spec_is_not_restarted)
{
        char *ran, params[64], msg[256];
        int64_t kept, altered, again;
        int fd;

        cluster_init(&c, 1);
        cluster_start(&c);
        ran = cluster_path(&c, "ran");
        kept = ended_job("kept");
        altered = ended_job("spec");
        ck_assert_int_eq(
            sql_int("SELECT count(*) FROM runs WHERE spec IS NOT NULL AND spec_mac IS NOT NULL%s",
                    ""),
            2);
        cluster_kill(&c, 1);
        free(sql("UPDATE runs SET spec = replace(spec, 'spec', 'PWNED') WHERE id = %lld",
                 (long long)altered));
        cluster_start_node(&c, 1);
        fd = cluster_connect(&c, 1);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)altered);
        ck_assert_int_eq(call_error(fd, "restart", params, msg, sizeof(msg)), -32001);
        ck_assert_int_eq(rejected(1, "runs"), 1);
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)kept);
        {
                json_object *r = call_ok(fd, "restart", params);

                again = int_member(r, "id");
                json_object_put(r);
        }
        json_object_put(job_wait(fd, again));
        ck_assert_int_eq(count_line(ran, "kept"), 2);
        ck_assert_int_eq(count_line(ran, "PWNED") + count_line(ran, "spec"), 1);
        close(fd);
        free(ran);
}
END_TEST

START_TEST(a_schema_from_before_signing_is_signed_once_by_its_migration)
{
        char *ran;
        json_object *q;
        int fd;

        cluster_init(&c, 1);
        c.max_threads[0] = 1;
        cluster_start(&c);
        ran = cluster_path(&c, "ran");
        block_node_1();
        named_job("old", ",\"env\":{\"X\":\"1\"}");
        json_object_put(cluster_call_ok(&c, 1, "queue.add", "{\"name\":\"q\"}"));
        cluster_kill(&c, 1);
        /* The schema as a slowworkd before signing left it. */
        free(sql("ALTER TABLE jobs DROP COLUMN user_name, DROP COLUMN mac, DROP COLUMN state_mac;"
                 "ALTER TABLE envs DROP COLUMN mac; ALTER TABLE settings DROP COLUMN mac;"
                 "ALTER TABLE mail DROP COLUMN to_epoch, DROP COLUMN n, DROP COLUMN uid,"
                 " DROP COLUMN user_name, DROP COLUMN mac;"
                 "ALTER TABLE runs DROP COLUMN spec, DROP COLUMN spec_mac;"
                 "DROP INDEX runs_by_owner; ALTER TABLE nodes DROP COLUMN taken;"
                 "ALTER TABLE jobs DROP COLUMN offered, DROP COLUMN priority,"
                 " DROP COLUMN queued_at, DROP COLUMN pin;"
                 "ALTER TABLE nodes DROP COLUMN paused, DROP COLUMN node_queues;"
                 "UPDATE meta SET value = 9 WHERE key = 'schema'"));
        cluster_start_node(&c, 1);
        ck_assert_int_eq(sql_int("SELECT value FROM meta WHERE key = '%s'", "schema"), 14);
        ck_assert_int_eq(
            sql_int("SELECT count(*) FROM jobs WHERE %s", "mac IS NULL OR user_name IS NULL"), 0);
        ck_assert_int_eq(sql_int("SELECT count(*) FROM settings WHERE mac IS NULL%s", ""), 0);
        cluster_touch(&c, "gate");
        wait_for(count_line(ran, "old") == 1, 30,
                 "the job queued before the migration did not run");
        ck_assert_int_eq(rejected(1, "jobs") + rejected(1, "envs") + rejected(1, "settings"), 0);
        fd = cluster_connect(&c, 1);
        q = queue_entry(fd, "q");
        ck_assert_msg(q != NULL, "the queue added before the migration is gone");
        json_object_put(q);
        close(fd);
        free(ran);
}
END_TEST

/* A slowworkd of the cluster that must fail to start, with the key file given (NULL: none). */
static int start_with_key(const char *key, char **ret_err)
{
        char sock[128], state[128];

        snprintf(sock, sizeof(sock), "%s/k.sock", c.dir);
        snprintf(state, sizeof(state), "%s/k.state", c.dir);
        if (key)
                return daemon_run_stderr(ret_err, "--socket", sock, "--state-dir", state, "--store",
                                         daemon_store(), "--store-schema", c.schema, "--node-name",
                                         "nk", "--cluster-key-file", key, NULL);
        return daemon_run_stderr(ret_err, "--socket", sock, "--state-dir", state, "--store",
                                 daemon_store(), "--store-schema", c.schema, "--node-name", "nk",
                                 NULL);
}

START_TEST(a_node_without_the_key_or_with_an_open_key_file_does_not_start)
{
        char *err, *key, *made;
        struct stat st;

        cluster_init(&c, 1);
        ck_assert_int_ne(start_with_key(NULL, &err), 0);
        ck_assert_msg(strstr(err, "cluster-key-file"), "%s", err);
        free(err);
        key = cluster_path(&c, "open.key");
        made = NULL;
        ck_assert_int_eq(daemon_run_stderr(&made, "--make-cluster-key", key, NULL), 0);
        free(made);
        ck_assert_int_eq(stat(key, &st), 0);
        ck_assert_int_eq(st.st_mode & 07777, 0600);
        ck_assert_int_eq(st.st_size, 65);
        /* Made once: an existing file is not overwritten. */
        ck_assert_int_ne(daemon_run_stderr(&made, "--make-cluster-key", key, NULL), 0);
        free(made);
        ck_assert_int_eq(chmod(key, 0644), 0);
        ck_assert_int_ne(start_with_key(key, &err), 0);
        ck_assert_msg(strstr(err, key) && strstr(err, "0644"), "%s", err);
        free(err);
        free(key);
}
END_TEST

START_TEST(nodes_with_different_keys_refuse_each_others_rows)
{
        char *key, *out = NULL;
        json_object *st;

        cluster_init(&c, 2);
        key = cluster_path(&c, "other.key");
        ck_assert_int_eq(daemon_run_stderr(&out, "--make-cluster-key", key, NULL), 0);
        free(out);
        snprintf(cluster_node(&c, 2)->cluster_key, sizeof(cluster_node(&c, 2)->cluster_key), "%s",
                 key);
        cluster_start(&c);
        json_object_put(cluster_call_ok(&c, 2, "pause", NULL));
        wait_for(rejected(1, "mail") >= 1, 20, "n1 took n2's mail");
        /* At a start, n1 reads the pause row that n2 signed with its key: not applied either. */
        cluster_kill(&c, 1);
        cluster_start_node(&c, 1);
        ck_assert_int_ge(rejected(1, "settings"), 1);
        st = cluster_call_ok(&c, 1, "stats", NULL);
        ck_assert(!json_object_get_boolean(json_object_object_get(st, "paused")));
        json_object_put(st);
        free(key);
}
END_TEST

/* Whether the process's arguments (what ps shows) hold text. */
static bool in_cmdline(pid_t pid, const char *text)
{
        char path[64], buf[8192];
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        ck_assert_int_ge(fd, 0);
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        ck_assert_int_gt(n, 0);
        for (ssize_t i = 0; i < n; i++)
                if (!buf[i])
                        buf[i] = ' ';
        buf[n] = '\0';
        return strstr(buf, text) != NULL;
}

/* The daemon's first child: its supervisor, forked at start. */
static pid_t supervisor_of(pid_t pid)
{
        char path[64];
        FILE *f;
        int child = 0;

        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)pid);
        f = fopen(path, "re");
        ck_assert_ptr_nonnull(f);
        ck_assert_int_eq(fscanf(f, "%d", &child), 1);
        fclose(f);
        return child;
}

START_TEST(no_password_is_in_sight)
{
        char *store, *conf, *err = NULL;
        FILE *f;

        cluster_init(&c, 1);
        /* The throwaway PostgreSQL trusts its socket: the password is there to be hidden. */
        ck_assert_int_ge(asprintf(&store, "%s&password=hunter2", daemon_store()), 0);
        setenv("SLOWWORK_TEST_STORE", store, 1);
        cluster_start_node(&c, 1);
        ck_assert(!in_cmdline(cluster_node(&c, 1)->pid, "hunter2"));
        ck_assert(in_cmdline(cluster_node(&c, 1)->pid, "--store"));
        ck_assert(!in_cmdline(supervisor_of(cluster_node(&c, 1)->pid), "hunter2"));
        /* A configuration file that holds it must be its owner's alone. */
        conf = cluster_path(&c, "slowworkd.conf");
        f = fopen(conf, "w");
        ck_assert_ptr_nonnull(f);
        fprintf(f, "store = %s\ncluster-key-file = %s\n", store,
                getenv("SLOWWORK_TEST_CLUSTER_KEY"));
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(chmod(conf, 0644), 0);
        ck_assert_int_ne(daemon_run_stderr(&err, "--config", conf, "--node-name", "nk", "--socket",
                                           "/nonexistent/s", NULL),
                         0);
        ck_assert_msg(strstr(err, conf) && strstr(err, "0644") && strstr(err, "password"), "%s",
                      err);
        ck_assert_msg(!strstr(err, "hunter2"), "%s", err);
        free(err);
        free(conf);
        free(store);
}
END_TEST

/* An /etc/passwd where uid 0 is named daemon (and no user is named root). */
static void passwd_with_root_named_daemon(const char *path)
{
        char **lines = read_lines("/etc/passwd");
        FILE *f = fopen(path, "w");

        ck_assert_ptr_nonnull(f);
        fprintf(f, "daemon:x:0:0:root:/root:/bin/sh\n");
        for (char **l = lines; *l; l++)
                if (strncmp(*l, "root:", 5) != 0 && strncmp(*l, "daemon:", 7) != 0)
                        fprintf(f, "%s\n", *l);
        ck_assert_int_eq(fclose(f), 0);
        strv_free(lines);
}

START_TEST(a_user_who_is_another_uid_on_the_other_node_is_refused_there)
{
        char *passwd, params[64], msg[256];
        int64_t id;
        int fd;

        if (geteuid() != 0) {
                fprintf(stderr, "skipped: a user database of its own for a node needs root\n");
                return;
        }
        cluster_init(&c, 2);
        passwd = cluster_path(&c, "passwd");
        passwd_with_root_named_daemon(passwd);
        snprintf(cluster_node(&c, 1)->passwd, sizeof(cluster_node(&c, 1)->passwd), "%s", passwd);
        cluster_start(&c);
        id = cluster_submit(&c, 2, "{\"command\":\"sleep 60\"}");
        snprintf(params, sizeof(params), "{\"id\":%lld}", (long long)id);
        fd = cluster_connect(&c, 1);
        ck_assert_int_eq(call_error(fd, "cancel", params, msg, sizeof(msg)), -32002);
        ck_assert_msg(strstr(msg, "user daemon is uid 0 on node n1 but 1 here"), "%s", msg);
        close(fd);
        fd = cluster_connect(&c, 2);
        ck_assert_str_eq(job_state_of(fd, id), "running");
        json_object_put(call_ok(fd, "cancel", params));
        close(fd);
        free(passwd);
}
END_TEST

static int run(void)
{
        Suite *s = suite_create("cluster-trust");
        TCase *tc = tcase_create("cluster-trust");

        tcase_set_timeout(tc, 120);
        tcase_add_checked_fixture(tc, NULL, teardown);
        tcase_add_test(tc, forged_mail_for_root_runs_nothing_and_is_counted);
        tcase_add_test(tc, captured_mail_changed_replayed_or_moved_is_rejected);
        tcase_add_test(tc, altered_job_rows_are_not_run_by_the_node_that_takes_them);
        tcase_add_test(tc, a_node_without_the_key_or_with_an_open_key_file_does_not_start);
        tcase_add_test(tc, nodes_with_different_keys_refuse_each_others_rows);
        tcase_add_test(tc, a_user_who_is_another_uid_on_the_other_node_is_refused_there);
        tcase_add_test(tc, no_password_is_in_sight);
        tcase_add_test(tc, a_schema_from_before_signing_is_signed_once_by_its_migration);
        tcase_add_test(tc, an_altered_spec_is_not_restarted);
        suite_add_tcase(s, tc);
        return run_suite(s);
}

int main(int argc, char **argv)
{
        (void)argc;
        return cluster_suite_main(argv, run, false);
}
