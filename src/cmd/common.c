/* SPDX-License-Identifier: Apache-2.0 */
/* cmd/common: what every subcommand shares. */
#include "cmd/cmd.h"
#include "util/config.h"

#include <stdarg.h>
#include <string.h>
#include <stdio.h>

int cmd_usage_error(const char *cmd, const char *fmt, ...)
{
        va_list ap;
        fprintf(stderr, "chargeonce %s: ", cmd);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fprintf(stderr, "\n");
        return 2;
}
