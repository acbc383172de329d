/* SPDX-License-Identifier: MIT */
/*
 * Environments, shared: clients send their whole environment with each job, and a queue of many
 * jobs from one shell would otherwise hold as many copies. Loop thread only.
 */
#ifndef SLOWWORKD_ENVS_H
#define SLOWWORKD_ENVS_H

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#define ENVS_BUCKETS 256

struct env_block {
        struct env_block *next;
        uint64_t hash;
        unsigned refs;
        char **vars;      /* NULL-terminated "KEY=VALUE" */
        int64_t store_id; /* its row in the state database, 0 before it has one */
        size_t bytes;     /* of its strings, which each job that has it counts (users.c) */
};

struct envs {
        struct env_block *buckets[ENVS_BUCKETS];
};

/* The shared copy of vars (a new reference), or NULL when out of memory. */
struct env_block *envs_intern(struct envs *envs, char *const *vars);
/* One more reference to block. */
struct env_block *envs_ref(struct env_block *block);
void envs_unref(struct envs *envs, struct env_block *block);
/* The block as a submit's "env" object ({"NAME":"value",...}; a new reference). */
json_object *envs_to_json(const struct env_block *block);

#endif
