/* SPDX-License-Identifier: MIT */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "store/envs.h"
#include "util/strv.h"

/* FNV-1a over eight bytes at a time, each string with its length. */
static uint64_t hash_vars(char *const *vars)
{
        uint64_t h = 1469598103934665603ull, w;
        size_t i, len, k;

        for (i = 0; vars[i]; i++) {
                len = strlen(vars[i]);
                h = (h ^ len) * 1099511628211ull;
                for (k = 0; k + 8 <= len; k += 8) {
                        memcpy(&w, vars[i] + k, sizeof(w));
                        h = (h ^ w) * 1099511628211ull;
                }
                for (; k < len; k++)
                        h = (h ^ (unsigned char)vars[i][k]) * 1099511628211ull;
        }
        return h;
}

struct env_block *envs_intern(struct envs *envs, char *const *vars)
{
        uint64_t h = hash_vars(vars);
        struct env_block **head = &envs->buckets[h % ENVS_BUCKETS], *b;

        for (b = *head; b; b = b->next)
                if (b->hash == h && strv_equal(b->vars, vars)) {
                        b->refs++;
                        return b;
                }
        b = calloc(1, sizeof(*b));
        if (!b)
                return NULL;
        b->vars = strv_dup(vars);
        if (!b->vars) {
                free(b);
                return NULL;
        }
        for (char *const *v = vars; *v; v++)
                b->bytes += strlen(*v) + 1;
        b->hash = h;
        b->refs = 1;
        b->next = *head;
        *head = b;
        return b;
}

struct env_block *envs_ref(struct env_block *block)
{
        block->refs++;
        return block;
}

void envs_unref(struct envs *envs, struct env_block *block)
{
        struct env_block **p;

        if (!block || --block->refs > 0)
                return;
        for (p = &envs->buckets[block->hash % ENVS_BUCKETS]; *p != block; p = &(*p)->next)
                ;
        *p = block->next;
        strv_free(block->vars);
        free(block);
}

json_object *envs_to_json(const struct env_block *block)
{
        json_object *vars = json_object_new_object();

        for (char **v = block->vars; *v; v++) {
                const char *eq = strchr(*v, '=');
                char *name = eq ? strndup(*v, (size_t)(eq - *v)) : NULL;

                if (name)
                        json_object_object_add(vars, name, json_object_new_string(eq + 1));
                free(name);
        }
        return vars;
}
