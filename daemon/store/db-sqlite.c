/* SPDX-License-Identifier: MIT */
/* The state database as an SQLite file in WAL mode in the state folder. */
#define _GNU_SOURCE
#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db.h"
#include "store/run-record.h"
#include "store/store.h"
#include "store/wal-check.h"
#include "util/log.h"

/* migrations[v] takes a database from schema v to v + 1. */
static const char *const migrations[DB_SCHEMA] = {
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);"
    "CREATE TABLE settings (name TEXT PRIMARY KEY, value REAL NOT NULL);"
    "CREATE TABLE envs (id INTEGER PRIMARY KEY, vars TEXT NOT NULL);"
    "CREATE TABLE jobs (id INTEGER PRIMARY KEY, owner INTEGER NOT NULL,"
    " very_slow INTEGER NOT NULL, payload TEXT NOT NULL, env INTEGER, key TEXT, name TEXT,"
    " persist INTEGER NOT NULL, state TEXT NOT NULL, qorder INTEGER NOT NULL,"
    " due REAL NOT NULL, runs INTEGER NOT NULL);"
    "CREATE INDEX jobs_by_qorder ON jobs (qorder);"
    "CREATE TABLE runs (seq INTEGER PRIMARY KEY, id INTEGER NOT NULL, run INTEGER NOT NULL,"
    " very_slow INTEGER NOT NULL, owner INTEGER NOT NULL, summary TEXT NOT NULL,"
    " started REAL NOT NULL, ended REAL NOT NULL, outcome TEXT NOT NULL,"
    " exit_code INTEGER NOT NULL, signal INTEGER NOT NULL, log TEXT);",
    /* 2: what a contained run used, and whether the OOM killer struck (NULL: not known) */
    "ALTER TABLE runs ADD COLUMN oom INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE runs ADD COLUMN cpu_time REAL;"
    "ALTER TABLE runs ADD COLUMN memory_peak INTEGER;",
    /* 3: what an interrupted run left behind, killed before its job ran again */
    "ALTER TABLE runs ADD COLUMN leftovers INTEGER NOT NULL DEFAULT 0;",
    /* 4: a job's flow (what it waits for, its attempt, its next tick), a run's attempt, and
     * when the run in progress started, for its record if the daemon dies during it */
    "ALTER TABLE jobs ADD COLUMN flow TEXT;"
    "ALTER TABLE runs ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;"
    "ALTER TABLE jobs ADD COLUMN started REAL NOT NULL DEFAULT 0;",
    /* 5: the node a run ran on; an environment's row is named after its first job now, so the
     * rows before go out of the way */
    "ALTER TABLE runs ADD COLUMN node TEXT NOT NULL DEFAULT '';"
    "UPDATE jobs SET env = -env WHERE env IS NOT NULL;"
    "UPDATE envs SET id = -id;",
    /* 6: keys held across nodes, PostgreSQL's alone: nothing here */
    "SELECT 1;",
    /* 7: mail between nodes, PostgreSQL's alone: nothing here */
    "SELECT 1;",
    /* 8: runs' logs kept in the database, PostgreSQL's alone: nothing here */
    "SELECT 1;",
    /* 9: pauses and queues shared by the nodes, PostgreSQL's alone: nothing here */
    "SELECT 1;",
    /* 10: rows signed with the cluster key, PostgreSQL's alone: nothing here */
    "SELECT 1;",
    /* 11: a retired job's spec with its last run's record, for restart */
    "ALTER TABLE runs ADD COLUMN spec TEXT;",
    /* 12: history-limit counts each owner's runs */
    "CREATE INDEX runs_by_owner ON runs (owner, seq);",
    /* 13: expired nodes' rows kept, PostgreSQL's alone: nothing here */
    "SELECT 1;",
    /* 14: jobs offered to other nodes, and a node's own pause, PostgreSQL's alone */
    "SELECT 1;",
};

