/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "store/envs.h"
#include "store/run-record.h"
#include "store/store.h"
#include "store/wal-check.h"
#include "methods.h"
#include "util/log.h"
#include "util/strv.h"

/* migrations[v] takes a database from schema v to v + 1. */
static const char *const migrations[STORE_SCHEMA] = {
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
};

enum stmt {
        STMT_PUT_JOB,
        STMT_PUT_JOB_STATE,
        STMT_DELETE_JOB,
        STMT_PUT_ENV,
        STMT_ADD_RUN,
        STMT_PUT_SETTING,
        STMT_DELETE_SETTINGS,
        STMT_PUT_NEXT_ID,
        STMT_PRUNE_RUNS,
        STMT_FORGET_LOG,
        STMT_MAX
};

static const char *const stmt_sql[STMT_MAX] = {
    [STMT_PUT_JOB] = "INSERT OR REPLACE INTO jobs (id, owner, very_slow, payload, env, key, name,"
                     " persist, state, qorder, due, runs, flow, started)"
                     " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [STMT_PUT_JOB_STATE] = "UPDATE jobs SET persist = ?2, state = ?3, qorder = ?4, due = ?5,"
                           " runs = ?6, flow = ?7, started = ?8 WHERE id = ?1",
    [STMT_DELETE_JOB] = "DELETE FROM jobs WHERE id = ?",
    [STMT_PUT_ENV] = "INSERT OR IGNORE INTO envs (id, vars) VALUES (?, ?)",
    [STMT_ADD_RUN] = "INSERT INTO runs (id, run, very_slow, owner, summary, started, ended,"
                     " outcome, exit_code, signal, log, oom, cpu_time, memory_peak, leftovers, attempt)"
                     " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
    [STMT_PUT_SETTING] = "INSERT OR REPLACE INTO settings (name, value) VALUES (?, ?)",
    [STMT_DELETE_SETTINGS] = "DELETE FROM settings WHERE name = ?1"
                             " OR substr(name, 1, length(?1) + 1) = ?1 || '/'",
    [STMT_PUT_NEXT_ID] = "INSERT INTO meta (key, value) VALUES ('next_id', ?1)"
                         " ON CONFLICT (key) DO UPDATE SET value = max(value, ?1)",
    [STMT_PRUNE_RUNS] = "DELETE FROM runs WHERE seq <= (SELECT max(seq) FROM runs) - ?"
                        " RETURNING log",
    [STMT_FORGET_LOG] = "UPDATE runs SET log = NULL WHERE id = ?1 AND run = ?2 AND log = ?3",
};

#define OP_VALUES_MAX 16

#define OP_SPARE_MAX 4096 /* ops kept for reuse: a burst's, never the heap's holes between jobs */

struct value {
        enum { V_NULL, V_INT, V_REAL, V_TEXT } type;
        int64_t i;
        double d;
        size_t text; /* where in the op's buf */
};

/* A write; made on the loop, run and then kept for reuse by the store's thread. */
struct op {
        struct op *next;
        enum stmt stmt;
        int n;
        struct value v[OP_VALUES_MAX];
        char *buf; /* its texts */
        size_t buf_len, buf_size;
};

struct store {
        int lock_fd; /* flock()ed: one daemon per state folder */
        sqlite3 *db;
        sqlite3_stmt *stmts[STMT_MAX];
        char *path;

        pthread_t thread;
        bool started;
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct op *head, **tail; /* under lock: queued, not yet taken */
        struct op *spare;        /* under lock: committed, for reuse */
        size_t nspare;
        uint64_t queued;         /* under lock: ops queued */
        bool stop;               /* under lock */
        int64_t history_limit;   /* under lock: for pruning */
        bool runs_added;         /* under lock: since the last prune */
        int64_t max_id;          /* under lock: the highest job id, written once a batch */
        bool max_id_new;         /* under lock: since the last batch */

        uint64_t committed; /* atomic */
        uint64_t errors;    /* atomic: reads and commits that failed */
        char *failure;      /* under lock */
        uv_async_t async;
        void (*on_commit)(void *data);
        void *data;

        int64_t next_env_id; /* loop */
};

static int db_error(struct store *s, const char *what)
{
        __atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
        log_error("State database %s: %s: %s", s->path, what, sqlite3_errmsg(s->db));
        return -EIO;
}

