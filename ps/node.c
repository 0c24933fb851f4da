// SPDX-License-Identifier: BSD-2-Clause
/*
 * One node: setup (model, placement, each role's state, listener, connections to every
 * server), teardown, and the public calls that span roles (ps_node_wait_pull, _finish,
 * _serve_wait). It sits on top of every role (server.c, worker.c, drain.c, transport.c).
 *
 * Tensor -> socket mapping. A TCP stream is ordered, so bytes queued behind a big
 * low-priority tensor wait for it whatever the qdisc does; preemption only happens across
 * sockets. In mercury mode each worker-server pair therefore has K push connections
 * (default 4, at most one per layer) and K pull connections, and layer l travels on
 * connection floor(l * K / L) of each: consecutive layers share a socket, different
 * priority groups never do (ps_map_connections). Each
 * connection's queue is also ordered (older iteration first, then lower layer), so within a
 * socket the next whole tensor handed to TCP is the most urgent one waiting. fifo and
 * partition modes use one connection per pair, as ps-lite does.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core.h"
#include "drain.h"
#include "server.h"
#include "tag.h"
#include "transport.h"
#include "worker.h"
#include "mercury_groups.h"

/*
 * None (the kernel's autotuning) at 1-2 nodes: each node's downlink then carries one sender,
 * whose own egress shaper is the bottleneck, so no switch port queues, and smaller windows
 * only mean smaller packets, each received at a cost (resnet18 on 2 nodes: 16 KiB 1.12-1.18 s
 * an iteration against 1.08-1.13 autotuned, 6 of 6 paired rounds; BENCHMARKS.md "The FIFO port
 * cut big packets").
 * 16 KiB (the kernel doubles it) at 3-4 nodes: a switch port of a quarter MB holds what every
 * worker's connections to one server have in flight at once, where 64 KiB overflowed it. With
 * more nodes the same port meets more senders, so the window shrinks with them (window x
 * (N - 1) about constant); 8 KiB is the floor: a 4 KiB window is about three segments
 * (8 nodes, VGG16: 8 KiB ran without a timeout, 4 KiB slower with 0.5 % retransmitted,
 * 16 KiB met 2-9 timeouts a run; cluster/RESULTS.md "The window bound at 8 nodes").
 */
int ps_rcvbuf_for(int rcvbuf, int nodes)
{
	int scaled;

	if (rcvbuf >= 0)
		return rcvbuf;
	if (nodes <= 2)
		return 0;
	scaled = nodes > 4 ? 65536 / nodes : 16384;
	return scaled < 8192 ? 8192 : scaled;
}

int ps_rcvbuf_of(const struct ps_config *c)
{
	return c->mode == PS_MERCURY ? ps_rcvbuf_for(c->rcvbuf, c->nodes) : 0;
}

void ps_config_defaults(struct ps_config *c)
{
	memset(c, 0, sizeof(*c));
	c->mode = PS_MERCURY;
	c->nodes = 1;
	c->port = 9555;
	/* 4 (layer groups share them, in order): with 16, N - 1 workers' sockets towards one
	 * server overflowed its switch port at 8 nodes or a quarter-MB buffer even with the
	 * window bound (cluster/RESULTS.md, "Full-duplex fabric") */
	c->conns = 4;
	/* By the node count (ps_rcvbuf_for): what the N - 1 workers' connections towards one
	 * server have in flight at once must fit its switch port. */
	c->rcvbuf = -1;
	c->chunk = 65536; /* 256 KiB of floats */
	c->part = 1000000;
	c->credit = 4000000;
	c->bound = 1000000;
	c->shrink = 1;
	c->time_scale = 1;
	c->iters = 5;
	c->warmup = 1;
	c->timeout_s = 60;
	c->slow_rank = -1;
	c->die_rank = -1;
	c->tag_levels = 8;
	c->job = 1;
	c->weight = 1;
	c->job_band = -1;
	/* behind a 2:1 uplink a layer's pulls held back its pushes, which they wait for; one
	 * group lower, ties or gains in every cell measured (cluster/RESULTS.md, "Pushes ahead
	 * of pulls") */
	c->pulls_below = true;
}

