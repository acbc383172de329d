/* SPDX-License-Identifier: MIT */
/*
 * What the store asks of a database, whichever it is: SQLite's file in the state folder or a
 * schema of a PostgreSQL database. The store's queue, thread and sequence numbers are the same
 * for both; a driver only runs the statements, in transactions, and reads the rows back at start.
 */
#ifndef SLOWWORKD_DB_H
#define SLOWWORKD_DB_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define DB_SCHEMA 14 /* the schema version of the databases this daemon writes */

struct store_job_row;
struct run_record;
struct mac_key;

/* The column lists that both drivers' statements share, in the order of the store's values
 * (store-writes.c): a job's row (the columns that change while it lives last), a run's record. */
#define DB_JOB_STATE_COLUMNS "persist, state, qorder, due, runs, flow, started"
#define DB_JOB_COLUMNS "id, owner, very_slow, payload, env, key, name, " DB_JOB_STATE_COLUMNS
#define DB_RUN_COLUMNS                                                                             \
        "id, run, very_slow, owner, summary, started, ended, outcome, exit_code, signal, log,"     \
        " oom, cpu_time, memory_peak, leftovers, attempt, node"

/* The writes; their parameters, in order, are the store's (store-writes.c). */
/* What DB_PUT_JOB writes over when the job's row is there: every column it sets, in both
 * dialects (an upsert, not a replace: SQLite copies the pages a replace touches to a statement
 * journal first). */
#define DB_PUT_JOB_AGAIN                                                                           \
        " ON CONFLICT (id) DO UPDATE SET owner = excluded.owner,"                                  \
        " very_slow = excluded.very_slow, payload = excluded.payload,"                             \
        " env = excluded.env, key = excluded.key, name = excluded.name,"                           \
        " persist = excluded.persist, state = excluded.state,"                                     \
        " qorder = excluded.qorder, due = excluded.due, runs = excluded.runs,"                     \
        " flow = excluded.flow, started = excluded.started"

enum db_stmt {
        DB_PUT_JOB,
        DB_PUT_JOB_STATE,
        DB_DELETE_JOB,
        DB_PUT_ENV,
        DB_ADD_RUN,
        DB_PUT_SETTING, /* name, and a number or a text */
        DB_DELETE_SETTINGS,
        DB_PUT_NEXT_ID,
        DB_FORGET_LOG,
        /* A retired job's spec, kept with its last run's record (id, run, owner, the spec's
         * JSON): what restart makes a new job of, while that record is in the history. */
        DB_PUT_RUN_SPEC,
        DB_STMT_MAX,
        /* A database that several nodes share, alone: the first row of a keyed job, which
         * claims the key unless a live job of another node holds it (that job is then asked to
         * run once more: its `again`); a keyed job's run starts (its `again` cleared), and ends
         * (whether it was asked to run again, cleared). */
        DB_CLAIM_JOB = DB_STMT_MAX,
        DB_KEY_START,
        DB_KEY_END,
        /* Mail to another node (to, its epoch, session, kind, body, the uid of the user it
         * speaks for or NULL), and the node that holds or last ran a job (its text, and its
         * epoch now while it is live, else 0; none when no row has the id). */
        DB_SEND_MAIL,
        DB_FIND_JOB,
        /* Of a list of ids (an array's text), those that ended (no node holds them, or one
         * holds them idle after a run), each with its last run's outcome (JSON [[id, outcome
         * or null], ...]): a row however it is. */
        DB_ENDED_JOBS,
        /* Mail to every other live node at the commit (kind, body): a wake-up whose effect is
         * the same however often it comes (it is bound to no node's epoch, so it may be
         * replayed to a node that started again). */
        DB_SEND_MAIL_ALL,
        /* The live jobs of the other nodes after an id (owner, state, limit as list's): how
         * many, and the first limit of them (JSON, list's items). */
        DB_LIST_JOBS,
        /* A finished run's log, kept when its record is (id, run, the bytes); of a job's last
         * run, its record (JSON: the runs row); a piece of a kept log (id, run, offset, most
         * bytes): the log's length, and the piece (hex). */
        DB_PUT_LOG,
        DB_FIND_RUN,
        DB_READ_LOG,
        /* Every node's runs, newest first, before a run (id, run; NULL: none), of owner (-1:
         * any), with an outcome of a list (NULL: any), ended since, at most limit, up to the
         * first past a number of bytes (each run counted as a number and its texts' lengths):
         * whether the run before is there (1, or no run asked), and the runs (JSON, their
         * rows). */
        DB_LIST_RUNS,
        /* The settings all nodes share (db_setting_shared()'s), in the order written: a row
         * however it is, its text a JSON array of [name, value] pairs. */
        DB_SHARED_SETTINGS,
        /* How many live jobs of the other nodes are in a queue (its name): a row however it
         * is. */
        DB_COUNT_QUEUE_JOBS,
        /* Every node the schema knows, by name, as the database has them now: how many, and
         * their rows (JSON: name, host, pid, epoch, running, min_threads, max_threads,
         * lease_age, state "live" or "expired", taken). A row however it is. */
        DB_LIST_NODES,
        /* The row of an expired node whose jobs another node took (or that had none) removed
         * (its name): 1 when removed, 0 when no row has the name, 2 when the node is live, 3
         * when its jobs are not taken yet. A row however it is, answered as reads are: its
         * change is made only with the batch it is in. */
        DB_FORGET_NODE,
        /* A queued job this node cannot start now, offered to the other nodes (id, queue,
         * priority, the wall clock it was queued at, the node it must run on or NULL): any node
         * with a free thread (or that node) may claim it (the driver's claim). Taken back by this node's start of it (id): 1 while it is still
         * this node's, 0 once another node claimed it. */
        DB_OFFER_JOB,
        DB_RECLAIM_JOB,
        /* A node's own pause (its name, 1 or 0), kept in its row of nodes: how many rows have
         * the name. A row however it is, answered as reads are. */
        DB_PAUSE_NODE,
        DB_STMT_SHARED_MAX
};

