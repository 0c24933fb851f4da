// SPDX-License-Identifier: BSD-2-Clause
/*
 * One node: setup (model, listener, connections to every server), the tx threads, the
 * accept loop and its layout check, teardown.
 *
 * Tensor -> socket mapping. A TCP stream is ordered, so bytes queued behind a big
 * low-priority tensor wait for it whatever the qdisc does; preemption only happens across
 * sockets. In mercury mode each worker-server pair therefore has K push connections
 * (default 16, at most one per layer) and K pull connections, and layer l travels on
 * connection floor(l * K / L) of each: consecutive layers share a socket, different
 * priority groups never do (ps_map_connections). Each
 * connection's queue is also ordered (older iteration first, then lower layer), so within a
 * socket the next whole tensor handed to TCP is the most urgent one waiting. fifo and
 * partition modes use one connection per pair, as ps-lite does.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "drain.h"
#include "server.h"
#include "tag.h"
#include "worker.h"
#include "mercury_groups.h"

/*
 * Mercury mode: a push of an iteration newer than this node's oldest open one waits until
 * that one has ended. Levels follow the job's state per packet, but a push written ahead is
 * a backlogged socket whose packets below TCP sit in the next iteration's band, and the
 * classifier keeps it there until they drain (moving later bytes up would reorder the
 * stream): on VGG16 the big fc6 push then queues behind the node's own fc7/fc8 traffic
 * while every server waits for it to aggregate (2.36 s against 2.18 s an iteration held,
 * BENCHMARKS.md). Pushes to the node's own server never cross the shaped link and are not
 * held.
 */
static void hold_until_current(struct ps_conn *c, uint64_t iter)
{
	struct ps_node *n = c->node;

	if (n->cfg.write_ahead || !c->tag || c->peer == n->cfg.rank)
		return;
	pthread_mutex_lock(&n->mu);
	while (iter > n->win.oldest_open && !atomic_load(&n->closing))
		pthread_cond_wait(&n->cv, &n->mu);
	pthread_mutex_unlock(&n->mu);
}

static void *ps_tx(void *arg)
{
	struct ps_conn *c = arg;
	struct ps_node *n = c->node;
	struct ps_send_item it;

	while (ps_sendq_pop(&c->q, &it)) {
		bool payload = it.h.type == PS_MSG_PUSH || it.h.type == PS_MSG_PULL_DATA;
		size_t plen = payload ? it.h.len * sizeof(float) : 0;
		int r;

		if (n->cfg.mode == PS_MERCURY && it.h.type == PS_MSG_PUSH)
			hold_until_current(c, it.h.iter);
		if (it.not_before > 0)
			ps_sleep_until(it.not_before);
		double t0 = ps_now();

		if (c->direct && payload) {
			r = c->worker_side ? ps_server_local_push(n, &it.h, it.data)
					   : ps_worker_local_pull(n, &it.h, it.data);
			if (r) {
				if (!atomic_load(&n->failed))
					ps_fail(n,
						"node %d: its own %s of slice %u was refused (%s)",
						n->cfg.rank, c->worker_side ? "push" : "pull",
						it.h.slice, strerror(-r));
				break;
			}
		} else {
			if (n->cfg.mode == PS_MERCURY && payload)
				ps_tag_next(c, sizeof(it.h) + plen, (int)it.h.layer,
					    it.h.type == PS_MSG_PUSH ? PS_DIR_PUSH : PS_DIR_PULL,
					    it.h.iter);
			else if (n->cfg.job_band >= 0) /* every byte, messages of control too */
				ps_tag_next(c, sizeof(it.h) + plen, 0,
					    it.h.type == PS_MSG_PULL_DATA ? PS_DIR_PULL
									  : PS_DIR_PUSH,
					    it.h.iter);
			r = ps_write_msg(c->fd, &it.h, it.data, plen);
			if (r) {
				if (!atomic_load(&n->closing))
					ps_fail(n,
						"node %d: node %d disconnected mid-iteration (send "
						"on connection %d: %s)",
						n->cfg.rank, c->peer, c->index, strerror(-r));
				break;
			}
			atomic_fetch_add(&c->written, sizeof(it.h) + plen);
			atomic_fetch_add(&n->bytes_sent, sizeof(it.h) + plen);
		}
		if (it.h.type == PS_MSG_PUSH)
			ps_record(n, 'p', (int)it.h.layer, it.h.iter, t0, ps_now());
		if (it.h.type == PS_MSG_PULL_DATA &&
		    it.h.off + it.h.len == n->pl.slices[it.h.slice].len) {
			pthread_mutex_lock(&n->mu);
			ps_iteration_side_done(n, it.h.iter, false);
			pthread_mutex_unlock(&n->mu);
		}
		if (it.h.type == PS_MSG_BYE) {
			pthread_mutex_lock(&n->mu);
			n->byes_sent++;
			pthread_cond_broadcast(&n->cv);
			pthread_mutex_unlock(&n->mu);
		}
	}
	return NULL;
}