/* Every role's state, after the placement is made. */
static int alloc_state(struct ps_node *n)
{
	int r = ps_transport_init(n);

	if (!r)
		r = ps_server_init(n);
	if (!r)
		r = ps_worker_init(n);
	if (!r)
		r = ps_drain_init(n);
	return r;
}

static void free_state(struct ps_node *n)
{
	ps_server_free(n);
	ps_worker_free(n);
	ps_drain_free(n);
	free(n->ev);
	free(n->orig);
	free(n->len);
	free(n->conn_of);
	ps_placement_free(&n->pl);
}

static void write_timeline(struct ps_node *n, double t0)
{
	FILE *f = fopen(n->cfg.timeline, "w");

	if (!f) {
		fprintf(stderr, "mercury-ps: cannot write timeline %s: %s\n", n->cfg.timeline,
			strerror(errno));
		return;
	}
	fprintf(f, "# node\titer\tkind\tlayer\tt0\tt1 (s since start; f=forward b=backward "
		   "p=push written l=pull received e=iteration ended for the tags)\n");
	for (int i = 0; i < n->nev; i++)
		fprintf(f, "%d\t%llu\t%c\t%d\t%.6f\t%.6f\n", n->cfg.rank,
			(unsigned long long)n->ev[i].iter, n->ev[i].kind, n->ev[i].layer,
			n->ev[i].t0 - t0, n->ev[i].t1 - t0);
	fclose(f);
}

/* What a worker and a server must agree on before any float is summed: the model's layer
 * sizes (as placed), the placement rule and the connection layout. FNV-1a over the values. */
static uint64_t layout_hash(const struct ps_node *n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	uint64_t v[] = {(uint64_t)n->L,
			(uint64_t)n->cfg.nodes,
			(uint64_t)n->cfg.mode,
			n->cfg.bound,
			n->cfg.split_all,
			n->cfg.balanced,
			(uint64_t)n->C,
			n->cfg.mode == PS_PARTITION ? n->cfg.part : 0,
			(uint64_t)n->cfg.dscp_queues};
	const size_t nv = sizeof(v) / sizeof(v[0]);

	for (size_t i = 0; i < nv + 2 * (size_t)n->L; i++) {
		uint64_t x = i < nv		 ? v[i]
			     : (i - nv) % 2 == 0 ? n->orig[(i - nv) / 2]
						 : n->len[(i - nv) / 2];
		for (int b = 0; b < 8; b++) {
			h ^= (x >> (8 * b)) & 0xff;
			h *= 0x100000001b3ull;
		}
	}
	return h;
}

