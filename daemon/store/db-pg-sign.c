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
 *             number for it, kind, the uid and name of the user it speaks for, body;
 *   runs      id, run, owner, spec (spec_mac: a retired job's spec, which restart runs again;
 *             the rest of a run's record only tells what happened).
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
#include "store/db-pg-sign.h"
#include "store/store.h"
#include "util/credentials.h"
#include "util/log.h"

#define REJECTED_LOGGED_MAX 65536 /* rows logged once each; past that, counted only */

static const char *const table_names[PG_TABLES] = {"mail", "jobs", "envs", "settings", "runs"};

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

/* The fields of each kind of row as texts (NULL for NULL), by name: the order each MAC takes
 * them in is said once, here. Numbers are written as PostgreSQL writes a bigint. */
struct job_fields {
        const char *id, *owner, *user, *class, *payload, *env, *key, *name;
};
struct state_fields {
        const char *id, *persist, *flow;
};
struct mail_fields {
        const char *from, *from_epoch, *to, *to_epoch, *session, *n, *kind, *uid, *user, *body;
};

static void job_mac(const struct pg_db *p, struct mac *m, const struct job_fields *j)
{
        const char *f[] = {j->id, j->owner, j->user, j->class, j->payload, j->env, j->key, j->name};

        begin(p, m, "slowwork job 1", f, 8);
}

static void state_mac(const struct pg_db *p, struct mac *m, const struct state_fields *st)
{
        const char *f[] = {st->id, st->persist, st->flow};

        begin(p, m, "slowwork job state 1", f, 3);
}

static void env_mac(const struct pg_db *p, struct mac *m, const char *id, const char *vars)
{
        const char *f[] = {id, vars};

        begin(p, m, "slowwork env 1", f, 2);
}

/* value: NULL for a setting kept as text. */
static void setting_mac(const struct pg_db *p, struct mac *m, const char *node, const char *name,
                        const double *value, const char *text)
{
        char buf[32];
        const char *f[] = {node, name, value ? buf : NULL, text};

        if (value)
                snprintf(buf, sizeof(buf), "%.17g", *value);
        begin(p, m, "slowwork setting 1", f, 4);
}

static void spec_mac(const struct pg_db *p, struct mac *m, const char *id, const char *run,
                     const char *owner, const char *spec)
{
        const char *f[] = {id, run, owner, spec};

        begin(p, m, "slowwork run spec 1", f, 4);
}

static void mail_mac(const struct pg_db *p, struct mac *m, const struct mail_fields *ml)
{
        const char *f[] = {ml->from, ml->from_epoch, ml->to,  ml->to_epoch, ml->session,
                           ml->n,    ml->kind,       ml->uid, ml->user,     ml->body};

        begin(p, m, "slowwork mail 1", f, 10);
}

/* A number as the text a MAC covers (the same as PostgreSQL writes a bigint). */
static const char *int_text(int64_t v, char buf[24])
{
        snprintf(buf, 24, "%" PRId64, v);
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

static struct db_value text_value(const char *text)
{
        return text ? (struct db_value){.type = DB_TEXT, .text = text}
                    : (struct db_value){.type = DB_NULL};
}

/* A value as the text a MAC covers: a number's in buf. */
static const char *value_or_null(const struct db_value *v, char buf[24])
{
        return v->type == DB_NULL ? NULL : v->type == DB_INT ? int_text(v->i, buf) : v->text;
}

/* The numbers a node gives its mail: its epoch now, and the next of its mail numbers. */
static void number_mail(struct pg_db *p, struct mail_fields *ml, struct pg_sign_buf *buf)
{
        ml->from_epoch = int_text(p->epoch, buf->num[0]);
        ml->n = int_text(++p->mail_sent, buf->num[1]);
}

int pg_sign_params(struct pg_db *p, enum db_stmt stmt, struct db_value *with, int n,
                   struct pg_sign_buf *buf)
{
        char t[6][24];
        struct mac m;

        switch (stmt) {
        case DB_PUT_JOB:
        case DB_CLAIM_JOB: { /* both begin with the whole row: id ... started */
                struct job_fields j = {int_text(with[0].i, t[0]),
                                       int_text(with[1].i, t[1]),
                                       user_name(p, (uid_t)with[1].i),
                                       int_text(with[2].i, t[2]),
                                       with[3].text,
                                       value_or_null(&with[4], t[3]),
                                       value_or_null(&with[5], t[5]),
                                       value_or_null(&with[6], t[5])};
                struct state_fields st = {t[0], int_text(with[7].i, t[4]),
                                          value_or_null(&with[12], t[5])};

                job_mac(p, &m, &j);
                mac_end(&m, buf->mac[0]);
                state_mac(p, &m, &st);
                mac_end(&m, buf->mac[1]);
                with[n++] = text_value(j.user);
                with[n++] = text_value(buf->mac[0]);
                with[n++] = text_value(buf->mac[1]);
                break;
        }
        case DB_PUT_JOB_STATE: { /* id, persist, state, qorder, due, runs, flow, started */
                struct state_fields st = {int_text(with[0].i, t[0]), int_text(with[1].i, t[1]),
                                          value_or_null(&with[6], t[5])};

                state_mac(p, &m, &st);
                mac_end(&m, buf->mac[1]);
                with[n++] = text_value(buf->mac[1]);
                break;
        }
        case DB_PUT_RUN_SPEC: /* id, run, owner, spec, node */
                spec_mac(p, &m, int_text(with[0].i, t[0]), int_text(with[1].i, t[1]),
                         int_text(with[2].i, t[2]), with[3].text);
                mac_end(&m, buf->mac[0]);
                with[n++] = text_value(buf->mac[0]);
                break;
        case DB_PUT_ENV: /* id, vars, node */
                env_mac(p, &m, int_text(with[0].i, t[0]), with[1].text);
                mac_end(&m, buf->mac[0]);
                with[n++] = text_value(buf->mac[0]);
                break;
        case DB_PUT_SETTING: { /* name, value, text, node */
                double value = with[1].type == DB_INT ? (double)with[1].i : with[1].d;

                setting_mac(p, &m, with[3].text, with[0].text,
                            with[1].type == DB_NULL ? NULL : &value, value_or_null(&with[2], t[5]));
                mac_end(&m, buf->mac[0]);
                with[n++] = text_value(buf->mac[0]);
                break;
        }
        case DB_SEND_MAIL: { /* to, to's epoch, session, kind, body, uid, from */
                struct mail_fields ml = {.from = with[6].text,
                                         .to = with[0].text,
                                         .to_epoch = int_text(with[1].i, t[0]),
                                         .session = int_text(with[2].i, t[1]),
                                         .kind = with[3].text,
                                         .uid = value_or_null(&with[5], t[2]),
                                         .body = with[4].text};

                ml.user = ml.uid ? user_name(p, (uid_t)with[5].i) : NULL;
                number_mail(p, &ml, buf);
                mail_mac(p, &m, &ml);
                mac_end(&m, buf->mac[0]);
                with[n++] = text_value(ml.from_epoch);
                with[n++] = text_value(ml.n);
                with[n++] = text_value(ml.user);
                with[n++] = text_value(buf->mac[0]);
                break;
        }
        case DB_SEND_MAIL_ALL: { /* kind, body, from: to every node, bound to no epoch */
                struct mail_fields ml = {.from = with[2].text,
                                         .to = "*",
                                         .to_epoch = "0",
                                         .session = "0",
                                         .kind = with[0].text,
                                         .body = with[1].text};

                number_mail(p, &ml, buf);
                mail_mac(p, &m, &ml);
                mac_end(&m, buf->mac[0]);
                with[n++] = text_value(ml.from_epoch);
                with[n++] = text_value(ml.n);
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

/* A row that does not hold: logged once (what: "row 12"), counted. */
static void pg_reject(struct pg_db *p, enum pg_table table, const char *what, const char *mac)
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

/* Whether the user a row names (uid on node from, by the name user) is another here: then why
 * in *ret_why (a new string). 0, 1, or -ENOMEM. */
static int user_differs(const char *from, int64_t uid, const char *user, char **ret_why)
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

/* A job whose row holds but whose user is another here: logged once per job and reason. */
static void refuse_user(struct pg_db *p, int64_t id, const char *why)
{
        char text[24];
        bool first;

        pthread_mutex_lock(&p->reject_lock);
        first = first_time(p, hash_of(hash_of(0x5eed, why), int_text(id, text)));
        pthread_mutex_unlock(&p->reject_lock);
        if (first)
                log_warning("%s: job %" PRId64 " is not run here: %s", p->base.name, id,
                            why ? why : "out of memory");
}

bool pg_job_trusted(struct pg_db *p, const struct store_job_row *row,
                    const struct pg_job_signs *signs, bool env_held)
{
        char t[4][24], what[64], *why = NULL;
        struct job_fields j = {int_text(row->id, t[0]),
                               int_text(row->owner, t[1]),
                               signs->user,
                               int_text(row->very_slow, t[2]),
                               row->payload,
                               signs->env,
                               row->key,
                               row->name};
        struct state_fields st = {t[0], int_text(row->persist, t[3]), row->flow};
        struct mac m;
        bool ok;
        int r;

        job_mac(p, &m, &j);
        ok = mac_matches(&m, signs->mac);
        state_mac(p, &m, &st);
        if (!(mac_matches(&m, signs->state_mac) && ok)) {
                snprintf(what, sizeof(what), "the row of job %" PRId64, row->id);
                pg_reject(p, PG_JOBS, what, signs->mac);
                return false;
        }
        if (j.env && !env_held) {
                env_mac(p, &m, j.env, signs->env_vars);
                if (!signs->env_vars || !mac_matches(&m, signs->env_mac)) {
                        snprintf(what, sizeof(what), "the environment %s of job %" PRId64, j.env,
                                 row->id);
                        pg_reject(p, PG_ENVS, what, signs->env_mac);
                        return false;
                }
        }
        r = user_differs(row->node ? row->node : p->node, row->owner, signs->user, &why);
        if (r != 0)
                refuse_user(p, row->id, why);
        free(why);
        return r == 0;
}

bool pg_spec_trusted(struct pg_db *p, int64_t id, int64_t run, int64_t owner, const char *spec,
                     const char *mac)
{
        char t[3][24], what[96];
        struct mac m;

        spec_mac(p, &m, int_text(id, t[0]), int_text(run, t[1]), int_text(owner, t[2]), spec);
        if (mac_matches(&m, mac))
                return true;
        snprintf(what, sizeof(what), "the spec of job %" PRId64 "'s run %" PRId64, id, run);
        pg_reject(p, PG_RUNS, what, mac);
        return false;
}

bool pg_setting_trusted(struct pg_db *p, const char *node, const char *name, const double *value,
                        const char *text, const char *mac)
{
        char what[160];
        struct mac m;

        setting_mac(p, &m, node, name, value, text);
        if (mac_matches(&m, mac))
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

/* Columns: seq, from_node, session, kind, body, epoch, to_epoch, n, uid, user_name, mac. */
struct db_mail *pg_mail_trusted(struct pg_db *p, const PGresult *res, int i,
                                struct pg_mail_seen **last)
{
#define COL(c) (PQgetisnull(res, i, c) ? NULL : PQgetvalue(res, i, c))
#define VAL(c) PQgetvalue(res, i, c) /* NOT NULL: "" when it is */
        int64_t to_epoch = strtoll(VAL(6), NULL, 10);
        struct mail_fields ml = {
            VAL(1), VAL(5), to_epoch ? p->node : "*", VAL(6), VAL(2), VAL(7), VAL(3), COL(8),
            COL(9), VAL(4)};
        struct db_mail *m;
        char what[128];
        struct mac mac;

        mail_mac(p, &mac, &ml);
        if (!mac_matches(&mac, COL(10)) ||
            !fresh(last, ml.from, strtoll(ml.from_epoch, NULL, 10), strtoll(ml.n, NULL, 10))) {
                snprintf(what, sizeof(what), "mail %s from node %s (%s)", VAL(0), ml.from, ml.kind);
                pg_reject(p, PG_MAIL, what, COL(10));
                return NULL;
        }
        if (to_epoch && to_epoch != p->epoch)
                return NULL; /* for an earlier start of this node: its sessions are over */
        m = calloc(1, sizeof(*m));
        if (!m)
                return NULL;
        m->seq = strtoll(VAL(0), NULL, 10);
        m->from = strdup(ml.from);
        m->session = strtoll(ml.session, NULL, 10);
        m->kind = strdup(ml.kind);
        m->body = strdup(ml.body);
        m->epoch = strtoll(ml.from_epoch, NULL, 10);
        m->uid = ml.uid ? strtoll(ml.uid, NULL, 10) : -1;
        if (!m->from || !m->kind || !m->body ||
            (ml.uid && user_differs(ml.from, m->uid, ml.user, &m->refused) < 0)) {
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
        struct job_fields j = {cell(res, i, 0),
                               cell(res, i, 1),
                               user_name(p, (uid_t)strtoll(cell(res, i, 1), NULL, 10)),
                               cell(res, i, 2),
                               cell(res, i, 3),
                               cell(res, i, 4),
                               cell(res, i, 5),
                               cell(res, i, 6)};
        struct state_fields st = {j.id, cell(res, i, 7), cell(res, i, 8)};
        char macs[2][MAC_TEXT_LEN + 1];
        const char *values[] = {j.id, j.user, macs[0], macs[1]};
        struct mac m;

        job_mac(p, &m, &j);
        mac_end(&m, macs[0]);
        state_mac(p, &m, &st);
        mac_end(&m, macs[1]);
        return update(p, "UPDATE jobs SET user_name = $2, mac = $3, state_mac = $4 WHERE id = $1",
                      4, values);
}

static int sign_env_row(struct pg_db *p, const PGresult *res, int i)
{
        char mac[MAC_TEXT_LEN + 1];
        const char *values[] = {cell(res, i, 0), mac};
        struct mac m;

        env_mac(p, &m, cell(res, i, 0), cell(res, i, 1));
        mac_end(&m, mac);
        return update(p, "UPDATE envs SET mac = $2 WHERE id = $1", 2, values);
}

static int sign_setting_row(struct pg_db *p, const PGresult *res, int i)
{
        double value = cell(res, i, 2) ? strtod(cell(res, i, 2), NULL) : 0;
        char mac[MAC_TEXT_LEN + 1];
        const char *values[] = {cell(res, i, 0), cell(res, i, 1), mac};
        struct mac m;

        setting_mac(p, &m, values[0], values[1], cell(res, i, 2) ? &value : NULL, cell(res, i, 3));
        mac_end(&m, mac);
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
