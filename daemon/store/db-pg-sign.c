/* SPDX-License-Identifier: MIT */
/*
 * The rows of a shared schema, signed with the cluster key: a node signs what it writes and acts
 * only on rows whose MAC holds, so that a writer of the database without the key can make no
 * node run anything, or as anyone. Each MAC covers what the row means and where it belongs, under
 * a label of its own and the schema's name:
 *   jobs      id, owner, the owner's name, class, payload, environment, key, name (mac), and
 *             id, persist, flow (state_mac: what changes while the job lives);
 *   envs      id, vars;
 *   settings  node, name, value, text;
 *   mail      from, its epoch, to (or "*" for every node), its epoch (0), session, the sender's
 *             number for it, kind, the uid and name of the user it speaks for, body.
 * A node's mail numbers rise, and mail is bound to the epoch of the node it is for: a row cannot
 * be moved to another job, node or session, or be replayed. What is left unsigned is what only
 * delays or orders work (states, queue order, due times, leases, asks to run again).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/db-pg.h"
#include "store/store.h"
#include "util/credentials.h"
#include "util/log.h"

#define REJECTED_LOGGED_MAX 65536 /* rows logged once each; past that, counted only */

static const char *const table_names[PG_TABLES] = {"mail", "jobs", "envs", "settings"};

/* The rows rejected and logged, each by a hash of what it is: a set, open addressing. */
struct pg_rejected {
        uint64_t seen[REJECTED_LOGGED_MAX];
        unsigned n;
};

/* One MAC over the schema and the fields, under label. */
static void begin(const struct pg_db *p, struct mac *m, const char *label, const char *const *f,
                  int n)
{
        mac_begin(m, p->key, label);
        mac_text(m, p->schema);
        for (int i = 0; i < n; i++)
                mac_text(m, f[i]);
}

static void sign(const struct pg_db *p, const char *label, const char *const *f, int n,
                 char out[MAC_TEXT_LEN + 1])
{
        struct mac m;

        begin(p, &m, label, f, n);
        mac_end(&m, out);
}

static bool holds(const struct pg_db *p, const char *label, const char *const *f, int n,
                  const char *mac)
{
        struct mac m;

        begin(p, &m, label, f, n);
        return mac_matches(&m, mac);
}

#define JOB       "slowwork job 1"
#define JOB_STATE "slowwork job state 1"
#define ENV       "slowwork env 1"
#define SETTING   "slowwork setting 1"
#define MAIL      "slowwork mail 1"

/* A number as the text a MAC covers (the same as PostgreSQL writes a bigint). */
static const char *int_text(int64_t v, char buf[24])
{
        snprintf(buf, 24, "%" PRId64, v);
        return buf;
}

static const char *real_text(const double *v, char buf[32])
{
        if (!v)
                return NULL;
        snprintf(buf, 32, "%.17g", *v);
        return buf;
}

/* The name of user uid, as this host has it (NULL: none); kept for the next rows. */
static const char *user_name(struct pg_db *p, uid_t uid)
{
        struct pg_users *u = &p->users;
        char *name = NULL;
        unsigned i;

        for (i = 0; i < u->n; i++)
                if (u->kept[i].uid == uid)
                        return u->kept[i].name;
        if (credentials_user_name(uid, &name) < 0)
                name = NULL;
        i = u->n < PG_USERS_KEPT ? u->n++ : u->next++ % PG_USERS_KEPT;
        free(u->kept[i].name);
        u->kept[i].uid = uid;
        u->kept[i].name = name;
        return name;
}

static void sign_job(struct pg_db *p, const struct db_value *v, const char *user,
                     char out[MAC_TEXT_LEN + 1])
{
        char id[24], owner[24], class[24], env[24];
        const char *f[] = {int_text(v[0].i, id),
                           int_text(v[1].i, owner),
                           user,
                           int_text(v[2].i, class),
                           v[3].text,
                           v[4].type == DB_NULL ? NULL : int_text(v[4].i, env),
                           v[5].type == DB_NULL ? NULL : v[5].text,
                           v[6].type == DB_NULL ? NULL : v[6].text};

        sign(p, JOB, f, 8, out);
}

static void sign_state(struct pg_db *p, int64_t id, const struct db_value *persist,
                       const struct db_value *flow, char out[MAC_TEXT_LEN + 1])
{
        char t[2][24];
        const char *f[] = {int_text(id, t[0]), int_text(persist->i, t[1]),
                           flow->type == DB_NULL ? NULL : flow->text};

        sign(p, JOB_STATE, f, 3, out);
}

