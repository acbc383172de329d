/* SPDX-License-Identifier: MIT */
/* A finished run, as the history and the state database keep it after its job is gone. */
#ifndef SLOWWORKD_RUN_RECORD_H
#define SLOWWORKD_RUN_RECORD_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct run_record {
        int64_t id;
        int64_t run;
        bool very_slow;
        uid_t owner;
        char *summary; /* the command, for people */
        double started, ended; /* Unix seconds; started 0 for a run that never started */
        const char *outcome;   /* succeeded, failed, killed, timed-out, cancelled,
                                * interrupted, dependency-failed */
        int exit_code;         /* when it exited */
        int signal;            /* when a signal ended it */
        char *log;             /* the run's log file */
        bool oom;              /* the OOM killer struck in the run's cgroup */
        double cpu_time;       /* seconds of CPU its processes used; < 0: not known */
        int64_t memory_peak;   /* bytes at most in memory at once; < 0: not known */
        int leftovers;         /* an interrupted run's processes that the next start killed
                                * before the job ran again; -1: they could not be stopped */
        int64_t attempt;       /* 1 for a job's first try, 2 for its first retry, ... */
        int64_t log_bytes;     /* the log file's size once the run ended; 0 when it has none */
        uint64_t saved_seq;    /* the state database write that holds it (loop) */
        const char *node;      /* the node it ran on (run_record_node()'s) */
        char *spec;            /* its job's spec once the job retired after it (its last run):
                                * submit's params as JSON, what restart runs again; else NULL */
        bool left;             /* loop: its job went to another node after it (a claim), so
                                * this node's record may not be the job's last */
};

/* A node's name as records hold it: one copy per name for the daemon's life, so that records
 * neither own nor free it. NULL when out of memory. */
const char *run_record_node(const char *name);

/* A copy, or NULL when out of memory. */
struct run_record *run_record_dup(const struct run_record *rec);
void run_record_free(struct run_record *rec);
/* A record from its row of a shared database as JSON (the runs table's columns; log_bytes 0),
 * or NULL when it is no such row or out of memory. */
struct run_record *run_record_from_row(json_object *row);
/* As the protocol shows it: wait's result, status's "last". */
json_object *run_record_to_json(const struct run_record *rec);

#endif
