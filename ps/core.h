/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every part of one PS node (server + worker) shares: the node's and its connections' state
 * and core.c's primitives. Each role has its own header for what it offers the others:
 * sendq.h, tag.h, drain.h, worker.h, server.h; node.c (start, stop) sits on top of them all.
 */
#ifndef MERCURY_PS_CORE_H
#define MERCURY_PS_CORE_H

#include <stdatomic.h>
#include <stdio.h>

#include "iter_window.h"
#include "ps.h"
#include "tcp_stream.h" /* tcp_bytes_acked() */
#include "sendq.h"

enum ps_dir { PS_DIR_PUSH = 0, PS_DIR_PULL = 1 };

struct ps_node;

/* Sockets of one worker-server pair: --conns for pushes and as many for pulls (mercury). */
#define PS_MAX_PAIR_CONNS (2 * PS_MAX_CONNS)

#define PS_ITER_SLOTS 4 /* iterations a node can have open at once, at most */

struct ps_conn {
	struct ps_node *node;
	int fd;
	int peer;  /* rank of the node at the other end */
	int index; /* connection index within the worker-server pair */
	bool worker_side;
	bool direct; /* data to this process's own other half: memory, not the socket */
	struct ps_sendq q;
	pthread_t tx, rx;
	bool threads;
	float *scratch;		      /* worker side, when pulls are not kept */
	void *tag;		      /* libmercury registration (mercury mode) */
	bool got_bye;		      /* server side: the worker closes this one on purpose */
	atomic_uint_fast64_t written; /* bytes written into the socket so far */
	uint64_t acked_base;	      /* the kernel's acknowledged count before any write */
};

/* A slice this node serves. */
struct ps_sslice {
	pthread_mutex_t mu;
	const struct ps_slice *sl;
	float *recv[PS_MAX_NODES];
	float *sum;
	uint64_t cur_iter;		 /* iteration being aggregated */
	uint64_t got[PS_MAX_NODES];	 /* contiguous params received from each worker ... */
	uint64_t got_iter[PS_MAX_NODES]; /* ... in this iteration */
	uint64_t agg;			 /* params of cur_iter summed and sent */
};

struct ps_part { /* partition mode: one partition's push + pull, the scheduler's task */
	uint64_t iter;
	int part; /* placement's tensor index: ordered by layer, then partition */
};

struct ps_event {
	uint64_t iter;
	int layer;
	char kind; /* 'f' forward, 'b' backward, 'p' push write, 'l' pull receive, 'e' iteration end
		    */
	double t0, t1;
};

struct ps_node {
	struct ps_config cfg;
	struct ps_placement pl;
	uint64_t layout; /* layout_hash(): what HELLO checks */
	double t_start;
	int L, K;     /* layers, connections per pair and direction */
	int C;	      /* connections per pair: K, or 2 K in mercury mode (pulls on their own) */
	int *conn_of; /* layer -> connection index, 0 .. K - 1 */
	uint64_t *orig, *len;

	/* server side */
	int listen_fd;
	struct ps_conn *sconn[PS_MAX_NODES][PS_MAX_PAIR_CONNS];
	struct ps_sslice *ss; /* indexed by slice; only own slices allocated */
	int byes;	      /* goodbyes received, one per connection */
	pthread_t acceptor;
	bool acceptor_started;

