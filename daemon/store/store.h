/* SPDX-License-Identifier: MIT */
/*
 * The state database: SQLite in WAL mode in the state folder, or a schema of a PostgreSQL
 * database (store/db.h has what differs between them). The loop thread queues writes;
 * the store's own thread commits whatever has queued up in one transaction (group commit) and
 * tells the loop, which then lets out the replies that waited for it. Every write has a sequence
 * number, so a reply can wait for exactly the writes made before it.
 */
#ifndef SLOWWORKD_STORE_H
#define SLOWWORKD_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

struct store;
struct run_record;
struct env_block;

struct store_config {
        const char *dir;      /* the state folder, held by this daemon alone */
        const char *conninfo; /* a libpq connection string; NULL or "": SQLite in dir */
        const char *schema;   /* PostgreSQL's schema of the tables */
        const char *node;     /* this daemon's name among the nodes of the database */
        struct mac_key *key;  /* what its rows are signed with (PostgreSQL) */
        double lease_renew, lease_time; /* seconds (PostgreSQL) */
        double timeout; /* seconds a call to the database may take when it does not answer (PostgreSQL) */
        int64_t min_threads, max_threads; /* what the node reports until store_report() */
};

struct db_claim;
struct db_node;
struct mac_key;

/* Opens (creating) the database and brings its schema up to date; errors are logged. */
int store_open(const struct store_config *config, struct store **ret);
/* What woke the loop (store_start's on_wake), or-ed: a commit ended (or failed), the lease was
 * renewed (or lost: store_lease() says), mail from other nodes was handed to store_on_mail's. */
enum store_wake {
        STORE_COMMITTED = 1 << 0,
        STORE_RENEWED = 1 << 1,
        STORE_MAIL = 1 << 2,
        STORE_CLAIMED = 1 << 3, /* a claim (store_claim) was made: its jobs are adopted */
};

/* Starts the committing thread; on_wake runs on the loop with what happened since it last ran. */
int store_start(struct store *s, uv_loop_t *loop, void (*on_wake)(void *data, unsigned what),
                void *data);
/* Commits what is queued and stops the thread (loop thread; a no-op when not started). */
void store_stop(struct store *s);
/* Closes the database, dropping writes queued after store_stop(). Accepts NULL. */
void store_free(struct store *s);

/* The sequence number of the last write queued, and of the last one on disk. */
uint64_t store_queued(const struct store *s);
uint64_t store_committed(const struct store *s);
/* Whether the last commit failed (the database is failing until one works), and why. */
bool store_failing(struct store *s, char *why, size_t len);
/* What a failing database means to a client: "the state database fails" (SQLite), "cannot reach
 * the job database" (PostgreSQL). */
const char *store_failing_means(const struct store *s);
/* How many reads and commits have failed since the start (a commit tried again counts again). */
uint64_t store_errors(struct store *s);

/* A job's row: what it runs (payload, environment, key, name, owner, class) and its state. */
struct store_job_row {
        int64_t id;
        uid_t owner;
        bool very_slow;
        const char *payload; /* JSON: the submit's params that say what it runs */
        char **env;          /* NULL-terminated, or NULL (reading back) */
        int64_t env_id;      /* its row */
        const char *key, *name;
        bool persist;
        const char *state; /* pending, running or idle */
        int64_t qorder;
        double due; /* wall clock when a delayed one is due, else 0 */
        int64_t runs;
        const char *flow; /* JSON: what it waits for, its attempt, its next tick (or NULL) */
        double started;   /* wall clock its run in progress started at, else 0 */
        const char *node; /* the node that held it (reading back; NULL: this one) */
        bool again;       /* another node asked it to run again (reading back) */
        bool claimed;     /* claimed from the node it names (reading back) */
        int64_t key_starts; /* its runs whose start was committed (keyed, shared database) */
};

/* Writes, loop thread only; each returns the sequence number of its write, which a reply that
 * speaks of what it wrote waits for. The whole row (with its environment, written once), or
 * only its state: persist, state, qorder, due, runs, flow and started. */
