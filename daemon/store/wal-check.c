/* SPDX-License-Identifier: MIT */
/* The WAL format: https://www.sqlite.org/fileformat2.html#the_write_ahead_log */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/wal-check.h"

#define WAL_HEADER   32
#define FRAME_HEADER 24
#define WAL_MAGIC    0x377f0682u /* | 1: checksums of big-endian words */
#define WAL_VERSION  3007000u

static uint32_t get32(const unsigned char *p)
{
        return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* SQLite's checksum of n bytes (a multiple of 8), going on from s. */
static void checksum(const unsigned char *p, size_t n, bool big_endian, uint32_t s[2])
{
        for (size_t i = 0; i < n; i += 8) {
                uint32_t x0, x1;

                if (big_endian) {
                        x0 = get32(p + i);
                        x1 = get32(p + i + 4);
                } else {
                        memcpy(&x0, p + i, 4);
                        memcpy(&x1, p + i + 4, 4);
                }
                s[0] += x0 + s[1];
                s[1] += x1 + s[0];
        }
}

static bool valid_page_size(uint32_t size)
{
        return size >= 512 && size <= 65536 && (size & (size - 1)) == 0;
}

/* Walks the frames after a sound header. */
static int walk(int fd, const unsigned char *hdr, struct wal_report *r)
{
        uint32_t page_size = get32(hdr + 8), salt[2] = {get32(hdr + 16), get32(hdr + 20)};
        uint32_t s[2] = {get32(hdr + 24), get32(hdr + 28)};
        bool big_endian = get32(hdr) & 1, sound = true;
        size_t frame_size = FRAME_HEADER + page_size;
        unsigned char *frame = malloc(frame_size);
        int64_t n = (r->bytes - WAL_HEADER) / (int64_t)frame_size;

        if (!frame)
                return -ENOMEM;
        for (int64_t i = 0; i < n; i++) {
                bool ours, commit;

                if (pread(fd, frame, frame_size, WAL_HEADER + i * (off_t)frame_size) !=
                    (ssize_t)frame_size) {
                        free(frame);
                        return -EIO;
                }
                ours = get32(frame + 8) == salt[0] && get32(frame + 12) == salt[1];
                commit = get32(frame + 4) != 0;
                if (sound) {
                        uint32_t t[2] = {s[0], s[1]};

                        checksum(frame, 8, big_endian, t);
                        checksum(frame + FRAME_HEADER, page_size, big_endian, t);
                        if (ours && t[0] == get32(frame + 16) && t[1] == get32(frame + 20)) {
                                s[0] = t[0];
                                s[1] = t[1];
                                if (commit)
                                        r->frames_kept = i + 1;
                                continue;
                        }
                        sound = false;
                        r->bad_frame = i + 1;
                }
                /* From the first bad frame on: what of the log's generation recovery drops. */
                if (ours || i + 1 == r->bad_frame) {
                        r->frames_lost++;
                        r->commits_lost += commit;
                }
        }
        free(frame);
        return 0;
}

int wal_check(const char *path, struct wal_report *ret)
{
        struct wal_report r = {0};
        unsigned char hdr[WAL_HEADER];
        uint32_t s[2] = {0, 0};
        struct stat st;
        int fd, e;

        fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) {
                *ret = r;
                return errno == ENOENT ? 0 : -errno;
        }
        if (fstat(fd, &st) < 0) {
                e = -errno;
                close(fd);
                return e;
        }
        r.bytes = st.st_size;
        if (r.bytes < WAL_HEADER) {
                close(fd);
                *ret = r;
                return 0;
        }
        if (pread(fd, hdr, sizeof(hdr), 0) != (ssize_t)sizeof(hdr)) {
                close(fd);
                return -EIO;
        }
        checksum(hdr, 24, get32(hdr) & 1, s);
        if ((get32(hdr) & ~1u) != WAL_MAGIC || get32(hdr + 4) != WAL_VERSION ||
            !valid_page_size(get32(hdr + 8)) || s[0] != get32(hdr + 24) || s[1] != get32(hdr + 28))
                r.header_damaged = true;
        e = r.header_damaged ? 0 : walk(fd, hdr, &r);
        close(fd);
        if (e == 0)
                *ret = r;
        return e;
}

bool wal_report_loses_commits(const struct wal_report *r)
{
        return r->header_damaged ? r->bytes > WAL_HEADER : r->commits_lost > 0;
}
