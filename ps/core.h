/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What every part of one PS node (server + worker) shares: the node's configuration, placement,
 * sockets and lock, its connections, and core.c's primitives. Each role keeps its own state
 * in a struct of its file and has its own header for what it offers the others: sendq.h,
 * tag.h, drain.h, server.h, worker.h, transport.h; node.c (start, stop, the calls that span
 * roles) sits on top of them all.
 */
#ifndef MERCURY_PS_CORE_H
#define MERCURY_PS_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>

#include "iter_window.h"
#include "mercury_abi.h"
#include "placement.h"
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

struct ps_event {
	uint64_t iter;
	int layer;
	char kind; /* 'f' forward, 'b' backward, 'p' push write, 'l' pull receive, 'e' iteration end
		    */
	double t0, t1;
};

/* Each role's own state, defined and allocated by its file (server.c, worker.c, drain.c,
 * transport.c); the others reach it only through that role's header. */
struct ps_server_state;
struct ps_worker_state;
struct ps_drain_state;
struct ps_transport_state;

/* What every role of a node shares; the rest is in each role's own state. */
struct ps_node {
	struct ps_config cfg;
	struct ps_placement pl;
	uint64_t layout; /* layout_hash(): what HELLO checks */
	double t_start;
	int L, K;     /* layers, connections per pair and direction */
	int C;	      /* connections per pair: K, or 2 K in mercury mode (pulls on their own) */
	int *conn_of; /* layer -> connection index, 0 .. K - 1 */
	int queue_of_band[MERCURY_MAX_LEVELS]; /* cfg.dscp_queues > 1: each band's switch queue */
	uint64_t *orig, *len;

	/* The sockets (transport.c opens and closes them; every role queues messages on them) */
	int listen_fd;
	struct ps_conn *sconn[PS_MAX_NODES][PS_MAX_PAIR_CONNS]; /* server side: from each worker */
	struct ps_conn *wconn[PS_MAX_NODES][PS_MAX_PAIR_CONNS]; /* worker side: to each server */

	/* The node lock: guards the roles' state (except a served slice's, s->mu) and wakes
	 * every waiter of the node (pulls, iteration ends, READY, goodbyes, failure). */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct iter_window win; /* iterations ended at this node (drain.c); win.oldest_open: the
				 * oldest not, which held pushes and the worker's finish wait for */

	struct ps_server_state *server;
	struct ps_worker_state *worker;
	struct ps_drain_state *drain;
	struct ps_transport_state *transport;

	/* failure, counters, tagging, the event record (core.c, tag.c) */
	atomic_bool failed, closing;
	pthread_mutex_t err_mu; /* held while the first failure writes err: a reader that saw
				 * failed takes it once, so it never reads err half written */
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
/* What a timeout of a wait for layer's data adds to its message (called without n->mu). */
typedef void ps_explain_fn(struct ps_node *n, int layer, char *buf, size_t size);
/* Waits (n->mu held) until cond(n, arg) holds: 0; -ECANCELED once the node fails; after
 * timeout_s without it, the node fails ("worker R: no progress for T s waiting for WHAT",
 * and what why(n, layer) adds, when why is not NULL) and -ETIMEDOUT. */
int ps_wait(struct ps_node *n, bool (*cond)(struct ps_node *, long), long arg, const char *what,
	    ps_explain_fn *why, int layer);

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
/* Every connection slot of a node, both sides: for (i = 0; i < PS_CONN_SLOTS; i++) with
 * ps_conn_slot(n, i), NULL where no connection is open. */
#define PS_CONN_SLOTS (2 * PS_MAX_NODES * PS_MAX_PAIR_CONNS)
static inline struct ps_conn *ps_conn_slot(const struct ps_node *n, int i)
{
	int side = i / (PS_MAX_NODES * PS_MAX_PAIR_CONNS),
	    j = i % (PS_MAX_NODES * PS_MAX_PAIR_CONNS);

	return side ? n->sconn[j / PS_MAX_PAIR_CONNS][j % PS_MAX_PAIR_CONNS]
		    : n->wconn[j / PS_MAX_PAIR_CONNS][j % PS_MAX_PAIR_CONNS];
}

#endif
