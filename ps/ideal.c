// SPDX-License-Identifier: BSD-2-Clause
/* The paper's ideal iteration (ps/README.md, "Modes"), computed on the profile and the
 * bottleneck rate. */
#include <stdlib.h>
#include <string.h>

#include "ideal.h"

#define IDEAL_ROUNDS 8 /* the recurrence settles after one round; a few more cost nothing */

/*
 * One node's egress as a preemptive priority fluid server: work[l] (seconds) becomes ready at
 * ready[l]; lower l always served first. done[l] gets each layer's completion time.
 */
static void priority_link(int n, const double *ready, const double *work, double *done)
{
	double *left = malloc(n * sizeof(double));
	double t = 0;
	int pending = 0;

	for (int l = 0; l < n; l++) {
		left[l] = work[l];
		done[l] = ready[l];
		if (work[l] > 0)
			pending++;
	}
	while (pending > 0) {
		int cur = -1;
		double next_arrival = -1;

		for (int l = 0; l < n; l++) {
			if (left[l] <= 0)
				continue;
			if (ready[l] <= t) {
				if (cur < 0)
					cur = l;
			} else if (next_arrival < 0 || ready[l] < next_arrival) {
				next_arrival = ready[l];
			}
		}
		if (cur < 0) {
			t = next_arrival;
			continue;
		}
		double finish = t + left[cur];
		if (next_arrival >= 0 && next_arrival < finish) {
			left[cur] -= next_arrival - t; /* preempted (or not) at the next arrival */
			t = next_arrival;
			continue;
		}
		t = finish;
		left[cur] = 0;
		done[cur] = t;
		pending--;
	}
	free(left);
}

/* Layer l's bytes[l] through one priority link of rate_Bps: each pull completes no earlier
 * than the link has carried its layer (work and done are scratch). */
static void pulls_through_link(int L, const double *ready, const double *bytes, double rate_Bps,
			       double *work, double *done, double *pull)
{
	for (int l = 0; l < L; l++)
		work[l] = bytes[l] / rate_Bps;
	priority_link(L, ready, work, done);
	for (int l = 0; l < L; l++)
		if (done[l] > pull[l])
			pull[l] = done[l];
}

double ps_ideal_iteration(const struct ps_ideal_in *in, double *comm_only, double *compute_only)
{
	int L = in->nlayers;
	double *pull = calloc(L, sizeof(double)), *ready = calloc(L, sizeof(double));
	double *work = calloc(L, sizeof(double)), *done = calloc(L, sizeof(double));
	double fp_end = 0, prev_end = 0, iter = 0, start = 0;

	for (int r = 0; r <= IDEAL_ROUNDS; r++) {
		double tau = start, t;

		for (int l = 0; l < L; l++) {
			if (r > 0 && pull[l] > tau)
				tau = pull[l]; /* layer l waits only for its own pull */
			tau += in->fwd_s[l];
		}
		prev_end = fp_end;
		fp_end = tau;
		if (r > 0)
			iter = fp_end - prev_end;
		t = fp_end;
		for (int l = L - 1; l >= 0; l--) {
			t += in->bwd_s[l];
			ready[l] = t;
		}
		start = t; /* the next forward pass follows the backward pass */
		for (int l = 0; l < L; l++)
			pull[l] = ready[l];
		for (int n = 0; n < in->nodes; n++)
			pulls_through_link(L, ready, in->egress_bytes + n * L, in->rate_Bps, work,
					   done, pull);
		/* the uplink of two racks: one more priority link per direction */
		for (int d = 0; d < 2 && in->uplink_Bps > 0 && in->uplink_bytes; d++)
			pulls_through_link(L, ready, in->uplink_bytes + d * L, in->uplink_Bps, work,
					   done, pull);
	}
	if (compute_only) {
		double c = 0;
		for (int l = 0; l < L; l++)
			c += in->fwd_s[l] + in->bwd_s[l];
		*compute_only = c;
	}
	if (comm_only) {
		double worst = 0;
		for (int n = 0; n < in->nodes; n++) {
			double s = 0;
			for (int l = 0; l < L; l++)
				s += in->egress_bytes[n * L + l];
			if (s > worst)
				worst = s;
		}
		*comm_only = worst / in->rate_Bps;
		for (int d = 0; d < 2 && in->uplink_Bps > 0 && in->uplink_bytes; d++) {
			double s = 0;
			for (int l = 0; l < L; l++)
				s += in->uplink_bytes[d * L + l];
			if (s / in->uplink_Bps > *comm_only)
				*comm_only = s / in->uplink_Bps;
		}
	}
	free(pull);
	free(ready);
	free(work);
	free(done);
	return iter;
}

void ps_egress_bytes(const struct ps_placement *pl, int nodes, double *out)
{
	int L = pl->nlayers;

	memset(out, 0, sizeof(double) * nodes * L);
	for (int i = 0; i < pl->nslices; i++) {
		const struct ps_slice *s = &pl->slices[i];
		double bytes = (double)s->len * 4;

		for (int n = 0; n < nodes; n++) {
			if (n == s->server)
				out[n * L + s->layer] +=
				    bytes * (nodes - 1); /* pull to the others */
			else
				out[n * L + s->layer] += bytes; /* push to a remote server */
		}
	}
}

int ps_rack_of(int node, int nodes)
{
	return node >= (nodes + 1) / 2;
}

void ps_uplink_bytes(const struct ps_placement *pl, int nodes, double *out)
{
	int L = pl->nlayers;

	memset(out, 0, sizeof(double) * 2 * L);
	for (int i = 0; i < pl->nslices; i++) {
		const struct ps_slice *s = &pl->slices[i];
		int home = ps_rack_of(s->server, nodes);
		double bytes = (double)s->len * 4;

		for (int n = 0; n < nodes; n++) {
			if (ps_rack_of(n, nodes) == home)
				continue;
			out[!home * L + s->layer] += bytes; /* push from n's rack to the server's */
			out[home * L + s->layer] += bytes;  /* its pull back */
		}
	}
}
