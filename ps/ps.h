/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Mercury's reference parameter server: types shared by its parts.
 *
 * One process per node runs a server (owns some tensor slices, aggregates) and a worker
 * (emulated compute, pushes gradients, pulls aggregated results), the paper's co-located
 * layout. Everything is in one struct ps_node so several nodes can live in one process
 * (the unit tests run small clusters over loopback that way).
 */
#ifndef MERCURY_PS_H
#define MERCURY_PS_H

#include <pthread.h>
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

/* ---- model profile (models/NAME.prof) ---- */

struct ps_layer {
	char name[48];
	uint64_t params; /* as in the model definition */
	double fwd_s;	 /* emulated forward time at the profile's GPU speed */
	double bwd_s;
};

struct ps_profile {
	char model[48];
	int nlayers;
	struct ps_layer *layers; /* layer 0 = input side */
};

/* Loads a profile; 0, or negative errno with a message in err. */
int ps_profile_load(const char *path, struct ps_profile *p, char *err, size_t errlen);
/* A model given as "N,N,..." (parameters per layer, forward order; no compute times). */
int ps_profile_from_list(const char *list, struct ps_profile *p, char *err, size_t errlen);
void ps_profile_free(struct ps_profile *p);
/* The layers' parameter counts as an array (caller frees), or NULL without memory. */
uint64_t *ps_profile_params(const struct ps_profile *p);

/* ---- placement (MXNet KVStore rules) ---- */

struct ps_slice {
	int layer;
	int part; /* the tensor (a whole layer, or one partition of it) the slice belongs to */
	int server;
	uint64_t off; /* first parameter of the slice within the (shrunk) tensor */
	uint64_t len; /* parameters */
};

struct ps_placement {
	int nlayers;
	int nslices;
	int nparts;		 /* tensors placed: layers, or their partitions */
	struct ps_slice *slices; /* ordered by layer, then offset */
	int *first;		 /* per layer: index of its first slice */
	int *count;		 /* per layer: number of slices */
	uint64_t *len;		 /* per layer: shrunk parameter count */
};

/*
 * Places every layer: a layer whose original parameter count exceeds `bound` (or every layer
 * when split_all) is sliced evenly over all servers, the first (len % n) slices one larger;
 * a smaller one lives whole on server (layer * 9973) % n, MXNet's default key hash, or with
 * `balanced` on the server that holds the fewest parameters so far (forward order; the
 * hash can leave one server most of a model whose small layers alternate in size).
 * orig decides, len (the shrunk counts, each >= 1) is what gets sliced.
 * part != 0 (partition mode, shrunk parameters): a layer longer than part is first cut into
 * partitions of part, each a tensor of its own with key layer + i, placed by the same rule,
 * so consecutive partitions land on different servers (ByteScheduler's keys `name_i`).
 */
int ps_place(const uint64_t *orig, const uint64_t *len, int nlayers, int nservers, uint64_t bound,
	     bool split_all, bool balanced, uint64_t part, struct ps_placement *pl);
void ps_placement_free(struct ps_placement *pl);

/*
 * Layer -> connection of a worker-server pair (mercury mode). The daemon's policy puts the
 * layers of the current iteration into `groups` priority groups, group(l) = l * groups / L
 * (daemon/policy.c: bands - 2 groups for 4..16 bands). A socket whose bytes change band
 * reorders its own packets (spurious retransmits), so no connection ever spans two groups:
 * each group gets its share of the `conns` sockets and splits its layers evenly over them.
 * Fills conn_of[0..nlayers) and returns the number of connections used.
 */
int ps_map_connections(int nlayers, int conns, int groups, int *conn_of);

/* ---- the ideal iteration (ps/README.md, "Modes": the paper's bound) ---- */

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

/* ---- wire protocol ---- */

#define PS_MAGIC 0x4d505331u /* "MPS1" */

enum ps_msg_type {
	PS_MSG_HELLO = 1, /* worker -> server: layer = worker rank, slice = connection index,
			   * iter = the worker's model layout hash */
	PS_MSG_READY,	  /* server -> worker: every worker's connections are in */
	PS_MSG_PUSH,	  /* worker -> server: gradient floats [off, off+len) of a slice */
	PS_MSG_ORDER,	  /* rank 0's worker -> server (partition): rank 0 dispatched tensor
			   * `off` of iteration `iter`; the server's own worker follows suit */
	PS_MSG_PULL_DATA, /* server -> worker: aggregated floats [off, off+len) */
	PS_MSG_BYE,	  /* worker -> server: done, closing is no error from now on */
	PS_MSG_REFUSE,	  /* server -> worker: HELLO's layout (iter) is not the server's */
};

struct ps_msg_hdr {
	uint32_t magic;
	uint16_t type;
	uint16_t pad;
	uint32_t layer;
	uint32_t slice; /* index in the placement */
	uint64_t iter;
	uint64_t off; /* parameters, within the slice */
	uint64_t len; /* parameters; payload is len * 4 bytes for PUSH and PULL_DATA */
};

int ps_read_full(int fd, void *buf, size_t len);
int ps_write_msg(int fd, const struct ps_msg_hdr *h, const void *payload, size_t payload_len);

/* ---- run configuration ---- */

struct ps_config {
	enum ps_mode mode;
	enum ps_role role;
	int nodes;
	int rank;
	char hosts[PS_MAX_NODES][64];
	uint16_t port;
	int conns;	  /* connections per worker-server pair (mercury mode) */
	int rcvbuf;	  /* mercury: SO_RCVBUF of every data connection's receiving end, a
			   * bound on each connection's bytes in flight (incast); 0: the
			   * kernel's autotuning */
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
int ps_node_finish(struct ps_node *n, uint64_t *split_sockets);
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
int ps_node_run(const struct ps_config *cfg, const struct ps_profile *prof, struct ps_result *res,
		char *err, size_t errlen);

/* The deterministic gradient of worker w for (layer, iteration, index); exact floats. */
float ps_grad_value(int worker, int layer, uint64_t iter, uint64_t index);

#endif
