/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_server: the simulator's HTTP side (libmicrohttpd): the gateway API of
 * docs/contract.md §4, the /_sim/ control endpoints, fault injection, and the
 * timer that answers delayed requests. Never sleeps in a request handler:
 * a delayed answer suspends its connection until the timer resumes it.
 */
#ifndef SIM_SERVER_H
#define SIM_SERVER_H

#include <stddef.h>

#include "sim_config.h"

struct sim_server;

/*
 * Starts listening with cfg (copied). Returns NULL with a reason in errstr
 * on failure. Call from the main thread.
 */
struct sim_server *sim_server_start(const struct sim_config *cfg, char *errstr,
                                    size_t errstr_size);
/* The bound TCP port. */
int sim_server_port(const struct sim_server *srv);
/* Stops listening, drops delayed answers, frees everything. Main thread. */
void sim_server_stop(struct sim_server *srv);

#endif
