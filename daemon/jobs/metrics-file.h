/* SPDX-License-Identifier: MIT */
/*
 * The metrics-file setting: the metrics text written to a file every metrics-interval seconds,
 * for node_exporter's textfile collector. Each write makes a temporary file beside it (opened
 * O_EXCL|O_NOFOLLOW, mode 0644) and renames it over the file, so a reader sees the old text or
 * the new, never part of one. Loop thread only.
 */
#ifndef SLOWWORKD_METRICS_FILE_H
#define SLOWWORKD_METRICS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <uv.h>

struct metrics_file {
        uv_timer_t timer;
        char *path;      /* NULL: off */
        double interval; /* seconds */
        int last_error;  /* of the last write: its failure is logged once */
        bool written;    /* path is a file of ours: removed when the writes stop */
        /* The text to write (malloc'd), or NULL when out of memory. */
        char *(*render)(void *data);
        void *data;
};

int metrics_file_init(struct metrics_file *f, uv_loop_t *loop);
/* Writes to path (""/NULL: stops) now and then every interval; the same path and interval as
 * before change nothing; the file written until then is removed once it is no longer the path.
 * 0 or -ENOMEM. */
int metrics_file_set(struct metrics_file *f, const char *path, double interval);
/* The daemon stops: no more writes, and the file stays for the next start. */
void metrics_file_stop(struct metrics_file *f);
void metrics_file_close(struct metrics_file *f);

#endif
