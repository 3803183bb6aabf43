/* SPDX-License-Identifier: Apache-2.0 */
/*
 * mutant offset_before_result
 * drops:          the offset tracker's rule (src/pipeline/offsets.c): a message's offset is stored before its replay or conflict result is written
 * must violate:   P6
 * scenario:       live
 */
#define G_OFFSET_AFTER_RESULT 0
#include "../chargeonce.pml"