	/* worker side */
	struct ps_conn *wconn[PS_MAX_NODES][PS_MAX_PAIR_CONNS];
	pthread_mutex_t mu; /* worker state, byes, readies, events */
	pthread_cond_t cv;
	uint64_t *pulled;      /* per layer: params of the current pull received */
	uint64_t *ready_iter;  /* per layer: iterations whose pull is complete */
	double *pull_first;    /* per layer: first pull byte of the current iteration */
	uint64_t *pushed_iter; /* per layer: the next iteration it may be pushed for */
	uint64_t *grad_ready;  /* per layer: iterations whose gradient is in place (partition) */
	int *layers_pulled;    /* per iteration slot: layers whose pull is complete */
	uint64_t begun;	       /* iterations begun (first push) so far */
	float **grad, **param; /* per layer: own copies (library/verify), made on first use */
	/* Per layer (n->mu): where the current push is read from and where its pull lands: the
	 * own copies, or the caller's buffers (ps_node_push_inplace). */
	const float **push_src;
	float **pull_dst;
	float *shared_grad; /* without verify: one constant buffer for all pushes */
	/* partition mode (worker.c): rank 0 schedules from a priority queue and announces each
	 * dispatch (PS_MSG_ORDER); the other ranks dispatch in that order, as they learn it. */
	struct ps_part *parts; /* rank 0: the queue, a heap by (iteration, tensor) */
	int nparts, capparts;
	struct ps_part *order; /* other ranks: announced, not yet dispatched, FIFO */
	int order_head, norder, caporder;
	int *part_slice;       /* per placed tensor: its first slice (nparts + 1 entries) */
	int *part_left;	       /* per placed tensor: slices whose pull has not arrived */
	uint64_t inflight;     /* parameters pushed whose aggregate has not arrived */
	uint64_t max_inflight; /* the most ever at once */
	double engine_free;    /* when the framework engine's last op start-up ends */
	int readies;
	int byes_sent; /* our goodbyes actually written */
	/* Iteration end for the tags (drain.c): the worker has all its pulls and every pull
	 * the server owes is acknowledged, so the node's older traffic keeps precedence until
	 * it has arrived. Indexed by iteration % PS_ITER_SLOTS. */
	uint64_t pulls_written[PS_ITER_SLOTS]; /* (slice, worker) pulls fully written */
	bool worker_pulled[PS_ITER_SLOTS];
	uint64_t pulls_owed; /* own slices x workers */
	bool drain_armed[PS_ITER_SLOTS], drained[PS_ITER_SLOTS];
	uint64_t drain_iter[PS_ITER_SLOTS];
	uint64_t drain_target[PS_ITER_SLOTS][PS_MAX_NODES][PS_MAX_PAIR_CONNS]; /* bytes written */
	pthread_t drainer;
	pthread_cond_t drain_cv;
	bool drainer_started;
	struct iter_window win; /* iterations ended at this node; win.oldest_open: the oldest not */
	bool worker_done;
	uint64_t mismatches, pulls_checked;

	/* state */
	atomic_bool failed, closing;
	char err[256];
	atomic_uint_fast64_t bytes_sent;
	void *tagger; /* libmercury client, mercury mode */
	atomic_uint_fast64_t tag_errors;
	struct ps_event *ev;
	int nev, capev;
};

/* core.c: what every part of a node uses; calls nothing above it. */
double ps_now(void);
void ps_sleep_until(double t); /* a ps_now() time */
/* Shuts every connection and the listener, wakes every waiter (teardown, failure). */
void ps_shutdown_all(struct ps_node *n);
void ps_fail(struct ps_node *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ps_record(struct ps_node *n, char kind, int layer, uint64_t iter, double t0, double t1);
int ps_conn_of_layer(const struct ps_node *n, int layer, enum ps_dir dir);
int ps_enqueue(struct ps_conn *c, uint16_t type, int slice, uint64_t iter, uint64_t off,
	       uint64_t len, const void *data, uint64_t key);
/* Same, written no earlier than not_before (ps_now() time). */
int ps_enqueue_at(struct ps_conn *c, uint16_t type, int slice, uint64_t iter, uint64_t off,
		  uint64_t len, const void *data, uint64_t key, double not_before);

/* Which halves this process runs (cfg.role). */
static inline bool ps_has_server(const struct ps_node *n)
{
	return n->cfg.role != PS_ROLE_WORKER;
}

static inline bool ps_has_worker(const struct ps_node *n)
{
	return n->cfg.role != PS_ROLE_SERVER;
}

/* Whether the node keeps gradients and pulled results (verify, or a library caller's data). */
static inline bool ps_keeps_data(const struct ps_node *n)
{
	return n->cfg.verify || n->cfg.user_data;
}
/* Whether the node tags its bytes through libmercury: mercury mode (by layer), or per-job
 * priority (cfg.job_band: the whole job in one band). */
static inline bool ps_tags(const struct ps_node *n)
{
	return n->cfg.mode == PS_MERCURY || n->cfg.job_band >= 0;
}
#endif
