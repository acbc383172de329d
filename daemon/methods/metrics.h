/* SPDX-License-Identifier: MIT */
/* The metrics in the Prometheus text exposition format (0.0.4): the metrics method's text, and
 * the metrics file's. */
#ifndef SLOWWORKD_METHODS_METRICS_H
#define SLOWWORKD_METHODS_METRICS_H

struct clients;
struct daemon;

/* The text (malloc'd), or NULL when out of memory. */
char *metrics_text(struct daemon *d, const struct clients *clients);

#endif
