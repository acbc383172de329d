/* SPDX-License-Identifier: MIT */
/*
 * A shell run handed over to the daemon's next program (reexec): the old program's runner stops
 * watching it, leaving its processes, their pipe, its log file and its cgroup as they are, and
 * the new program's runner takes it up where it was. What passes between them is text (JSON) in
 * a file descriptor kept across the exec, as are the run's pipe and log.
 */
#ifndef SLOWWORKD_HANDOVER_H
#define SLOWWORKD_HANDOVER_H

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct run_handover {
        struct run_handover *next;
        int64_t id, run;
        pid_t pid;          /* its first process, and its process group */
        int out_fd;         /* the read end of its output's pipe */
        int log_fd;         /* its log file, -1 when nothing was written yet */
        bool cgroup;        /* it has its cgroup, run-ID.RUN */
        double deadline;    /* CLOCK_MONOTONIC seconds (the clock outlives the exec); 0: none */
        double started;     /* Unix seconds */
        int64_t logged;     /* output written into the log */
        int64_t log_size;   /* the log file's size */
        bool cut;           /* the log was cut */
        bool suspended;     /* its processes are stopped; since when, and the time before */
        double since, total;
};

void run_handover_free(struct run_handover *h);
/* The list as text: {"runs":[...]}; NULL when out of memory. */
json_object *run_handover_to_json(const struct run_handover *list);
/* The list back from that text (the caller frees each); -EINVAL for text that is not one. */
int run_handover_from_json(json_object *o, struct run_handover **ret_list);
/* Makes the run's descriptors outlive an exec (clears FD_CLOEXEC). 0, or -errno. */
int run_handover_keep_fds(const struct run_handover *h);
/* The run of job id, number run, in the list; NULL: none. */
struct run_handover *run_handover_find(struct run_handover *list, int64_t id, int64_t run);

#endif