uint64_t store_put_job(struct store *s, const struct store_job_row *row, struct env_block *env);
uint64_t store_put_job_state(struct store *s, const struct store_job_row *row);
void store_delete_job(struct store *s, int64_t id);
/* The next commit keeps the owner's last history_limit runs, and drops the others. */
void store_add_run(struct store *s, const struct run_record *rec, int64_t history_limit);
/* The spec of the record's job, retired after it (restart's): kept with the record's row. */
void store_put_run_spec(struct store *s, const struct run_record *rec, const char *spec);
/* A run's log goes: its record keeps no path, and the file is removed once that is committed. */
void store_forget_log(struct store *s, int64_t id, int64_t run, const char *path);
void store_put_setting(struct store *s, const char *name, double value);
/* The setting named prefix and those named "prefix/anything". */
void store_delete_settings(struct store *s, const char *prefix);
void store_put_setting_text(struct store *s, const char *name, const char *text);

/* Reading back at start, before store_start(): each calls back once per row, in order. A
 * setting kept as text comes with it (else text is NULL). */
int store_load_settings(struct store *s,
                        void (*cb)(void *data, const char *name, double value, const char *text),
                        void *data);
/* A job of another owner than uid, if there is one: its id (0: none) and owner. */
int store_find_foreign_job(struct store *s, uid_t uid, int64_t *ret_id, uid_t *ret_owner);
int store_load_jobs(struct store *s, void (*cb)(void *data, const struct store_job_row *row),
                    void *data);
/* The newest `limit` runs, oldest first; the callback takes the record over. */
int store_load_runs(struct store *s, int64_t limit, void (*cb)(void *data, struct run_record *rec),
                    void *data);

/* Keys across the nodes of a shared database (PostgreSQL); on SQLite keys are the registry's
 * alone. Whether the database is shared. */
bool store_shared(const struct store *s);
/* Whether a record's node (run_record_node()'s) is another node of a shared database. */
bool store_other_node(const struct store *s, const char *node);
/* Whether no other node was live at the last renewal (always, on SQLite; never before the
 * first renewal), and whether there was one (store_nodes() gives this node alone before). */
bool store_alone(struct store *s);
bool store_nodes_known(struct store *s);
/* The first row of a keyed job (loop thread), claiming its key (queue_name's) unless another
 * node's live job holds it; then that job is asked to run again if may_again and it runs the
 * same (what). done(data, res) on the loop after the commit: res->i: the key's job, whether its
 * run is under way, whether it runs the same; res->text: its node (NULL res: never committed). */
struct db_result;
uint64_t store_claim_job(struct store *s, const struct store_job_row *row, struct env_block *env,
                         const char *queue_name, const char *what, bool may_again,
                         void (*done)(void *data, const struct db_result *res), void *data);
/* A pool thread: a keyed job's run starts (the asks to run it again before are answered by it;
 * *starts becomes the count of its starts, as soon as that is committed), or ended (*ret_again:
 * it was asked to run again meanwhile; the ask is cleared unless keep). Each waits for its
 * commit: 0, or -ECANCELED once give_up(arg) says to stop waiting. */
int store_key_start(struct store *s, int64_t id, int64_t *starts, bool (*give_up)(void *arg),
                    void *arg);
int store_key_end(struct store *s, int64_t id, bool keep, bool (*give_up)(void *arg), void *arg,
                  bool *ret_again);

/* Mail between the nodes of a shared database (loop thread): on_mail once per message that came
 * for this node, in the order sent; a message queued like a write, sent with its batch. */
struct db_mail;
void store_on_mail(struct store *s, void (*on_mail)(void *data, const struct db_mail *m),
                   void *data);
void store_send_mail(struct store *s, const char *to, int64_t to_epoch, int64_t session,
                     const char *kind, const char *body);
/* The same, for a client of uid: the other node serves it only if the user of that name has
 * that uid there too (else the message comes with refused). */