static const char *const stmt_sql[DB_STMT_MAX] = {
    [DB_PUT_JOB] = "INSERT INTO jobs (" DB_JOB_COLUMNS ")"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)" DB_PUT_JOB_AGAIN,
    [DB_PUT_JOB_STATE] = "UPDATE jobs SET persist = ?2, state = ?3, qorder = ?4, due = ?5,"
                         " runs = ?6, flow = ?7, started = ?8 WHERE id = ?1",
    [DB_DELETE_JOB] = "DELETE FROM jobs WHERE id = ?",
    [DB_PUT_ENV] = "INSERT OR IGNORE INTO envs (id, vars) VALUES (?, ?)",
    [DB_ADD_RUN] = "INSERT INTO runs (" DB_RUN_COLUMNS ")"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [DB_PUT_SETTING] = "INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)",
    [DB_DELETE_SETTINGS] = "DELETE FROM settings WHERE name = ?1"
                           " OR substr(name, 1, length(?1) + 1) = ?1 || '/'",
    [DB_PUT_NEXT_ID] = "INSERT INTO meta (key, value) VALUES ('next_id', ?1)"
                       " ON CONFLICT (key) DO UPDATE SET value = max(value, ?1)",
    [DB_FORGET_LOG] = "UPDATE runs SET log = NULL WHERE id = ?1 AND run = ?2 AND log = ?3",
    [DB_PUT_RUN_SPEC] = "UPDATE runs SET spec = ?4 WHERE id = ?1 AND run = ?2 AND owner = ?3",
};

/* Each owner's runs beyond their newest ?1 (?2: the owners, a JSON array). */
static const char prune_sql[] =
    "DELETE FROM runs WHERE seq IN (SELECT seq FROM (SELECT seq, row_number() OVER"
    " (PARTITION BY owner ORDER BY seq DESC) AS k FROM runs WHERE owner IN"
    " (SELECT value FROM json_each(?2))) WHERE k > ?1) RETURNING log";

struct sqlite_db {
        struct db base;
        sqlite3 *db;
        sqlite3_stmt *stmts[DB_STMT_MAX], *prune;
        char *path;
};

