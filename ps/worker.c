/*
 * Worker side: emulated compute, pushes, pulls.
 *
 * Forward pass of layer l waits only for layer l's pull of the previous iteration; the
 * backward pass pushes each layer as soon as its gradient is ready. fifo and mercury hand
 * whole slices to the connection's queue; partition mode cuts them into partitions and keeps
 * at most `credit` parameters of pushes in flight (sent, receipt not yet back), highest
 * priority (oldest iteration, then lowest layer) first, as ByteScheduler does; each
 * partition then is pulled with its own request.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "node.h"

static uint64_t prio_key(uint64_t iter, int layer)
{
	return iter << 32 | (uint64_t)layer;
}

/* ---- partition scheduler (n->mu held) ---- */

static bool part_before(const struct ps_part *a, const struct ps_part *b)
{
	if (a->key != b->key)
		return a->key < b->key;
	if (a->slice != b->slice)
		return a->slice < b->slice;
	return a->off < b->off;
}

static void part_swap(struct ps_part *a, struct ps_part *b)
{
	struct ps_part t = *a;
	*a = *b;
	*b = t;
}

static int part_add(struct ps_node *n, const struct ps_part *p)
{
	if (n->nparts == n->capparts) {
		int cap = n->capparts ? n->capparts * 2 : 256;
		struct ps_part *q = realloc(n->parts, cap * sizeof(*q));
		if (!q)
			return -ENOMEM;
		n->parts = q;
		n->capparts = cap;
	}
	int i = n->nparts++;
	n->parts[i] = *p;
	while (i > 0 && part_before(&n->parts[i], &n->parts[(i - 1) / 2])) {
		part_swap(&n->parts[i], &n->parts[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

static struct ps_part part_pop(struct ps_node *n)
{
	struct ps_part top = n->parts[0];

	n->parts[0] = n->parts[--n->nparts];
	for (int i = 0;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < n->nparts && part_before(&n->parts[l], &n->parts[m]))
			m = l;
		if (r < n->nparts && part_before(&n->parts[r], &n->parts[m]))
			m = r;
		if (m == i)
			break;
		part_swap(&n->parts[i], &n->parts[m]);
		i = m;
	}
	return top;
}

static const float *grad_of(struct ps_node *n, int layer)
{
	return n->cfg.verify ? n->grad[layer] : n->shared_grad;
}

/* Sends partitions while credit lasts (one always, so a partition above C still goes). */
static void part_pump(struct ps_node *n)
{
	while (n->nparts > 0 &&
	       (n->inflight == 0 || n->inflight + n->parts[0].len <= n->cfg.credit)) {
		struct ps_part p = part_pop(n);
		const struct ps_slice *sl = &n->pl.slices[p.slice];

		n->inflight += p.len;
		ps_enqueue(n->wconn[sl->server][0], PS_MSG_PUSH, p.slice, p.iter, p.off, p.len,
			   grad_of(n, sl->layer) + sl->off + p.off, p.key);
	}
}

static void push_layer(struct ps_node *n, int layer, uint64_t iter)
{
	const struct ps_placement *pl = &n->pl;

	if (n->cfg.verify)
		for (uint64_t j = 0; j < pl->len[layer]; j++)
			n->grad[layer][j] = ps_grad_value(n->cfg.rank, layer, iter, j);
	for (int i = pl->first[layer]; i < pl->first[layer] + pl->count[layer]; i++) {
		const struct ps_slice *sl = &pl->slices[i];

		if (n->cfg.mode == PS_PARTITION) {
			pthread_mutex_lock(&n->mu);
			for (uint64_t off = 0; off < sl->len; off += n->cfg.part) {
				struct ps_part p = {prio_key(iter, layer), i, iter, off,
						    sl->len - off < n->cfg.part ? sl->len - off
										: n->cfg.part};
				part_add(n, &p);
			}
			part_pump(n);
			pthread_mutex_unlock(&n->mu);
			continue;
		}
		uint64_t key = n->cfg.mode == PS_MERCURY ? prio_key(iter, layer) : 0;
		ps_enqueue(n->wconn[sl->server][ps_conn_of_layer(n, layer, PS_DIR_PUSH)],
			   PS_MSG_PUSH, i, iter, 0, sl->len, grad_of(n, layer) + sl->off, key);
	}
}

/* Checks a complete pull against the sum computed here in the server's order. */
static void verify_layer(struct ps_node *n, int layer, uint64_t iter)
{
	uint64_t bad = 0;

	for (uint64_t j = 0; j < n->pl.len[layer]; j++) {
		float v = ps_grad_value(0, layer, iter, j);

		for (int w = 1; w < n->cfg.nodes; w++)
			v += ps_grad_value(w, layer, iter, j);
		if (memcmp(&v, &n->param[layer][j], sizeof(v)) != 0)
			bad++;
	}
	n->mismatches += bad;
	n->pulls_checked++;
}

static int on_pull_data(struct ps_conn *c, const struct ps_msg_hdr *h)
{
	struct ps_node *n = c->node;
	const struct ps_slice *sl;
	int r;

	if (h->slice >= (uint32_t)n->pl.nslices)
		return -EPROTO;
	sl = &n->pl.slices[h->slice];
	if (h->off + h->len > sl->len)
		return -EPROTO;
	double t0 = ps_now();
	if (n->cfg.verify) {
		r = ps_read_full(c->fd, n->param[sl->layer] + sl->off + h->off,
				 h->len * sizeof(float));
	} else {
		r = 0;
		for (uint64_t done = 0; done < h->len && !r;) {
			uint64_t take = h->len - done < n->cfg.chunk ? h->len - done : n->cfg.chunk;
			r = ps_read_full(c->fd, c->scratch, take * sizeof(float));
			done += take;
		}
	}
	if (r)
		return r;
	pthread_mutex_lock(&n->mu);
	int l = sl->layer;
	if (h->iter != n->ready_iter[l]) {
		pthread_mutex_unlock(&n->mu);
		ps_fail(n, "worker %d: pull of layer %d for iteration %llu, expected %llu",
			n->cfg.rank, l, (unsigned long long)h->iter,
			(unsigned long long)n->ready_iter[l]);
		return -EPROTO;
	}
	if (n->pulled[l] == 0)
		n->pull_first[l] = t0;
	n->pulled[l] += h->len;
	if (n->pulled[l] == n->pl.len[l]) {
		if (n->cfg.verify)
			verify_layer(n, l, h->iter);
		ps_record(n, 'l', l, h->iter, n->pull_first[l], ps_now());
		n->pulled[l] = 0;
		n->ready_iter[l]++;
		pthread_cond_broadcast(&n->cv);
	}
	pthread_mutex_unlock(&n->mu);
	return 0;
}

/* Partition mode: the server has the push; credit comes back, then ask for the result. */
static int on_push_ack(struct ps_conn *c, const struct ps_msg_hdr *h)
{
	struct ps_node *n = c->node;

	pthread_mutex_lock(&n->mu);
	n->inflight -= h->len < n->inflight ? h->len : n->inflight;
	part_pump(n);
	pthread_mutex_unlock(&n->mu);
	/* Same priority order as the pushes: the connection's queue is the scheduler's queue. */
	return ps_enqueue(c, PS_MSG_PULL_REQ, (int)h->slice, h->iter, h->off, h->len, NULL,
			  prio_key(h->iter, (int)h->layer));
}

void *ps_worker_rx(void *arg)
{
	struct ps_conn *c = arg;
	struct ps_node *n = c->node;
	struct ps_msg_hdr h;
	int r;

	for (;;) {
		r = ps_read_full(c->fd, &h, sizeof(h));
		if (r)
			break;
		if (h.magic != PS_MAGIC) {
			r = -EPROTO;
			break;
		}
		if (h.type == PS_MSG_READY) {
			pthread_mutex_lock(&n->mu);
			n->readies++;
			pthread_cond_broadcast(&n->cv);
			pthread_mutex_unlock(&n->mu);
		} else if (h.type == PS_MSG_PULL_DATA) {
			r = on_pull_data(c, &h);
		} else if (h.type == PS_MSG_PUSH_ACK) {
			r = on_push_ack(c, &h);
		} else {
			r = -EPROTO;
		}
		if (r)
			break;
	}
	pthread_mutex_lock(&n->mu);
	bool expected = n->worker_done;
	pthread_mutex_unlock(&n->mu);
	if (!expected && !atomic_load(&n->closing))
		ps_fail(n, "worker %d: server %d went away mid-iteration (connection %d: %s)",
			n->cfg.rank, c->peer, c->index, strerror(-r));
	return NULL;
}

static void sleep_until(double t)
{
	struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Waits (n->mu held) until cond holds, the node fails, or timeout_s passes without it. */
static int wait_for(struct ps_node *n, bool (*cond)(struct ps_node *, long), long arg,
		    const char *what)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)n->cfg.timeout_s;
	while (!cond(n, arg)) {
		if (atomic_load(&n->failed))
			return -ECANCELED;
		if (pthread_cond_timedwait(&n->cv, &n->mu, &dl) == ETIMEDOUT && !cond(n, arg)) {
			pthread_mutex_unlock(&n->mu);
			ps_fail(n, "worker %d: no progress for %.0f s waiting for %s", n->cfg.rank,
				n->cfg.timeout_s, what);
			pthread_mutex_lock(&n->mu);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

static bool layer_ready(struct ps_node *n, long arg)
{
	int layer = (int)(arg & 0xffff);
	uint64_t iter = (uint64_t)arg >> 16;

	return n->ready_iter[layer] >= iter;
}

static bool all_ready(struct ps_node *n, long arg)
{
	(void)arg;
	return n->readies >= n->cfg.nodes;
}

static bool all_ended(struct ps_node *n, long total)
{
	return n->win.oldest_open >= (uint64_t)total;
}

/* Every worker said goodbye to us and ours are on the wire: closing is safe now. */
static bool all_byes(struct ps_node *n, long arg)
{
	(void)arg;
	int all = n->cfg.nodes * n->C;

	return n->byes >= all && n->byes_sent >= all;
}

/* Simulated crash: drop every connection without a goodbye. */
static void die_now(struct ps_node *n)
{
	atomic_store(&n->closing, true);
	for (int s = 0; s < n->cfg.nodes; s++)
		for (int k = 0; k < n->C; k++) {
			if (n->wconn[s][k])
				shutdown(n->wconn[s][k]->fd, SHUT_RDWR);
			if (n->sconn[s][k])
				shutdown(n->sconn[s][k]->fd, SHUT_RDWR);
		}
	ps_fail(n, "worker %d: injected disconnect mid-iteration", n->cfg.rank);
}

int ps_worker_main(struct ps_node *n, struct ps_result *res)
{
	int total = n->cfg.warmup + n->cfg.iters, r = 0;
	double cursor;

	pthread_mutex_lock(&n->mu);
	r = wait_for(n, all_ready, 0, "every server's READY");
	pthread_mutex_unlock(&n->mu);
	if (r)
		return r;
	cursor = ps_now();
	for (int it = 0; it <= total; it++) {
		for (int l = 0; l < n->L; l++) {
			pthread_mutex_lock(&n->mu);
			if (n->ready_iter[l] < (uint64_t)it) {
				r = wait_for(n, layer_ready, (long)it << 16 | l, "a layer's pull");
				double now = ps_now();
				if (now > cursor)
					cursor = now;
			}
			pthread_mutex_unlock(&n->mu);
			if (r)
				return r;
			double t0 = cursor;
			cursor += n->prof->layers[l].fwd_s * n->cfg.time_scale;
			sleep_until(cursor);
			ps_record(n, 'f', l, (uint64_t)it, t0, cursor);
		}
		res->fp_end[it] = cursor;
		if (it > 0) { /* all its pulls are in; ends once our server's are out too */
			pthread_mutex_lock(&n->mu);
			ps_iteration_side_done(n, (uint64_t)it - 1, true);
			pthread_mutex_unlock(&n->mu);
		}
		if (it == total)
			break;
		ps_tag_iteration(n, (uint64_t)it, true);
		for (int l = n->L - 1; l >= 0; l--) {
			double t0 = cursor;

			cursor += n->prof->layers[l].bwd_s * n->cfg.time_scale;
			if (n->cfg.rank == n->cfg.slow_rank)
				cursor += n->cfg.slow_s;
			sleep_until(cursor);
			ps_record(n, 'b', l, (uint64_t)it, t0, cursor);
			if (n->cfg.rank == n->cfg.die_rank && it == 1 && l == n->L / 2) {
				die_now(n);
				return -ECONNABORTED;
			}
			push_layer(n, l, (uint64_t)it);
			if (atomic_load(&n->failed))
				return -ECANCELED;
		}
	}
	res->iter_s = (res->fp_end[total] - res->fp_end[n->cfg.warmup]) / n->cfg.iters;
	pthread_mutex_lock(&n->mu);
	/* Every iteration ends for the tags before we leave, the last one included. */
	r = wait_for(n, all_ended, total, "the last iteration's pulls to be acknowledged");
	n->worker_done = true;
	pthread_mutex_unlock(&n->mu);
	if (r)
		return r;
	res->split_sockets = ps_tag_split_sockets(n);
	for (int s = 0; s < n->cfg.nodes; s++)
		for (int k = 0; k < n->C; k++)
			ps_enqueue(n->wconn[s][k], PS_MSG_BYE, -1, 0, 0, 0, NULL, UINT64_MAX);
	pthread_mutex_lock(&n->mu);
	r = wait_for(n, all_byes, 0, "every worker's goodbye");
	pthread_mutex_unlock(&n->mu);
	return r;
}