static struct db_value text_value(const char *text)
{
        return text ? (struct db_value){.type = DB_TEXT, .text = text}
                    : (struct db_value){.type = DB_NULL};
}

int pg_sign_params(struct pg_db *p, enum db_stmt stmt, struct db_value *with, int n,
                   struct pg_sign_buf *buf)
{
        const char *user;
        char t[4][32];

        switch (stmt) {
        case DB_PUT_JOB:
        case DB_CLAIM_JOB: /* both begin with the whole row: id ... started */
                user = user_name(p, (uid_t)with[1].i);
                sign_job(p, with, user, buf->mac[0]);
                sign_state(p, with[0].i, &with[7], &with[12], buf->mac[1]);
                with[n++] = text_value(user);
                with[n++] = text_value(buf->mac[0]);
                with[n++] = text_value(buf->mac[1]);
                break;
        case DB_PUT_JOB_STATE: /* id, persist, state, qorder, due, runs, flow, started */
                sign_state(p, with[0].i, &with[1], &with[6], buf->mac[1]);
                with[n++] = text_value(buf->mac[1]);
                break;
        case DB_PUT_ENV: { /* id, vars, node */
                const char *f[] = {int_text(with[0].i, t[0]), with[1].text};

                sign(p, ENV, f, 2, buf->mac[0]);
                with[n++] = text_value(buf->mac[0]);
                break;
        }
        case DB_PUT_SETTING: { /* name, value, text, node */
                double value = with[1].type == DB_INT ? (double)with[1].i : with[1].d;
                const char *f[] = {with[3].text, with[0].text,
                                   with[1].type == DB_NULL ? NULL : real_text(&value, t[0]),
                                   with[2].type == DB_NULL ? NULL : with[2].text};

                sign(p, SETTING, f, 4, buf->mac[0]);
                with[n++] = text_value(buf->mac[0]);
                break;
        }
        case DB_SEND_MAIL: { /* to, to's epoch, session, kind, body, uid, from */
                const char *uid = with[5].type == DB_NULL ? NULL : int_text(with[5].i, t[2]);
                const char *f[10];

                user = uid ? user_name(p, (uid_t)with[5].i) : NULL;
                f[0] = with[6].text;
                f[1] = int_text(p->epoch, buf->num[0]);
                f[2] = with[0].text;
                f[3] = int_text(with[1].i, t[0]);
                f[4] = int_text(with[2].i, t[1]);
                f[5] = int_text(++p->mail_sent, buf->num[1]);
                f[6] = with[3].text;
                f[7] = uid;
                f[8] = user;
                f[9] = with[4].text;
                sign(p, MAIL, f, 10, buf->mac[0]);
                with[n++] = text_value(buf->num[0]);
                with[n++] = text_value(buf->num[1]);
                with[n++] = text_value(user);
                with[n++] = text_value(buf->mac[0]);
                break;
        }
        case DB_SEND_MAIL_ALL: { /* kind, body, from */
                const char *f[] = {with[2].text, int_text(p->epoch, buf->num[0]),
                                   "*",          "0",
                                   "0",          int_text(++p->mail_sent, buf->num[1]),
                                   with[0].text, NULL,
                                   NULL,         with[1].text};

                sign(p, MAIL, f, 10, buf->mac[0]);
                with[n++] = text_value(buf->num[0]);
                with[n++] = text_value(buf->num[1]);
                with[n++] = text_value(buf->mac[0]);
                break;
        }
        default:
                break;
        }
        return n;
}

/* Whether the row so hashed is logged for the first time (and now counted as such). */
static bool first_time(struct pg_db *p, uint64_t hash)
{
        struct pg_rejected *r = p->rejected_rows;
        size_t i;

        if (!r && !(r = p->rejected_rows = calloc(1, sizeof(*r))))
                return true;
        hash |= 1; /* 0 is an empty slot */
        for (i = hash % REJECTED_LOGGED_MAX; r->seen[i]; i = (i + 1) % REJECTED_LOGGED_MAX)
                if (r->seen[i] == hash)
                        return false;
        if (r->n >= REJECTED_LOGGED_MAX / 2)
                return false;
        r->seen[i] = hash;
        r->n++;
        return true;
}

/* FNV-1a: which rows were logged, no secret. */
static uint64_t hash_of(uint64_t h, const char *s)
{
        for (; s && *s; s++)
                h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
        return (h ^ 0xff) * 0x100000001b3ULL;
}

