/* SPDX-License-Identifier: MIT */
#ifndef SLOWWORKD_STRV_H
#define SLOWWORKD_STRV_H

#include <stdbool.h>

char **strv_dup(char *const *v); /* NULL for NULL, or when out of memory */
void strv_free(char **v);
bool strv_equal(char *const *a, char *const *b);
char *strv_join(char *const *v); /* the strings, separated by spaces */

#endif
