/* SPDX-License-Identifier: MIT */
/* NULL-terminated string vectors: argv and environments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/strv.h"

char **strv_dup(char *const *v)
{
        size_t n = 0, i;
        char **copy;

        if (!v)
                return NULL;
        while (v[n])
                n++;
        copy = calloc(n + 1, sizeof(*copy));
        for (i = 0; copy && i < n; i++)
                if (!(copy[i] = strdup(v[i])))
                        break;
        if (copy && i < n) {
                while (i-- > 0)
                        free(copy[i]);
                free(copy);
                return NULL;
        }
        return copy;
}

void strv_free(char **v)
{
        size_t i;

        for (i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

bool strv_equal(char *const *a, char *const *b)
{
        size_t i;

        for (i = 0; a[i] && b[i]; i++)
                if (strcmp(a[i], b[i]) != 0)
                        return false;
        return !a[i] && !b[i];
}

char *strv_join(char *const *v)
{
        size_t len = 0, i;
        char *s, *p;

        for (i = 0; v[i]; i++)
                len += strlen(v[i]) + 1;
        s = malloc(len + 1);
        if (!s)
                return NULL;
        p = s;
        for (i = 0; v[i]; i++)
                p += sprintf(p, "%s%s", i ? " " : "", v[i]);
        *p = '\0';
        return s;
}