void pg_reject(struct pg_db *p, enum pg_table table, const char *what, const char *mac)
{
        uint64_t h = hash_of(hash_of(0xcbf29ce484222325ULL, table_names[table]), what);
        bool first;

        pthread_mutex_lock(&p->reject_lock);
        first = first_time(p, hash_of(h, mac));
        if (first)
                p->rejected[table]++;
        pthread_mutex_unlock(&p->reject_lock);
        if (first)
                log_warning("%s: rejected %s of table %s: its MAC does not hold (not made with "
                            "this node's cluster key, or the row was changed, moved or "
                            "replayed); not acted on",
                            p->base.name, what, table_names[table]);
}

/* Logged once per row too, but a row that holds: its user is another here. */
static void refuse_user(struct pg_db *p, int64_t id, uid_t owner, const char *user)
{
        char what[128];
        uid_t here = 0;
        int r = user ? credentials_uid_of(user, &here) : -ENOENT;
        bool first;

        snprintf(what, sizeof(what), "user %s", user ? user : "");
        pthread_mutex_lock(&p->reject_lock);
        first = first_time(p, hash_of(hash_of(0x5eed, what), int_text(id, (char[24]){0})));
        pthread_mutex_unlock(&p->reject_lock);
        if (!first)
                return;
        if (!user)
                log_warning("%s: job %" PRId64 " of uid %u is not run here: the node that took "
                            "it knew no name for that uid",
                            p->base.name, id, (unsigned)owner);
        else if (r == 0)
                log_warning("%s: job %" PRId64 " is not run here: user %s is uid %u where it was "
                            "submitted but %u here",
                            p->base.name, id, user, (unsigned)owner, (unsigned)here);
        else
                log_warning("%s: job %" PRId64 " is not run here: user %s (uid %u where it was "
                            "submitted) is unknown here",
                            p->base.name, id, user, (unsigned)owner);
}

bool pg_job_trusted(struct pg_db *p, const PGresult *res, int first,
                    const struct store_job_row *row, const char *env_text, bool env_held)
{
        const char *user = col_text(res, first);
        char t[4][24], what[64];
        const char *job[] = {int_text(row->id, t[0]),
                             int_text(row->owner, t[1]),
                             user,
                             int_text(row->very_slow, t[2]),
                             row->payload,
                             col_text(res, 12),
                             row->key,
                             row->name};
        const char *state[] = {t[0], int_text(row->persist, t[3]), row->flow};
        uid_t here;

        snprintf(what, sizeof(what), "the row of job %" PRId64, row->id);
        if (!holds(p, JOB, job, 8, col_text(res, first + 1)) ||
            !holds(p, JOB_STATE, state, 3, col_text(res, first + 2))) {
                pg_reject(p, PG_JOBS, what, col_text(res, first + 1));
                return false;
        }
        if (job[5] && !env_held) {
                const char *f[] = {job[5], env_text};

                if (!env_text || !holds(p, ENV, f, 2, col_text(res, first + 3))) {
                        snprintf(what, sizeof(what), "the environment %s of job %" PRId64, job[5],
                                 row->id);
                        pg_reject(p, PG_ENVS, what, col_text(res, first + 3));
                        return false;
                }
        }
        if (!user || credentials_uid_of(user, &here) < 0 || here != row->owner) {
                refuse_user(p, row->id, row->owner, user);
                return false;
        }
        return true;
}

bool pg_setting_trusted(struct pg_db *p, const char *node, const char *name, const double *value,
                        const char *text, const char *mac)
{
        char buf[32], what[160];
        const char *f[] = {node, name, real_text(value, buf), text};

        if (holds(p, SETTING, f, 4, mac))
                return true;
        snprintf(what, sizeof(what), "the setting %s of node '%s'", name ? name : "", node);
        pg_reject(p, PG_SETTINGS, what, mac);
        return false;
}