void store_send_user_mail(struct store *s, const char *to, int64_t to_epoch, int64_t session,
                          uid_t uid, const char *kind, const char *body);
/* Rows of a shared database rejected since the start, as store_rejected_rows() says: how many
 * of table i (0, ...), its name; -1 past the last. */
int64_t store_rejected_rows(struct store *s, int i, const char **ret_name);
/* The same to every other node live when its batch is committed (session 0). */
void store_send_mail_all(struct store *s, const char *kind, const char *body);
/* The node that holds job id (res->i[0] 0), or last ran it (1), and the job's owner (res->i[1]):
 * done(data, res) on the loop, res->text the node's name (NULL: no row has the id, or the
 * database could not be read; res NULL: never known). */
void store_find_job(struct store *s, int64_t id,
                    void (*done)(void *data, const struct db_result *res), void *data);

/* Of a shared database, done(data, res) on the loop (res NULL: never known): job id's last
 * run, res->text its row as JSON (run_record_from_row(); NULL: no run); a piece of a run's log kept there, from offset, at most max bytes: res->i[0] the
 * log's length (-1: none kept), res->text the piece in hex. No row (res->got false): the
 * database could not be read. */
void store_find_run(struct store *s, int64_t id,
                    void (*done)(void *data, const struct db_result *res), void *data);
void store_read_log(struct store *s, int64_t id, int64_t run, int64_t offset, int64_t max,
                    void (*done)(void *data, const struct db_result *res), void *data);

/* Every node's runs of a shared database, newest first: after the run before_id/before_run
 * (before_id 0: from the newest), of owner (-1: any), with an outcome of outcomes (a PostgreSQL
 * array's text; NULL: any), ended at since or later, at most limit, and up to the first one past
 * page_bytes (each counted as record_bytes and its command's and log path's lengths).
 * done(data, res) on the loop:
 * res->i[0] 0 when the run before is not there, res->text the runs (a JSON array of their rows,
 * run_record_from_row()'s); no row: the database could not be read; NULL res: never known. */
void store_list_runs(struct store *s, int64_t before_id, int64_t before_run, int64_t owner,
                     const char *outcomes, double since, int64_t limit, int64_t page_bytes,
                     int64_t record_bytes, void (*done)(void *data, const struct db_result *res),
                     void *data);

/* The live jobs of the other nodes, as of their last writes, with ids above after_id, of owner
 * (-1: any) and in state (NULL: any): done(data, res) on the loop, res->i[0] how many, res->text
 * the first limit (0: all) as list's items (a JSON array; no row: the database could not be
 * read; NULL res: never known). */
void store_list_jobs(struct store *s, int64_t after_id, int64_t owner, const char *state,
                     int64_t limit, void (*done)(void *data, const struct db_result *res),
                     void *data);

/* Of the jobs ids (an array's text, "{1,2}"), those that ended (no node holds them, or one
 * holds them idle after a run, as a job waited for ends here), each with how its last run ended: done(data, res) on the loop, res->text a JSON array of [id, outcome or null] (no
 * row: the database could not be read; NULL res: never known). */
void store_ended_jobs(struct store *s, const char *ids,
                      void (*done)(void *data, const struct db_result *res), void *data);

/* The kept settings that the nodes share (db_setting_shared()'s), newest last: done(data, res)
 * on the loop, res->text a JSON array of [name, value] pairs (no row: the database could not be
 * read; NULL res: never known). */
void store_read_shared_settings(struct store *s,
                                void (*done)(void *data, const struct db_result *res), void *data);

/* How many live jobs the other nodes hold in the queue, as of their last writes: done(data, res)
 * on the loop, res->i[0] (no row: the database could not be read; NULL res: never known). */
void store_count_queue_jobs(struct store *s, const char *queue,
                            void (*done)(void *data, const struct db_result *res), void *data);

/* Every node a shared database knows, as it has them now: done(data, res) on the loop, res->i[0]
 * how many, res->text their rows (a JSON array by name of objects: name, host, pid, epoch,
 * running, min_threads, max_threads, lease_age, state "live" or "expired", taken); no row: the
 * database could not be read; NULL res: never known. */
