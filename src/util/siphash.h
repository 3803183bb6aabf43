/* SPDX-License-Identifier: Apache-2.0 */
/*
 * siphash: SipHash-2-4 with a 64-bit output (Aumasson and Bernstein,
 * "SipHash: a fast short-input PRF", 2012), the keyed hash of tables
 * whose keys come from outside (Kafka message keys, event ids): without
 * the key, nobody can build inputs that collide, so a producer cannot
 * turn a table's lookups quadratic. Pure, any thread.
 *
 * Not a MAC of anything stored or sent: a key lives as long as its table
 * and is never written anywhere.
 */
#ifndef CO_UTIL_SIPHASH_H
#define CO_UTIL_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

#define SIPHASH_KEY_LEN 16

struct siphash_key {
        uint64_t k0, k1;
};

/* The key of 16 bytes, read as the paper does (two little-endian
 * words): bytes 00 01 .. 0f make the key of its test vectors. */
void siphash_key_set(struct siphash_key *k,
                     const unsigned char bytes[SIPHASH_KEY_LEN]);
/*
 * A fresh random key from the OS's generator (crypto_random). Should the
 * generator fail, the key is SHA-256 of clocks and addresses of this
 * process: still not something a remote producer can guess, and a table
 * must not stop the process.
 */
void siphash_key_random(struct siphash_key *k);
/* SipHash-2-4 of data[0..len) under k. */
uint64_t siphash_u64(const struct siphash_key *k, const void *data, size_t len);

#endif