void pg_shared_settings_trusted(struct pg_db *p, struct db_result *res)
{
        json_object *rows = res->text ? json_tokener_parse(res->text) : NULL;
        json_object *kept = json_object_new_array();
        size_t n = json_object_is_type(rows, json_type_array) ? json_object_array_length(rows) : 0;

        for (size_t i = 0; kept && i < n; i++) {
                json_object *row = json_object_array_get_idx(rows, i);
                json_object *value = json_object_array_get_idx(row, 1);
                double d = json_object_get_double(value);

                if (!pg_setting_trusted(p, "*",
                                        json_object_get_string(json_object_array_get_idx(row, 0)),
                                        value ? &d : NULL,
                                        json_object_get_string(json_object_array_get_idx(row, 2)),
                                        json_object_get_string(json_object_array_get_idx(row, 3))))
                        continue;
                json_object_array_del_idx(row, 2, 2);
                json_object_array_add(kept, json_object_get(row));
        }
        free(res->text);
        res->text = kept && rows
                        ? strdup(json_object_to_json_string_ext(kept, JSON_C_TO_STRING_PLAIN))
                        : NULL;
        json_object_put(kept);
        json_object_put(rows);
}

/* The last mail number seen from each node, in its latest epoch. */
struct pg_mail_seen {
        struct pg_mail_seen *next;
        int64_t epoch, n;
        char node[];
};

void pg_mail_seen_free(struct pg_mail_seen *last)
{
        while (last) {
                struct pg_mail_seen *next = last->next;

                free(last);
                last = next;
        }
}

/* Whether mail n of node from's epoch comes after all seen from it (and is now the last). */
static bool fresh(struct pg_mail_seen **last, const char *from, int64_t epoch, int64_t n)
{
        struct pg_mail_seen *s;

        for (s = *last; s && strcmp(s->node, from) != 0; s = s->next)
                ;
        if (s && (epoch < s->epoch || (epoch == s->epoch && n <= s->n)))
                return false;
        if (!s && (s = calloc(1, sizeof(*s) + strlen(from) + 1))) {
                strcpy(s->node, from);
                s->next = *last;
                *last = s;
        }
        if (s) {
                s->epoch = epoch;
                s->n = n;
        }
        return true;
}

/* Whether the user is the same here; else why not in *ret_why (a new string). 0, 1, or -ENOMEM. */
static int user_refused(const char *from, int64_t uid, const char *user, char **ret_why)
{
        uid_t here;
        int r;

        if (!user)
                r = asprintf(ret_why, "uid %" PRId64 " has no user name on node %s", uid, from);
        else if (credentials_uid_of(user, &here) < 0)
                r = asprintf(ret_why, "user %s (uid %" PRId64 " on node %s) is unknown here", user,
                             uid, from);
        else if ((int64_t)here != uid)
                r = asprintf(ret_why, "user %s is uid %" PRId64 " on node %s but %u here", user,
                             uid, from, (unsigned)here);
        else
                return 0;
        return r < 0 ? -ENOMEM : 1;
}

/* Columns: seq, from_node, session, kind, body, epoch, to_epoch, n, uid, user_name, mac. */
struct db_mail *pg_mail_trusted(struct pg_db *p, const PGresult *res, int i,
                                struct pg_mail_seen **last)
{
#define COL(c) (PQgetisnull(res, i, c) ? NULL : PQgetvalue(res, i, c))
#define VAL(c) PQgetvalue(res, i, c) /* NOT NULL: "" when it is */
        int64_t to_epoch = strtoll(PQgetvalue(res, i, 6), NULL, 10);
        const char *f[] = {
            VAL(1), VAL(5), to_epoch ? p->node : "*", VAL(6), VAL(2), VAL(7), VAL(3), COL(8),
            COL(9), VAL(4)};
        struct db_mail *m;
        char what[128];

        snprintf(what, sizeof(what), "mail %s from node %s (%s)", VAL(0), f[0], f[6]);
        if (!holds(p, MAIL, f, 10, COL(10)) ||
            !fresh(last, f[0], strtoll(f[1], NULL, 10), strtoll(f[5], NULL, 10))) {
                pg_reject(p, PG_MAIL, what, COL(10));
                return NULL;
        }
        if (to_epoch && to_epoch != p->epoch)
                return NULL; /* for an earlier start of this node: its sessions are over */
        m = calloc(1, sizeof(*m));
        if (!m)
                return NULL;
        m->seq = strtoll(VAL(0), NULL, 10);
        m->from = strdup(f[0]);
        m->session = strtoll(f[4], NULL, 10);
        m->kind = strdup(f[6]);
        m->body = strdup(f[9]);
        m->epoch = strtoll(f[1], NULL, 10);
        m->uid = f[7] ? strtoll(f[7], NULL, 10) : -1;
        if (!m->from || !m->kind || !m->body ||
            (f[7] && user_refused(f[0], m->uid, f[8], &m->refused) < 0)) {
                db_mail_free(m);
                return NULL;
        }
        return m;
#undef VAL
#undef COL
}

