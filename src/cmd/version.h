/* SPDX-License-Identifier: Apache-2.0 */
/*
 * cmd/version: what this binary is, for --version and
 * chargeonce_build_info. The version is the project's (CMakeLists.txt,
 * SemVer: docs/upgrading.md says what each part promises); the commit is
 * the source tree's at build time (cmake/version.cmake), "unknown"
 * outside a git checkout. The definitions are generated at every build.
 */
#ifndef CO_CMD_VERSION_H
#define CO_CMD_VERSION_H

/* "1.0.0" */
const char *cmd_version_string(void);
/* "0123456789ab" (12 hex digits), or "unknown" */
const char *cmd_version_commit(void);

#endif
