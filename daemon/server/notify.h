/* SPDX-License-Identifier: MIT */
/* Telling systemd how the service is (sd_notify): ready, status, watchdog, reloading, stopping. */
#ifndef SLOWWORKD_NOTIFY_H
#define SLOWWORKD_NOTIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <uv.h>

struct slow_work_stats;

struct notify {
        uv_loop_t *loop;
        /* What STATUS= tells of (the threads and jobs of every pool); set before notify_ready(). */
        void (*stats)(void *data, struct slow_work_stats *ret);
        void *stats_data;
        int fd; /* -1 without NOTIFY_SOCKET: every notify_* call is then a no-op */
        char where[sizeof(((struct sockaddr_un *)0)->sun_path)]; /* NOTIFY_SOCKET as it was */
        struct sockaddr_un addr;
        socklen_t addr_len;
        uint64_t watchdog_usec; /* 0: no watchdog */
        uv_timer_t status_timer, watchdog_timer;
        bool timers, warned;
        char status[160]; /* the last STATUS= sent */
};

/* Takes NOTIFY_SOCKET and WATCHDOG_USEC/WATCHDOG_PID out of the environment, so that jobs do not
 * inherit them. Call it before any thread starts. */
int notify_init(struct notify *n);
/* READY=1 with the status; the first call starts the status and watchdog timers. */
void notify_ready(struct notify *n);
void notify_reloading(struct notify *n);
/* STOPPING=1; the status stops following the pool, which is going away. */
void notify_stopping(struct notify *n);
void notify_close(struct notify *n);
/* Before a reexec: NOTIFY_SOCKET (and the watchdog's variables) back in the environment, for
 * the next program. */
void notify_hand_on(struct notify *n);

#endif
