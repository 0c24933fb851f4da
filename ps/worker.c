// SPDX-License-Identifier: BSD-2-Clause
/*
 * Worker side: pushes and pulls of one node, driven by its caller (the worker library, or
 * the emulated worker of ps/emulate.c). fifo and mercury hand whole slices to the
 * connection's queue. Partition mode is ByteScheduler's scheduler: every partition is a
 * tensor of its own (placement.c), its task is the push and the pull together, at most
 * `credit` parameters of tasks are in flight (pushed, aggregate not yet here), highest
 * priority (oldest iteration, then lowest layer, then lowest partition) first. Credit held to
 * the pull deadlocks when two workers fill it with different partitions, each waiting for the
 * other's push; as ByteScheduler does, rank 0 schedules and the other ranks dispatch in rank
 * 0's order (PS_MSG_ORDER), so every worker's tasks in flight are a window of one sequence.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "worker.h"
#include "drain.h"
#include "tag.h"

static uint64_t prio_key(uint64_t iter, int layer)
{
	return iter << 32 | (uint64_t)layer;
}

static const float *grad_of(struct ps_node *n, int layer)
{
	return ps_keeps_data(n) ? n->push_src[layer] : n->shared_grad;
}

/* The framework engine's start-up of one push op (n->mu held): ops start one after the
 * other; returns when this one may go on the wire. */
static double engine_slot(struct ps_node *n)
{
	double now = ps_now();

	if (n->cfg.op_cost_s <= 0)
		return 0;
	n->engine_free = (n->engine_free > now ? n->engine_free : now) + n->cfg.op_cost_s;
	return n->engine_free;
}

/* ---- partition scheduler (n->mu held) ---- */

static bool part_before(const struct ps_part *a, const struct ps_part *b)
{
	/* Tensor indices follow (layer, partition): one comparison orders both. */
	return a->iter != b->iter ? a->iter < b->iter : a->part < b->part;
}

static void part_swap(struct ps_part *a, struct ps_part *b)
{
	struct ps_part t = *a;
	*a = *b;
	*b = t;
}

static int grow(void **arr, int *cap, int need, size_t size)
{
	if (need <= *cap)
		return 0;
	int c = *cap ? *cap * 2 : 256;
	while (c < need)
		c *= 2;
	void *q = realloc(*arr, (size_t)c * size);
	if (!q)
		return -ENOMEM;
	*arr = q;
	*cap = c;
	return 0;
}

