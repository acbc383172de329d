/* SPDX-License-Identifier: MIT */
/*
 * The configuration file. Values go through the same parameter table as settings.set and the
 * command-line flags, so one table says what is valid. Parsing touches nothing but its output,
 * so a reload that fails leaves the running configuration as it was.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "util/config-file.h"
#include "util/credentials.h"

/* The keys after the settings, in the order of their CONFIG_ numbers. */
static const char *const other_keys[] = {"admin-group", "socket-group", "store", "store-schema",
                                         "node-name",   "lease-renew",  "lease-time",
                                         "cluster-key-file"};

static int setting_index(const char *name)
{
        int i;

        for (i = 0; i < SW_SETTINGS_COUNT; i++)
                if (strcmp(sw_settings_params[i].name, name) == 0)
                        return i;
        return -1;
}

static int key_index(const char *key)
{
        int i = setting_index(key);

        if (i >= 0)
                return i;
        for (i = 0; i < CONFIG_KEYS - CONFIG_SETTINGS; i++)
                if (strcmp(other_keys[i], key) == 0)
                        return CONFIG_SETTINGS + i;
        return -1;
}

unsigned config_file_line(const struct config_file *cf, const char *key)
{
        int k = key_index(key);

        return k < 0 ? 0 : cf->line[k];
}

unsigned config_file_queue_line(const struct config_file *cf, const char *name)
{
        json_object *line = cf->queue_lines ? json_object_object_get(cf->queue_lines, name) : NULL;

        return line ? (unsigned)json_object_get_int(line) : 0;
}

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
        va_list ap;

        if (err && errlen > 0) {
                va_start(ap, fmt);
                vsnprintf(err, errlen, fmt, ap);
                va_end(ap);
        }
        return r;
}

/* A value's text as JSON: a path or a command as it is, yes or no (true, false) as a boolean,
 * anything else as a number. 0, or -EINVAL or -ENOMEM with err saying why. */
static int value_json(const struct sw_param *p, const char *value, json_object **ret, char *err,
                      size_t errlen)
{
        json_tokener *tok;
        json_object *v;

        if (sw_ptype_in_place(p->type)) {
                *ret = json_object_new_string(value);
                return *ret ? 0 : fail(err, errlen, -ENOMEM, "out of memory");
        }
        if (p->type == SW_P_BOOL) {
                bool yes = strcmp(value, "yes") == 0 || strcmp(value, "true") == 0,
                     no = strcmp(value, "no") == 0 || strcmp(value, "false") == 0;

                if (!yes && !no)
                        return fail(err, errlen, -EINVAL, "%s must be yes or no, not \"%s\"",
                                    p->name, value);
                *ret = json_object_new_boolean(yes);
                return *ret ? 0 : fail(err, errlen, -ENOMEM, "out of memory");
        }
        tok = json_tokener_new();
        if (!tok)
                return fail(err, errlen, -ENOMEM, "out of memory");
        /* With its NUL, so that the number ends; "5 threads" parses as 5 and stops there, so
         * only a value that is all number counts. */
        v = json_tokener_parse_ex(tok, value, (int)strlen(value) + 1);
        if (v && (json_tokener_get_error(tok) != json_tokener_success ||
                  json_tokener_get_parse_end(tok) != strlen(value))) {
                json_object_put(v);
                v = NULL;
        }
        json_tokener_free(tok);
        if (!v ||
            !(json_object_is_type(v, json_type_int) || json_object_is_type(v, json_type_double))) {
                json_object_put(v);
                return fail(err, errlen, -EINVAL, "%s must be a number, not \"%s\"", p->name,
                            value);
        }
        *ret = v;
        return 0;
}

int config_parse_setting(struct sw_settings *s, const char *name, const char *value, char *err,
                         size_t errlen)
{
        int i = setting_index(name);
        json_object *obj, *v;
        int r;

        if (i < 0)
                return fail(err, errlen, -EINVAL, "unknown setting \"%s\"", name);
        r = value_json(&sw_settings_params[i], value, &v, err, errlen);
        if (r < 0)
                return r;
        obj = json_object_new_object();
        if (!obj || json_object_object_add(obj, name, v) < 0) {
                json_object_put(obj);
                json_object_put(v);
                return fail(err, errlen, -ENOMEM, "out of memory");
        }
        r = sw_params_parse(obj, sw_settings_params, s, err, errlen);
        json_object_put(obj);
        if (r == -ENOMEM)
                return r;
        return r ? -EINVAL : 0;
}

int config_check_schema(const char *name, char *err, size_t errlen)
{
        size_t len = strlen(name);
        const char *c;
        bool plain = len > 0 && len <= CONFIG_SCHEMA_NAME_MAX && !isdigit((unsigned char)*name);

        for (c = name; plain && *c; c++)
                plain = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '_';
        if (!plain)
                return fail(err, errlen, -EINVAL,
                            "store-schema \"%s\" is not a plain identifier (a lowercase letter or "
                            "_, then lowercase letters, digits or _; at most %d characters)",
                            name, CONFIG_SCHEMA_NAME_MAX);
        return 0;
}

