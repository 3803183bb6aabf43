/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_common: the failure path every fuzz target shares (see fuzz.h). */
#include <unistd.h>

#include "fuzz.h"

int fuzz_open_mode;

void fuzz_broken(const char *file, int line, const char *cond)
{
        fprintf(stderr, "%s:%d: invariant broken: %s\n", file, line, cond);
        if (fuzz_open_mode) {
                fprintf(stderr, "as expected: the bug is still open\n");
                _exit(0);
        }
        abort();
}
