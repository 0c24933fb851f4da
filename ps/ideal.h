/* SPDX-License-Identifier: BSD-2-Clause */
/* The ideal iteration (ideal.c): the paper's bound, and the bytes it is computed from. */
#ifndef MERCURY_PS_IDEAL_H
#define MERCURY_PS_IDEAL_H

#include "placement.h"

struct ps_ideal_in {
	int nlayers;
	int nodes;
	const double *fwd_s, *bwd_s;
	const double *egress_bytes; /* [node * nlayers + layer]: bytes node n sends for layer l */
	double rate_Bps;	    /* bottleneck goodput per node egress, bytes per second */
	/* Two racks joined by one uplink (0: one switch). uplink_bytes[d * nlayers + l]: bytes
	 * of layer l that cross it in direction d (0: rack 0 -> rack 1). */
	const double *uplink_bytes;
	double uplink_Bps;
};

/*
 * Steady-state iteration time of the recurrence: layer m's traffic precedes layer n's when
 * m < n with immediate preemption, tau_pull(l) = tau_push(l), and
 * tau_fp(l) = max(tau_pull(l), tau_fp(l-1)) + t_fp(l). Per node the egress is a preemptive
 * priority fluid server; a layer's pull completes when every node has sent its bytes.
 * Also returns the comm-only and compute-only times when the pointers are non-NULL.
 */
double ps_ideal_iteration(const struct ps_ideal_in *in, double *comm_only, double *compute_only);

/* Bytes node n sends for layer l in one iteration (push to other servers + pull to other
 * workers), co-located layout. out has nodes * nlayers entries. In this layout a node's
 * ingress carries per layer exactly what its egress does (a server takes in N - 1 pushes of
 * a slice and sends N - 1 pulls; a worker sends one push and takes in one pull), so with
 * full-duplex links of one rate the ingress ports add no constraint to the bound. */
void ps_egress_bytes(const struct ps_placement *pl, int nodes, double *out);

/* Rack of node n with two racks: the first (nodes + 1) / 2 nodes in rack 0 (cluster/lib.sh). */
int ps_rack_of(int node, int nodes);

/* Bytes of each layer that cross the uplink between two racks, per direction (out has
 * 2 * nlayers entries: rack 0 -> 1, then 1 -> 0): pushes to a server in the other rack and
 * its pulls back. */
void ps_uplink_bytes(const struct ps_placement *pl, int nodes, double *out);

#endif
