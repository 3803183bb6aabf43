/* SPDX-License-Identifier: Apache-2.0 */
/* util/file: a whole file into memory (file.h). Must never leave a copy
 * of the content anywhere but the buffer it returns. */
#include "util/file.h"

#include "util/crypto.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char *file_read(const char *path, size_t max, size_t *len, char *errstr,
                size_t errstr_size)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        char *buf;
        size_t n = 0;
        ssize_t r;

        *len = 0;
        if (fd < 0) {
                snprintf(errstr, errstr_size, "cannot open %s: %s", path,
                         strerror(errno));
                return NULL;
        }
        /* one byte more than max tells a file that is too large */
        if (!(buf = malloc(max + 2))) {
                close(fd);
                snprintf(errstr, errstr_size, "%s: out of memory", path);
                return NULL;
        }
        while (n <= max) {
                r = read(fd, buf + n, max + 1 - n);
                if (r < 0 && errno == EINTR)
                        continue;
                if (r < 0) {
                        snprintf(errstr, errstr_size, "cannot read %s: %s",
                                 path, strerror(errno));
                        goto fail;
                }
                if (r == 0)
                        break;
                n += (size_t)r;
        }
        if (n == 0) {
                snprintf(errstr, errstr_size, "%s is empty", path);
                goto fail;
        }
        if (n > max) {
                snprintf(errstr, errstr_size, "%s is larger than %zu bytes",
                         path, max);
                goto fail;
        }
        close(fd);
        buf[n] = '\0';
        *len   = n;
        return buf;
fail:
        close(fd);
        crypto_wipe(buf, n);
        free(buf);
        return NULL;
}

char *file_read_secret(const char *path, size_t max, size_t *len, char *errstr,
                       size_t errstr_size)
{
        char *buf = file_read(path, max, len, errstr, errstr_size);

        while (buf && *len > 0 &&
               (buf[*len - 1] == '\n' || buf[*len - 1] == '\r'))
                buf[--*len] = '\0';
        return buf;
}