static int part_add(struct ps_node *n, const struct ps_part *p)
{
	if (grow((void **)&n->parts, &n->capparts, n->nparts + 1, sizeof(*p)))
		return -ENOMEM;
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

static uint64_t part_len(const struct ps_node *n, int part)
{
	uint64_t len = 0;

	for (int i = n->part_slice[part]; i < n->part_slice[part + 1]; i++)
		len += n->pl.slices[i].len;
	return len;
}

/* Whether credit admits the task (one always goes, so a partition above C still does). */
static bool credit_admits(const struct ps_node *n, int part)
{
	return n->inflight == 0 || n->inflight + part_len(n, part) <= n->cfg.credit;
}

/* Pushes every slice of a task; rank 0 also tells the other ranks. */
static void dispatch(struct ps_node *n, const struct ps_part *p)
{
	double at = engine_slot(n);
	int first = n->part_slice[p->part], last = n->part_slice[p->part + 1];
	int layer = n->pl.slices[first].layer;

	n->inflight += part_len(n, p->part);
	if (n->inflight > n->max_inflight)
		n->max_inflight = n->inflight;
	n->part_left[p->part] = last - first;
	for (int i = first; i < last; i++) {
		const struct ps_slice *sl = &n->pl.slices[i];

		ps_enqueue_at(n->wconn[sl->server][0], PS_MSG_PUSH, i, p->iter, 0, sl->len,
			      grad_of(n, layer) + sl->off, prio_key(p->iter, layer), at);
	}
	if (n->cfg.rank == 0) /* on the pair's control connection (node.c) */
		for (int s = 1; s < n->cfg.nodes; s++)
			ps_enqueue(n->wconn[s][n->K], PS_MSG_ORDER, -1, p->iter, (uint64_t)p->part,
				   0, NULL, 0);
}

/* Dispatches what the order and the credit allow. */
static void part_pump(struct ps_node *n)
{
	if (n->cfg.rank == 0) {
		while (n->nparts > 0 && credit_admits(n, n->parts[0].part)) {
			struct ps_part p = part_pop(n);
			dispatch(n, &p);
		}
		return;
	}
	while (n->order_head < n->norder) {
		const struct ps_part *p = &n->order[n->order_head];
		int layer = n->pl.slices[n->part_slice[p->part]].layer;

		/* Our gradient of it must be in place; rank 0 may be ahead of us. */
		if (n->grad_ready[layer] <= p->iter || !credit_admits(n, p->part))
			break;
		struct ps_part go = *p;
		n->order_head++;
		dispatch(n, &go);
	}
	if (n->order_head == n->norder)
		n->order_head = n->norder = 0;
}

int ps_worker_order(struct ps_node *n, int part, uint64_t iter)
{
	int r = 0;

	pthread_mutex_lock(&n->mu);
	if (n->order_head > 0 && n->norder == n->caporder) { /* reuse the consumed front */
		memmove(n->order, n->order + n->order_head,
			(size_t)(n->norder - n->order_head) * sizeof(*n->order));
		n->norder -= n->order_head;
		n->order_head = 0;
	}
	r = grow((void **)&n->order, &n->caporder, n->norder + 1, sizeof(*n->order));
	if (!r) {
		n->order[n->norder++] = (struct ps_part){iter, part};
		part_pump(n);
	}
	pthread_mutex_unlock(&n->mu);
	return r;
}

/* A slice's aggregate is here: its task gives its credit back once all its slices are. */
static void part_pulled(struct ps_node *n, int slice)
{
	int part = n->pl.slices[slice].part;

	if (--n->part_left[part] > 0)
		return;
	uint64_t len = part_len(n, part);
	n->inflight -= len < n->inflight ? len : n->inflight;
	part_pump(n);
}

static void push_layer(struct ps_node *n, int layer, uint64_t iter)
{
	const struct ps_placement *pl = &n->pl;

	pthread_mutex_lock(&n->mu);
	if (n->cfg.mode == PS_PARTITION) {
		int first = pl->first[layer], end = first + pl->count[layer];

		n->grad_ready[layer] = iter + 1;
		if (n->cfg.rank == 0)
			for (int i = first; i < end; i++)
				if (i == n->part_slice[pl->slices[i].part])
					part_add(n, &(struct ps_part){iter, pl->slices[i].part});
		part_pump(n); /* other ranks: the order may have waited for this gradient */
		pthread_mutex_unlock(&n->mu);
		return;
	}
	double at = engine_slot(n); /* one op for the whole tensor */
	pthread_mutex_unlock(&n->mu);
	for (int i = pl->first[layer]; i < pl->first[layer] + pl->count[layer]; i++) {
		const struct ps_slice *sl = &pl->slices[i];
		uint64_t key = n->cfg.mode == PS_MERCURY ? prio_key(iter, layer) : 0;

		ps_enqueue_at(n->wconn[sl->server][ps_conn_of_layer(n, layer, PS_DIR_PUSH)],
			      PS_MSG_PUSH, i, iter, 0, sl->len, grad_of(n, layer) + sl->off, key,
			      at);
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
		if (memcmp(&v, &n->pull_dst[layer][j], sizeof(v)) != 0)
			bad++;
	}
	n->mismatches += bad;
	n->pulls_checked++;
}

/* A pull h: its payload read from c's socket or, from this process's own server (c NULL),
 * copied from src. */
static int take_pull(struct ps_node *n, struct ps_conn *c, const struct ps_msg_hdr *h,
		     const float *src)
{
	const struct ps_slice *sl;
	int r;

	if (h->slice >= (uint32_t)n->pl.nslices)
		return -EPROTO;
	sl = &n->pl.slices[h->slice];
	if (h->off + h->len > sl->len)
		return -EPROTO;
	double t0 = ps_now();
	float *dst = NULL;
	if (ps_keeps_data(n)) {
		pthread_mutex_lock(&n->mu);
		dst = n->pull_dst[sl->layer];
		pthread_mutex_unlock(&n->mu);
		if (!dst) /* a pull of a layer we never pushed */
			return -EPROTO;
		dst += sl->off + h->off;
	}
	if (!c) {
		r = 0;
		if (dst)
			memcpy(dst, src, h->len * sizeof(float));
	} else if (dst) {
		r = ps_read_full(c->fd, dst, h->len * sizeof(float));
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
	if (n->cfg.mode == PS_PARTITION && h->off + h->len == sl->len)
		part_pulled(n, (int)h->slice);
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
		/* The worker has every pull of the iteration: its side of it is done. */
		int slot = (int)(h->iter % PS_ITER_SLOTS);
		if (++n->layers_pulled[slot] == n->L) {
			n->layers_pulled[slot] = 0;
			ps_iteration_side_done(n, h->iter, true);
		}
		pthread_cond_broadcast(&n->cv);
	}
	pthread_mutex_unlock(&n->mu);
	return 0;
}

static int on_pull_data(struct ps_conn *c, const struct ps_msg_hdr *h)
{
	return take_pull(c->node, c, h, NULL);
}

int ps_worker_local_pull(struct ps_node *n, const struct ps_msg_hdr *h, const float *data)
{
	return take_pull(n, NULL, h, data);
}

/* Partition mode, worker role: our node's server (another process) passes rank 0's order on. */
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
	bool expected = n->worker_done, setup = n->readies < n->cfg.nodes;
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

/* For a timeout on layer's aggregate: the workers whose push of it this node's own server
 * still lacks (a slice aggregates one iteration at a time), as "; server R lacks worker W's
 * push" in buf. */
static void lacking_pushes(struct ps_node *n, int layer, char *buf, size_t size)
{
	uint64_t lacks = 0;
	int w = 0;

	buf[0] = 0;
	if (!n->ss || !ps_has_server(n))
		return;
	for (int i = 0; i < n->pl.count[layer]; i++) {
		int k = n->pl.first[layer] + i;
		struct ps_sslice *ss = &n->ss[k];

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

/* Waits (n->mu held) until cond holds, the node fails, or timeout_s passes without it.
 * layer >= 0: the wait is for that layer's aggregate (the timeout names who is missing). */
static int wait_for(struct ps_node *n, bool (*cond)(struct ps_node *, long), long arg,
		    const char *what, int layer)
{
	struct timespec dl;

	clock_gettime(CLOCK_REALTIME, &dl);
	dl.tv_sec += (time_t)n->cfg.timeout_s;
	while (!cond(n, arg)) {
		if (atomic_load(&n->failed))
			return -ECANCELED;
		if (pthread_cond_timedwait(&n->cv, &n->mu, &dl) == ETIMEDOUT && !cond(n, arg)) {
			char lacks[96] = "";

			pthread_mutex_unlock(&n->mu);
			if (layer >= 0)
				lacking_pushes(n, layer, lacks, sizeof(lacks));
			ps_fail(n, "worker %d: no progress for %.0f s waiting for %s%s",
				n->cfg.rank, n->cfg.timeout_s, what, lacks);
			pthread_mutex_lock(&n->mu);
			return -ETIMEDOUT;
		}
	}
	return 0;
}

/* layer_ready's argument for: is iteration iter's aggregate of layer here? */
static long layer_ready_arg(int layer, uint64_t iter)
{
	return (long)(iter + 1) << 16 | layer;
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

	return (n->byes >= all || !ps_has_server(n)) && (n->byes_sent >= all || !ps_has_worker(n));
}

int ps_worker_wait_ready(struct ps_node *n)
{
	pthread_mutex_lock(&n->mu);
	int r = wait_for(n, all_ready, 0, "every server's READY", -1);
	pthread_mutex_unlock(&n->mu);
	return r;
}

const char *ps_node_error(struct ps_node *n)
{
	return atomic_load(&n->failed) ? n->err : NULL;
}

bool ps_node_tagged(struct ps_node *n)
{
	return n->tagger != NULL;
}

/* The node's own copy of layer's buffers, made on first use (n->mu held). */
static int own_buffers(struct ps_node *n, int layer)
{
	size_t bytes = n->pl.len[layer] * sizeof(float);

	if (!n->grad[layer])
		n->grad[layer] = malloc(bytes);
	if (!n->param[layer])
		n->param[layer] = malloc(bytes);
	return n->grad[layer] && n->param[layer] ? 0 : -ENOMEM;
}

/* A push of layer: from the node's own copy of grad (out NULL; with grad NULL, a constant or
 * the verify values), or in place, read from grad and pulled into out. */
static int push(struct ps_node *n, int layer, uint64_t iter, const float *grad, float *out)
{
	bool keeps = ps_keeps_data(n);
	int r = 0;

	if (layer < 0 || layer >= n->L || ((grad || out) && !keeps) || (out && !grad))
		return -EINVAL;
	if (atomic_load(&n->failed))
		return -ECANCELED;
	pthread_mutex_lock(&n->mu);
	/* In order, once per iteration, and only after the previous aggregate of the layer is
	 * here: by then every server has read our previous gradient, so its buffer is free,
	 * and no pull of the layer is landing anywhere. */
	bool in_order = iter == n->pushed_iter[layer] && n->ready_iter[layer] >= iter;
	if (in_order && keeps && !out)
		r = own_buffers(n, layer);
	in_order = in_order && !r;
	bool begins = in_order && iter >= n->begun;
	if (in_order) {
		n->pushed_iter[layer] = iter + 1;
		if (keeps) {
			n->push_src[layer] = out ? grad : n->grad[layer];
			n->pull_dst[layer] = out ? out : n->param[layer];
		}
	}
	if (begins)
		n->begun = iter + 1;
	pthread_mutex_unlock(&n->mu);
	if (r)
		return r;
	if (!in_order)
		return -EALREADY;
	if (keeps && !out && grad)
		memcpy(n->grad[layer], grad, n->pl.len[layer] * sizeof(float));
	else if (keeps && !out && n->cfg.verify)
		for (uint64_t j = 0; j < n->pl.len[layer]; j++)
			n->grad[layer][j] = ps_grad_value(n->cfg.rank, layer, iter, j);
	if (begins) /* an iteration begins with its first push */
		ps_tag_iteration(n, iter, true);
	push_layer(n, layer, iter);
	return atomic_load(&n->failed) ? -ECANCELED : 0;
}

int ps_node_push(struct ps_node *n, int layer, uint64_t iter, const float *grad)
{
	return push(n, layer, iter, grad, NULL);
}

int ps_node_push_inplace(struct ps_node *n, int layer, uint64_t iter, const float *grad, float *out)
{
	return grad && out ? push(n, layer, iter, grad, out) : -EINVAL;
}

int ps_node_wait_pull(struct ps_node *n, int layer, uint64_t iter, float *out)
{
	const float *got = NULL;
	int r;

	if (layer < 0 || layer >= n->L || (out && !ps_keeps_data(n)))
		return -EINVAL;
	/* What a timeout names: the layer, and the servers whose share of it did not come. */
	char what[160];
	int w = snprintf(what, sizeof(what), "layer %d's aggregate of iteration %llu (from server",
			 layer, (unsigned long long)iter);

	for (int i = 0; i < n->pl.count[layer] && w > 0 && (size_t)w < sizeof(what) - 8; i++) {
		int s = n->pl.slices[n->pl.first[layer] + i].server;

		if (i == 0 || s != n->pl.slices[n->pl.first[layer] + i - 1].server)
			w += snprintf(what + w, sizeof(what) - (size_t)w, "%s %d", i ? "," : "", s);
	}
	if (w > 0 && (size_t)w < sizeof(what) - 2)
		strcpy(what + w, ")");
	pthread_mutex_lock(&n->mu);
	if (iter >= n->pushed_iter[layer]) /* never pushed: would wait forever */
		r = -EINVAL;
	else
		r = wait_for(n, layer_ready, layer_ready_arg(layer, iter), what, layer);
	if (out)
		got = n->pull_dst[layer];
	pthread_mutex_unlock(&n->mu);
	/* The next pull of this layer needs our next push, which comes after this returns. */
	if (!r && out && out != got)
		memcpy(out, got, n->pl.len[layer] * sizeof(float));
	return r;
}

int ps_node_pull_ready(struct ps_node *n, int layer, uint64_t iter)
{
	int r;

	if (layer < 0 || layer >= n->L)
		return -EINVAL;
	pthread_mutex_lock(&n->mu);
	if (iter >= n->pushed_iter[layer])
		r = -EINVAL;
	else
		r = atomic_load(&n->failed) || layer_ready(n, layer_ready_arg(layer, iter));
	pthread_mutex_unlock(&n->mu);
	return r;
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
	while (!all_byes(n, 0) && !atomic_load(&n->failed) && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&n->cv, &n->mu, &dl);
	r = atomic_load(&n->failed) ? -ECANCELED : all_byes(n, 0) ? 0 : -ETIMEDOUT;
	pthread_mutex_unlock(&n->mu);
	return r;
}

int ps_node_finish(struct ps_node *n, uint64_t *split_sockets)
{
	int r;

	pthread_mutex_lock(&n->mu);
	/* Every iteration ends for the tags before we leave, the last one included. */
	r = wait_for(n, all_ended, (long)n->begun, "the last iteration's pulls to be acknowledged",
		     -1);
	n->worker_done = true;
	pthread_mutex_unlock(&n->mu);
	if (r)
		return r;
	if (split_sockets)
		*split_sockets = ps_tag_split_sockets(n);
	for (int s = 0; s < n->cfg.nodes; s++)
		for (int k = 0; k < n->C; k++)
			ps_enqueue(n->wconn[s][k], PS_MSG_BYE, -1, 0, 0, 0, NULL, UINT64_MAX);
	pthread_mutex_lock(&n->mu);
	r = wait_for(n, all_byes, 0, "every worker's goodbye", -1);
	pthread_mutex_unlock(&n->mu);
	return r;
}
