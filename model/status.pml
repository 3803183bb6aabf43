/* SPDX-License-Identifier: Apache-2.0 */
/*
 * model/status.pml: the statuses and the moves of a payment, generated
 * from src/payment/status.c (payment_status_name, payment_status_may_move)
 * by tests/payment/status_pml.c. Do not edit: run
 *   build-test/tests/payment/status_pml > model/status.pml
 * The test model_status_in_sync fails when this file and the C table differ.
 */
#define ST_PROCESSING 0 /* processing */
#define ST_SUCCEEDED 1 /* succeeded */
#define ST_FAILED 2 /* failed */
#define ST_REVIEW 3 /* review */
#define ST_CONFLICT 4 /* conflict */
#define ST_REJECTED 5 /* rejected */
#define ST_COUNT 6

/* MAY_MOVE(f, t): payment_status_may_move(f, t) */
#define MAY_MOVE(f, t) (\
	((f) == ST_PROCESSING && (t) == ST_SUCCEEDED) ||\
	((f) == ST_PROCESSING && (t) == ST_FAILED) ||\
	((f) == ST_PROCESSING && (t) == ST_REVIEW) ||\
	((f) == ST_REVIEW && (t) == ST_SUCCEEDED) ||\
	((f) == ST_REVIEW && (t) == ST_FAILED))
