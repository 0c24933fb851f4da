/* SPDX-License-Identifier: BSD-2-Clause */
/* The server role (server.c): one thread per connection receiving pushes, aggregating. */
#ifndef MERCURY_PS_SERVER_H
#define MERCURY_PS_SERVER_H

#include "core.h"

void *ps_server_rx(void *arg);
/* A push (PUSH header + payload) from this process's own worker, taken from memory. */
int ps_server_local_push(struct ps_node *n, const struct ps_msg_hdr *h, const float *data);

#endif