static int exec(struct store *s, const char *sql)
{
        char *err = NULL;

        if (sqlite3_exec(s->db, sql, NULL, NULL, &err) != SQLITE_OK) {
                log_error("State database %s: %s", s->path, err ? err : "error");
                sqlite3_free(err);
                return -EIO;
        }
        return 0;
}

static int64_t query_int(struct store *s, const char *sql, int64_t fallback)
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
static int schema_version(struct store *s, int *ret)
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

static int migrate(struct store *s)
{
        char sql[64];
        int version, r;

        r = schema_version(s, &version);
        if (r < 0)
                return r;
        if (version > STORE_SCHEMA) {
                log_error("State database %s has schema %d, from a newer slowworkd; this one "
                          "knows schema %d at most",
                          s->path, version, STORE_SCHEMA);
                return -EPROTO;
        }
        for (; version < STORE_SCHEMA; version++) {
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

/* Two daemons on one state folder would both run its jobs, whatever their sockets. */
static int take_folder(struct store *s, const char *dir)
{
        char *path;

        if (asprintf(&path, "%s/slowworkd.lock", dir) < 0)
                return -ENOMEM;
        s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (s->lock_fd < 0) {
                log_error("Cannot open %s: %m", path);
                free(path);
                return -errno;
        }
        free(path);
        if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
                int r = -errno;

                if (r == -EWOULDBLOCK)
                        log_error("Another slowworkd uses the state folder %s", dir);
                else
                        log_error_errno(r, "Cannot lock the state folder %s: %m", dir);
                return r;
        }
        return 0;
}

/* SQLite's recovery drops what follows a damaged frame of the write-ahead log without a word:
 * said here, before it does. */
static void check_wal(struct store *s)
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

int store_open(const char *dir, struct store **ret)
{
        struct store *s = calloc(1, sizeof(*s));
        pthread_condattr_t attr;
        int r, i;

        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        /* The retry wait is on the monotonic clock: a step of the wall clock cannot stretch it. */
        pthread_condattr_init(&attr);
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
        pthread_cond_init(&s->cond, &attr);
        pthread_condattr_destroy(&attr);
        s->tail = &s->head;
        s->lock_fd = -1;
        if (asprintf(&s->path, "%s/slowworkd.db", dir) < 0) {
                s->path = NULL;
                store_free(s);
                return -ENOMEM;
        }
        r = take_folder(s, dir);
        if (r < 0) {
                store_free(s);
                return r;
        }
        check_wal(s);
        if (sqlite3_open_v2(s->path, &s->db,
                            SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                            NULL) != SQLITE_OK) {
                r = db_error(s, "cannot open it");
                store_free(s);
                return r;
        }
        sqlite3_busy_timeout(s->db, 5000);
        r = exec(s, "PRAGMA journal_mode = WAL");
        if (r == 0)
                r = exec(s, "PRAGMA synchronous = FULL");
        if (r == 0)
                r = migrate(s);
        for (i = 0; r == 0 && i < STMT_MAX; i++)
                if (sqlite3_prepare_v3(s->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                                       &s->stmts[i], NULL) != SQLITE_OK)
                        r = db_error(s, "cannot prepare a statement");
        /* Environments are shared by the jobs that sent the same one, and kept while one does. */
        if (r == 0)
                r = exec(s, "DELETE FROM envs WHERE id NOT IN"
                            " (SELECT env FROM jobs WHERE env IS NOT NULL)");
        if (r < 0) {
                store_free(s);
                return r;
        }
        s->next_env_id = query_int(s, "SELECT max(id) FROM envs", 0) + 1;
        *ret = s;
        return 0;
}

/* Store thread: runs one queued write. */
static int run_op(struct store *s, const struct op *op)
{
        sqlite3_stmt *st = s->stmts[op->stmt];
        int i, r;

        sqlite3_reset(st);
        for (i = 0; i < op->n; i++) {
                const struct value *v = &op->v[i];

                if (v->type == V_INT)
                        sqlite3_bind_int64(st, i + 1, v->i);
                else if (v->type == V_REAL)
                        sqlite3_bind_double(st, i + 1, v->d);
                else if (v->type == V_TEXT)
                        sqlite3_bind_text(st, i + 1, op->buf + v->text, -1, SQLITE_STATIC);
                else
                        sqlite3_bind_null(st, i + 1);
        }
        r = sqlite3_step(st);
        sqlite3_reset(st);
        return r == SQLITE_DONE ? 0 : -EIO;
}

/* Store thread: drops the oldest runs beyond the history limit; their logs, to be unlinked once
 * that is committed, in *logs (NULL-terminated). */
static int prune(struct store *s, int64_t limit, char ***logs)
{
        sqlite3_stmt *st = s->stmts[STMT_PRUNE_RUNS];
        size_t n = 0;
        int r;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, limit);
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

static void free_ops(struct op *op)
{
        while (op) {
                struct op *next = op->next;

                free(op->buf);
                free(op);
                op = next;
        }
}

/* Store thread: a committed batch is kept for reuse, up to OP_SPARE_MAX ops. */
static void spare_ops(struct store *s, struct op *batch)
{
        struct op *rest = NULL;

        pthread_mutex_lock(&s->lock);
        while (batch && s->nspare < OP_SPARE_MAX) {
                struct op *next = batch->next;

                batch->next = s->spare;
                s->spare = batch;
                s->nspare++;
                batch = next;
        }
        rest = batch;
        pthread_mutex_unlock(&s->lock);
        free_ops(rest);
}

/* Store thread: one transaction for the whole batch; why it failed in *why. */
/* Store thread: the highest id so far, so that ids go on after every job and run is gone. */
static int put_next_id(struct store *s, int64_t id)
{
        sqlite3_stmt *st = s->stmts[STMT_PUT_NEXT_ID];
        int r;

        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        r = sqlite3_step(st);
        sqlite3_reset(st);
        return r == SQLITE_DONE ? 0 : -EIO;
}

static int commit(struct store *s, const struct op *batch, int64_t prune_limit, int64_t max_id,
                  char **why)
{
        const struct op *op;
        int r = sqlite3_exec(s->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
        char **logs = NULL;
        bool forgets = false;

        for (op = batch; r == 0 && op; op = op->next) {
                r = run_op(s, op);
                forgets |= op->stmt == STMT_FORGET_LOG;
        }
        if (r == 0 && prune_limit > 0)
                r = prune(s, prune_limit, &logs);
        if (r == 0 && max_id > 0)
                r = put_next_id(s, max_id);
        if (r == 0 && sqlite3_exec(s->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
                r = -EIO;
        if (r < 0) {
                *why = strdup(sqlite3_errmsg(s->db));
                sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
        }
        for (char **l = logs; l && *l; l++) {
                if (r == 0)
                        unlink(*l);
                free(*l);
        }
        free(logs);
        /* The logs the batch forgot go once no row names them. */
        for (op = batch; r == 0 && forgets && op; op = op->next)
                if (op->stmt == STMT_FORGET_LOG)
                        unlink(op->buf + op->v[2].text);
        return r;
}

static void *store_thread(void *arg)
{
        struct store *s = arg;

        pthread_mutex_lock(&s->lock);
        for (;;) {
                struct op *batch;
                uint64_t last;
                int64_t prune_limit, max_id;
                char *why = NULL;
                int r;

                while (!s->head && !s->stop)
                        pthread_cond_wait(&s->cond, &s->lock);
                if (!s->head)
                        break;
                batch = s->head;
                s->head = NULL;
                s->tail = &s->head;
                last = s->queued;
                prune_limit = s->runs_added ? s->history_limit : 0;
                max_id = s->max_id_new ? s->max_id : 0;
                s->max_id_new = false;
                s->runs_added = false;
                pthread_mutex_unlock(&s->lock);

                r = commit(s, batch, prune_limit, max_id, &why);

                pthread_mutex_lock(&s->lock);
                if (r < 0) {
                        struct timespec ts;

                        /* Kept, and tried again: what was accepted is not dropped. */
                        __atomic_add_fetch(&s->errors, 1, __ATOMIC_RELAXED);
                        if (!s->failure)
                                log_error("State database %s: cannot commit: %s (trying again "
                                          "every second)",
                                          s->path, why ? why : "out of memory");
                        free(s->failure);
                        s->failure = why ? why : strdup("out of memory");
                        for (struct op *op = batch;; op = op->next)
                                if (!op->next) {
                                        op->next = s->head;
                                        if (!s->head)
                                                s->tail = &op->next;
                                        break;
                                }
                        s->head = batch;
                        s->runs_added |= prune_limit > 0;
                        s->max_id_new |= max_id > 0;
                        uv_async_send(&s->async); /* so that the loop sees the failure */
                        clock_gettime(CLOCK_MONOTONIC, &ts);
                        ts.tv_sec += 1;
                        if (!s->stop)
                                pthread_cond_timedwait(&s->cond, &s->lock, &ts);
                        else
                                break; /* stopping: what could not be written stays lost */
                        continue;
                }
                if (s->failure)
                        log_info("State database %s: writing again", s->path);
                free(s->failure);
                s->failure = NULL;
                __atomic_store_n(&s->committed, last, __ATOMIC_RELEASE);
                pthread_mutex_unlock(&s->lock);
                spare_ops(s, batch);
                uv_async_send(&s->async);
                pthread_mutex_lock(&s->lock);
        }
        pthread_mutex_unlock(&s->lock);
        return NULL;
}

static void on_async(uv_async_t *async)
{
        struct store *s = async->data;

        s->on_commit(s->data);
}

int store_start(struct store *s, uv_loop_t *loop, void (*on_commit)(void *data), void *data)
{
        int r;

        s->on_commit = on_commit;
        s->data = data;
        s->async.data = s;
        r = uv_async_init(loop, &s->async, on_async);
        if (r < 0)
                return r;
        r = -pthread_create(&s->thread, NULL, store_thread, s);
        if (r < 0) {
                uv_close((uv_handle_t *)&s->async, NULL);
                return r;
        }
        s->started = true;
        return 0;
}

void store_stop(struct store *s)
{
        if (!s || !s->started)
                return;
        pthread_mutex_lock(&s->lock);
        s->stop = true;
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
        pthread_join(s->thread, NULL);
        uv_close((uv_handle_t *)&s->async, NULL);
        s->started = false;
}

void store_free(struct store *s)
{
        int i;

        if (!s)
                return;
        free_ops(s->head);
        free_ops(s->spare);
        for (i = 0; i < STMT_MAX; i++)
                sqlite3_finalize(s->stmts[i]);
        sqlite3_close(s->db);
        if (s->lock_fd >= 0)
                close(s->lock_fd);
        pthread_mutex_destroy(&s->lock);
        pthread_cond_destroy(&s->cond);
        free(s->failure);
        free(s->path);
        free(s);
}

uint64_t store_queued(const struct store *s)
{
        return __atomic_load_n(&s->queued, __ATOMIC_RELAXED);
}

uint64_t store_committed(const struct store *s)
{
        return __atomic_load_n(&s->committed, __ATOMIC_ACQUIRE);
}

uint64_t store_errors(struct store *s)
{
        return __atomic_load_n(&s->errors, __ATOMIC_RELAXED);
}

bool store_failing(struct store *s, char *why, size_t len)
{
        bool failing;

        pthread_mutex_lock(&s->lock);
        failing = s->failure != NULL;
        if (failing)
                snprintf(why, len, "%s", s->failure);
        pthread_mutex_unlock(&s->lock);
        return failing;
}

static void out_of_memory(void)
{
        log_error("Out of memory for the state database");
        abort();
}

/* Loop thread: a new write, a spare one if there is one. Out of memory here is fatal: an
 * accepted job must not be lost. */
static struct op *op_new(struct store *s, enum stmt stmt)
{
        struct op *op;

        pthread_mutex_lock(&s->lock);
        op = s->spare;
        if (op) {
                s->spare = op->next;
                s->nspare--;
        }
        pthread_mutex_unlock(&s->lock);
        if (!op)
                op = calloc(1, sizeof(*op));
        if (!op)
                out_of_memory();
        op->next = NULL;
        op->stmt = stmt;
        op->n = 0;
        op->buf_len = 0;
        memset(op->v, 0, sizeof(op->v));
        return op;
}

static void put_int(struct op *op, int64_t i)
{
        op->v[op->n++] = (struct value){.type = V_INT, .i = i};
}

static void put_real(struct op *op, double d)
{
        op->v[op->n++] = (struct value){.type = V_REAL, .d = d};
}

static void put_text(struct op *op, const char *text)
{
        struct value *v = &op->v[op->n++];
        size_t len = text ? strlen(text) + 1 : 0;

        if (!text)
                return;
        if (op->buf_len + len > op->buf_size) {
                size_t size = op->buf_size ? op->buf_size : 256;
                char *buf;

                while (size < op->buf_len + len)
                        size *= 2;
                buf = realloc(op->buf, size);
                if (!buf)
                        out_of_memory();
                op->buf = buf;
                op->buf_size = size;
        }
        v->type = V_TEXT;
        v->text = op->buf_len;
        memcpy(op->buf + op->buf_len, text, len);
        op->buf_len += len;
}

static void queue(struct store *s, struct op *op)
{
        pthread_mutex_lock(&s->lock);
        *s->tail = op;
        s->tail = &op->next;
        s->queued++;
        if (op->stmt == STMT_PUT_JOB && op->v[0].i > s->max_id) {
                s->max_id = op->v[0].i;
                s->max_id_new = true;
        }
        pthread_cond_signal(&s->cond);
        pthread_mutex_unlock(&s->lock);
}

static void put_env(struct store *s, struct env_block *env)
{
        json_object *vars;
        struct op *op;
        char **v;

        if (env->store_id)
                return;
        env->store_id = s->next_env_id++;
        vars = json_object_new_array();
        for (v = env->vars; *v; v++)
                json_object_array_add(vars, json_object_new_string(*v));
        op = op_new(s, STMT_PUT_ENV);
        put_int(op, env->store_id);
        put_text(op, json_object_to_json_string_ext(vars, JSON_C_TO_STRING_PLAIN));
        json_object_put(vars);
        queue(s, op);
}

/* The columns that change while a job lives, last in both statements. */
static void put_state(struct op *op, const struct store_job_row *row)
{
        put_int(op, row->persist);
        put_text(op, row->state);
        put_int(op, row->qorder);
        put_real(op, row->due);
        put_int(op, row->runs);
        put_text(op, row->flow);
        put_real(op, row->started);
}

uint64_t store_put_job(struct store *s, const struct store_job_row *row, struct env_block *env)
{
        struct op *op;

        if (env)
                put_env(s, env);
        op = op_new(s, STMT_PUT_JOB);
        put_int(op, row->id);
        put_int(op, row->owner);
        put_int(op, row->very_slow);
        put_text(op, row->payload);
        if (env)
                put_int(op, env->store_id);
        else
                op->n++;
        put_text(op, row->key);
        put_text(op, row->name);
        put_state(op, row);
        queue(s, op);
        return s->queued;
}

uint64_t store_put_job_state(struct store *s, const struct store_job_row *row)
{
        struct op *op = op_new(s, STMT_PUT_JOB_STATE);

        put_int(op, row->id);
        put_state(op, row);
        queue(s, op);
        return s->queued;
}

void store_delete_job(struct store *s, int64_t id)
{
        struct op *op = op_new(s, STMT_DELETE_JOB);

        put_int(op, id);
        queue(s, op);
}

void store_add_run(struct store *s, const struct run_record *rec, int64_t history_limit)
{
        struct op *op = op_new(s, STMT_ADD_RUN);

        put_int(op, rec->id);
        put_int(op, rec->run);
        put_int(op, rec->very_slow);
        put_int(op, rec->owner);
        put_text(op, rec->summary ? rec->summary : ""); /* NOT NULL: a row that fails stops all */
        put_real(op, rec->started);
        put_real(op, rec->ended);
        put_text(op, rec->outcome);
        put_int(op, rec->exit_code);
        put_int(op, rec->signal);
        put_text(op, rec->log);
        put_int(op, rec->oom);
        if (rec->cpu_time >= 0)
                put_real(op, rec->cpu_time);
        else
                op->n++;
        if (rec->memory_peak >= 0)
                put_int(op, rec->memory_peak);
        else
                op->n++;
        put_int(op, rec->leftovers);
        put_int(op, rec->attempt > 0 ? rec->attempt : 1);
        pthread_mutex_lock(&s->lock);
        s->history_limit = history_limit;
        s->runs_added = true;
        pthread_mutex_unlock(&s->lock);
        queue(s, op);
}

void store_forget_log(struct store *s, int64_t id, int64_t run, const char *path)
{
        struct op *op = op_new(s, STMT_FORGET_LOG);

        put_int(op, id);
        put_int(op, run);
        put_text(op, path);
        queue(s, op);
}

void store_put_setting(struct store *s, const char *name, double value)
{
        struct op *op = op_new(s, STMT_PUT_SETTING);

        put_text(op, name);
        put_real(op, value);
        queue(s, op);
}

void store_delete_settings(struct store *s, const char *prefix)
{
        struct op *op = op_new(s, STMT_DELETE_SETTINGS);

        put_text(op, prefix);
        queue(s, op);
}

void store_put_setting_text(struct store *s, const char *name, const char *text)
{
        struct op *op = op_new(s, STMT_PUT_SETTING);

        put_text(op, name);
        put_text(op, text);
        queue(s, op);
}

int store_load_settings(struct store *s,
                        void (*cb)(void *data, const char *name, double value, const char *text),
                        void *data)
{
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

static char **parse_env(const char *text)
{
        json_object *a = text ? json_tokener_parse(text) : NULL;
        size_t i,
            n = a && json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
        char **vars = a ? calloc(n + 1, sizeof(*vars)) : NULL;

        for (i = 0; vars && i < n; i++)
                vars[i] = strdup(json_object_get_string(json_object_array_get_idx(a, i)));
        json_object_put(a);
        return vars;
}

int store_find_foreign_job(struct store *s, uid_t uid, int64_t *ret_id, uid_t *ret_owner)
{
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

int store_load_jobs(struct store *s, void (*cb)(void *data, const struct store_job_row *row),
                    void *data)
{
        sqlite3_stmt *st;
        char **env = NULL;
        int64_t env_id = 0;
        int r;

        if (sqlite3_prepare_v2(
                s->db,
                "SELECT j.id, owner, very_slow, payload, e.vars, key, name,"
                " persist, state, qorder, due, runs, e.id, flow, started FROM jobs j LEFT JOIN envs e"
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

                /* Jobs share their environments: each is parsed once in a run of rows. */
                if (row.env_id != env_id || !env) {
                        strv_free(env);
                        env_id = row.env_id;
                        env = parse_env((const char *)sqlite3_column_text(st, 4));
                }
                row.env = env;
                cb(data, &row);
        }
        strv_free(env);
        sqlite3_finalize(st);
        return r == SQLITE_DONE ? 0 : db_error(s, "cannot read the jobs");
}

/* The outcome's name as the protocol spells it (a string that lives on); unknown: interrupted. */
static const char *outcome_name(const char *text)
{
        for (const char *const *o = sw_outcomes; text && *o; o++)
                if (strcmp(text, *o) == 0)
                        return *o;
        return "interrupted";
}

int store_load_runs(struct store *s, int64_t limit, void (*cb)(void *data, struct run_record *rec),
                    void *data)
{
        sqlite3_stmt *st;
        int r;

        if (sqlite3_prepare_v2(s->db,
                               "SELECT id, run, very_slow, owner, summary, started, ended,"
                               " outcome, exit_code, signal, log, oom, cpu_time, memory_peak,"
                               " leftovers, attempt FROM (SELECT * FROM runs"
                               " ORDER BY seq DESC LIMIT ?) ORDER BY seq",
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
                rec->outcome = outcome_name((const char *)sqlite3_column_text(st, 7));
                rec->exit_code = sqlite3_column_int(st, 8);
                rec->signal = sqlite3_column_int(st, 9);
                rec->log = log ? strdup(log) : NULL;
                rec->oom = sqlite3_column_int(st, 11);
                rec->cpu_time = sqlite3_column_type(st, 12) == SQLITE_NULL
                                    ? -1
                                    : sqlite3_column_double(st, 12);
                rec->memory_peak = sqlite3_column_type(st, 13) == SQLITE_NULL
                                       ? -1
                                       : sqlite3_column_int64(st, 13);
                rec->leftovers = sqlite3_column_int(st, 14);
                rec->attempt = sqlite3_column_int64(st, 15);
                cb(data, rec);
        }
        sqlite3_finalize(st);
        return r == SQLITE_DONE ? 0 : db_error(s, "cannot read the history");
}

int64_t store_load_next_id(struct store *s)
{
        int64_t a = query_int(s, "SELECT value FROM meta WHERE key = 'next_id'", 0);
        int64_t b = query_int(s, "SELECT max(id) FROM jobs", 0);
        int64_t c = query_int(s, "SELECT max(id) FROM runs", 0);

        return a > b ? (a > c ? a : c) : (b > c ? b : c);
}
