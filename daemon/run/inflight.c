/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "run/inflight.h"
#include "util/log.h"

#define INFLIGHT_SIZE (INFLIGHT_SLOTS * sizeof(struct inflight_run))

/* The slots naming a run, copied to runs. A slot the crash caught half written (-1) names no
 * job: nothing is known of it. */
static size_t runs_of(const struct inflight_run *slots, size_t nslots, struct inflight_run *runs)
{
        size_t n = 0;

        for (size_t i = 0; i < nslots; i++)
                if (slots[i].id > 0)
                        runs[n++] = slots[i];
        return n;
}

int inflight_open(struct inflight *f, const char *dir, struct inflight_run **ret_runs,
                  size_t *ret_n)
{
        struct inflight_run *runs = calloc(INFLIGHT_SLOTS, sizeof(*runs));
        char *path;
        void *map;

        *f = (struct inflight){.fd = -1};
        if (!runs || asprintf(&path, "%s/runs-inflight", dir) < 0) {
                free(runs);
                return -ENOMEM;
        }
        f->fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (f->fd < 0 || ftruncate(f->fd, INFLIGHT_SIZE) < 0) {
                int r = log_error_errno(-errno, "Cannot open %s: %m", path);

                free(path);
                free(runs);
                inflight_close(f);
                return r;
        }
        map = mmap(NULL, INFLIGHT_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, f->fd, 0);
        if (map == MAP_FAILED) {
                int r = log_error_errno(-errno, "Cannot map %s: %m", path);

                free(path);
                free(runs);
                inflight_close(f);
                return r;
        }
        free(path);
        f->slots = map;
        *ret_n = runs_of(f->slots, INFLIGHT_SLOTS, runs);
        memset(f->slots, 0, INFLIGHT_SIZE);
        *ret_runs = runs;
        return 0;
}

int inflight_read(int fd, struct inflight_run **ret_runs, size_t *ret_n)
{
        struct inflight_run *slots = calloc(INFLIGHT_SLOTS, sizeof(*slots));
        ssize_t got;

        if (!slots)
                return -ENOMEM;
        got = pread(fd, slots, INFLIGHT_SIZE, 0);
        if (got < 0) {
                free(slots);
                return -errno;
        }
        *ret_n = runs_of(slots, (size_t)got / sizeof(*slots), slots);
        *ret_runs = slots;
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

/* The slot is claimed with -1, filled, then published with the job's id. */
int inflight_enter(struct inflight *f, const struct inflight_run *run)
{
        for (int i = 0; i < INFLIGHT_SLOTS; i++) {
                int64_t free_slot = 0;

                if (!__atomic_compare_exchange_n(&f->slots[i].id, &free_slot, -1, false,
                                                 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
                        continue;
                f->slots[i].run = run->run;
                f->slots[i].pid = run->pid;
                f->slots[i].start = run->start;
                __atomic_store_n(&f->slots[i].id, run->id, __ATOMIC_RELEASE);
                return i;
        }
        return -1;
}

void inflight_leave(struct inflight *f, int slot)
{
        if (slot >= 0)
                __atomic_store_n(&f->slots[slot].id, 0, __ATOMIC_RELEASE);
}

int inflight_proc_stat(pid_t pid, uint64_t *ret_start, pid_t *ret_pgrp, char *ret_state)
{
        char path[64], text[1024], *p, state;
        unsigned long long start;
        int pgrp, fd;
        ssize_t n;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        n = read(fd, text, sizeof(text) - 1);
        close(fd);
        if (n <= 0)
                return n < 0 ? -errno : -ENOENT;
        text[n] = '\0';
        /* After the name, which may hold anything: state ppid pgrp ..., start time 20 later. */
        p = strrchr(text, ')');
        if (!p || sscanf(p + 2, "%c %*d %d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
                                "%*d %*d %*d %llu",
                         &state, &pgrp, &start) != 3)
                return -EBADMSG;
        if (ret_start)
                *ret_start = start;
        if (ret_pgrp)
                *ret_pgrp = pgrp;
        if (ret_state)
                *ret_state = state;
        return 0;
}
