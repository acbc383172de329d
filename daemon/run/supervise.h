/* SPDX-License-Identifier: MIT */
/*
 * The supervisor's own side (see supervisor.h for the daemon's): what slowworkd does when the
 * daemon starts it again as its supervisor, `slowworkd --supervise CGROUP REPORT` with the
 * descriptors below. CGROUP is the runs' cgroup subtree ("": none), REPORT the file where it says
 * which runs it stopped.
 */
#ifndef SLOWWORKD_SUPERVISE_H
#define SLOWWORKD_SUPERVISE_H

#define SUPERVISE_FLAG "--supervise"

/* The descriptors it is given, in this order from SPAWN_HELPER_FD on. */
enum {
        SUPERVISE_FD_DAEMON,   /* the read end of the daemon's pipe: its deadlines, then EOF */
        SUPERVISE_FD_LIFE,     /* the write end of the node's life pipe, held until the end */
        SUPERVISE_FD_INFLIGHT, /* DIR/runs-inflight, flock()ed */
        SUPERVISE_FDS
};

/* Runs the supervisor until the daemon is gone and what its runs left is stopped; exits. */
int supervise_main(int argc, char **argv) __attribute__((noreturn));

#endif
