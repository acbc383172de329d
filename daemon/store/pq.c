/* SPDX-License-Identifier: MIT */
/*
 * libpq's functions resolved with dlsym, as systemd resolves the libraries it loads on demand
 * (dlopen_many_sym_or_warn): all of them or none, the library kept once they are.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>

#include "store/pq.h"

#define PQ_DEFINE(name) __typeof__(pq_##name) pq_##name;
PQ_FUNCTIONS(PQ_DEFINE)
#undef PQ_DEFINE

#define PQ_SYMBOL(name) {#name, (void **)&pq_##name},
static const struct {
        const char *name;
        void **fn;
} symbols[] = {PQ_FUNCTIONS(PQ_SYMBOL)};
#undef PQ_SYMBOL

#define NSYMBOLS (sizeof(symbols) / sizeof(symbols[0]))

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static bool loaded;

static void say_why(char *why, size_t size)
{
        const char *error = dlerror();

        snprintf(why, size, "%s", error ? error : "unknown error");
}

int pq_load(char *why, size_t size)
{
        void *dl, *found[NSYMBOLS];
        int r = 0;

        pthread_mutex_lock(&lock);
        if (loaded)
                goto out;
        dl = dlopen(PQ_LIBRARY, RTLD_NOW | RTLD_LOCAL);
        if (!dl) {
                say_why(why, size);
                r = -ELIBACC;
                goto out;
        }
        for (size_t i = 0; i < NSYMBOLS; i++) {
                found[i] = dlsym(dl, symbols[i].name);
                if (!found[i]) {
                        say_why(why, size);
                        dlclose(dl);
                        r = -ELIBBAD;
                        goto out;
                }
        }
        for (size_t i = 0; i < NSYMBOLS; i++)
                *symbols[i].fn = found[i];
        loaded = true;
out:
        pthread_mutex_unlock(&lock);
        return r;
}
