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

/* A subcommand of the operator interface that this build does not have
 * yet: it says so and exits 2, never a silent success. */
int cmd_not_built(struct config *cfg, int argc, char **argv)
{
        (void)cfg;
        (void)argc;
        fprintf(stderr,
                "chargeonce %s: not built yet in this version (%s); "
                "nothing was done\n",
                argv[0], CHARGEONCE_VERSION);
        return 2;
}
