/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intent/arena: jansson's allocations while an intent is decoded go to a
 * bump arena of the decoding thread, released all at once.
 *
 * A decoded intent's JSON tree is ~50 small allocations (a json_t per
 * value, key and string copies, object tables, the lexer's buffers), all
 * freed by one json_decref a few microseconds later; in a replay malloc
 * and free were a fifth of the consume loop's CPU. Between
 * intent_arena_begin and intent_arena_end on one thread, jansson takes
 * memory from that thread's arena (64 KiB; a request that does not fit
 * falls back to malloc); freeing a pointer inside an arena does nothing,
 * any other pointer goes to free(). So memory of either kind may be freed
 * at any time by jansson, and the allocator is installed once, before
 * main (json_set_alloc_funcs), for every thread and every other user of
 * jansson, who only ever gets malloc's memory.
 *
 * Must never: hand arena memory to anything that outlives the decode
 * (intent_parse copies what it keeps and decrefs the tree before
 * intent_arena_end); let one thread free another thread's arena memory
 * (a tree never leaves its thread); be nested.
 */
#ifndef CO_INTENT_ARENA_H
#define CO_INTENT_ARENA_H

/* From here on this thread's jansson allocations come from its arena,
 * which starts empty. */
void intent_arena_begin(void);
/* Back to malloc for this thread; the arena's memory is reused by the
 * next begin. Every json_t made since begin must be freed by now. */
void intent_arena_end(void);

#endif
