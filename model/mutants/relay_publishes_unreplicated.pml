/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant relay_publishes_unreplicated
 * drops:          relay.wait_for_standbys's wait in relay_round (standbys_have, src/relay/round.c): with the setting on, a round produces its rows before the standby has flushed their commits, as the default does (F2)
 * must violate:   P2
 * scenario:       live_failover_wait
 */
#define G_RELAY_STANDBY_HAS(i) 1
#include "../chargeonce.pml"