int config_check_node_name(const char *name, char *err, size_t errlen)
{
        size_t len = strlen(name);
        bool plain = len > 0 && len <= CONFIG_NODE_NAME_MAX;

        for (const char *c = name; plain && *c; c++)
                plain = isalnum((unsigned char)*c) || *c == '.' || *c == '_' || *c == '-';
        if (!plain)
                return fail(err, errlen, -EINVAL,
                            "node-name \"%s\" must be 1 to %d letters, digits, '.', '_' or '-'",
                            name, CONFIG_NODE_NAME_MAX);
        return 0;
}

int config_parse_lease(const char *key, const char *text, double *ret, char *err, size_t errlen)
{
        char *end;
        double v;

        errno = 0;
        v = strtod(text, &end);
        if (errno || end == text || *end || !(v >= 0.05 && v <= 3600))
                return fail(err, errlen, -EINVAL, "%s must be a number of seconds from 0.05 to 3600, not \"%s\"",
                            key, text);
        *ret = v;
        return 0;
}

static char *trim(char *s)
{
        char *end;

        while (isspace((unsigned char)*s))
                s++;
        end = s + strlen(s);
        while (end > s && isspace((unsigned char)end[-1]))
                end--;
        *end = '\0';
        return s;
}

/* "queue.NAME.SETTING = value" into next's queues, checked by the queue settings' table. */
static int parse_queue_line(const char *key, const char *value, unsigned lineno,
                            struct config_file *next, char *msg, size_t msglen)
{
        const char *name = key + strlen("queue."), *dot = strrchr(name, '.');
        char qname[SW_QUEUE_NAME_MAX + 1];
        struct sw_queue_settings scratch = {0};
        const struct sw_param *row;
        json_object *q, *v, *one;
        int r;

        if (!dot || dot == name || (size_t)(dot - name) > SW_QUEUE_NAME_MAX)
                return fail(msg, msglen, -EINVAL, "expected \"queue.NAME.SETTING\", not \"%s\"",
                            key);
        snprintf(qname, sizeof(qname), "%.*s", (int)(dot - name), name);
        if (sw_queue_name_check("queue", qname, msg, msglen))
                return -EINVAL;
        if (strcmp(qname, SW_QUEUE_DEFAULT) == 0)
                return fail(msg, msglen, -EINVAL,
                            "the default queue's settings are the daemon's: write %s = %s", dot + 1,
                            value);
        if ((!next->queues && !(next->queues = json_object_new_object())) ||
            (!next->queue_lines && !(next->queue_lines = json_object_new_object())))
                return fail(msg, msglen, -ENOMEM, "out of memory");
        q = json_object_object_get(next->queues, qname);
        if (q && json_object_object_get_ex(q, dot + 1, NULL))
                return fail(msg, msglen, -EINVAL, "%s is set twice", key);
        for (row = sw_queue_settings_params; row->name && strcmp(row->name, dot + 1) != 0; row++)
                ;
        if (!row->name)
                return fail(msg, msglen, -EINVAL, "%s: %s is not a setting of a queue", key,
                            dot + 1);
        r = value_json(row, value, &v, msg, msglen);
        if (r < 0)
                return r;
        one = json_object_new_object();
        json_object_object_add(one, dot + 1, json_object_get(v));
        r = sw_params_parse(one, sw_queue_settings_params, &scratch, msg, msglen);
        json_object_put(one);
        if (r) {
                json_object_put(v);
                return r == -ENOMEM ? r : -EINVAL;
        }
        if (!q) {
                q = json_object_new_object();
                json_object_object_add(next->queues, qname, q);
        }
        json_object_object_add(q, dot + 1, v);
        json_object_object_add(next->queue_lines, qname, json_object_new_int((int)lineno));
        return 0;
}