static int db_error(struct sqlite_db *s, const char *what)
{
        log_error("State database %s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
        return -EIO;
}

static int exec(struct sqlite_db *s, const char *sql)
{
        char *err = NULL;

        if (sqlite3_exec(s->db, sql, NULL, NULL, &err) != SQLITE_OK) {
                log_error("State database %s: %s", s->path, err ? err : "error");
                sqlite3_free(err);
                return -EIO;
        }
        return 0;
}

static int64_t query_int(struct sqlite_db *s, const char *sql, int64_t fallback)
{
        sqlite3_stmt *st;
        int64_t v = fallback;

        if (sqlite3_prepare_v2(s->db, sql, -1, &st, NULL) != SQLITE_OK)
                return fallback;
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
                v = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        return v;
}

/* Reads the schema version, which also tells a database from a file that is none. */
static int schema_version(struct sqlite_db *s, int *ret)
{
        sqlite3_stmt *st;
        int r;

        if (sqlite3_prepare_v2(s->db, "PRAGMA user_version", -1, &st, NULL) != SQLITE_OK)
                return db_error(s, "cannot read it (move it away to start with an empty one)");
        r = sqlite3_step(st);
        if (r != SQLITE_ROW) {
                sqlite3_finalize(st);
                return db_error(s, "cannot read it (move it away to start with an empty one)");
        }
        *ret = sqlite3_column_int(st, 0);
        sqlite3_finalize(st);
        return 0;
}

static int migrate(struct sqlite_db *s)
{
        char sql[64];
        int version, r;

        r = schema_version(s, &version);
        if (r < 0)
                return r;
        if (version > DB_SCHEMA) {
                log_error("State database %s has schema %d, from a newer slowworkd; this one "
                          "knows schema %d at most",
                          s->path, version, DB_SCHEMA);
                return -EPROTO;
        }
        for (; version < DB_SCHEMA; version++) {
                snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", version + 1);
                r = exec(s, "BEGIN IMMEDIATE");
                if (r == 0)
                        r = exec(s, migrations[version]);
                if (r == 0)
                        r = exec(s, sql);
                if (r == 0)
                        r = exec(s, "COMMIT");
                if (r < 0) {
                        exec(s, "ROLLBACK");
                        return r;
                }
        }
        /* Reads every page: a damaged file is found now, not half way through the queue. */
        if (query_int(s, "SELECT count(*) FROM pragma_quick_check WHERE quick_check != 'ok'", 1) !=
            0) {
                log_error("State database %s is damaged (PRAGMA quick_check); move it away to "
                          "start with an empty one",
                          s->path);
                return -EIO;
        }
        return 0;
}

/* SQLite's recovery drops what follows a damaged frame of the write-ahead log without a word:
 * said here, before it does. */
static void check_wal(struct sqlite_db *s)
{
        struct wal_report w;
        char *wal;
        int r;

        if (asprintf(&wal, "%s-wal", s->path) < 0)
                return;
        r = wal_check(wal, &w);
        if (r < 0)
                log_warning("State database %s: cannot read its write-ahead log %s: %s", s->path,
                            wal, strerror(-r));
        else if (w.header_damaged && wal_report_loses_commits(&w))
                log_warning("State database %s: the header of its write-ahead log %s is damaged: "
                            "all of the log (%lld bytes) is rolled back, every change since the "
                            "last checkpoint; jobs it recorded as finished may run again, and "
                            "acknowledged submits in it are lost",
                            s->path, wal, (long long)w.bytes);
        else if (wal_report_loses_commits(&w) && w.frames_lost == 1)
                log_warning("State database %s: the last frame of its write-ahead log %s (frame "
                            "%lld) is cut short or damaged: the transaction it ends is rolled "
                            "back (written when a crash or power cut came, or damaged since)",
                            s->path, wal, (long long)w.bad_frame);
        else if (wal_report_loses_commits(&w))
                log_warning("State database %s: its write-ahead log %s is damaged at frame %lld: "
                            "what was written from there on is rolled back, %lld transaction%s "
                            "(%lld frame%s); jobs it recorded as finished may run again, and "
                            "acknowledged submits in it are lost",
                            s->path, wal, (long long)w.bad_frame, (long long)w.commits_lost,
                            w.commits_lost == 1 ? "" : "s", (long long)w.frames_lost,
                            w.frames_lost == 1 ? "" : "s");
        free(wal);
}

static int begin(struct db *db)
{
        struct sqlite_db *s = (struct sqlite_db *)db;

        return sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static int run(struct db *db, enum db_stmt stmt, const struct db_value *v, int n,
               struct db_result *out)
{
        struct sqlite_db *s = (struct sqlite_db *)db;
        sqlite3_stmt *st;
        int i, r;

        (void)out; /* none of its statements returns rows */
        if (stmt >= DB_STMT_MAX)
                return -EIO; /* a shared database's */
        st = s->stmts[stmt];
        sqlite3_reset(st);
        for (i = 0; i < n; i++) {
                if (v[i].type == DB_INT)
                        sqlite3_bind_int64(st, i + 1, v[i].i);
                else if (v[i].type == DB_REAL)
                        sqlite3_bind_double(st, i + 1, v[i].d);
                else if (v[i].type == DB_TEXT)
                        sqlite3_bind_text(st, i + 1, v[i].text, -1, SQLITE_STATIC);
                else
                        sqlite3_bind_null(st, i + 1);
        }
        r = sqlite3_step(st);
        sqlite3_reset(st);
        return r == SQLITE_DONE ? 0 : -EIO;
}

static int prune(struct db *db, int64_t limit, const char *owners, char ***logs)
{
        struct sqlite_db *s = (struct sqlite_db *)db;
        sqlite3_stmt *st = s->prune;
        size_t n = 0;
        int r;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, limit);
        sqlite3_bind_text(st, 2, owners, -1, SQLITE_TRANSIENT);
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
                char **more = realloc(*logs, (n + 2) * sizeof(**logs));

                if (!more)
                        break; /* a log left behind, not a run lost */
                *logs = more;
                (*logs)[n] = sqlite3_column_type(st, 0) == SQLITE_TEXT
                                 ? strdup((const char *)sqlite3_column_text(st, 0))
                                 : NULL;
                if ((*logs)[n])
                        n++;
                (*logs)[n] = NULL;
        }
        sqlite3_reset(st);
        return r == SQLITE_DONE || r == SQLITE_ROW ? 0 : -EIO;
}