/* One UPDATE of a row being signed: 0, or -EIO. */
static int update(struct pg_db *p, const char *sql, int n, const char *const *values)
{
        PGresult *res = PQexecParams(p->conn, sql, n, NULL, values, NULL, NULL, 0);
        int r = PQresultStatus(res) == PGRES_COMMAND_OK ? 0 : pg_failed(p, res);

        PQclear(res);
        return r;
}

/* Each row of a query, signed by an UPDATE made of it. */
static int sign_rows(struct pg_db *p, const char *query,
                     int (*each)(struct pg_db *p, const PGresult *res, int i))
{
        PGresult *res = PQexec(p->conn, query);
        int r = PQresultStatus(res) == PGRES_TUPLES_OK ? 0 : pg_failed(p, res);

        for (int i = 0; r == 0 && i < PQntuples(res); i++)
                r = each(p, res, i);
        PQclear(res);
        return r;
}

static const char *cell(const PGresult *res, int i, int c)
{
        return PQgetisnull(res, i, c) ? NULL : PQgetvalue(res, i, c);
}

static int sign_job_row(struct pg_db *p, const PGresult *res, int i)
{
        const char *user = user_name(p, (uid_t)strtoll(cell(res, i, 1), NULL, 10));
        const char *job[] = {cell(res, i, 0), cell(res, i, 1), user,
                             cell(res, i, 2), cell(res, i, 3), cell(res, i, 4),
                             cell(res, i, 5), cell(res, i, 6)};
        const char *state[] = {cell(res, i, 0), cell(res, i, 7), cell(res, i, 8)};
        char mac[2][MAC_TEXT_LEN + 1];
        const char *values[] = {job[0], user, mac[0], mac[1]};

        sign(p, JOB, job, 8, mac[0]);
        sign(p, JOB_STATE, state, 3, mac[1]);
        return update(p, "UPDATE jobs SET user_name = $2, mac = $3, state_mac = $4 WHERE id = $1",
                      4, values);
}

static int sign_env_row(struct pg_db *p, const PGresult *res, int i)
{
        const char *f[] = {cell(res, i, 0), cell(res, i, 1)};
        char mac[MAC_TEXT_LEN + 1];
        const char *values[] = {f[0], mac};

        sign(p, ENV, f, 2, mac);
        return update(p, "UPDATE envs SET mac = $2 WHERE id = $1", 2, values);
}

static int sign_setting_row(struct pg_db *p, const PGresult *res, int i)
{
        double value = cell(res, i, 2) ? strtod(cell(res, i, 2), NULL) : 0;
        char buf[32], mac[MAC_TEXT_LEN + 1];
        const char *f[] = {cell(res, i, 0), cell(res, i, 1),
                           real_text(cell(res, i, 2) ? &value : NULL, buf), cell(res, i, 3)};
        const char *values[] = {f[0], f[1], mac};

        sign(p, SETTING, f, 4, mac);
        return update(p, "UPDATE settings SET mac = $3 WHERE node = $1 AND name = $2", 3, values);
}

int pg_sign_all(struct pg_db *p)
{
        int r = sign_rows(p,
                          "SELECT id, owner, very_slow, payload, env, key, name, persist, flow"
                          " FROM jobs",
                          sign_job_row);

        if (r == 0)
                r = sign_rows(p, "SELECT id, vars FROM envs", sign_env_row);
        if (r == 0)
                r = sign_rows(p, "SELECT node, name, value, text FROM settings", sign_setting_row);
        /* Mail of before is for sessions that are over. */
        return r == 0 ? pg_exec(p, "DELETE FROM mail") : r;
}

int64_t pg_rejected_rows(struct db *db, int table, const char **ret_name)
{
        struct pg_db *p = (struct pg_db *)db;
        int64_t n;

        if (table < 0 || table >= PG_TABLES)
                return -1;
        pthread_mutex_lock(&p->reject_lock);
        n = (int64_t)p->rejected[table];
        pthread_mutex_unlock(&p->reject_lock);
        *ret_name = table_names[table];
        return n;
}

void pg_sign_free(struct pg_db *p)
{
        for (unsigned i = 0; i < p->users.n; i++)
                free(p->users.kept[i].name);
        free(p->rejected_rows);
        mac_key_unref(p->key);
        pthread_mutex_destroy(&p->reject_lock);
}