/* One "key = value" line into next; msg says what is wrong with it. */
static int parse_line(char *text, unsigned lineno, struct config_file *next, char *msg,
                      size_t msglen)
{
        char *eq, *key, *value, *hash = strchr(text, '#');
        int k, r;

        if (hash)
                *hash = '\0';
        text = trim(text);
        if (!*text)
                return 0;
        eq = strchr(text, '=');
        if (!eq)
                return fail(msg, msglen, -EINVAL, "expected \"key = value\", not \"%s\"", text);
        *eq = '\0';
        key = trim(text);
        value = trim(eq + 1);
        if (!*key)
                return fail(msg, msglen, -EINVAL, "no key before \"=\"");
        if (!*value)
                return fail(msg, msglen, -EINVAL, "no value for %s", key);
        if (strncmp(key, "queue.", strlen("queue.")) == 0)
                return parse_queue_line(key, value, lineno, next, msg, msglen);
        k = key_index(key);
        if (k < 0)
                return fail(msg, msglen, -EINVAL, "unknown key \"%s\"", key);
        if (next->line[k])
                return fail(msg, msglen, -EINVAL, "%s is already set on line %u", key,
                            next->line[k]);
        next->line[k] = lineno;
        if (k < CONFIG_SETTINGS)
                return config_parse_setting(&next->settings, key, value, msg, msglen);
        if (k == CONFIG_STORE_SCHEMA && (r = config_check_schema(value, msg, msglen)) < 0)
                return r;
        if (k == CONFIG_NODE_NAME && (r = config_check_node_name(value, msg, msglen)) < 0)
                return r;
        if (k == CONFIG_LEASE_RENEW || k == CONFIG_LEASE_TIME)
                return config_parse_lease(key, value,
                                          k == CONFIG_LEASE_RENEW ? &next->lease_renew
                                                                  : &next->lease_time,
                                          msg, msglen);
        if (k == CONFIG_STORE || k == CONFIG_STORE_SCHEMA || k == CONFIG_NODE_NAME ||
            k == CONFIG_CLUSTER_KEY_FILE) {
                char **to = k == CONFIG_STORE          ? &next->store
                            : k == CONFIG_STORE_SCHEMA ? &next->store_schema
                            : k == CONFIG_NODE_NAME    ? &next->node_name
                                                       : &next->cluster_key_file;

                *to = strdup(value);
                return *to ? 0 : fail(msg, msglen, -ENOMEM, "out of memory");
        }
        r = credentials_group_by_name(value, k == CONFIG_ADMIN_GROUP ? &next->admin_gid : &next->socket_gid);
        if (r == -ENOENT)
                return fail(msg, msglen, -EINVAL, "%s: no group \"%s\"", key, value);
        if (r < 0)
                return fail(msg, msglen, r, "%s: cannot look up group \"%s\": %s", key, value,
                            strerror(-r));
        return 0;
}

int config_file_parse(FILE *f, const char *path, struct config_file *cf, config_tell_fn *tell,
                      char *err, size_t errlen)
{
        struct config_file next = *cf;
        char *line = NULL, msg[256], problem[PATH_MAX + 300];
        unsigned lineno = 0, bad = 0;
        size_t size = 0;
        int r = 0;

        next.admin_gid = next.socket_gid = (gid_t)-1;
        next.queues = next.queue_lines = NULL;
        next.store = next.store_schema = next.node_name = next.cluster_key_file = NULL;
        next.lease_renew = next.lease_time = 0;
        memset(next.line, 0, sizeof(next.line));
        errno = 0;
        while (getline(&line, &size, f) >= 0) {
                lineno++;
                r = parse_line(line, lineno, &next, msg, sizeof(msg));
                if (r < 0 && tell && r != -ENOMEM) {
                        snprintf(problem, sizeof(problem), "%s:%u: %s", path, lineno, msg);
                        tell(problem);
                        bad++;
                        r = 0;
                } else if (r < 0) {
                        fail(err, errlen, r, "%s:%u: %s", path, lineno, msg);
                        break;
                }
        }
        if (r == 0 && ferror(f))
                r = fail(err, errlen, errno ? -errno : -EIO, "%s: cannot read: %s", path,
                         strerror(errno ? errno : EIO));
        if (r == 0 && bad) /* each told already */
                r = fail(err, errlen, -EINVAL, "%s", "");
        free(line);
        if (r < 0) {
                config_file_clear(&next);
                return r;
        }
        config_file_clear(cf);
        *cf = next;
        return 0;
}

void config_file_clear(struct config_file *cf)
{
        json_object_put(cf->queues);
        json_object_put(cf->queue_lines);
        cf->queues = cf->queue_lines = NULL;
        free(cf->store);
        free(cf->store_schema);
        free(cf->node_name);
        free(cf->cluster_key_file);
        cf->store = cf->store_schema = cf->node_name = cf->cluster_key_file = NULL;
}

int config_file_read(const char *path, bool missing_ok, struct config_file *cf,
                     config_tell_fn *tell, char *err, size_t errlen)
{
        FILE *f = fopen(path, "re");
        int r;

        if (!f) {
                r = -errno;
                if (r == -ENOENT && missing_ok) {
                        cf->admin_gid = cf->socket_gid = (gid_t)-1;
                        memset(cf->line, 0, sizeof(cf->line));
                        return 0;
                }
                return fail(err, errlen, r, "cannot open %s: %s", path, strerror(-r));
        }
        r = config_file_parse(f, path, cf, tell, err, errlen);
        fclose(f);
        return r;
}
