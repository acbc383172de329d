/* SPDX-License-Identifier: MIT */
/*
 * A state database's write-ahead log read as SQLite's recovery will read it, before it does: what
 * recovery keeps, and what it will throw away without a word. SQLite stops at the first frame
 * whose checksum fails (or that is not of the log's generation, by its salts) and drops the rest.
 * Frames after the last commit that never saw theirs are a transaction a crash cut, and no loss;
 * commit frames from the bad one on are committed transactions rolled back. Frames of the log's
 * generation after a bad one were written whole and damaged later, on disk.
 */
#ifndef SLOWWORKD_WAL_CHECK_H
#define SLOWWORKD_WAL_CHECK_H

#include <stdbool.h>
#include <stdint.h>

struct wal_report {
        int64_t bytes;        /* the file's size; 0: none */
        bool header_damaged;  /* SQLite ignores the whole file */
        int64_t frames_kept;  /* up to the last sound commit */
        int64_t bad_frame;    /* the first frame that fails (from 1), 0: none */
        int64_t frames_lost;  /* of the log's generation, from the bad frame on */
        int64_t commits_lost; /* of them, commit frames: transactions lost */
};

/* Reads the log at path: 0 (a missing file is an empty report), or -errno. */
int wal_check(const char *path, struct wal_report *ret);
/* Whether recovery will drop what was committed: a damaged header of a log with frames, or a
 * commit frame from the first bad frame on. */
bool wal_report_loses_commits(const struct wal_report *r);

#endif
