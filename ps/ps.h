/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Mercury's reference parameter server: a node's configuration, result and calls. The pure
 * parts have their own headers: profile.h, placement.h, ideal.h, wire.h.
 *
 * One process per node runs a server (owns some tensor slices, aggregates) and a worker
 * (emulated compute, pushes gradients, pulls aggregated results), the paper's co-located
 * layout. Everything is in one struct ps_node so several nodes can live in one process
 * (the unit tests run small clusters over loopback that way).
 */
#ifndef MERCURY_PS_H
#define MERCURY_PS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PS_MAX_NODES 16
#define PS_MAX_CONNS 16

enum ps_mode {
	PS_FIFO = 0,  /* vanilla PS: whole tensors in ready order, aggregate whole tensors */
	PS_PARTITION, /* ByteScheduler: partitions as tensors, credit over push + pull, rank 0
			 orders */
	PS_MERCURY,   /* whole tensors, packet priority via tags, immediate aggregation */
	PS_MODE_MAX,
};

/* What one process of a node runs: both halves (the paper's co-located layout), or one. */
enum ps_role {
	PS_ROLE_NODE = 0, /* server + worker */
	PS_ROLE_SERVER,	  /* `mercury-ps serve`: this node's share of the tensors only */
	PS_ROLE_WORKER,	  /* pushes and pulls; every node's share served by another process */
};

const char *ps_mode_name(enum ps_mode m);
int ps_mode_from_name(const char *s, enum ps_mode *out);

struct ps_config {
	enum ps_mode mode;
	enum ps_role role;
	int nodes;
	int rank;
	char hosts[PS_MAX_NODES][64];
	uint16_t port;
	int conns;	  /* connections per worker-server pair (mercury mode) */
	int dscp_queues;  /* mercury: > 1: the switch ports serve the bands' DSCP from this many
			   * strict-priority queues, bands spread evenly (band b in queue
			   * b * Q / bands): every connection carries the layers of one queue
			   * (ps_map_connections_queues), max(conns, queues used) of them;
			   * 0 or 1: sockets follow the layer groups only */
	int rcvbuf;	  /* mercury: SO_RCVBUF of every data connection's receiving end, a
			   * bound on each connection's bytes in flight (incast); 0: the
			   * kernel's autotuning; < 0: by the node count (ps_rcvbuf_for) */
	uint64_t chunk;	  /* immediate-aggregation chunk, parameters */
	uint64_t part;	  /* partition mode: parameters per partition */
	uint64_t credit;  /* partition mode: parameters in flight, push to pull */
	double op_cost_s; /* start-up of each push op (a tensor, or a partition) in the
			   * framework's engine, serial per worker; emulated seconds */
	uint64_t bound;	  /* MXNET_KVSTORE_BIGARRAY_BOUND */
	bool split_all;
	bool balanced;	   /* whole tensors on the least loaded server, not by key hash */
	uint64_t shrink;   /* parameter counts divided by this */
	double time_scale; /* profile compute times multiplied by this */
	int iters, warmup;
	bool verify;	  /* pseudo-random gradients, every pull checked bitwise */
	double timeout_s; /* no progress for this long: error */
	double slow_s;	  /* extra compute per layer on worker slow_rank (tests) */
	int slow_rank;
	int die_rank;	      /* this worker exits mid-iteration (tests); -1: none */
	const char *timeline; /* TSV of per-layer events, or NULL */
	int tag_levels;	      /* priority levels the tags use (mercury) */
	uint32_t sock_prio;   /* != 0: connection k gets SO_PRIORITY sock_prio + k, a per-socket
			       * stand-in for tags where no mercuryd is available */
	bool write_ahead;     /* mercury: write the next iteration's pushes before this node's
			       * iteration has ended (tagged at the next-iteration level) */
	bool pulls_below;     /* mercury: tag each pull one layer group below its layer, so a
			       * layer's pushes go ahead of its pulls (a pull waits for every
			       * worker's push; a push waits for nothing) */
	bool user_data;	      /* gradients come from the caller and pulls are kept for it
			       * (the worker library); otherwise a constant stands in */
	bool local_direct;    /* the worker's data for its own node's server (same process)
			       * goes through memory, not loopback TCP (control messages still
			       * use the sockets) */
	uint32_t job;	      /* the job id declared to mercuryd (per user; 1) */
	uint32_t weight;      /* its weight against other jobs on the node, 1..1000 (1) */
	int job_band;	      /* >= 0: per-job priority, every byte the job writes tagged at
			       * this one band (fifo and partition modes); -1: none */
};

void ps_config_defaults(struct ps_config *c);

/* The window bound a configuration uses: rcvbuf as given (0: autotuning), or for rcvbuf < 0
 * (the default) none (autotuning) at 1-2 nodes, 16 KiB at 3-4, then 64 KiB / nodes down to
 * 8 KiB. */