static struct ps_conn *conn_new(struct ps_node *n, int fd, int peer, int index, bool worker_side)
{
	struct ps_conn *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c)
		return NULL;
	c->node = n;
	c->fd = fd;
	c->peer = peer;
	c->index = index;
	c->worker_side = worker_side;
	/* Loopback TCP between the halves of one process costs two copies, a softirq and
	 * a wake-up per message for bytes that never cross a link. */
	c->direct = n->cfg.local_direct && peer == n->cfg.rank && n->cfg.role == PS_ROLE_NODE;
	ps_sendq_init(&c->q);
	/* The handshake may count as acknowledged bytes; nothing is written yet. */
	if (tcp_bytes_acked(fd, &c->acked_base, NULL))
		c->acked_base = 0;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (n->cfg.sock_prio) {
		int prio = (int)(n->cfg.sock_prio +
				 (uint32_t)(index % n->K * 8 / n->K)); /* 8 htb leaves */
		setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &prio, sizeof(prio));
	}
	if (worker_side && !ps_keeps_data(n)) {
		c->scratch = malloc(n->cfg.chunk * sizeof(float));
		if (!c->scratch) {
			free(c);
			return NULL;
		}
	}
	return c;
}

static int conn_start(struct ps_conn *c)
{
	if (ps_tags(c->node))
		ps_tag_register(c);
	if (pthread_create(&c->rx, NULL, c->worker_side ? ps_worker_rx : ps_server_rx, c))
		return -EAGAIN;
	if (pthread_create(&c->tx, NULL, ps_tx, c)) {
		shutdown(c->fd, SHUT_RDWR);
		pthread_join(c->rx, NULL);
		return -EAGAIN;
	}
	/* named by what they carry, so top -H and a per-thread CPU count tell them apart
	 * inside a trainer (15 characters at most) */
	pthread_setname_np(c->rx, c->worker_side ? "mps-pull-rx" : "mps-push-rx");
	pthread_setname_np(c->tx, c->worker_side ? "mps-push-tx" : "mps-pull-tx");
	c->threads = true;
	return 0;
}

/* Ends a connection's threads; its memory stays, as other connections' threads may still
 * hand it messages until they are stopped too (a server's receiver enqueues pulls on every
 * worker's connection). */
static void conn_stop(struct ps_conn *c)
{
	if (!c)
		return;
	shutdown(c->fd, SHUT_RDWR);
	ps_sendq_close(&c->q);
	if (c->threads) {
		pthread_join(c->rx, NULL);
		pthread_join(c->tx, NULL);
		c->threads = false;
	}
}

/* After conn_stop() on every connection of the node. */
static void conn_free(struct ps_conn *c)
{
	if (!c)
		return;
	if (ps_tags(c->node))
		ps_tag_unregister(c);
	close(c->fd);
	ps_sendq_destroy(&c->q);
	free(c->scratch);
	free(c);
}