static int commit(struct db *db)
{
        struct sqlite_db *s = (struct sqlite_db *)db;

        return sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

static void rollback(struct db *db)
{
        struct sqlite_db *s = (struct sqlite_db *)db;

        sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
}

static char *why(struct db *db)
{
        struct sqlite_db *s = (struct sqlite_db *)db;

        return strdup(sqlite3_errmsg(s->db));
}

static int load_settings(struct db *db,
                         void (*cb)(void *data, const char *name, double value, const char *text),
                         void *data)
{
        struct sqlite_db *s = (struct sqlite_db *)db;
        sqlite3_stmt *st;
        int r;

        if (sqlite3_prepare_v2(s->db, "SELECT name, value FROM settings", -1, &st, NULL) !=
            SQLITE_OK)
                return db_error(s, "cannot read the settings");
        while ((r = sqlite3_step(st)) == SQLITE_ROW)
                cb(data, (const char *)sqlite3_column_text(st, 0), sqlite3_column_double(st, 1),
                   sqlite3_column_type(st, 1) == SQLITE_TEXT
                       ? (const char *)sqlite3_column_text(st, 1)
                       : NULL);
        sqlite3_finalize(st);
        return r == SQLITE_DONE ? 0 : db_error(s, "cannot read the settings");
}

static int find_foreign_job(struct db *db, uid_t uid, int64_t *ret_id, uid_t *ret_owner)
{
        struct sqlite_db *s = (struct sqlite_db *)db;
        sqlite3_stmt *st;
        int r;

        if (sqlite3_prepare_v2(s->db, "SELECT id, owner FROM jobs WHERE owner != ? LIMIT 1", -1,
                               &st, NULL) != SQLITE_OK)
                return db_error(s, "cannot read the jobs");
        sqlite3_bind_int64(st, 1, uid);
        *ret_id = 0;
        r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
                *ret_id = sqlite3_column_int64(st, 0);
                *ret_owner = (uid_t)sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
        return r == SQLITE_ROW || r == SQLITE_DONE ? 0 : db_error(s, "cannot read the jobs");
}

static int load_jobs(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                     void *data)
{
        struct sqlite_db *s = (struct sqlite_db *)db;
        struct db_env_rows envs = {0, NULL};
        sqlite3_stmt *st;
        int r;

        if (sqlite3_prepare_v2(s->db,
                               "SELECT j.id, owner, very_slow, payload, e.vars, key, name,"
                               " persist, state, qorder, due, runs, e.id, flow, started FROM jobs "
                               "j LEFT JOIN envs e"
                               " ON e.id = j.env ORDER BY qorder, j.id",
                               -1, &st, NULL) != SQLITE_OK)
                return db_error(s, "cannot read the jobs");
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
                struct store_job_row row = {
                    .id = sqlite3_column_int64(st, 0),
                    .owner = (uid_t)sqlite3_column_int64(st, 1),
                    .very_slow = sqlite3_column_int(st, 2),
                    .payload = (const char *)sqlite3_column_text(st, 3),

                    .key = (const char *)sqlite3_column_text(st, 5),
                    .name = (const char *)sqlite3_column_text(st, 6),
                    .persist = sqlite3_column_int(st, 7),
                    .state = (const char *)sqlite3_column_text(st, 8),
                    .qorder = sqlite3_column_int64(st, 9),
                    .due = sqlite3_column_double(st, 10),
                    .runs = sqlite3_column_int64(st, 11),
                    .env_id = sqlite3_column_int64(st, 12),
                    .flow = (const char *)sqlite3_column_text(st, 13),
                    .started = sqlite3_column_double(st, 14),
                };

                row.env = db_env_of(&envs, row.env_id, (const char *)sqlite3_column_text(st, 4));
                cb(data, &row);
        }
        db_env_rows_free(&envs);
        sqlite3_finalize(st);
        return r == SQLITE_DONE ? 0 : db_error(s, "cannot read the jobs");
}

static int load_runs(struct db *db, int64_t limit, void (*cb)(void *data, struct run_record *rec),
                     void *data)
{
        struct sqlite_db *s = (struct sqlite_db *)db;
        sqlite3_stmt *st;
        int r;

        if (sqlite3_prepare_v2(s->db,
                               "SELECT " DB_RUN_COLUMNS ", spec FROM (SELECT *, row_number()"
                               " OVER (PARTITION BY owner ORDER BY seq DESC) AS k FROM runs)"
                               " WHERE k <= ? ORDER BY seq",
                               -1, &st, NULL) != SQLITE_OK)
                return db_error(s, "cannot read the history");
        sqlite3_bind_int64(st, 1, limit);
        while ((r = sqlite3_step(st)) == SQLITE_ROW) {
                struct run_record *rec = calloc(1, sizeof(*rec));
                const char *log = (const char *)sqlite3_column_text(st, 10);

                if (!rec)
                        break;
                rec->id = sqlite3_column_int64(st, 0);
                rec->run = sqlite3_column_int64(st, 1);
                rec->very_slow = sqlite3_column_int(st, 2);
                rec->owner = (uid_t)sqlite3_column_int64(st, 3);
                rec->summary = strdup((const char *)sqlite3_column_text(st, 4));
                rec->started = sqlite3_column_double(st, 5);
                rec->ended = sqlite3_column_double(st, 6);
                rec->outcome = db_outcome_name((const char *)sqlite3_column_text(st, 7));
                rec->exit_code = sqlite3_column_int(st, 8);
                rec->signal = sqlite3_column_int(st, 9);
                rec->log = log ? strdup(log) : NULL;
                rec->oom = sqlite3_column_int(st, 11);
                rec->cpu_time =
                    sqlite3_column_type(st, 12) == SQLITE_NULL ? -1 : sqlite3_column_double(st, 12);
                rec->memory_peak =
                    sqlite3_column_type(st, 13) == SQLITE_NULL ? -1 : sqlite3_column_int64(st, 13);
                rec->leftovers = sqlite3_column_int(st, 14);
                rec->attempt = sqlite3_column_int64(st, 15);
                rec->node = run_record_node((const char *)sqlite3_column_text(st, 16));
                if (sqlite3_column_type(st, 17) != SQLITE_NULL)
                        rec->spec = strdup((const char *)sqlite3_column_text(st, 17));
                cb(data, rec);
        }
        sqlite3_finalize(st);
        return r == SQLITE_DONE ? 0 : db_error(s, "cannot read the history");
}

