/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "jobs/inflight.h"
#include "util/log.h"

#define INFLIGHT_SIZE (INFLIGHT_SLOTS * sizeof(int64_t))

int inflight_open(struct inflight *f, const char *dir, int64_t **ret_ids, size_t *ret_n)
{
        int64_t *ids = calloc(INFLIGHT_SLOTS, sizeof(*ids));
        size_t i, n = 0;
        char *path;
        void *map;

        *f = (struct inflight){.fd = -1};
        if (!ids || asprintf(&path, "%s/plugins-running", dir) < 0) {
                free(ids);
                return -ENOMEM;
        }
        f->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (f->fd < 0 || ftruncate(f->fd, INFLIGHT_SIZE) < 0) {
                int r = log_error_errno(-errno, "Cannot open %s: %m", path);

                free(path);
                free(ids);
                inflight_close(f);
                return r;
        }
        map = mmap(NULL, INFLIGHT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
        if (map == MAP_FAILED) {
                int r = log_error_errno(-errno, "Cannot map %s: %m", path);

                free(path);
                free(ids);
                inflight_close(f);
                return r;
        }
        free(path);
        f->slots = map;
        for (i = 0; i < INFLIGHT_SLOTS; i++)
                if (f->slots[i] > 0) {
                        ids[n++] = f->slots[i];
                        f->slots[i] = 0;
                }
        *ret_ids = ids;
        *ret_n = n;
        return 0;
}

void inflight_close(struct inflight *f)
{
        if (f->slots)
                munmap(f->slots, INFLIGHT_SIZE);
        if (f->fd >= 0)
                close(f->fd);
        *f = (struct inflight){.fd = -1};
}

int inflight_enter(struct inflight *f, int64_t id)
{
        for (int i = 0; i < INFLIGHT_SLOTS; i++) {
                int64_t free_slot = 0;

                if (__atomic_compare_exchange_n(&f->slots[i], &free_slot, id, false,
                                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
                        return i;
        }
        return -1;
}

void inflight_leave(struct inflight *f, int slot)
{
        if (slot >= 0)
                __atomic_store_n(&f->slots[slot], 0, __ATOMIC_RELAXED);
}