/* "a.b.c.d[:port]" -> sockaddr; the node's default port otherwise. */
static int host_addr(const struct ps_node *n, int rank, struct sockaddr_in *sa)
{
	char host[64];
	const char *colon;
	unsigned port = n->cfg.port;

	snprintf(host, sizeof(host), "%s", n->cfg.hosts[rank]);
	colon = strchr(host, ':');
	if (colon) {
		port = (unsigned)atoi(colon + 1);
		host[colon - host] = '\0';
	}
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons((uint16_t)port);
	return inet_pton(AF_INET, host, &sa->sin_addr) == 1 ? 0 : -EINVAL;
}

/* A worker whose model (or placement, mode, connection count) differs would sum floats of
 * different tensors: it is told so (REFUSE, with this node's layout) and this node fails. */
static void refuse(struct ps_node *n, int fd, int worker, uint64_t theirs)
{
	struct ps_msg_hdr h = {PS_MAGIC, PS_MSG_REFUSE, 0, (uint32_t)n->cfg.rank,
			       0,	 n->layout,	0, 0};

	ps_write_msg(fd, &h, NULL, 0);
	close(fd);
	ps_fail(n,
		"server %d: worker %d has another model layout (layout %016llx, this node "
		"%016llx: layer sizes, node count, mode, placement or connections differ)",
		n->cfg.rank, worker, (unsigned long long)theirs, (unsigned long long)n->layout);
}

/* A new connection's HELLO, within timeout_s; gives up at once when the node closes (a peer
 * that connects and says nothing must not hold up a server's SIGTERM). */
static int read_hello(struct ps_node *n, int fd, struct ps_msg_hdr *h)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	double deadline = ps_now() + n->cfg.timeout_s;

	while (!atomic_load(&n->closing) && ps_now() < deadline) {
		int r = poll(&p, 1, 100);

		if (r > 0) /* the header is 48 bytes: it comes in one segment, or never */
			return recv(fd, h, sizeof(*h), MSG_WAITALL) == (ssize_t)sizeof(*h) ? 0
											   : -EIO;
		if (r < 0 && errno != EINTR)
			return -errno;
	}
	return -ETIMEDOUT;
}

static void *acceptor(void *arg)
{
	struct ps_node *n = arg;
	int want = n->cfg.nodes * n->C, have = 0;

	while (have < want && !atomic_load(&n->failed)) {
		struct ps_msg_hdr h;
		int fd = accept(n->listen_fd, NULL, NULL);

		if (fd < 0) {
			if (errno == EINTR)
				continue;
			if (!atomic_load(&n->closing))
				ps_fail(n, "server %d: accept failed: %s", n->cfg.rank,
					strerror(errno));
			return NULL;
		}
		if (read_hello(n, fd, &h) || h.magic != PS_MAGIC || h.type != PS_MSG_HELLO ||
		    h.layer >= (uint32_t)n->cfg.nodes || h.slice >= (uint32_t)n->C ||
		    n->sconn[h.layer][h.slice]) {
			fprintf(stderr,
				"mercury-ps: server %d: dropped a connection without a valid "
				"HELLO\n",
				n->cfg.rank);
			close(fd);
			continue;
		}
		if (h.iter != n->layout) {
			refuse(n, fd, (int)h.layer, h.iter);
			return NULL;
		}
		struct ps_conn *c = conn_new(n, fd, (int)h.layer, (int)h.slice, false);
		if (!c || conn_start(c)) {
			ps_fail(n, "server %d: cannot set up a connection", n->cfg.rank);
			return NULL;
		}
		n->sconn[h.layer][h.slice] = c;
		have++;
	}
	for (int w = 0; w < n->cfg.nodes && !atomic_load(&n->failed); w++)
		ps_enqueue(n->sconn[w][0], PS_MSG_READY, -1, 0, 0, 0, NULL, 0);
	return NULL;
}

