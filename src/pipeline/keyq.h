/* SPDX-License-Identifier: Apache-2.0 */
/*
 * keyq: per-key FIFO queues, so messages with the same Kafka key are
 * handled one after the other while distinct keys run in parallel.
 * Intrusive: the caller embeds a struct keyq_node in its item. Pure.
 * Threads: one owner thread.
 *
 * Keys come from producers and may be hostile: the table hashes them with
 * SipHash-2-4 under a random key drawn for each keyq (util/siphash.h), so
 * keys built to collide cannot turn its lookups quadratic.
 */
#ifndef CO_KEYQ_H
#define CO_KEYQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct keyq;

struct keyq_node {
        struct keyq_node *next;
};

struct keyq *keyq_new(void);
/* The queues must be empty (every push popped). */
void keyq_destroy(struct keyq *kq);

/*
 * Appends n to key's queue (key is copied). Returns true if n is the head,
 * i.e. nothing else of that key is in flight and n may start now.
 */
bool keyq_push(struct keyq *kq, const void *key, size_t key_len,
               struct keyq_node *n);
/*
 * The head of key's queue is finished: removes it and returns the next
 * node, which may start now, or NULL (the key is then forgotten).
 */
struct keyq_node *keyq_pop(struct keyq *kq, const void *key, size_t key_len);
/* Nodes in key's queue (the head included); 0 for an unknown key. */
size_t keyq_len(const struct keyq *kq, const void *key, size_t key_len);
/* Keys with something in flight. */
size_t keyq_keys(const struct keyq *kq);

/* For tests and diagnostics: the hash kq gives key, and the most keys
 * found in one bucket (a walk of the whole table). */
uint64_t keyq_hash(const struct keyq *kq, const void *key, size_t key_len);
size_t keyq_max_chain(const struct keyq *kq);

#endif
