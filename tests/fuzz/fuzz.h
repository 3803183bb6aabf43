/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz: what every fuzz target of tests/fuzz shares.
 *
 * A target is one LLVMFuzzerTestOneInput(): it feeds the bytes to the code
 * under test and checks invariants that must hold for every input. With
 * clang (-DCHARGEONCE_FUZZ=ON) libFuzzer drives it; with gcc, driver.c
 * runs every file of the target's seed corpus through it, so the normal
 * and the sanitizer builds check the corpus.
 *
 * A broken invariant aborts with the file, line and condition, never with
 * the input (it may hold a card number): the input is the crash file.
 * Inputs of open bugs live in open/<target>/ and are run with --open.
 */
#ifndef CO_TESTS_FUZZ_H
#define CO_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Returns 0, or -1 for an input that must not enter the corpus. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Set by driver.c --open: a broken invariant is what the run expects. */
extern int fuzz_open_mode;

/* Reports a broken invariant and ends the process: abort() for libFuzzer
 * and the corpus runs, exit status 0 under --open (fuzz_common.c). */
void fuzz_broken(const char *file, int line, const char *cond)
    __attribute__((noreturn));

#define FUZZ_CHECK(cond)                                                       \
        do {                                                                   \
                if (!(cond))                                                   \
                        fuzz_broken(__FILE__, __LINE__, #cond);                \
        } while (0)

/* True if the array a holds a NUL (a C string that ends inside it). */
#define FUZZ_TERMINATED(a) (memchr((a), '\0', sizeof(a)) != NULL)

#endif
