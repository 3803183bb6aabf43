/* SPDX-License-Identifier: Apache-2.0 */
/*
 * intent/arena: see arena.h. Under AddressSanitizer the arena's free
 * space and the 16 bytes after every allocation are poisoned, so an
 * overrun of a jansson string is still caught as it is with malloc.
 */
#include "intent/arena.h"

#include "util/xalloc.h"

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#if defined(__SANITIZE_ADDRESS__)
#define ARENA_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define ARENA_ASAN 1
#endif
#endif

#ifdef ARENA_ASAN
#include <sanitizer/asan_interface.h>
#define ARENA_REDZONE  16
#define POISON(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define ARENA_REDZONE  0
#define POISON(p, n)   ((void)(p), (void)(n))
#define UNPOISON(p, n) ((void)(p), (void)(n))
#endif

enum { ARENA_SIZE = 64 * 1024, ARENA_ALIGN = 16 };

struct arena {
        unsigned char *base; /* ARENA_SIZE bytes, or NULL before first use */
        size_t used;
        bool active;
};

static _Thread_local struct arena arena;
static pthread_key_t arena_key; /* frees a thread's block at its exit */
static pthread_once_t arena_once = PTHREAD_ONCE_INIT;

static bool in_arena(const void *p)
{
        uintptr_t a = (uintptr_t)p, b = (uintptr_t)arena.base;

        return arena.base != NULL && a >= b && a - b < ARENA_SIZE;
}

static void *arena_malloc(size_t n)
{
        if (arena.active && n <= ARENA_SIZE) {
                size_t need = (n + ARENA_REDZONE + ARENA_ALIGN - 1) &
                              ~(size_t)(ARENA_ALIGN - 1);

                if (ARENA_SIZE - arena.used >= need) {
                        unsigned char *p = arena.base + arena.used;

                        arena.used += need;
                        UNPOISON(p, n);
                        return p;
                }
        }
        return malloc(n);
}

static void arena_free(void *p)
{
        if (!in_arena(p))
                free(p);
}

static void arena_block_free(void *block)
{
        UNPOISON(block, ARENA_SIZE);
        free(block);
}

static void arena_key_make(void)
{
        if (pthread_key_create(&arena_key, arena_block_free) != 0)
                xalloc_die();
}

/* Before main and before any thread: jansson allocates through us. */
__attribute__((constructor)) static void arena_install(void)
{
        json_set_alloc_funcs(arena_malloc, arena_free);
}

void intent_arena_begin(void)
{
        if (arena.base == NULL) {
                pthread_once(&arena_once, arena_key_make);
                arena.base = xmalloc(ARENA_SIZE);
                if (pthread_setspecific(arena_key, arena.base) != 0)
                        xalloc_die();
        }
        arena.used = 0;
        POISON(arena.base, ARENA_SIZE);
        arena.active = true;
}

void intent_arena_end(void)
{
        arena.active = false;
}
