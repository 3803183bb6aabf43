/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ops/review_int: what the files of ops/review share, not exported.
 */
#ifndef CO_OPS_REVIEW_INT_H
#define CO_OPS_REVIEW_INT_H

#include "ops/review.h"

struct store;

/* A store on o->conninfo (10 s to connect), or NULL after saying why on
 * stderr. */
struct store *ops_review_store(const struct ops_review_opts *o);

#endif
