/* SPDX-License-Identifier: Apache-2.0 */
/*
 * finding F2_review_published_again
 * src today:      by default (relay.wait_for_standbys = 0) the relay publishes results of commits the asynchronous standby does not have yet; after a failover the lost review result is made again behind its resolution (closed by relay.wait_for_standbys = 1, 4cd8611: scenario live_failover_wait, mutant relay_publishes_unreplicated)
 * must violate:   P2
 * scenario:       live_failover
 */
#define P2_STRICT 1
#include "../chargeonce.pml"