void store_list_nodes(struct store *s, void (*done)(void *data, const struct db_result *res),
                      void *data);
/* The row of the expired node name removed once no job is its: done(data, res) on the loop,
 * res->i[0] 1 when removed, 0 when the database knows no such node, 2 when it is live, 3 when
 * its jobs are still to be taken by another node (no row: the database could not be written;
 * NULL res: never known). */
/* A node's own pause kept in its row (done may be NULL): res->i[0] 1 when the row is there, 0
 * when no node has the name. */
void store_pause_node(struct store *s, const char *name, bool paused,
                      void (*done)(void *data, const struct db_result *res), void *data);
/* Whether the last renewal saw this node's own pause kept in its row. */
bool store_node_paused(struct store *s);
void store_forget_node(struct store *s, const char *name,
                       void (*done)(void *data, const struct db_result *res), void *data);

/* This daemon's node name, as run records hold it. */
const char *store_node(const struct store *s);
/* A new job's id (loop thread): unique among the nodes of the database, rising on each. > 0, or
 * -EAGAIN when the database gives no ids now. */
int64_t store_new_id(struct store *s);

/* The nodes of a database that several daemons share (PostgreSQL): each holds a lease, renewed
 * every lease_renew seconds by the store's thread and valid for lease_time. */
/* What this node tells the others at its next renewal (loop thread). */
void store_report(struct store *s, int64_t running, int64_t min_threads, int64_t max_threads,
                  const char *queues);
/* Claims other nodes' offered jobs (a shared database): wants, one per queue, copied. The store's
 * thread claims them, adds them to what store_take_adopted() hands over and tells the loop
 * (STORE_CLAIMED); one claim at a time: false, and nothing done, while one is under way. */
bool store_claim(struct store *s, const struct db_claim *wants, size_t n);
/* Offers the queued job to the other nodes (a shared database): its queue, its priority, and
 * when it was queued (wall clock), which order their claims; pin: the node it must run on (the
 * only one that may claim it), or NULL. */
void store_offer_job(struct store *s, int64_t id, const char *queue, int priority,
                     double queued_at, const char *pin);
/* Any thread but the store's and the loop: takes back the job offered, waiting until that is
 * committed, or until give_up(arg) says so (looked at every 50 ms): 1 while it is still this
 * node's, 0 once another node claimed it, -ECANCELED when given up. */
int store_reclaim_job(struct store *s, int64_t id, bool (*give_up)(void *arg), void *arg);
/* The same from the loop: done(data, res) with res->i[0] 1 or 0 (res NULL at the store's end). */
void store_reclaim_job_then(struct store *s, int64_t id,
                            void (*done)(void *data, const struct db_result *res), void *data);
/* Whether the last renewal saw another live node offer jobs. */
bool store_offers_seen(struct store *s);

/* The live nodes as last seen, by name, their lease ages brought up to now (a new array, the
 * caller's to free); on SQLite this daemon alone, as reported. 0, or -ENOMEM. */
int store_nodes(struct store *s, struct db_node **ret, size_t *ret_n);
/* Whether another node took this one's place, its lease having run out, and with it its jobs;
 * until when (CLOCK_MONOTONIC seconds) the lease surely holds in *ret_until (INFINITY without
 * one). */
bool store_lease(struct store *s, double *ret_until);
/* When (CLOCK_MONOTONIC seconds) the renewal whose list store_nodes() gives began: a node the
 * database had before then is in it, if live (0 before the first). */
double store_nodes_since(struct store *s);
/* CLOCK_MONOTONIC in seconds: the clock of store_nodes_since() and store_lease(). */
double store_mono_now(void);
/* The jobs this node took from nodes whose lease ran out since the last call, and its own jobs
 * other nodes asked to run again (row->again) (loop thread): cb once per row, in order. */
void store_take_adopted(struct store *s, void (*cb)(void *data, const struct store_job_row *row),
                        void *data);

#endif
