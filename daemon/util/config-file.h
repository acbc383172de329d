/* SPDX-License-Identifier: MIT */
/* The configuration file: "key = value" lines naming the settings and the groups. */
#ifndef SLOWWORKD_CONFIG_FILE_H
#define SLOWWORKD_CONFIG_FILE_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include <json-c/json.h>

#include "methods.h"

#define CONFIG_FILE_DEFAULT         "/etc/slowwork/slowworkd.conf"
#define CONFIG_STORE_SCHEMA_DEFAULT "slowwork"
#define CONFIG_SCHEMA_NAME_MAX      63
#define CONFIG_NODE_NAME_MAX        63
#define CONFIG_LEASE_RENEW_DEFAULT  2.0
#define CONFIG_LEASE_TIME_DEFAULT   10.0

/* The settings in the order of sw_settings_params, then the two groups, the store and the node. */
enum {
        CONFIG_SETTINGS = SW_SETTINGS_COUNT,
        CONFIG_ADMIN_GROUP = CONFIG_SETTINGS,
        CONFIG_SOCKET_GROUP,
        CONFIG_STORE,
        CONFIG_STORE_SCHEMA,
        CONFIG_NODE_NAME,
        CONFIG_LEASE_RENEW,
        CONFIG_LEASE_TIME,
        CONFIG_CLUSTER_KEY_FILE,
        CONFIG_KEYS,
};

struct config_file {
        struct sw_settings settings; /* what the caller put there, with the file's values over it */
        gid_t admin_gid, socket_gid; /* (gid_t)-1 when the file names none */
        /* The job database (a libpq connection string; NULL: SQLite in the state folder) and its
         * schema; read at start only. NULL when unset. */
        char *store, *store_schema;
        /* This daemon's name among the nodes of one job database (NULL: unset), and its lease:
         * renewed every lease_renew seconds, valid for lease_time (0: unset). Start only. */
        char *node_name;
        double lease_renew, lease_time;
        /* The file of the key that the nodes sign their rows with (NULL: unset); start only. */
        char *cluster_key_file;
        unsigned line[CONFIG_KEYS]; /* where each key was set; 0: not in the file */
        /* The "queue.NAME.SETTING = value" lines, as {"NAME": {"SETTING": value}}; NULL: none. */
        json_object *queues;
        json_object *queue_lines; /* {"NAME": the last line of the queue}; NULL: none */
};

/* Whether name may be the store's schema: a plain identifier of PostgreSQL, [a-z_][a-z0-9_]*,
 * at most CONFIG_SCHEMA_NAME_MAX characters. 0, or -EINVAL with err saying why. */
int config_check_schema(const char *name, char *err, size_t errlen);

/* Whether name may name a node: 1 to CONFIG_NODE_NAME_MAX of [A-Za-z0-9._-]. 0, or -EINVAL
 * with err saying why. */
int config_check_node_name(const char *name, char *err, size_t errlen);
/* A lease's seconds (key names it in err): a number from 0.05 to 3600. */
int config_parse_lease(const char *key, const char *text, double *ret, char *err, size_t errlen);

/* Frees what the file's lines made (cf itself is the caller's). */
void config_file_clear(struct config_file *cf);

/* Sets one setting from its text, checked by the sw_settings_params table: 0, or -EINVAL
 * (or -ENOMEM) with err saying why. "runtime" is a request flag, not a setting. */
int config_parse_setting(struct sw_settings *s, const char *name, const char *value, char *err,
                         size_t errlen);

/* The line of the file that set key, or 0. */
unsigned config_file_line(const struct config_file *cf, const char *key);
/* The last line of the file that set a setting of the queue name, or 0. */
unsigned config_file_queue_line(const struct config_file *cf, const char *name);

/* Told each problem ("PATH:LINE: what is wrong") by a check of the whole file. */
typedef void config_tell_fn(const char *problem);

/* Reads f, called path in errors, into cf (whose settings the caller fills first, and whose queues
 * are NULL or the caller's to clear): 0, or -EINVAL with err "PATH:LINE: what is wrong", or
 * another -errno. cf changes only on success. With tell (slowworkd --check-config), every bad
 * line is told and the reading goes on to the end; err is then "" when the lines were told. */
int config_file_parse(FILE *f, const char *path, struct config_file *cf, config_tell_fn *tell,
                      char *err, size_t errlen);
/* The same from the file at path. A file that does not exist is no error when missing_ok. */
int config_file_read(const char *path, bool missing_ok, struct config_file *cf,
                     config_tell_fn *tell, char *err, size_t errlen);

#endif