int ps_rcvbuf_for(int rcvbuf, int nodes);

/* The SO_RCVBUF a run sets on its data connections: ps_rcvbuf_for in mercury mode, else 0. */
int ps_rcvbuf_of(const struct ps_config *c);

/* Whether a run tags each pull one layer group below its layer: mercury mode, no job band.
 * Inline: tag.c asks it, and node.c uses tag.c. */
static inline bool ps_pulls_ranked_below(const struct ps_config *c)
{
	return c->mode == PS_MERCURY && c->job_band < 0 && c->pulls_below;
}

/* Per-node result. */
struct ps_result {
	double iter_s;	     /* steady-state iteration time measured by this worker */
	double *fp_end;	     /* forward-pass end per iteration (warmup+iters+1 values) */
	uint64_t bytes_sent; /* payload + headers written by this node */
	uint64_t mismatches; /* verify: floats that differed from the local reference */
	uint64_t pulls_checked;
	double cpu_s;
	bool tagged;		/* mercury mode: tags reached mercuryd */
	uint64_t tags_fastpath; /* tags through mercuryd's fast path (one setsockopt) */
	uint64_t tags_service;	/* tags through mercuryd's service (a round trip) */
	uint64_t tag_errors;	/* tag calls that failed */
	uint64_t split_sockets; /* mercury: sockets whose packets went to more than one band */
	uint64_t split_queues;	/* mercury with dscp_queues: sockets whose packets went to bands of
				 * more than one switch queue */
	int conns;		/* data connections per worker-server pair and direction */
	uint32_t peer_window;	/* the largest receive window this node's peers advertised
				 * last on its data connections, bytes (0: unknown) */
	uint64_t max_inflight;	/* partition: most parameters ever in flight, push to pull */
	uint64_t inflight_left; /* partition: in flight at the end (0 unless credit leaked) */
};

/*
 * One node, step by step (the worker library and the emulated worker both drive it):
 * ps_node_start listens, connects to every node's server and waits until every server has
 * all its workers; then per iteration the caller pushes every layer's gradient once
 * (ps_node_push, returns at once; the first push of an iteration begins it) and waits for
 * layers' aggregates (ps_node_wait_pull). ps_node_finish waits until every iteration begun
 * has ended at this node and every worker has said goodbye to this node's server;
 * ps_node_stop tears down and frees (after any of the others, also after a failure).
 * All return 0 or negative errno; after a failure ps_node_error() says why.
 */
struct ps_node;
int ps_node_start(const struct ps_config *cfg, const uint64_t *params, int nlayers,
		  struct ps_node **out, char *err, size_t errlen);
/* grad: the layer's params / shrink floats; NULL: the built-in gradient (verify's values or
 * a constant). Layer l's pushes go in iteration order, each after the previous pull of l. */
int ps_node_push(struct ps_node *n, int layer, uint64_t iter, const float *grad);
/* Without copies: grad is read in place and the aggregate lands in out; both stay the
 * caller's, untouched, until ps_node_wait_pull(n, layer, iter, ...) has returned. */
int ps_node_push_inplace(struct ps_node *n, int layer, uint64_t iter, const float *grad,
			 float *out);
/* Blocks until layer's aggregate (the sum over workers) of iteration iter is here, copies it
 * to out when out is not NULL (user_data or verify only). */
int ps_node_wait_pull(struct ps_node *n, int layer, uint64_t iter, float *out);
/* 1 when ps_node_wait_pull(n, layer, iter, ...) would return at once, 0 when it would block,
 * -EINVAL for a layer out of range or not pushed for iter. */
int ps_node_pull_ready(struct ps_node *n, int layer, uint64_t iter);
int ps_node_finish(struct ps_node *n, uint64_t *split_sockets, uint64_t *split_queues);
/*
 * PS_ROLE_SERVER: ps_node_start returns once the listener is up; this waits up to wait_s for
 * the job to end. 0 once every worker has said goodbye, -ETIMEDOUT if it has not by then
 * (call again), -ECANCELED after a failure (ps_node_error says why).
 */
int ps_node_serve_wait(struct ps_node *n, double wait_s);
int ps_node_stop(struct ps_node *n, struct ps_result *res, char *err, size_t errlen);
const char *ps_node_error(struct ps_node *n);
bool ps_node_tagged(struct ps_node *n);

/*
 * Runs one emulated node (server + a worker whose compute is the profile's sleeps) to the
 * end: cfg->iters + cfg->warmup iterations. res->fp_end must hold warmup + iters + 1
 * doubles. 0, or negative errno with a one-line message in err.
 */
struct ps_profile;
int ps_node_run(const struct ps_config *cfg, const struct ps_profile *prof, struct ps_result *res,
		char *err, size_t errlen);

/* The deterministic gradient of worker w for (layer, iteration, index); exact floats. */
float ps_grad_value(int worker, int layer, uint64_t iter, uint64_t index);

#endif
