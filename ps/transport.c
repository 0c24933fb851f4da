// SPDX-License-Identifier: BSD-2-Clause
/*
 * The transport of one node: its sockets and their threads. Every connection has a tx thread,
 * which writes its send queue in (key, seq) order (tagging each message in mercury mode), and
 * an rx thread, which reads messages and hands each to the role it is for: pushes to the
 * server (server.c), pulls to the worker (worker.c), rank 0's order to the worker or on to it,
 * READY and goodbyes counted here. Also the listener's acceptor with its layout check, the
 * worker's connections to every server, and the halves of one process talking through memory
 * (cfg.local_direct). Its state (struct ps_transport_state, n->transport) is its own, under
 * n->mu; the connection tables themselves are the node's (core.h), as every role queues on
 * them.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "transport.h"
#include "drain.h"
#include "server.h"
#include "tag.h"
#include "worker.h"

/* Under n->mu. */
struct ps_transport_state {
	pthread_t acceptor;
	bool acceptor_started;
	int readies;   /* READY received, one per server */
	int byes;      /* goodbyes received, one per server connection */
	int byes_sent; /* our goodbyes actually written */
};

int ps_transport_init(struct ps_node *n)
{
	n->transport = calloc(1, sizeof(*n->transport));
	return n->transport ? 0 : -ENOMEM;
}

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

static void *tx_thread(void *arg)
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
			r = c->worker_side
				? ps_server_take_push(n, NULL, n->cfg.rank, &it.h, it.data)
				: ps_worker_take_pull(n, NULL, &it.h, it.data);
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
			n->transport->byes_sent++;
			pthread_cond_broadcast(&n->cv);
			pthread_mutex_unlock(&n->mu);
		}
	}
	return NULL;
}

static int on_order(struct ps_conn *c, const struct ps_msg_hdr *h)
{
	struct ps_node *n = c->node;

	if (n->cfg.mode != PS_PARTITION || c->peer != 0 || n->cfg.rank == 0 ||
	    h->off >= (uint64_t)n->pl.nparts) {
		ps_fail(n, "server %d: unexpected order message from worker %d (tensor %llu)",
			n->cfg.rank, c->peer, (unsigned long long)h->off);
		return -EPROTO;
	}
	if (ps_has_worker(n))
		return ps_worker_order(n, (int)h->off, h->iter);
	return ps_enqueue(n->sconn[n->cfg.rank][n->K], PS_MSG_ORDER, -1, h->iter, h->off, 0, NULL,
			  0);
}

/* The next message's header: 0, -EPROTO when it is not ours, or ps_read_full's error. */
static int read_msg_hdr(int fd, struct ps_msg_hdr *h)
{
	int r = ps_read_full(fd, h, sizeof(*h));

	return r ? r : h->magic == PS_MAGIC ? 0 : -EPROTO;
}

static void *server_rx(void *arg)
{
	struct ps_conn *c = arg;
	struct ps_node *n = c->node;
	struct ps_msg_hdr h;
	int r = 0;

	for (;;) {
		if ((r = read_msg_hdr(c->fd, &h)))
			break;
		if (h.type == PS_MSG_PUSH)
			r = ps_server_take_push(n, c, c->peer, &h, NULL);
		else if (h.type == PS_MSG_ORDER)
			r = on_order(c, &h);
		else if (h.type == PS_MSG_BYE) {
			/* Sent on every connection: its EOF follows on the same stream. */
			pthread_mutex_lock(&n->mu);
			if (!c->got_bye) {
				c->got_bye = true;
				n->transport->byes++;
			}
			pthread_cond_broadcast(&n->cv);
			pthread_mutex_unlock(&n->mu);
		} else
			r = -EPROTO;
		if (r)
			break;
	}
	pthread_mutex_lock(&n->mu);
	bool expected = c->got_bye;
	pthread_mutex_unlock(&n->mu);
	if (!expected && !atomic_load(&n->closing))
		ps_fail(n, "server %d: worker %d disconnected mid-iteration (connection %d: %s)",
			n->cfg.rank, c->peer, c->index, strerror(-r));
	return NULL;
}

static int on_forwarded_order(struct ps_conn *c, const struct ps_msg_hdr *h)
{
	struct ps_node *n = c->node;

	if (n->cfg.mode != PS_PARTITION || c->peer != n->cfg.rank || n->cfg.rank == 0 ||
	    h->off >= (uint64_t)n->pl.nparts) {
		ps_fail(n, "worker %d: unexpected order message from server %d (tensor %llu)",
			n->cfg.rank, c->peer, (unsigned long long)h->off);
		return -EPROTO;
	}
	return ps_worker_order(n, (int)h->off, h->iter);
}