/* Sizes, placement and connection map of a model of nlayers with `params` each. */
static int setup_model(struct ps_node *n, const uint64_t *params, char *err, size_t errlen)
{
	const struct ps_config *cfg = &n->cfg;
	int r;

	n->orig = calloc(n->L, sizeof(uint64_t));
	n->len = calloc(n->L, sizeof(uint64_t));
	n->conn_of = calloc(n->L, sizeof(int));
	if (!n->orig || !n->len || !n->conn_of)
		goto nomem;
	for (int l = 0; l < n->L; l++) {
		n->orig[l] = params[l];
		n->len[l] = params[l] / cfg->shrink ? params[l] / cfg->shrink : 1;
	}
	r = ps_place(n->orig, n->len, n->L, cfg->nodes, cfg->bound, cfg->split_all, cfg->balanced,
		     cfg->mode == PS_PARTITION ? cfg->part : 0, &n->pl);
	if (r)
		goto nomem;
	if (cfg->mode == PS_MERCURY && cfg->dscp_queues > 1) {
		/* every socket's bytes in one switch queue: one connection per queue at least */
		ps_band_queues_even(cfg->tag_levels, cfg->dscp_queues, n->queue_of_band);
		r = ps_map_connections_queues(n->L, n->K, cfg->tag_levels, n->queue_of_band,
					      n->conn_of, NULL);
		if (r < 0) {
			snprintf(err, errlen,
				 "cannot map layers to connections (%d bands, %d queues)",
				 cfg->tag_levels, cfg->dscp_queues);
			return r;
		}
		n->K = r;
	} else if (n->K > 1) {
		int groups = (int)mercury_current_groups((unsigned)cfg->tag_levels);
		n->K = ps_map_connections(n->L, n->K, groups, n->conn_of);
	}
	/* mercury: a pull travels on a socket of its own, never on the one its worker pushes
	 * on: the worker's ACKs of pull data are then pure ACKs, which go out untagged, in the
	 * default band, instead of riding on push data queued behind everything in a low band
	 * (one such starved ACK cost a minimum RTO: ResNet-50, 15 bands, 3 runs in 10). */
	n->C = cfg->mode == PS_MERCURY ? 2 * n->K : n->K;
	/* partition: a second connection per pair carries rank 0's order messages, so that
	 * they never wait in a socket behind megabytes of pushes written before them */
	if (cfg->mode == PS_PARTITION)
		n->C = n->K + 1;
	n->layout = layout_hash(n);
	if (alloc_state(n) == 0)
		return 0;
nomem:
	snprintf(err, errlen, "out of memory for the model's buffers");
	return -ENOMEM;
}

int ps_node_start(const struct ps_config *cfg, const uint64_t *params, int nlayers,
		  struct ps_node **out, char *err, size_t errlen)
{
	struct ps_node *n = calloc(1, sizeof(*n));
	int r = 0;

