/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * libmercury-ps: the worker side of Mercury's reference parameter server, for training
 * frameworks (mercury.torch uses it through ctypes).
 *
 * Every training process is a node of the paper's co-located layout: it serves a share of
 * the model's tensors (the server role runs in the library's threads) and is a worker that
 * pushes its gradients and pulls the aggregates. With external_servers the share is served
 * by a `mercury-ps serve` process per node instead (started with the same layout). A layer is what
 * the framework updates as one unit (a module with parameters), in forward order; its gradient is
 * one contiguous float array of layer_params[layer] values.
 *
 *   struct mercury_ps_options o = MERCURY_PS_OPTIONS_INIT;   (then rank, nodes, hosts, ...)
 *   mercury_ps_open(&o, &ps, err, sizeof(err));
 *   per iteration i: for each layer as its gradient is ready (backward order):
 *           mercury_ps_push(ps, layer, i, grad);           queued, returns at once
 *       then before layer's next forward pass:
 *           mercury_ps_wait_pull(ps, layer, i, sum);       the sum over every worker
 *   mercury_ps_close(ps, err, sizeof(err));                once every worker is done
 *
 * All I/O runs in the library's threads; push copies the gradient, so the caller may reuse
 * its buffer when push returns. Calls return 0 or a negative errno; after a failure (a peer
 * gone, a model that differs, no progress for timeout_s) mercury_ps_error() says why.
 * In mercury mode each message is tagged through libmercury (mercuryd's service or its
 * fast path); without mercuryd the run goes on untagged after one warning.
 */
#ifndef MERCURY_PS_API_H
#define MERCURY_PS_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum mercury_ps_mode {
	MERCURY_PS_FIFO = 0,	  /* whole tensors in ready order */
	MERCURY_PS_PARTITION = 1, /* ByteScheduler: partitions as tensors, credit push to pull */
	MERCURY_PS_MERCURY = 2,	  /* whole tensors, per-packet layer priority (tags) */
};

enum mercury_ps_placement {
	MERCURY_PS_PLACE_HASH = 0, /* a tensor not sliced lives on server (layer * 9973) % nodes,
				    * MXNet KVStore's default key hash */
	MERCURY_PS_PLACE_BALANCED = 1, /* ... on the server holding the fewest parameters so far,
					* in forward order */
};

struct mercury_ps_options {
	size_t sz; /* sizeof(struct mercury_ps_options) where the caller was built (set by
		    * MERCURY_PS_OPTIONS_INIT): a caller built against an older, shorter layout
		    * gets the defaults for the fields it does not know */
	int rank, nodes;
	const char *const *hosts;     /* nodes entries, "a.b.c.d:port": every node's server */
	const uint64_t *layer_params; /* nlayers entries, forward order */
	int nlayers;
	enum mercury_ps_mode mode;
	int conns;	       /* mercury: connections per worker-server pair (4) */
	int bands;	       /* mercury: bands of mercuryd's interfaces (8) */
	uint64_t part, credit; /* partition: parameters per partition / in flight */
	uint64_t bound;	       /* tensors above this many parameters are sliced over
				* every server (1000000, MXNet's default) */
	double timeout_s;      /* no progress for this long: error (60) */
	const char *timeline;  /* per-layer push/pull events (TSV) at close, or NULL */
	int external_servers;  /* 0: this process serves its node's share (the co-located
				* layout); 1: `mercury-ps serve` processes at hosts[] do */
	int colocated_tcp;     /* co-located: 0 (the default): this process's worker and
				* server exchange their data through memory; 1: through
				* loopback TCP, as with any other node */
	enum mercury_ps_placement placement; /* every node and server must agree (HELLO checks) */
	/* The job towards mercuryd (added after placement: a caller built before gets 1, 1, -1). */
	uint32_t job;	 /* job id declared to mercuryd, >= 1 (1); ids are per user: two
			  * jobs of one user on a node need different ones */
	uint32_t weight; /* 1..1000 (1): a job of weight w yields floor(log2(w_max / w))
			  * bands to the heaviest job on the node (2:1 = one band) */
	int job_band;	 /* fifo, partition: >= 0 tags every byte of the job at this one
			  * band (per-job priority, 0 .. bands - 3); -1 (default): none */
	/* Added after job_band (a caller built before gets MERCURY_PS_RCVBUF_AUTO). */
	int rcvbuf; /* mercury: SO_RCVBUF of each data connection's receiving end, bytes: a bound
		     * on each connection's window, so that N-to-1 pushes do not overflow a
		     * switch port (MERCURY_PS_RCVBUF_AUTO, the default: 0 up to 2 nodes,
		     * 16384 up to 4, then 65536 / nodes, at least 8192; 0: the kernel's
		     * autotuning; docs/fabric.md) */
	/* Added after rcvbuf, in what was the struct's tail padding: a caller built before gets
	 * what its options held there (0 where they were zeroed, as MERCURY_PS_OPTIONS_INIT
	 * does in practice; anything above 16 is refused). */
	int dscp_queues; /* mercury: > 1: the switch ports serve the bands' DSCP (mercuryd
			  * attach --dscp) from this many strict-priority queues, band b of
			  * `bands` in queue b * dscp_queues / bands; every connection then
			  * carries the layers of one queue, max(conns, queues used) of them
			  * (0, off: docs/switch-dscp.md) */
	/* Added after dscp_queues (a caller built before gets 0). */
	int pulls_alike; /* mercury: 0 (default): each pull tagged one layer group below its
			  * layer, so a layer's pushes go ahead of its pulls (docs/fabric.md);
			  * 1: pushes and pulls of a layer alike (the order of the figures
			  * measured before that became the default) */
};

