/* SPDX-License-Identifier: MIT */
/*
 * Real slow work: the CRC-32 (as zlib and gzip compute it) of every regular file under a folder,
 * one log line per file ("CRC SIZE PATH"), then a total. Stops between blocks when the run is
 * cancelled or times out.
 *
 *   slowctl submit --plugin checksum --entry checksum_dir --arg '"/usr/share/doc"'
 *   slowctl submit --plugin checksum --entry checksum_dir --arg '{"dir": "/etc"}'
 *
 * Exit codes: 0 every file read, 1 some could not be read, 2 a bad arg, 4 stopped.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "slowwork-plugin.h"

SLOWWORK_PLUGIN_DEFINE_ABI;

struct walk {
        struct slowwork_plugin_ctx *ctx;
        unsigned long long files, bytes;
        unsigned errors;
        int stopped;
};

static unsigned int crc_table[256];

static void crc_init(void)
{
        for (unsigned int i = 0; i < 256; i++) {
                unsigned int c = i;

                for (int k = 0; k < 8; k++)
                        c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
                crc_table[i] = c;
        }
}

static unsigned int crc_update(unsigned int crc, const unsigned char *p, size_t n)
{
        crc = ~crc;
        while (n--)
                crc = crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
        return ~crc;
}

static void sum_file(struct walk *w, const char *path)
{
        static const size_t block = 65536;
        unsigned char *buf = malloc(block);
        unsigned long long size = 0;
        unsigned int crc = 0;
        ssize_t n = -1;
        int fd;

        fd = buf ? open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW) : -1;
        while (fd >= 0 && !(w->stopped = slowwork_stop_reason(w->ctx) != NULL) &&
               (n = read(fd, buf, block)) > 0) {
                crc = crc_update(crc, buf, (size_t)n);
                size += (unsigned long long)n;
        }
        if (fd < 0 || n < 0) {
                if (!w->stopped) {
                        slowwork_log(w->ctx, "cannot read %s: %s\n", path, strerror(errno));
                        w->errors++;
                }
        } else if (!w->stopped) {
                slowwork_log(w->ctx, "%08x %llu %s\n", crc, size, path);
                w->files++;
                w->bytes += size;
        }
        if (fd >= 0)
                close(fd);
        free(buf);
}

static void walk_dir(struct walk *w, const char *dir)
{
        struct dirent **names;
        int n = scandir(dir, &names, NULL, alphasort);

        if (n < 0) {
                slowwork_log(w->ctx, "cannot list %s: %s\n", dir, strerror(errno));
                w->errors++;
                return;
        }
        for (int i = 0; i < n; i++) {
                const char *name = names[i]->d_name;
                struct stat st;
                char *path;

                if (!w->stopped && strcmp(name, ".") != 0 && strcmp(name, "..") != 0 &&
                    asprintf(&path, "%s/%s", dir, name) >= 0) {
                        if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
                                walk_dir(w, path);
                        else if (lstat(path, &st) == 0 && S_ISREG(st.st_mode))
                                sum_file(w, path);
                        free(path);
                }
                free(names[i]);
        }
        free(names);
}

/* The folder arg names: a JSON string, or an object with "dir". */
static char *dir_of(const char *arg)
{
        json_object *o = json_tokener_parse(arg), *dir = o;
        char *copy = NULL;

        if (o && json_object_is_type(o, json_type_object))
                json_object_object_get_ex(o, "dir", &dir);
        if (dir && json_object_is_type(dir, json_type_string))
                copy = strdup(json_object_get_string(dir));
        json_object_put(o);
        return copy;
}

SLOWWORK_PLUGIN_ENTRY(checksum_dir)
{
        static pthread_once_t once = PTHREAD_ONCE_INIT;
        struct walk w = {.ctx = ctx};
        char *dir = dir_of(arg);

        if (!dir) {
                slowwork_log(ctx, "checksum_dir: arg must be a folder name or {\"dir\": NAME}\n");
                return 2;
        }
        pthread_once(&once, crc_init);
        walk_dir(&w, dir);
        free(dir);
        if (w.stopped) {
                slowwork_log(ctx, "stopped (%s) after %llu files\n", slowwork_stop_reason(ctx),
                             w.files);
                return 4;
        }
        slowwork_log(ctx, "%llu files, %llu bytes, %u errors\n", w.files, w.bytes, w.errors);
        return w.errors ? 1 : 0;
}