struct db_value {
        enum { DB_NULL, DB_INT, DB_REAL, DB_TEXT, DB_BLOB } type;
        int64_t i; /* a blob's length */
        double d;
        const char *text; /* a blob's bytes */
};

struct db;

/* A message from another node of the database: for the session it names, of a kind, with its
 * body. */
struct db_mail {
        struct db_mail *next;
        char *from, *kind, *body;
        int64_t epoch; /* the sender's node's when it sent it */
        int64_t session;
        int64_t seq; /* the order it was sent in */
        /* The user it speaks for: uid (-1: none), checked by name against this host's; when
         * that fails, why the user cannot be served here (else NULL). */
        int64_t uid;
        char *refused;
};
void db_mail_free(struct db_mail *m);

/* Whether all the nodes of a shared database share the kept setting so named: the daemon's
 * pause ("paused") and the queues ("queue.NAME" and "queue.NAME/SETTING", their pauses too). */
bool db_setting_shared(const char *name);

/* The first row a statement returns: numbers, then a text (the caller's to free). */
struct db_result {
        bool got; /* false: it returned no row */
        int64_t i[3];
        char *text;
};

/* A node of a database that several daemons share, as its row says. */
struct db_node {
        char name[64], host[256];
        int64_t epoch; /* its daemon's: a node that started again has a new one */
        int64_t pid, running, min_threads, max_threads;
        double lease_age; /* seconds since it last renewed its lease */
        int64_t offered;  /* its queued jobs that it offers to the others (DB_OFFER_JOB) */
        char queues[1025]; /* node-queues: the queues whose jobs it runs ("*": every one) */
        bool paused;       /* its own pause (pause with node) */
        /* In a node's own entry of its renewal's list: the jobs other nodes offer that it may
         * claim (of its queues, placed on no other node). */
        int64_t claimable;
};

/* What a node claims of one queue's offered jobs: at most want, of which at most want_very_slow
 * very slow ones (preferred, as the pool prefers them, up to its cap). */
struct db_claim {
        const char *queue;
        int64_t want, want_very_slow;
};

struct db_driver {
        /* What a submit refused while commits fail says of it. */
        const char *failing;
        /* Seconds between the tries of a failing commit: the first, doubling up to the last;
         * and how the log says it. */
        double retry_first, retry_last;
        const char *retrying;
        /* DB_DELETE_JOB removes the job's row whatever it holds: the job's writes before it in a
         * batch need not be run. */
        bool delete_supersedes;

        /* One transaction: begin, run..., prune, commit (or rollback). Each returns 0 or -EIO;
         * why() says what failed last (a new string, or NULL when out of memory). A run with
         * out gets the statement's first row there once the commit worked. */
        int (*begin)(struct db *db);
        int (*run)(struct db *db, enum db_stmt stmt, const struct db_value *v, int n,
                   struct db_result *out);
        /* Drops the runs of each owner of owners (a JSON array of uids) beyond that owner's
         * newest limit; their logs in *logs (NULL-terminated). */
        int (*prune)(struct db *db, int64_t limit, const char *owners, char ***logs);
        int (*commit)(struct db *db);
        void (*rollback)(struct db *db);
        char *(*why)(struct db *db);

