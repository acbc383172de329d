/* SPDX-License-Identifier: MIT */
/*
 * The cluster key and the MACs made with it (HMAC-SHA256, OpenSSL's): what the nodes of a shared
 * database sign their rows with, so that a writer of the database who lacks the key can forge
 * none. A MAC covers a list of typed fields (texts, NULL, integers), each with its length, under
 * a label that says what the list is: no two lists give the same input.
 */
#ifndef SLOWWORKD_MAC_H
#define SLOWWORKD_MAC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MAC_TEXT_LEN 64 /* a MAC as text: hex */
#define MAC_KEY_MIN  32 /* bytes */

struct mac_key;

/* The key in the file at path (its bytes as they are, 32 at least): a regular file of this
 * user's or root's that no group or other may read or write. 0, or -errno, logged with the file's
 * name (and its mode when that is why). */
int mac_key_load(const char *path, struct mac_key **ret);
/* References are taken and dropped on one thread (the loop's, at start and stop). */
struct mac_key *mac_key_ref(struct mac_key *key);
struct mac_key *mac_key_unref(struct mac_key *key);
/* A new key file at path (it must not exist): 32 random bytes as 64 hex digits and a newline,
 * mode 0600. 0, or -errno logged. */
int mac_key_make(const char *path);

/* One MAC being made: mac_begin(), the fields in order, then mac_end() or mac_matches(). Any
 * thread; the key is only read. */
struct mac {
        void *ctx; /* NULL when it could not be made: it then matches nothing */
        size_t len;
        unsigned char buf[512]; /* fields not yet hashed: one update for most MACs */
};
void mac_begin(struct mac *m, const struct mac_key *key, const char *label);
void mac_text(struct mac *m, const char *text); /* NULL is a field of its own */
/* The MAC as text; "" when it could not be made. */
void mac_end(struct mac *m, char out[MAC_TEXT_LEN + 1]);
/* Whether the MAC is the one in text (compared in constant time); NULL never is. */
bool mac_matches(struct mac *m, const char *text);

#endif
