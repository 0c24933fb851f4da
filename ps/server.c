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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server.h"

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

struct ps_server_state {
	struct ps_sslice *ss; /* indexed by slice; only own slices' buffers allocated */
};

int ps_server_init(struct ps_node *n)
{
	struct ps_server_state *sv = calloc(1, sizeof(*sv));

	if (!sv)
		return -ENOMEM;
	n->server = sv;
	sv->ss = calloc(n->pl.nslices, sizeof(struct ps_sslice));
	if (!sv->ss)
		return -ENOMEM;
	for (int i = 0; i < n->pl.nslices; i++) {
		struct ps_sslice *s = &sv->ss[i];

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

void ps_server_free(struct ps_node *n)
{
	struct ps_server_state *sv = n->server;

	if (!sv)
		return;
	if (sv->ss)
		for (int i = 0; i < n->pl.nslices; i++) {
			if (!sv->ss[i].sum)
				continue;
			free(sv->ss[i].sum);
			for (int w = 0; w < n->cfg.nodes; w++)
				free(sv->ss[i].recv[w]);
			pthread_mutex_destroy(&sv->ss[i].mu);
		}
	free(sv->ss);
	free(sv);
	n->server = NULL;
}

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

int ps_server_take_push(struct ps_node *n, struct ps_conn *c, int w, const struct ps_msg_hdr *h,
			const float *src)
{
	struct ps_sslice *s;

	if (h->slice >= (uint32_t)n->pl.nslices || n->pl.slices[h->slice].server != n->cfg.rank) {
		ps_fail(n, "server %d: worker %d pushed slice %u that lives elsewhere", n->cfg.rank,
			w, h->slice);
		return -EPROTO;
	}
	s = &n->server->ss[h->slice];
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

void ps_server_lacking_pushes(struct ps_node *n, int layer, char *buf, size_t size)
{
	uint64_t lacks = 0;
	int w = 0;

	buf[0] = 0;
	if (!n->server || !n->server->ss || !ps_has_server(n))
		return;
	for (int i = 0; i < n->pl.count[layer]; i++) {
		int k = n->pl.first[layer] + i;
		struct ps_sslice *ss = &n->server->ss[k];

		if (n->pl.slices[k].server != n->cfg.rank || !ss->sl)
			continue;
		pthread_mutex_lock(&ss->mu);
		for (int v = 0; v < n->cfg.nodes; v++)
			if (ss->got_iter[v] < ss->cur_iter ||
			    (ss->got_iter[v] == ss->cur_iter && ss->got[v] < ss->sl->len))
				lacks |= 1ull << v;
		pthread_mutex_unlock(&ss->mu);
	}
	for (int v = 0; v < n->cfg.nodes && (size_t)w + 16 < size; v++)
		if (lacks & (1ull << v))
			w += snprintf(buf + w, size - (size_t)w, "%s %d",
				      w ? "," : "; its share here lacks the push of worker", v);
}
