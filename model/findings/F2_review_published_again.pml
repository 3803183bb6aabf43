/* SPDX-License-Identifier: Apache-2.0 */
/*
 * finding F2_review_published_again
 * src today:      the relay publishes results of commits the asynchronous standby does not have yet; after a failover the lost review result is made again behind its resolution
 * must violate:   P2
 * scenario:       live_failover
 */
#define P2_STRICT 1
#include "../chargeonce.pml"
