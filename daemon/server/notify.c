/* SPDX-License-Identifier: MIT */
/*
 * The sd_notify protocol, sent by hand rather than with sd_notify(), which reads NOTIFY_SOCKET
 * from the environment at every call: the daemon takes the variable out of its environment at
 * start, because jobs run with it and must not be able to speak for the service.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/notify.h"
#include "slowwork.h"
#include "util/log.h"

#define STATUS_INTERVAL_MS 1000

static int set_address(struct notify *n, const char *where)
{
        size_t len = strlen(where);

        if (where[0] != '/' && where[0] != '@')
                return -EAFNOSUPPORT;
        if (len >= sizeof(n->addr.sun_path))
                return -ENAMETOOLONG;
        n->addr.sun_family = AF_UNIX;
        memcpy(n->addr.sun_path, where, len);
        if (where[0] == '@') {
                n->addr.sun_path[0] = '\0';
                n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len);
        } else
                n->addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + 1);
        return 0;
}

int notify_init(struct notify *n)
{
        const char *where = getenv("NOTIFY_SOCKET");
        uint64_t usec = 0;
        int r;

        n->fd = -1;
        /* Checks WATCHDOG_PID against our pid, and unsets both variables. */
        if (sd_watchdog_enabled(1, &usec) <= 0)
                usec = 0;
        if (!where)
                return 0;
        r = set_address(n, where);
        if (r < 0) {
                log_warning("NOTIFY_SOCKET=%s: %s; not notifying systemd", where, strerror(-r));
                unsetenv("NOTIFY_SOCKET");
                return 0;
        }
        unsetenv("NOTIFY_SOCKET");
        snprintf(n->where, sizeof(n->where), "%s", where);
        n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (n->fd < 0)
                return log_error_errno(-errno, "Failed to create the notify socket: %m");
        n->watchdog_usec = usec;
        return 0;
}

static void send_state(struct notify *n, const char *text)
{
        if (n->fd < 0)
                return;
        /* The manager reads its socket at once; a full queue is not worth blocking the loop. */
        if (sendto(n->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL,
                   (const struct sockaddr *)&n->addr, n->addr_len) < 0 &&
            !n->warned) {
                n->warned = true;
                log_warning("Failed to notify systemd: %m");
        }
}

static void format_status(struct notify *n, char *buf, size_t len)
{
        struct slow_work_stats st;

        n->stats(n->stats_data, &st);
        snprintf(buf, len, "STATUS=%u thread%s, %u running, %u slow and %u very slow queued",
                 st.threads, st.threads == 1 ? "" : "s", st.busy, st.queued_slow,
                 st.queued_very_slow);
}

static void on_status_timer(uv_timer_t *timer)
{
        struct notify *n = timer->data;
        char status[sizeof(n->status)];

        format_status(n, status, sizeof(status));
        if (strcmp(status, n->status) == 0)
                return;
        memcpy(n->status, status, sizeof(status));
        send_state(n, status);
}

static void on_watchdog_timer(uv_timer_t *timer)
{
        send_state(timer->data, "WATCHDOG=1");
}

static void start_timers(struct notify *n)
{
        n->timers = true;
        uv_timer_init(n->loop, &n->status_timer);
        uv_timer_init(n->loop, &n->watchdog_timer);
        n->status_timer.data = n->watchdog_timer.data = n;
        /* Neither keeps the loop alive: the daemon ends when its work does. */
        uv_unref((uv_handle_t *)&n->status_timer);
        uv_unref((uv_handle_t *)&n->watchdog_timer);
        uv_timer_start(&n->status_timer, on_status_timer, STATUS_INTERVAL_MS, STATUS_INTERVAL_MS);
        if (n->watchdog_usec > 0) {
                uint64_t ms = n->watchdog_usec / 2000;

                if (ms == 0)
                        ms = 1;
                uv_timer_start(&n->watchdog_timer, on_watchdog_timer, ms, ms);
        }
}

void notify_ready(struct notify *n)
{
        char text[sizeof(n->status) + 32];

        if (n->fd < 0)
                return;
        format_status(n, n->status, sizeof(n->status));
        snprintf(text, sizeof(text), "READY=1\n%s%s", n->status,
                 n->watchdog_usec > 0 ? "\nWATCHDOG=1" : "");
        send_state(n, text);
        if (!n->timers)
                start_timers(n);
}

void notify_reloading(struct notify *n)
{
        struct timespec ts;
        char text[64];

        clock_gettime(CLOCK_MONOTONIC, &ts);
        snprintf(text, sizeof(text), "RELOADING=1\nMONOTONIC_USEC=%llu",
                 (unsigned long long)ts.tv_sec * 1000000ULL +
                     (unsigned long long)ts.tv_nsec / 1000);
        send_state(n, text);
}

void notify_stopping(struct notify *n)
{
        if (n->timers)
                uv_timer_stop(&n->status_timer);
        send_state(n, "STOPPING=1\nSTATUS=Stopping: waiting for the running jobs");
}

void notify_hand_on(struct notify *n)
{
        char text[32];

        if (n->fd < 0)
                return;
        setenv("NOTIFY_SOCKET", n->where, 1);
        if (n->watchdog_usec == 0)
                return;
        snprintf(text, sizeof(text), "%llu", (unsigned long long)n->watchdog_usec);
        setenv("WATCHDOG_USEC", text, 1);
        snprintf(text, sizeof(text), "%ld", (long)getpid());
        setenv("WATCHDOG_PID", text, 1);
}

void notify_close(struct notify *n)
{
        if (n->timers) {
                n->timers = false;
                uv_close((uv_handle_t *)&n->status_timer, NULL);
                uv_close((uv_handle_t *)&n->watchdog_timer, NULL);
        }
        if (n->fd >= 0)
                close(n->fd);
        n->fd = -1;
}
