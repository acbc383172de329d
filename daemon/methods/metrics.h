/* SPDX-License-Identifier: MIT */
/* The metrics in the Prometheus text exposition format (0.0.4): the metrics method's text, and
 * the metrics file's. */
#ifndef SLOWWORKD_METHODS_METRICS_H
#define SLOWWORKD_METHODS_METRICS_H

#include <stdbool.h>

struct clients;
struct daemon;

/* The text (malloc'd), or NULL when out of memory; with the daemon's process_* series when
 * process (the metrics method's, not the metrics file's: node_exporter, which reads the file, has
 * its own and refuses the file for the duplicates). */
char *metrics_text(struct daemon *d, const struct clients *clients, bool process);

#endif
