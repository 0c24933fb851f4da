// SPDX-License-Identifier: BSD-2-Clause
/*
 * Server side: receives pushes, aggregates, answers pulls.
 *
 * Every worker's bytes of a slice arrive in order on one connection (one message per slice;
 * in partition mode a slice is a partition, or a piece of one sliced over the servers), so
 * progress per worker is one counter, got[w]. What is summed is [agg, min_w got[w]): in fifo
 * and partition modes got[] only moves at the end of a message, in mercury mode after every
 * chunk read from the socket (immediate aggregation). Sums run over workers 0..N-1 in that order,
 * so the result is bitwise the sum a worker computes locally in the same order.
 *
 * Every mode answers a push with the aggregate, unasked, once it is summed: as MXNet's
 * KVStore answers a pull issued right behind the push, and as ByteScheduler's PS task (push
 * then pull of one partition) sees it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"
#include "worker.h"

/* Sums [from, to) of a slice and tells every worker. Called with s->mu held. */
static void aggregate(struct ps_node *n, struct ps_sslice *s, uint64_t from, uint64_t to)
{
	int N = n->cfg.nodes, layer = s->sl->layer, slice = (int)(s->sl - n->pl.slices);
	int k = ps_conn_of_layer(n, layer, PS_DIR_PULL);
	uint64_t iter = s->cur_iter;

	for (uint64_t j = from; j < to; j++) {
		float v = s->recv[0][j];

		for (int w = 1; w < N; w++)
			v += s->recv[w][j];
		s->sum[j] = v;
	}
	for (int w = 0; w < N; w++)
		ps_enqueue(n->sconn[w][k], PS_MSG_PULL_DATA, slice, iter, from, to - from,
			   s->sum + from, iter << 32 | (uint64_t)layer);
}

/* Called with s->mu held after got[] moved. */
static void try_aggregate(struct ps_node *n, struct ps_sslice *s)
{
	uint64_t m = s->sl->len, target;

	for (int w = 0; w < n->cfg.nodes; w++) {
		uint64_t g = s->got_iter[w] == s->cur_iter ? s->got[w] : 0;
		if (g < m)
			m = g;
	}
	target = m;
	if (n->cfg.mode == PS_MERCURY && m < s->sl->len)
		target = m / n->cfg.chunk * n->cfg.chunk;
	if (target <= s->agg)
		return;
	aggregate(n, s, s->agg, target);
	s->agg = target;
	if (s->agg == s->sl->len) {
		s->cur_iter++;
		s->agg = 0;
	}
}

/* Worker w's push h: its payload read from c's socket or, from this process's own worker
 * (c NULL), copied from src. */
static int take_push(struct ps_node *n, struct ps_conn *c, int w, const struct ps_msg_hdr *h,
		     const float *src)
{
	struct ps_sslice *s;

	if (h->slice >= (uint32_t)n->pl.nslices || n->pl.slices[h->slice].server != n->cfg.rank) {
		ps_fail(n, "server %d: worker %d pushed slice %u that lives elsewhere", n->cfg.rank,
			w, h->slice);
		return -EPROTO;
	}
	s = &n->ss[h->slice];
	pthread_mutex_lock(&s->mu);
	if (s->got_iter[w] != h->iter) {
		s->got_iter[w] = h->iter;
		s->got[w] = 0;
	}
	bool ok = h->iter == s->cur_iter && h->off == s->got[w] && h->len <= s->sl->len - h->off;
	pthread_mutex_unlock(&s->mu);
	if (!ok) {
		ps_fail(n,
			"server %d: worker %d pushed slice %u iteration %llu [%llu,+%llu) out of "
			"order (aggregating iteration %llu)",
			n->cfg.rank, w, h->slice, (unsigned long long)h->iter,
			(unsigned long long)h->off, (unsigned long long)h->len,
			(unsigned long long)s->cur_iter);
		return -EPROTO;
	}
	/* Mercury publishes progress chunk by chunk as it reads; the others once the message
	 * is in, and a copy from memory is in at once. */
	uint64_t step = n->cfg.mode == PS_MERCURY && c ? n->cfg.chunk : h->len;
	for (uint64_t done = 0; done < h->len;) {
		uint64_t take = h->len - done < step ? h->len - done : step;
		float *dst = s->recv[w] + h->off + done;
		int r = 0;

		if (c)
			r = ps_read_full(c->fd, dst, take * sizeof(float));
		else
			memcpy(dst, src + done, take * sizeof(float));
		if (r)
			return r;
		done += take;
		pthread_mutex_lock(&s->mu);
		s->got[w] += take;
		try_aggregate(n, s);
		pthread_mutex_unlock(&s->mu);
	}
	return 0;
}

static int on_push(struct ps_conn *c, const struct ps_msg_hdr *h)
{
	return take_push(c->node, c, c->peer, h, NULL);
}

int ps_server_local_push(struct ps_node *n, const struct ps_msg_hdr *h, const float *data)
{
	return take_push(n, NULL, n->cfg.rank, h, data);
}

/* Partition mode: rank 0's worker tells us what it dispatched; our worker follows, in this
 * process or, under `serve`, told on its control connection to us. */
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

void *ps_server_rx(void *arg)
{
	struct ps_conn *c = arg;
	struct ps_node *n = c->node;
	struct ps_msg_hdr h;
	int r = 0;

	for (;;) {
		r = ps_read_full(c->fd, &h, sizeof(h));
		if (r)
			break;
		if (h.magic != PS_MAGIC) {
			r = -EPROTO;
			break;
		}
		if (h.type == PS_MSG_PUSH)
			r = on_push(c, &h);
		else if (h.type == PS_MSG_ORDER)
			r = on_order(c, &h);
		else if (h.type == PS_MSG_BYE) {
			/* Sent on every connection: its EOF follows on the same stream. */
			pthread_mutex_lock(&n->mu);
			if (!c->got_bye) {
				c->got_bye = true;
				n->byes++;
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