/* A bound on what one connection may have in flight: the receiver's window. Set before
 * listen/connect so that the window scale agrees with it; accepted sockets inherit it. */
static void bound_window(const struct ps_node *n, int fd)
{
	if (n->cfg.mode == PS_MERCURY && n->cfg.rcvbuf > 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &n->cfg.rcvbuf, sizeof(n->cfg.rcvbuf));
}

static int connect_to(struct ps_node *n, int server, int index)
{
	struct sockaddr_in sa;
	double deadline = ps_now() + n->cfg.timeout_s;
	struct ps_msg_hdr h = {PS_MAGIC,	PS_MSG_HELLO, 0, (uint32_t)n->cfg.rank,
			       (uint32_t)index, n->layout,    0, 0};

	if (host_addr(n, server, &sa)) {
		ps_fail(n, "worker %d: bad address '%s' for node %d (want a.b.c.d[:port])",
			n->cfg.rank, n->cfg.hosts[server], server);
		return -EINVAL;
	}
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0)
			return -errno;
		bound_window(n, fd);
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			if (ps_write_msg(fd, &h, NULL, 0)) {
				close(fd);
				return -EIO;
			}
			struct ps_conn *c = conn_new(n, fd, server, index, true);
			if (!c) {
				close(fd);
				return -ENOMEM;
			}
			n->wconn[server][index] = c;
			return conn_start(c);
		}
		int e = errno;
		close(fd);
		if (atomic_load(&n->failed))
			return -ECANCELED;
		if (ps_now() > deadline) {
			ps_fail(n, "worker %d: cannot connect to node %d at %s: %s", n->cfg.rank,
				server, n->cfg.hosts[server], strerror(e));
			return -e;
		}
		usleep(20000);
	}
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
	/* 16 KiB (the kernel doubles it): a switch port of a quarter MB still holds what every
	 * worker's connections to one server have in flight at once; 64 KiB overflowed it
	 * (cluster/RESULTS.md, "Full-duplex fabric"). */
	c->rcvbuf = 16384;
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
}

static int alloc_state(struct ps_node *n)
{
	int L = n->L;
	uint64_t maxlen = 1;

	n->pulled = calloc(L, sizeof(uint64_t));
	n->ready_iter = calloc(L, sizeof(uint64_t));
	n->pull_first = calloc(L, sizeof(double));
	n->pushed_iter = calloc(L, sizeof(uint64_t));
	n->grad_ready = calloc(L, sizeof(uint64_t));
	n->ss = calloc(n->pl.nslices, sizeof(struct ps_sslice));
	if (!n->pulled || !n->ready_iter || !n->pull_first || !n->pushed_iter || !n->grad_ready ||
	    !n->ss)
		return -ENOMEM;
	for (int l = 0; l < L; l++)
		if (n->len[l] > maxlen)
			maxlen = n->len[l];
	if (!ps_has_worker(n)) {
		/* nothing to push from */
	} else if (ps_keeps_data(n)) {
		n->grad = calloc(L, sizeof(float *));
		n->param = calloc(L, sizeof(float *));
		n->push_src = calloc(L, sizeof(float *));
		n->pull_dst = calloc(L, sizeof(float *));
		if (!n->grad || !n->param || !n->push_src || !n->pull_dst)
			return -ENOMEM;
	} else {
		n->shared_grad = malloc(maxlen * sizeof(float));
		if (!n->shared_grad)
			return -ENOMEM;
		for (uint64_t j = 0; j < maxlen; j++)
			n->shared_grad[j] = 1.0f / (float)(1 + j % 1024);
	}
	for (int i = 0; i < n->pl.nslices; i++) {
		struct ps_sslice *s = &n->ss[i];

		s->sl = &n->pl.slices[i];
		if (s->sl->server != n->cfg.rank || !ps_has_server(n))
			continue;
		pthread_mutex_init(&s->mu, NULL);
		s->sum = calloc(s->sl->len, sizeof(float));
		if (!s->sum)
			return -ENOMEM;
		for (int w = 0; w < n->cfg.nodes; w++) {
			s->recv[w] = calloc(s->sl->len, sizeof(float));
			s->got_iter[w] = UINT64_MAX;
			if (!s->recv[w])
				return -ENOMEM;
		}
	}
	return 0;
}