#define MERCURY_PS_RCVBUF_AUTO (-1) /* rcvbuf by the node count */

#define MERCURY_PS_OPTIONS_INIT                                                                    \
	{                                                                                          \
		.sz = sizeof(struct mercury_ps_options), .conns = 4, .bands = 8, .part = 1000000,  \
		.credit = 4000000, .bound = 1000000, .timeout_s = 60, .job = 1, .weight = 1,       \
		.job_band = -1, .rcvbuf = MERCURY_PS_RCVBUF_AUTO                                   \
	}

struct mercury_ps;

/* Listens on hosts[rank]'s port (unless external_servers), connects to every node's server,
 * returns once every server has all its workers (or after timeout_s with an error).
 * -EINVAL for options not made with MERCURY_PS_OPTIONS_INIT (sz 0); -E2BIG for options of a
 * newer library that set a field this one does not have. */
int mercury_ps_open(const struct mercury_ps_options *o, struct mercury_ps **out, char *err,
		    size_t errlen);
/* Layer's gradient of iteration iter (layer_params[layer] floats). Each layer once per
 * iteration, iterations in order, and after the previous iteration's pull of that layer
 * (-EALREADY otherwise). The first push of an iteration begins it. */
int mercury_ps_push(struct mercury_ps *ps, int layer, uint64_t iter, const float *grad);
/* mercury_ps_push without copies: grad is read where it is and the sum lands straight in out
 * (layer_params[layer] floats each). Both stay the caller's, unchanged by it, until
 * mercury_ps_wait_pull(ps, layer, iter, out) has returned; that call then copies nothing. */
int mercury_ps_push_inplace(struct mercury_ps *ps, int layer, uint64_t iter, const float *grad,
			    float *out);
/* Blocks until the sum over every worker of layer's gradients of iteration iter is here and
 * copies it to out (layer_params[layer] floats). -EINVAL for a layer not pushed yet. */
int mercury_ps_wait_pull(struct mercury_ps *ps, int layer, uint64_t iter, float *out);
/* 1 when mercury_ps_wait_pull(ps, layer, iter, ...) would return at once (the aggregate is
 * here, or the session has failed and it would return the error), 0 when it would block;
 * -EINVAL for a layer not pushed for iter. Lets a framework apply, in one optimizer call, the
 * updates of every layer already here. */
int mercury_ps_pull_ready(struct mercury_ps *ps, int layer, uint64_t iter);
/* Why the session failed, or NULL while it has not. */
const char *mercury_ps_error(struct mercury_ps *ps);
/* Waits until every iteration pushed here has been pulled and (unless external_servers)
 * every worker has closed too (this node serves them until then), then frees everything. 0, or
 * negative errno with the reason in err. Also after a failure (to free). */
int mercury_ps_close(struct mercury_ps *ps, char *err, size_t errlen);
/* Tagged in mercury mode (mercuryd answered). */
int mercury_ps_tagged(struct mercury_ps *ps);
/* Tags made so far through mercuryd's fast path and through its service (mercury mode; 0 and
 * 0 untagged). Either pointer may be NULL. */
void mercury_ps_tag_counts(struct mercury_ps *ps, uint64_t *fastpath, uint64_t *service);

#ifdef __cplusplus
}
#endif
#endif
