/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_prng: splitmix64 seeded per request. Pure and thread-safe (no shared
 * state). Must never draw a variable number of values for one decision:
 * callers rely on a fixed draw order for reproducibility.
 */
#include "sim_prng.h"

void sim_prng_init(struct sim_prng *prng, uint64_t seed, uint64_t seq)
{
        struct sim_prng mix = { seed ^ 0x6a09e667f3bcc909ULL };

        /* Two rounds decorrelate neighbouring (seed, seq) pairs. */
        mix.s ^= sim_prng_next(&mix) + seq * 0x9e3779b97f4a7c15ULL;
        prng->s = sim_prng_next(&mix);
}

uint64_t sim_prng_next(struct sim_prng *prng)
{
        uint64_t z = (prng->s += 0x9e3779b97f4a7c15ULL);

        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        return z ^ (z >> 31);
}

double sim_prng_unit(struct sim_prng *prng)
{
        return (double)(sim_prng_next(prng) >> 11) * (1.0 / 9007199254740992.0);
}

bool sim_prng_chance(struct sim_prng *prng, double p)
{
        double u = sim_prng_unit(prng);

        return u < p;
}

int64_t sim_prng_range(struct sim_prng *prng, int64_t lo, int64_t hi)
{
        uint64_t r = sim_prng_next(prng);
        uint64_t span;

        if (hi <= lo)
                return lo;
        span = (uint64_t)(hi - lo) + 1;
        if (span == 0) /* the whole int64 range */
                return (int64_t)r;
        return lo + (int64_t)(r % span);
}
