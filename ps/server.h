/* SPDX-License-Identifier: BSD-2-Clause */
/* The server role (server.c): the slices this node serves, the pushes into them, their
 * aggregates. Its state (struct ps_server_state, n->server) is server.c's own: each slice
 * under its own lock. */
#ifndef MERCURY_PS_SERVER_H
#define MERCURY_PS_SERVER_H

#include "core.h"

/* After the placement is made: the buffers of this node's own slices. */
int ps_server_init(struct ps_node *n);
void ps_server_free(struct ps_node *n);
/* Worker w's push h (PUSH header read): its payload read from c's socket or, from this
 * process's own worker (c NULL), copied from src; aggregates what it completes. */
int ps_server_take_push(struct ps_node *n, struct ps_conn *c, int w, const struct ps_msg_hdr *h,
			const float *src);
/* For a timeout on layer's aggregate (ps_explain_fn): the workers whose push of it this
 * node's own server still lacks, as "; its share here lacks the push of worker W, ...". */
void ps_server_lacking_pushes(struct ps_node *n, int layer, char *buf, size_t size);

#endif
