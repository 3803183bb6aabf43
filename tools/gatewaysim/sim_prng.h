/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_prng: the simulator's reproducible randomness. Every POST gets its
 * own generator seeded from (seed, request sequence number), so the same
 * seed and the same request order draw the same faults whatever the
 * thread interleaving. Pure; never reads a clock or a system random source.
 */
#ifndef SIM_PRNG_H
#define SIM_PRNG_H

#include <stdbool.h>
#include <stdint.h>

struct sim_prng {
        uint64_t s;
};

/* Seeds prng for request number seq of a run seeded with seed. */
void sim_prng_init(struct sim_prng *prng, uint64_t seed, uint64_t seq);
/* Next 64 random bits (splitmix64). */
uint64_t sim_prng_next(struct sim_prng *prng);
/* Uniform double in [0, 1). */
double sim_prng_unit(struct sim_prng *prng);
/* True with probability p (p <= 0 never, p >= 1 always; one draw always). */
bool sim_prng_chance(struct sim_prng *prng, double p);
/* Uniform integer in [lo, hi] (hi < lo gives lo; one draw always). */
int64_t sim_prng_range(struct sim_prng *prng, int64_t lo, int64_t hi);

#endif