static void *worker_rx(void *arg)
{
	struct ps_conn *c = arg;
	struct ps_node *n = c->node;
	struct ps_msg_hdr h;
	int r;

	for (;;) {
		if ((r = read_msg_hdr(c->fd, &h)))
			break;
		if (h.type == PS_MSG_READY) {
			pthread_mutex_lock(&n->mu);
			n->transport->readies++;
			pthread_cond_broadcast(&n->cv);
			pthread_mutex_unlock(&n->mu);
		} else if (h.type == PS_MSG_PULL_DATA) {
			r = ps_worker_take_pull(n, c, &h, NULL);
		} else if (h.type == PS_MSG_ORDER) {
			r = on_forwarded_order(c, &h);
		} else if (h.type == PS_MSG_REFUSE) {
			ps_fail(n,
				"worker %d: server %d refused us: our model layout %016llx is not "
				"its %016llx (layer sizes, node count, mode, placement or "
				"connections differ)",
				n->cfg.rank, c->peer, (unsigned long long)n->layout,
				(unsigned long long)h.iter);
			return NULL;
		} else {
			r = -EPROTO;
		}
		if (r)
			break;
	}
	pthread_mutex_lock(&n->mu);
	bool expected = ps_worker_finished(n), setup = n->transport->readies < n->cfg.nodes;
	pthread_mutex_unlock(&n->mu);
	/* A server that refuses our layout answers one connection with REFUSE and resets the
	 * others still in its backlog: let the refusal, read on its own connection, be the
	 * reason reported rather than this reset. */
	for (int i = 0; setup && i < 50 && !atomic_load(&n->failed); i++)
		usleep(10000);
	if (!expected && !atomic_load(&n->closing))
		ps_fail(n, "worker %d: server %d went away mid-iteration (connection %d: %s)",
			n->cfg.rank, c->peer, c->index, strerror(-r));
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
	if (pthread_create(&c->rx, NULL, c->worker_side ? worker_rx : server_rx, c))
		return -EAGAIN;
	if (pthread_create(&c->tx, NULL, tx_thread, c)) {
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

uint32_t ps_transport_peer_window_max(struct ps_node *n)
{
	uint32_t most = 0;

	for (int i = 0; i < PS_CONN_SLOTS; i++) {
		struct ps_conn *c = ps_conn_slot(n, i);
		uint64_t acked;
		uint32_t w;

		/* a socket that sent little still shows the handshake's window */
		if (!c || c->direct || tcp_bytes_acked(c->fd, &acked, NULL) ||
		    acked - c->acked_base < 65536)
			continue;
		if (!tcp_peer_window(c->fd, &w) && w > most)
			most = w;
	}
	return most;
}

/* A bound on what one connection may have in flight: the receiver's window. Set before
 * listen/connect so that the window scale agrees with it; accepted sockets inherit it.
 * Not TCP_WINDOW_CLAMP: on 6.18 a clamp did not hold on connections carrying data both
 * ways (the receiver's rcv_ssthresh grew past it; docs/fabric.md, weights). */
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

static bool all_ready(struct ps_node *n, long arg)
{
	(void)arg;
	return n->transport->readies >= n->cfg.nodes;
}

int ps_transport_connect(struct ps_node *n)
{
	int r = 0;

	for (int s = 0; s < n->cfg.nodes && !r; s++)
		for (int k = 0; k < n->C && !r; k++)
			r = connect_to(n, s, k);
	if (r)
		return r;
	pthread_mutex_lock(&n->mu);
	r = ps_wait(n, all_ready, 0, "every server's READY", NULL, -1);
	pthread_mutex_unlock(&n->mu);
	return r;
}

int ps_transport_listen(struct ps_node *n, char *err, size_t errlen)
{
	return listen_on(n, err, errlen);
}

int ps_transport_accept(struct ps_node *n)
{
	if (pthread_create(&n->transport->acceptor, NULL, acceptor, n))
		return -EAGAIN;
	pthread_setname_np(n->transport->acceptor, "mps-accept");
	n->transport->acceptor_started = true;
	return 0;
}

bool ps_transport_byes_done(struct ps_node *n, long arg)
{
	const struct ps_transport_state *t = n->transport;
	int all = n->cfg.nodes * n->C;

	(void)arg;
	return (t->byes >= all || !ps_has_server(n)) && (t->byes_sent >= all || !ps_has_worker(n));
}

void ps_transport_stop_accepting(struct ps_node *n)
{
	if (n->transport && n->transport->acceptor_started)
		pthread_join(n->transport->acceptor, NULL);
}

void ps_transport_close(struct ps_node *n)
{
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
	free(n->transport);
	n->transport = NULL;
}
