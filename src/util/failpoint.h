/* SPDX-License-Identifier: Apache-2.0 */
/*
 * failpoint: named points where a test build can crash, fail or stall on
 * purpose. Compiled in only with -DCHARGEONCE_FAILPOINTS=ON (the test and
 * sanitizer builds); in a release build FAILPOINT() is the constant 0 and
 * costs nothing.
 *
 * Armed by the environment:
 *   CHARGEONCE_FAILPOINTS="claim.after_commit=kill,settle.before_commit=delay(200)"
 * Actions: kill (SIGKILL to itself), error (FAILPOINT() returns -1: the
 * caller treats it as the failure of the step), delay(MS) (sleep, then
 * go on). An action may be prefixed by a count: "3*kill" fires on the 3rd
 * hit; "kill" on the 1st. CHARGEONCE_FAILPOINTS_LOG=1 logs every hit.
 *
 * Never compiled into a release binary.
 */
#ifndef CO_FAILPOINT_H
#define CO_FAILPOINT_H

#include "util/compiler.h"

#ifdef CHARGEONCE_FAILPOINTS
/* Returns 0 (go on) or -1 (the armed action is "error"). */
int failpoint_hit(const char *name) CO_MUST_CHECK;
/* Parses CHARGEONCE_FAILPOINTS; 0 or -1 with the bad entry on stderr. */
int failpoint_init(void) CO_MUST_CHECK;
#define FAILPOINT(name) failpoint_hit(name)
#else
#define FAILPOINT(name) 0
CO_MUST_CHECK static inline int failpoint_init(void)
{
        return 0;
}
#endif

#endif