static int64_t load_next_id(struct db *db)
{
        struct sqlite_db *s = (struct sqlite_db *)db;
        int64_t a = query_int(s, "SELECT value FROM meta WHERE key = 'next_id'", 0);
        int64_t b = query_int(s, "SELECT max(id) FROM jobs", 0);
        int64_t c = query_int(s, "SELECT max(id) FROM runs", 0);

        return a > b ? (a > c ? a : c) : (b > c ? b : c);
}

static void sqlite_free(struct db *db)
{
        struct sqlite_db *s = (struct sqlite_db *)db;
        int i;

        if (!s)
                return;
        for (i = 0; i < DB_STMT_MAX; i++)
                sqlite3_finalize(s->stmts[i]);
        sqlite3_finalize(s->prune);
        sqlite3_close(s->db);
        free(s->path);
        free(s->base.name);
        free(s);
}

static const struct db_driver sqlite_driver = {
    .failing = "the state database fails",
    .retry_first = 1,
    .retry_last = 1,
    .retrying = "trying again every second",
    .delete_supersedes = true,
    .begin = begin,
    .run = run,
    .prune = prune,
    .commit = commit,
    .rollback = rollback,
    .why = why,
    .load_settings = load_settings,
    .find_foreign_job = find_foreign_job,
    .load_jobs = load_jobs,
    .load_runs = load_runs,
    .load_next_id = load_next_id,
    .free = sqlite_free,
};

int db_sqlite_open(const char *dir, struct db **ret)
{
        struct sqlite_db *s = calloc(1, sizeof(*s));
        int r, i;

        if (!s)
                return -ENOMEM;
        s->base.driver = &sqlite_driver;
        if (asprintf(&s->path, "%s/slowworkd.db", dir) < 0)
                s->path = NULL;
        if (!s->path || asprintf(&s->base.name, "State database %s", s->path) < 0) {
                s->base.name = NULL;
                sqlite_free(&s->base);
                return -ENOMEM;
        }
        check_wal(s);
        if (sqlite3_open_v2(s->path, &s->db,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            NULL) != SQLITE_OK) {
                r = db_error(s, "cannot open it");
                sqlite_free(&s->base);
                return r;
        }
        sqlite3_busy_timeout(s->db, 5000);
        r = exec(s, "PRAGMA journal_mode = WAL");
        if (r == 0)
                r = exec(s, "PRAGMA synchronous = FULL");
        if (r == 0)
                r = migrate(s);
        for (i = 0; r == 0 && i < DB_STMT_MAX; i++)
                if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                       &s->stmts[i], NULL) != SQLITE_OK)
                        r = db_error(s, "cannot prepare a statement");
        if (r == 0 && sqlite3_prepare_v3(s->db, prune_sql, -1, SQLITE_PREPARE_PERSISTENT, &s->prune,
                                         NULL) != SQLITE_OK)
                r = db_error(s, "cannot prepare a statement");
        /* Environments are shared by the jobs that sent the same one, and kept while one does. */
        if (r == 0)
                r = exec(s, "DELETE FROM envs WHERE id NOT IN"
                            " (SELECT env FROM jobs WHERE env IS NOT NULL)");
        if (r < 0) {
                sqlite_free(&s->base);
                return r;
        }
        *ret = &s->base;
        return 0;
}
