/* SPDX-License-Identifier: MIT */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/log.h"
#include "util/mac.h"

#define MAC_KEY_MAX (64 * 1024)

struct mac_key {
        unsigned refs;
        EVP_MAC *hmac;
        EVP_MAC_CTX *keyed; /* initialised with the key, never changed: each MAC starts as a copy */
        size_t len;
        unsigned char bytes[];
};

struct mac_key *mac_key_ref(struct mac_key *key)
{
        if (key)
                key->refs++;
        return key;
}

struct mac_key *mac_key_unref(struct mac_key *key)
{
        if (key && --key->refs == 0) {
                EVP_MAC_CTX_free(key->keyed);
                EVP_MAC_free(key->hmac);
                OPENSSL_cleanse(key->bytes, key->len);
                free(key);
        }
        return NULL;
}

/* Why the file may not hold a key, or NULL. */
static const char *unfit(const struct stat *st)
{
        if (!S_ISREG(st->st_mode))
                return "not a regular file";
        if (st->st_uid != 0 && st->st_uid != geteuid())
                return "owned by another user";
        if (st->st_mode & 077)
                return "open to its group or others";
        if (st->st_size < MAC_KEY_MIN)
                return "shorter than 32 bytes";
        if (st->st_size > MAC_KEY_MAX)
                return "longer than 64 KiB";
        return NULL;
}

int mac_key_load(const char *path, struct mac_key **ret)
{
        OSSL_PARAM params[] = {
            OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
            OSSL_PARAM_construct_end()};
        struct mac_key *key = NULL;
        struct stat st;
        const char *why;
        ssize_t got;
        int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY), r;

        if (fd < 0)
                return log_error_errno(-errno, "Cannot open the cluster key file %s: %m", path);
        if (fstat(fd, &st) < 0) {
                r = log_error_errno(-errno, "Cannot read the cluster key file %s: %m", path);
                goto out;
        }
        why = unfit(&st);
        if (why) {
                log_error("The cluster key file %s (mode %04o, uid %u) is %s: it must be a file "
                          "of 32 bytes or more that only its owner (root) may read "
                          "(slowworkd --make-cluster-key FILE makes one)",
                          path, (unsigned)(st.st_mode & 07777), (unsigned)st.st_uid, why);
                r = -EPERM;
                goto out;
        }
        key = calloc(1, sizeof(*key) + (size_t)st.st_size);
        if (!key) {
                r = log_error_errno(-ENOMEM, "Cannot read the cluster key file %s: %m", path);
                goto out;
        }
        got = pread(fd, key->bytes, (size_t)st.st_size, 0);
        if (got != st.st_size) {
                r = log_error_errno(got < 0 ? -errno : -EIO,
                                    "Cannot read the cluster key file %s: %m", path);
                goto out;
        }
        key->len = (size_t)got;
        key->refs = 1;
        key->hmac = EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
        key->keyed = key->hmac ? EVP_MAC_CTX_new(key->hmac) : NULL;
        if (!key->keyed || !EVP_MAC_init(key->keyed, key->bytes, key->len, params)) {
                log_error("Cannot use the cluster key: OpenSSL has no HMAC-SHA256");
                r = -ENOTSUP;
                goto out;
        }
        *ret = key;
        key = NULL;
        r = 0;
out:
        if (key) {
                key->refs = 1;
                mac_key_unref(key);
        }
        close(fd);
        return r;
}

/* len bytes as 2 * len hex digits and a NUL. */
static void hex(const unsigned char *raw, size_t len, char *out)
{
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < len; i++) {
                out[2 * i] = digits[raw[i] >> 4];
                out[2 * i + 1] = digits[raw[i] & 15];
        }
        out[2 * len] = '\0';
}

int mac_key_make(const char *path)
{
        unsigned char raw[MAC_KEY_MIN];
        char text[2 * sizeof(raw) + 2];
        int fd, r = 0;

        if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
                return log_error_errno(-errno, "Cannot make a cluster key: %m");
        hex(raw, sizeof(raw), text);
        text[2 * sizeof(raw)] = '\n';
        text[2 * sizeof(raw) + 1] = '\0';
        OPENSSL_cleanse(raw, sizeof(raw));
        fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0) {
                r = log_error_errno(-errno, "Cannot make the cluster key file %s: %m", path);
        } else {
                if (fchmod(fd, 0600) < 0 ||
                    write(fd, text, strlen(text)) != (ssize_t)strlen(text) || fsync(fd) < 0)
                        r = log_error_errno(errno ? -errno : -EIO,
                                            "Cannot write the cluster key file %s: %m", path);
                close(fd);
                if (r < 0)
                        unlink(path);
        }
        OPENSSL_cleanse(text, sizeof(text));
        return r;
}

static void update(struct mac *m, const void *p, size_t len)
{
        if (m->ctx && len && !EVP_MAC_update(m->ctx, p, len)) {
                EVP_MAC_CTX_free(m->ctx);
                m->ctx = NULL;
        }
}

static void add(struct mac *m, const void *p, size_t len)
{
        if (m->len + len > sizeof(m->buf)) {
                update(m, m->buf, m->len);
                m->len = 0;
        }
        if (len > sizeof(m->buf)) {
                update(m, p, len);
                return;
        }
        memcpy(m->buf + m->len, p, len);
        m->len += len;
}

/* Each field: its kind, its length (8 bytes, little-endian), its bytes. */
static void field(struct mac *m, char kind, const void *p, size_t len)
{
        unsigned char head[9] = {(unsigned char)kind};

        for (int i = 0; i < 8; i++)
                head[1 + i] = (unsigned char)((uint64_t)len >> (8 * i));
        add(m, head, sizeof(head));
        add(m, p, len);
}

void mac_begin(struct mac *m, const struct mac_key *key, const char *label)
{
        /* A copy of the keyed context: the key is not hashed again for every MAC. */
        m->ctx = key ? EVP_MAC_CTX_dup(key->keyed) : NULL;
        m->len = 0;
        mac_text(m, label);
}

void mac_text(struct mac *m, const char *text)
{
        if (text)
                field(m, 't', text, strlen(text));
        else
                field(m, 'n', "", 0);
}

/* The MAC's bytes: its length, or 0. */
static size_t finish(struct mac *m, unsigned char out[EVP_MAX_MD_SIZE])
{
        size_t len = 0;

        update(m, m->buf, m->len);
        if (m->ctx && !EVP_MAC_final(m->ctx, out, &len, EVP_MAX_MD_SIZE))
                len = 0;
        EVP_MAC_CTX_free(m->ctx);
        m->ctx = NULL;
        return len;
}

void mac_end(struct mac *m, char out[MAC_TEXT_LEN + 1])
{
        unsigned char raw[EVP_MAX_MD_SIZE];
        size_t len = finish(m, raw);

        out[0] = '\0';
        if (len * 2 == MAC_TEXT_LEN)
                hex(raw, len, out);
}

bool mac_matches(struct mac *m, const char *text)
{
        char mine[MAC_TEXT_LEN + 1];

        mac_end(m, mine);
        return text && *mine && strlen(text) == MAC_TEXT_LEN &&
               CRYPTO_memcmp(mine, text, MAC_TEXT_LEN) == 0;
}