	*out = NULL;
	if (!n)
		return -ENOMEM;
	n->cfg = *cfg;
	n->cfg.rcvbuf = ps_rcvbuf_of(cfg);
	n->t_start = ps_now();
	iter_window_begin(&n->win, 0);
	n->L = nlayers;
	/* mercury: one connection per layer group; never more groups than layers */
	n->K = cfg->mode == PS_MERCURY ? (cfg->conns < n->L ? cfg->conns : n->L) : 1;
	n->listen_fd = -1;
	pthread_mutex_init(&n->mu, NULL);
	pthread_mutex_init(&n->err_mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	if (n->L < 1 || n->K < 1 || n->K > PS_MAX_CONNS || cfg->nodes < 1 ||
	    cfg->nodes > PS_MAX_NODES || cfg->rank < 0 || cfg->rank >= cfg->nodes ||
	    cfg->shrink < 1 || cfg->chunk < 1 || cfg->part < 1 || cfg->iters < 1 ||
	    cfg->warmup < 0 || cfg->role < PS_ROLE_NODE || cfg->role > PS_ROLE_WORKER ||
	    cfg->dscp_queues < 0 || cfg->dscp_queues > MERCURY_MAX_LEVELS ||
	    (cfg->dscp_queues > 1 &&
	     (cfg->tag_levels < 2 || cfg->tag_levels > MERCURY_MAX_LEVELS))) {
		snprintf(err, errlen,
			 "bad configuration (layers >= 1, nodes 1..%d, rank < nodes, conns 1..%d, "
			 "iters >= 1; with dscp queues 2..%d, bands 2..%d)",
			 PS_MAX_NODES, PS_MAX_CONNS, MERCURY_MAX_LEVELS, MERCURY_MAX_LEVELS);
		r = -EINVAL;
		goto fail;
	}
	r = setup_model(n, params, err, errlen);
	if (!r && ps_has_server(n))
		r = ps_transport_listen(n, err, errlen);
	if (r)
		goto fail;
	if (ps_tags(n))
		ps_tag_open(n);
	/* the drainer watches this node's server connections */
	if (cfg->mode == PS_MERCURY && ps_has_server(n) && ps_drain_start(n)) {
		snprintf(err, errlen, "cannot start the drain watcher thread");
		r = -EAGAIN;
		goto fail;
	}
	if (ps_has_server(n) && ps_transport_accept(n)) {
		r = -EAGAIN;
		goto fail;
	}
	if (ps_has_worker(n))
		r = ps_transport_connect(n);
	if (!r) {
		*out = n;
		return 0;
	}
fail:
	ps_node_stop(n, NULL, err, errlen);
	return r ? r : -EIO;
}

int ps_node_stop(struct ps_node *n, struct ps_result *res, char *err, size_t errlen)
{
	int r = 0;

	if (res) {
		res->bytes_sent = atomic_load(&n->bytes_sent);
		ps_worker_result(n, res);
		res->tagged = n->tagger != NULL;
		ps_tag_counts(n, &res->tags_fastpath, &res->tags_service);
		res->tag_errors = atomic_load(&n->tag_errors);
	}
	atomic_store(&n->closing, true);
	ps_shutdown_all(n);
	ps_transport_stop_accepting(n);
	ps_drain_stop(n);
	ps_transport_close(n);
	ps_tag_close(n);
	const char *why = ps_node_error(n);
	if (why) {
		snprintf(err, errlen, "%s", why);
		r = -EIO;
	}
	if (n->cfg.timeline && n->nev)
		write_timeline(n, n->t_start);
	free_state(n);
	pthread_mutex_destroy(&n->mu);
	pthread_mutex_destroy(&n->err_mu);
	pthread_cond_destroy(&n->cv);
	free(n);
	return r;
}

/* ---- the public calls that span roles ---- */

int ps_node_wait_pull(struct ps_node *n, int layer, uint64_t iter, float *out)
{
	/* a timeout names the workers whose push this node's own server still lacks */
	return ps_worker_wait_pull(n, layer, iter, out, ps_server_lacking_pushes);
}

int ps_node_serve_wait(struct ps_node *n, double wait_s)
{
	struct timespec dl;
	int r = 0;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)wait_s;
	dl.tv_nsec += (long)((wait_s - (double)(time_t)wait_s) * 1e9);
	if (dl.tv_nsec >= 1000000000L) {
		dl.tv_sec++;
		dl.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&n->mu);
	while (!ps_transport_byes_done(n, 0) && !atomic_load(&n->failed) && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&n->cv, &n->mu, &dl);
	r = atomic_load(&n->failed) ? -ECANCELED : ps_transport_byes_done(n, 0) ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&n->mu);
	return r;
}

int ps_node_finish(struct ps_node *n, uint64_t *split_sockets, uint64_t *split_queues)
{
	int r = ps_worker_finish(n);
	uint64_t sq = 0;

	if (r)
		return r;
	if (split_sockets)
		*split_sockets = ps_tag_split_sockets(n, &sq);
	if (split_queues)
		*split_queues = sq;
	for (int s = 0; s < n->cfg.nodes; s++)
		for (int k = 0; k < n->C; k++)
			ps_enqueue(n->wconn[s][k], PS_MSG_BYE, -1, 0, 0, 0, NULL, UINT64_MAX);
	pthread_mutex_lock(&n->mu);
	r = ps_wait(n, ps_transport_byes_done, 0, "every worker's goodbye", NULL, -1);
	pthread_mutex_unlock(&n->mu);
	return r;
}

const char *ps_node_error(struct ps_node *n)
{
	if (!atomic_load(&n->failed))
		return NULL;
	/* failed is set before the message is written (ps_fail): wait for the writer */
	pthread_mutex_lock(&n->err_mu);
	pthread_mutex_unlock(&n->err_mu);
	return n->err;
}

bool ps_node_tagged(struct ps_node *n)
{
	return n->tagger != NULL;
}