static void free_state(struct ps_node *n)
{
	if (n->ss)
		for (int i = 0; i < n->pl.nslices; i++) {
			if (!n->ss[i].sum)
				continue;
			free(n->ss[i].sum);
			for (int w = 0; w < n->cfg.nodes; w++)
				free(n->ss[i].recv[w]);
			pthread_mutex_destroy(&n->ss[i].mu);
		}
	if (n->grad)
		for (int l = 0; l < n->L; l++)
			free(n->grad[l]);
	if (n->param)
		for (int l = 0; l < n->L; l++)
			free(n->param[l]);
	free(n->grad);
	free(n->param);
	free(n->push_src);
	free(n->pull_dst);
	free(n->shared_grad);
	free(n->ss);
	free(n->pulled);
	free(n->ready_iter);
	free(n->pull_first);
	free(n->pushed_iter);
	free(n->grad_ready);
	free(n->parts);
	free(n->order);
	free(n->part_slice);
	free(n->part_left);
	free(n->ev);
	free(n->orig);
	free(n->len);
	free(n->conn_of);
	free(n->layers_pulled);
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
	uint64_t v[] = {(uint64_t)n->L,	       (uint64_t)n->cfg.nodes,
			(uint64_t)n->cfg.mode, n->cfg.bound,
			n->cfg.split_all,      n->cfg.balanced,
			(uint64_t)n->C,	       n->cfg.mode == PS_PARTITION ? n->cfg.part : 0};
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
	n->layers_pulled = calloc(PS_ITER_SLOTS, sizeof(int));
	if (!n->orig || !n->len || !n->conn_of || !n->layers_pulled)
		goto nomem;
	for (int l = 0; l < n->L; l++) {
		n->orig[l] = params[l];
		n->len[l] = params[l] / cfg->shrink ? params[l] / cfg->shrink : 1;
	}
	r = ps_place(n->orig, n->len, n->L, cfg->nodes, cfg->bound, cfg->split_all, cfg->balanced,
		     cfg->mode == PS_PARTITION ? cfg->part : 0, &n->pl);
	if (r)
		goto nomem;
	n->part_slice = calloc((size_t)n->pl.nparts + 1, sizeof(int));
	n->part_left = calloc((size_t)n->pl.nparts + 1, sizeof(int));
	if (!n->part_slice || !n->part_left)
		goto nomem;
	for (int i = n->pl.nslices - 1; i >= 0; i--) /* slices of a tensor are consecutive */
		n->part_slice[n->pl.slices[i].part] = i;
	n->part_slice[n->pl.nparts] = n->pl.nslices;
	if (n->K > 1) {
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
	for (int i = 0; i < n->pl.nslices && ps_has_server(n); i++)
		if (n->pl.slices[i].server == cfg->rank)
			n->pulls_owed += (uint64_t)cfg->nodes;
	n->layout = layout_hash(n);
	if (alloc_state(n) == 0)
		return 0;
nomem:
	snprintf(err, errlen, "out of memory for the model's buffers");
	return -ENOMEM;
}

static int listen_on(struct ps_node *n, char *err, size_t errlen)
{
	struct sockaddr_in sa;
	int one = 1;

	if (host_addr(n, n->cfg.rank, &sa)) {
		snprintf(err, errlen, "bad address '%s' for this node (want a.b.c.d[:port])",
			 n->cfg.hosts[n->cfg.rank]);
		return -EINVAL;
	}
	sa.sin_addr.s_addr = htonl(INADDR_ANY);
	n->listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(n->listen_fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	bound_window(n, n->listen_fd);
	if (n->listen_fd < 0 || bind(n->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(n->listen_fd, 256)) {
		int e = errno;
		snprintf(err, errlen, "cannot listen on port %u: %s (another run still there?)",
			 ntohs(sa.sin_port), strerror(e));
		return -e;
	}
	return 0;
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
	n->t_start = ps_now();
	iter_window_begin(&n->win, 0);
	n->L = nlayers;
	/* mercury: one connection per layer group; never more groups than layers */
	n->K = cfg->mode == PS_MERCURY ? (cfg->conns < n->L ? cfg->conns : n->L) : 1;
	n->listen_fd = -1;
	pthread_mutex_init(&n->mu, NULL);
	pthread_cond_init(&n->cv, NULL);
	if (n->L < 1 || n->K < 1 || n->K > PS_MAX_CONNS || cfg->nodes < 1 ||
	    cfg->nodes > PS_MAX_NODES || cfg->rank < 0 || cfg->rank >= cfg->nodes ||
	    cfg->shrink < 1 || cfg->chunk < 1 || cfg->part < 1 || cfg->iters < 1 ||
	    cfg->warmup < 0 || cfg->role < PS_ROLE_NODE || cfg->role > PS_ROLE_WORKER) {
		snprintf(err, errlen,
			 "bad configuration (layers >= 1, nodes 1..%d, rank < nodes, conns 1..%d, "
			 "iters >= 1)",
			 PS_MAX_NODES, PS_MAX_CONNS);
		r = -EINVAL;
		goto fail;
	}
	r = setup_model(n, params, err, errlen);
	if (!r && ps_has_server(n))
		r = listen_on(n, err, errlen);
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
	if (ps_has_server(n)) {
		if (pthread_create(&n->acceptor, NULL, acceptor, n)) {
			r = -EAGAIN;
			goto fail;
		}
		pthread_setname_np(n->acceptor, "mps-accept");
		n->acceptor_started = true;
	}
	for (int s = 0; s < cfg->nodes && !r && ps_has_worker(n); s++)
		for (int k = 0; k < n->C && !r; k++)
			r = connect_to(n, s, k);
	if (!r && ps_has_worker(n))
		r = ps_worker_wait_ready(n);
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
		res->mismatches = n->mismatches;
		res->pulls_checked = n->pulls_checked;
		res->tagged = n->tagger != NULL;
		ps_tag_counts(n, &res->tags_fastpath, &res->tags_service);
		res->tag_errors = atomic_load(&n->tag_errors);
		res->max_inflight = n->max_inflight;
		res->inflight_left = n->inflight;
	}
	atomic_store(&n->closing, true);
	ps_shutdown_all(n);
	if (n->acceptor_started)
		pthread_join(n->acceptor, NULL);
	ps_drain_stop(n);
	for (int p = 0; p < PS_MAX_NODES; p++)
		for (int k = 0; k < PS_MAX_PAIR_CONNS; k++) {
			conn_stop(n->wconn[p][k]);
			conn_stop(n->sconn[p][k]);
		}
	for (int p = 0; p < PS_MAX_NODES; p++)
		for (int k = 0; k < PS_MAX_PAIR_CONNS; k++) {
			conn_free(n->wconn[p][k]);
			conn_free(n->sconn[p][k]);
		}
	if (n->listen_fd >= 0)
		close(n->listen_fd);
	ps_tag_close(n);
	if (atomic_load(&n->failed)) {
		snprintf(err, errlen, "%s", n->err);
		r = -EIO;
	}
	if (n->cfg.timeline && n->nev)
		write_timeline(n, n->t_start);
	free_state(n);
	pthread_mutex_destroy(&n->mu);
	pthread_cond_destroy(&n->cv);
	free(n);
	return r;
}