        /* Reading back at start, as store.h says; errors are logged. */
        int (*load_settings)(struct db *db,
                             void (*cb)(void *data, const char *name, double value,
                                        const char *text),
                             void *data);
        int (*find_foreign_job)(struct db *db, uid_t uid, int64_t *ret_id, uid_t *ret_owner);
        int (*load_jobs)(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                         void *data);
        int (*load_runs)(struct db *db, int64_t limit,
                         void (*cb)(void *data, struct run_record *rec), void *data);
        /* The highest id the database has seen (a database one daemon holds alone). */
        int64_t (*load_next_id)(struct db *db);

        /* A database that several daemons (nodes) share; NULL where one holds it alone. Each
         * returns 0, or -EIO with why(). Reserves n job ids for this node: the last in
         * *ret_last. */
        int (*reserve_ids)(struct db *db, int64_t n, int64_t *ret_last);
        /* Renews this node's lease with what it reports, and lists the live nodes (*ret: a new
         * array, by name); -ESTALE when another node took this one's place. */
        int (*renew)(struct db *db, const struct db_node *me, struct db_node **ret,
                     size_t *ret_n);
        /* Takes the jobs of one node whose lease ran out, in one transaction that also ends
         * that node's row, each to cb (row->node names it) before the commit: 1, or 0 when no
         * node's lease ran out. */
        int (*adopt)(struct db *db, void (*cb)(void *data, const struct store_job_row *row),
                     void *data);
        /* Takes this node's keyed jobs that other nodes asked to run again while none of their
         * runs was under way (row->again set), clearing the ask, each to cb before the commit. */
        int (*take_again)(struct db *db,
                          void (*cb)(void *data, const struct store_job_row *row), void *data);
        /* Claims other nodes' offered jobs, in one transaction: of each queue of wants, the
         * first by priority, then age, that no other claim holds, each to cb (row->node names
         * the node it was claimed from, row->claimed is set) before the commit. */
        int (*claim)(struct db *db, const struct db_claim *wants, size_t n,
                     void (*cb)(void *data, const struct store_job_row *row), void *data);

        /* The mail to this node, read by a thread of the driver's: arrived(data) (on that
         * thread) whenever some came; mail_take() (any thread) hands it over in order. 0, or
         * -EIO logged. mail_stop() before free(). */
        int (*mail_start)(struct db *db, void (*arrived)(void *data), void *data);
        struct db_mail *(*mail_take)(struct db *db);
        void (*mail_stop)(struct db *db);

        /* Rows that did not hold their MAC (a shared database's), by table: how many of table
         * i (0, 1, ...), its name in *ret_name; -1 past the last. NULL: none are signed. */
        int64_t (*rejected_rows)(struct db *db, int i, const char **ret_name);

        void (*free)(struct db *db);
};

struct db {
        const struct db_driver *driver;
        char *name; /* in messages: "State database PATH" */
};

/* DIR/slowworkd.db, created and brought up to date; errors are logged. */
int db_sqlite_open(const char *dir, struct db **ret);
/* The schema of the database that conninfo (a libpq connection string) names, created and
 * brought up to date, joined as node me (refused while a live node has its name) with a lease of
 * lease_time seconds; its rows signed and checked with key (a reference taken); a call that the
 * database does not answer (a partition) fails after about timeout seconds; errors are logged. */
int db_pg_open(const char *conninfo, const char *schema, const struct db_node *me,
               double lease_time, double timeout, struct mac_key *key, struct db **ret);

/* Whether a libpq connection string holds a password: 1 or 0; -errno when libpq cannot be
 * loaded (db_pg_open says why). */
int db_pg_conninfo_has_password(const char *conninfo);
/* Jobs read in order share their environments: the vars of row id (its text), parsed only when
 * id is not the last one's. db_env_rows_free() once all are read. */
struct db_env_rows {
        int64_t id;
        char **vars;
};
char **db_env_of(struct db_env_rows *rows, int64_t id, const char *text);
void db_env_rows_free(struct db_env_rows *rows);
/* The outcome's name as the protocol spells it (a string that lives on); unknown: interrupted. */
const char *db_outcome_name(const char *text);

#endif
