// SPDX-License-Identifier: BSD-2-Clause
/*
 * The emulated worker of the cluster benchmark: a node whose compute is the profile's sleeps,
 * driving the same push / pull calls a training framework makes through the worker library.
 *
 * Forward pass of layer l waits only for layer l's pull of the previous iteration; the
 * backward pass pushes each layer as soon as its gradient is "ready".
 */
#include <errno.h>
#include <stdlib.h>

#include "core.h"
#include "profile.h"
#include "transport.h"

static int emulate(struct ps_node *n, const struct ps_profile *prof, struct ps_result *res)
{
	int total = n->cfg.warmup + n->cfg.iters, r = 0;
	double cursor = ps_now();

	for (int it = 0; it <= total; it++) {
		for (int l = 0; l < n->L; l++) {
			if (it > 0) {
				r = ps_node_wait_pull(n, l, (uint64_t)it - 1, NULL);
				if (r)
					return r;
				double now = ps_now();
				if (now > cursor)
					cursor = now;
			}
			double t0 = cursor;
			cursor += prof->layers[l].fwd_s * n->cfg.time_scale;
			ps_sleep_until(cursor);
			ps_record(n, 'f', l, (uint64_t)it, t0, cursor);
		}
		res->fp_end[it] = cursor;
		if (it == total)
			break;
		for (int l = n->L - 1; l >= 0; l--) {
			double t0 = cursor;

			cursor += prof->layers[l].bwd_s * n->cfg.time_scale;
			if (n->cfg.rank == n->cfg.slow_rank)
				cursor += n->cfg.slow_s;
			ps_sleep_until(cursor);
			ps_record(n, 'b', l, (uint64_t)it, t0, cursor);
			if (n->cfg.rank == n->cfg.die_rank && it == 1 && l == n->L / 2) {
				/* simulated crash: ps_fail drops every connection, no goodbye */
				ps_fail(n, "worker %d: injected disconnect mid-iteration",
					n->cfg.rank);
				return -ECONNABORTED;
			}
			r = ps_node_push(n, l, (uint64_t)it, NULL);
			if (r)
				return r;
		}
	}
	res->iter_s = (res->fp_end[total] - res->fp_end[n->cfg.warmup]) / n->cfg.iters;
	res->conns = n->K;
	r = ps_node_finish(n, &res->split_sockets, &res->split_queues);
	/* after the goodbyes: the receivers have read everything, so each window is the whole
	 * one the buffer gives */
	res->peer_window = ps_transport_peer_window_max(n);
	return r;
}

int ps_node_run(const struct ps_config *cfg, const struct ps_profile *prof, struct ps_result *res,
		char *err, size_t errlen)
{
	struct ps_node *n;
	uint64_t *params = ps_profile_params(prof);
	int r, rs;

	if (!params)
		return -ENOMEM;
	r = ps_node_start(cfg, params, prof->nlayers, &n, err, errlen);
	free(params);
	if (r)
		return r;
	r = emulate(n, prof, res);
	rs = ps_node_stop(n, res, err, errlen);
	return r ? r : rs;
}
