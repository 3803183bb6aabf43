/* SPDX-License-Identifier: Apache-2.0 */
/*
 * driver: a main() for the fuzz targets when libFuzzer is not there (gcc).
 * Runs every regular file of each directory given (and each file given)
 * through LLVMFuzzerTestOneInput, in name order, each in a heap buffer of
 * exactly its size so that AddressSanitizer sees any read past the end.
 * Fails when a directory holds no input: a corpus that checks nothing must
 * not pass.
 *
 * --open: the inputs are those of an open bug (tests/fuzz/open/): exits 0
 * at the first broken invariant, and fails when every invariant holds (the
 * bug is fixed and the input belongs in the corpus).
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

static int run_file(const char *path)
{
        FILE *f            = fopen(path, "rb");
        unsigned char *buf = NULL;
        long size;
        int r = -1;

        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -1;
        }
        if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
            fseek(f, 0, SEEK_SET) != 0) {
                fprintf(stderr, "%s: cannot size\n", path);
                goto done;
        }
        /* malloc(0) may return NULL: keep one byte, pass size 0 */
        buf = malloc(size > 0 ? (size_t)size : 1);
        if (!buf || fread(buf, 1, (size_t)size, f) != (size_t)size) {
                fprintf(stderr, "%s: cannot read\n", path);
                goto done;
        }
        (void)LLVMFuzzerTestOneInput(buf, (size_t)size);
        r = 0;
done:
        free(buf);
        fclose(f);
        return r;
}

static int cmp_names(const void *a, const void *b)
{
        return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Runs every regular file of dir; returns how many, or -1. */
static long run_dir(const char *dir)
{
        DIR *d = opendir(dir);
        struct dirent *e;
        char **names = NULL;
        size_t n = 0, cap = 0;
        long ran = 0;

        if (!d) {
                fprintf(stderr, "%s: %s\n", dir, strerror(errno));
                return -1;
        }
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                if (n == cap) {
                        char **p;
                        cap = cap ? 2 * cap : 64;
                        p   = realloc(names, cap * sizeof(*names));
                        if (!p)
                                abort();
                        names = p;
                }
                if (!(names[n++] = strdup(e->d_name)))
                        abort();
        }
        closedir(d);
        qsort(names, n, sizeof(*names), cmp_names);
        for (size_t i = 0; i < n; i++) {
                char path[4096];
                struct stat st;

                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
                        if (run_file(path) < 0)
                                ran = -1;
                        else if (ran >= 0)
                                ran++;
                }
                free(names[i]);
        }
        free(names);
        return ran;
}

int main(int argc, char **argv)
{
        long total = 0;
        int first  = 1;

        if (argc > 1 && strcmp(argv[1], "--open") == 0) {
                fuzz_open_mode = 1;
                first++;
        }
        if (argc <= first) {
                fprintf(stderr, "usage: %s [--open] CORPUS-DIR|FILE...\n",
                        argv[0]);
                return 2;
        }
        for (int i = first; i < argc; i++) {
                struct stat st;
                long n;

                if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
                        n = run_dir(argv[i]);
                        if (n == 0)
                                fprintf(stderr, "%s: no input\n", argv[i]);
                        if (n <= 0)
                                return 1;
                } else if (run_file(argv[i]) < 0) {
                        return 1;
                } else {
                        n = 1;
                }
                total += n;
        }
        printf("%ld inputs, every invariant held\n", total);
        if (fuzz_open_mode) {
                /* the bug is fixed: the input belongs in the corpus now */
                fprintf(stderr, "--open: no invariant broke; move the input "
                                "to the target's corpus\n");
                return 1;
        }
        return 0;
}
