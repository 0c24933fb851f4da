/* SPDX-License-Identifier: BSD-2-Clause */
/* The transport (transport.c): a node's connections, their tx and rx threads and the routing
 * of each message to its role, the listener and its acceptor, the connections to every
 * server. Its own state (struct ps_transport_state, n->transport) counts READY and
 * goodbyes, under n->mu. */
#ifndef MERCURY_PS_TRANSPORT_H
#define MERCURY_PS_TRANSPORT_H

#include "core.h"

int ps_transport_init(struct ps_node *n);
/* The server half: listens; then (once tags and the drainer are ready for connections)
 * accepts every worker's connections in a thread of its own, and sends READY. */
int ps_transport_listen(struct ps_node *n, char *err, size_t errlen);
int ps_transport_accept(struct ps_node *n);
/* The worker half: connects to every node's server, then waits for each one's READY. */
int ps_transport_connect(struct ps_node *n);
/* Every worker said goodbye to this node's server and ours are on the wire: closing is safe
 * (n->mu held; a ps_wait condition, arg unused). */
bool ps_transport_byes_done(struct ps_node *n, long arg);
/* Teardown, after ps_shutdown_all: joins the acceptor; then (once nothing else polls the
 * sockets) stops and frees every connection, closes the listener. */
void ps_transport_stop_accepting(struct ps_node *n);
/* The largest receive window the peers of this node's data connections advertised last
 * (what --rcvbuf gave them), bytes, over the connections that sent at least
 * 64 KiB; 0 where the kernel does not say. */
uint32_t ps_transport_peer_window_max(struct ps_node *n);
void ps_transport_close(struct ps_node *n);

#endif
