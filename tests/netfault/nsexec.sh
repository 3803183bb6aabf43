#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The chargeonce of a network-fault test, run inside the test's namespace
# (tests/netfault/test_netfault.c points CHARGEONCE_BIN here while it starts
# one). exec keeps the pid: the test signals and waits for chargeonce itself.
exec ip netns exec "$CHARGEONCE_TEST_NETNS" "$NETFAULT_REAL_BIN" "$@"
