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

struct ps_part { /* partition mode: one partition's push + pull, the scheduler's task */
	uint64_t iter;
	int part; /* placement's tensor index: ordered by layer, then partition */
};

/* Under n->mu. */
struct ps_worker_state {
	uint64_t *pulled;      /* per layer: params of the current pull received */
	uint64_t *ready_iter;  /* per layer: iterations whose pull is complete */
	double *pull_first;    /* per layer: first pull byte of the current iteration */
	uint64_t *pushed_iter; /* per layer: the next iteration it may be pushed for */
	uint64_t *grad_ready;  /* per layer: iterations whose gradient is in place (partition) */
	int *layers_pulled;    /* per iteration slot: layers whose pull is complete */
	uint64_t begun;	       /* iterations begun (first push) so far */
	float **grad, **param; /* per layer: own copies (library/verify), made on first use */
	/* Per layer: where the current push is read from and where its pull lands: the own
	 * copies, or the caller's buffers (ps_node_push_inplace). */
	const float **push_src;
	float **pull_dst;
	float *shared_grad; /* without verify: one constant buffer for all pushes */
	/* partition mode: rank 0 schedules from a priority queue and announces each dispatch
	 * (PS_MSG_ORDER); the other ranks dispatch in that order, as they learn it. */
	struct ps_part *parts; /* rank 0: the queue, a heap by (iteration, tensor) */
	int nparts, capparts;
	struct ps_part *order; /* other ranks: announced, not yet dispatched, FIFO */
	int order_head, norder, caporder;
	int *part_slice;       /* per placed tensor: its first slice (nparts + 1 entries) */
	int *part_left;	       /* per placed tensor: slices whose pull has not arrived */
	uint64_t inflight;     /* parameters pushed whose aggregate has not arrived */
	uint64_t max_inflight; /* the most ever at once */
	double engine_free;    /* when the framework engine's last op start-up ends */
	bool done;	       /* ps_worker_finish: the servers' EOF is no error from now on */
	uint64_t mismatches, pulls_checked;
};

/* The push buffers: the caller's or own copies (made on first use), or one constant. */
static int alloc_grads(struct ps_node *n, struct ps_worker_state *wk)
{
	uint64_t maxlen = 1;

	for (int l = 0; l < n->L; l++)
		if (n->len[l] > maxlen)
			maxlen = n->len[l];
	if (!ps_has_worker(n))
		return 0; /* nothing to push from */
	if (ps_keeps_data(n)) {
		wk->grad = calloc(n->L, sizeof(float *));
		wk->param = calloc(n->L, sizeof(float *));
		wk->push_src = calloc(n->L, sizeof(float *));
		wk->pull_dst = calloc(n->L, sizeof(float *));
		return wk->grad && wk->param && wk->push_src && wk->pull_dst ? 0 : -ENOMEM;
	}
	wk->shared_grad = malloc(maxlen * sizeof(float));
	if (!wk->shared_grad)
		return -ENOMEM;
	for (uint64_t j = 0; j < maxlen; j++)
		wk->shared_grad[j] = 1.0f / (float)(1 + j % 1024);
	return 0;
}

int ps_worker_init(struct ps_node *n)
{
	struct ps_worker_state *wk = calloc(1, sizeof(*wk));
	int L = n->L, np = n->pl.nparts;

	if (!wk)
		return -ENOMEM;
	n->worker = wk;
	wk->pulled = calloc(L, sizeof(uint64_t));
	wk->ready_iter = calloc(L, sizeof(uint64_t));
	wk->pull_first = calloc(L, sizeof(double));
	wk->pushed_iter = calloc(L, sizeof(uint64_t));
	wk->grad_ready = calloc(L, sizeof(uint64_t));
	wk->layers_pulled = calloc(PS_ITER_SLOTS, sizeof(int));
	wk->part_slice = calloc((size_t)np + 1, sizeof(int));
	wk->part_left = calloc((size_t)np + 1, sizeof(int));
	if (!wk->pulled || !wk->ready_iter || !wk->pull_first || !wk->pushed_iter ||
	    !wk->grad_ready || !wk->layers_pulled || !wk->part_slice || !wk->part_left)
		return -ENOMEM;
	for (int i = n->pl.nslices - 1; i >= 0; i--) /* slices of a tensor are consecutive */
		wk->part_slice[n->pl.slices[i].part] = i;
	wk->part_slice[np] = n->pl.nslices;
	return alloc_grads(n, wk);
}

void ps_worker_free(struct ps_node *n)
{
	struct ps_worker_state *wk = n->worker;

	if (!wk)
		return;
	for (int l = 0; l < n->L; l++) {
		if (wk->grad)
			free(wk->grad[l]);
		if (wk->param)
			free(wk->param[l]);
	}
	free(wk->grad);
	free(wk->param);
	free(wk->push_src);
	free(wk->pull_dst);
	free(wk->shared_grad);
	free(wk->pulled);
	free(wk->ready_iter);
	free(wk->pull_first);
	free(wk->pushed_iter);
	free(wk->grad_ready);
	free(wk->layers_pulled);
	free(wk->parts);
	free(wk->order);
	free(wk->part_slice);
	free(wk->part_left);
	free(wk);
	n->worker = NULL;
}

static uint64_t prio_key(uint64_t iter, int layer)
{
	return iter << 32 | (uint64_t)layer;
}

static const float *grad_of(struct ps_node *n, int layer)
{
	struct ps_worker_state *wk = n->worker;

	return ps_keeps_data(n) ? wk->push_src[layer] : wk->shared_grad;
}

/* The framework engine's start-up of one push op (n->mu held): ops start one after the
 * other; returns when this one may go on the wire. */
static double engine_slot(struct ps_node *n)
{
	struct ps_worker_state *wk = n->worker;
	double now = ps_now();

	if (n->cfg.op_cost_s <= 0)
		return 0;
	wk->engine_free = (wk->engine_free > now ? wk->engine_free : now) + n->cfg.op_cost_s;
	return wk->engine_free;
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
	struct ps_worker_state *wk = n->worker;

	if (grow((void **)&wk->parts, &wk->capparts, wk->nparts + 1, sizeof(*p)))
		return -ENOMEM;
	int i = wk->nparts++;
	wk->parts[i] = *p;
	while (i > 0 && part_before(&wk->parts[i], &wk->parts[(i - 1) / 2])) {
		part_swap(&wk->parts[i], &wk->parts[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	return 0;
}

static struct ps_part part_pop(struct ps_node *n)
{
	struct ps_worker_state *wk = n->worker;
	struct ps_part top = wk->parts[0];

	wk->parts[0] = wk->parts[--wk->nparts];
	for (int i = 0;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < wk->nparts && part_before(&wk->parts[l], &wk->parts[m]))
			m = l;
		if (r < wk->nparts && part_before(&wk->parts[r], &wk->parts[m]))
			m = r;
		if (m == i)
			break;
		part_swap(&wk->parts[i], &wk->parts[m]);
		i = m;
	}
	return top;
}

static uint64_t part_len(const struct ps_node *n, int part)
{
	const struct ps_worker_state *wk = n->worker;
	uint64_t len = 0;

	for (int i = wk->part_slice[part]; i < wk->part_slice[part + 1]; i++)
		len += n->pl.slices[i].len;
	return len;
}

/* Whether credit admits the task (one always goes, so a partition above C still does). */
static bool credit_admits(const struct ps_node *n, int part)
{
	const struct ps_worker_state *wk = n->worker;

	return wk->inflight == 0 || wk->inflight + part_len(n, part) <= n->cfg.credit;
}

/* Pushes every slice of a task; rank 0 also tells the other ranks. */
static void dispatch(struct ps_node *n, const struct ps_part *p)
{
	struct ps_worker_state *wk = n->worker;
	double at = engine_slot(n);
	int first = wk->part_slice[p->part], last = wk->part_slice[p->part + 1];
	int layer = n->pl.slices[first].layer;

	wk->inflight += part_len(n, p->part);
	if (wk->inflight > wk->max_inflight)
		wk->max_inflight = wk->inflight;
	wk->part_left[p->part] = last - first;
	for (int i = first; i < last; i++) {
		const struct ps_slice *sl = &n->pl.slices[i];

		ps_enqueue_at(n->wconn[sl->server][0], PS_MSG_PUSH, i, p->iter, 0, sl->len,
			      grad_of(n, layer) + sl->off, prio_key(p->iter, layer), at);
	}
	if (n->cfg.rank == 0) /* on the pair's control connection (node.c sets C) */
		for (int s = 1; s < n->cfg.nodes; s++)
			ps_enqueue(n->wconn[s][n->K], PS_MSG_ORDER, -1, p->iter, (uint64_t)p->part,
				   0, NULL, 0);
}

/* Dispatches what the order and the credit allow. */
static void part_pump(struct ps_node *n)
{
	struct ps_worker_state *wk = n->worker;

	if (n->cfg.rank == 0) {
		while (wk->nparts > 0 && credit_admits(n, wk->parts[0].part)) {
			struct ps_part p = part_pop(n);
			dispatch(n, &p);
		}
		return;
	}
	while (wk->order_head < wk->norder) {
		const struct ps_part *p = &wk->order[wk->order_head];
		int layer = n->pl.slices[wk->part_slice[p->part]].layer;

		/* Our gradient of it must be in place; rank 0 may be ahead of us. */
		if (wk->grad_ready[layer] <= p->iter || !credit_admits(n, p->part))
			break;
		struct ps_part go = *p;
		wk->order_head++;
		dispatch(n, &go);
	}
	if (wk->order_head == wk->norder)
		wk->order_head = wk->norder = 0;
}

int ps_worker_order(struct ps_node *n, int part, uint64_t iter)
{
	struct ps_worker_state *wk = n->worker;
	int r = 0;

	pthread_mutex_lock(&n->mu);
	if (wk->order_head > 0 && wk->norder == wk->caporder) { /* reuse the consumed front */
		memmove(wk->order, wk->order + wk->order_head,
			(size_t)(wk->norder - wk->order_head) * sizeof(*wk->order));
		wk->norder -= wk->order_head;
		wk->order_head = 0;
	}
	r = grow((void **)&wk->order, &wk->caporder, wk->norder + 1, sizeof(*wk->order));
	if (!r) {
		wk->order[wk->norder++] = (struct ps_part){iter, part};
		part_pump(n);
	}
	pthread_mutex_unlock(&n->mu);
	return r;
}

/* A slice's aggregate is here: its task gives its credit back once all its slices are. */
static void part_pulled(struct ps_node *n, int slice)
{
	struct ps_worker_state *wk = n->worker;
	int part = n->pl.slices[slice].part;

	if (--wk->part_left[part] > 0)
		return;
	uint64_t len = part_len(n, part);
	wk->inflight -= len < wk->inflight ? len : wk->inflight;
	part_pump(n);
}

static void push_layer(struct ps_node *n, int layer, uint64_t iter)
{
	struct ps_worker_state *wk = n->worker;
	const struct ps_placement *pl = &n->pl;

	pthread_mutex_lock(&n->mu);
	if (n->cfg.mode == PS_PARTITION) {
		int first = pl->first[layer], end = first + pl->count[layer];

		wk->grad_ready[layer] = iter + 1;
		if (n->cfg.rank == 0)
			for (int i = first; i < end; i++)
				if (i == wk->part_slice[pl->slices[i].part])
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
	struct ps_worker_state *wk = n->worker;
	uint64_t bad = 0;

	for (uint64_t j = 0; j < n->pl.len[layer]; j++) {
		float v = ps_grad_value(0, layer, iter, j);

		for (int w = 1; w < n->cfg.nodes; w++)
			v += ps_grad_value(w, layer, iter, j);
		if (memcmp(&v, &wk->pull_dst[layer][j], sizeof(v)) != 0)
			bad++;
	}
	wk->mismatches += bad;
	wk->pulls_checked++;
}

int ps_worker_take_pull(struct ps_node *n, struct ps_conn *c, const struct ps_msg_hdr *h,
			const float *src)
{
	struct ps_worker_state *wk = n->worker;
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
		dst = wk->pull_dst[sl->layer];
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
	if (h->iter != wk->ready_iter[l]) {
		pthread_mutex_unlock(&n->mu);
		ps_fail(n, "worker %d: pull of layer %d for iteration %llu, expected %llu",
			n->cfg.rank, l, (unsigned long long)h->iter,
			(unsigned long long)wk->ready_iter[l]);
		return -EPROTO;
	}
	if (wk->pulled[l] == 0)
		wk->pull_first[l] = t0;
	wk->pulled[l] += h->len;
	if (wk->pulled[l] == n->pl.len[l]) {
		if (n->cfg.verify)
			verify_layer(n, l, h->iter);
		ps_record(n, 'l', l, h->iter, wk->pull_first[l], ps_now());
		wk->pulled[l] = 0;
		wk->ready_iter[l]++;
		/* The worker has every pull of the iteration: its side of it is done. */
		int slot = (int)(h->iter % PS_ITER_SLOTS);
		if (++wk->layers_pulled[slot] == n->L) {
			wk->layers_pulled[slot] = 0;
			ps_iteration_side_done(n, h->iter, true);
		}
		pthread_cond_broadcast(&n->cv);
	}
	pthread_mutex_unlock(&n->mu);
	return 0;
}

/* layer_ready's argument for: is iteration iter's aggregate of layer here? */
static long layer_ready_arg(int layer, uint64_t iter)
{
	return (long)(iter + 1) << 16 | layer;
}

static bool layer_ready(struct ps_node *n, long arg)
{
	struct ps_worker_state *wk = n->worker;
	int layer = (int)(arg & 0xffff);
	uint64_t iter = (uint64_t)arg >> 16;

	return wk->ready_iter[layer] >= iter;
}

static bool all_ended(struct ps_node *n, long total)
{
	return n->win.oldest_open >= (uint64_t)total;
}

/* The node's own copy of layer's buffers, made on first use (n->mu held). */
static int own_buffers(struct ps_node *n, int layer)
{
	struct ps_worker_state *wk = n->worker;
	size_t bytes = n->pl.len[layer] * sizeof(float);

	if (!wk->grad[layer])
		wk->grad[layer] = malloc(bytes);
	if (!wk->param[layer])
		wk->param[layer] = malloc(bytes);
	return wk->grad[layer] && wk->param[layer] ? 0 : -ENOMEM;
}

/* A push of layer: from the node's own copy of grad (out NULL; with grad NULL, a constant or
 * the verify values), or in place, read from grad and pulled into out. */
static int push(struct ps_node *n, int layer, uint64_t iter, const float *grad, float *out)
{
	struct ps_worker_state *wk = n->worker;
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
	bool in_order = iter == wk->pushed_iter[layer] && wk->ready_iter[layer] >= iter;
	if (in_order && keeps && !out)
		r = own_buffers(n, layer);
	in_order = in_order && !r;
	bool begins = in_order && iter >= wk->begun;
	if (in_order) {
		wk->pushed_iter[layer] = iter + 1;
		if (keeps) {
			wk->push_src[layer] = out ? grad : wk->grad[layer];
			wk->pull_dst[layer] = out ? out : wk->param[layer];
		}
	}
	if (begins)
		wk->begun = iter + 1;
	pthread_mutex_unlock(&n->mu);
	if (r)
		return r;
	if (!in_order)
		return -EALREADY;
	if (keeps && !out && grad)
		memcpy(wk->grad[layer], grad, n->pl.len[layer] * sizeof(float));
	else if (keeps && !out && n->cfg.verify)
		for (uint64_t j = 0; j < n->pl.len[layer]; j++)
			wk->grad[layer][j] = ps_grad_value(n->cfg.rank, layer, iter, j);
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

int ps_worker_wait_pull(struct ps_node *n, int layer, uint64_t iter, float *out, ps_explain_fn *why)
{
	struct ps_worker_state *wk = n->worker;
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
	if (iter >= wk->pushed_iter[layer]) /* never pushed: would wait forever */
		r = -EINVAL;
	else
		r = ps_wait(n, layer_ready, layer_ready_arg(layer, iter), what, why, layer);
	if (out)
		got = wk->pull_dst[layer];
	pthread_mutex_unlock(&n->mu);
	/* The next pull of this layer needs our next push, which comes after this returns. */
	if (!r && out && out != got)
		memcpy(out, got, n->pl.len[layer] * sizeof(float));
	return r;
}

int ps_node_pull_ready(struct ps_node *n, int layer, uint64_t iter)
{
	struct ps_worker_state *wk = n->worker;
	int r;

	if (layer < 0 || layer >= n->L)
		return -EINVAL;
	pthread_mutex_lock(&n->mu);
	if (iter >= wk->pushed_iter[layer])
		r = -EINVAL;
	else
		r = atomic_load(&n->failed) || layer_ready(n, layer_ready_arg(layer, iter));
	pthread_mutex_unlock(&n->mu);
	return r;
}

int ps_worker_finish(struct ps_node *n)
{
	struct ps_worker_state *wk = n->worker;
	int r;

	pthread_mutex_lock(&n->mu);
	/* Every iteration ends for the tags before we leave, the last one included. */
	r = ps_wait(n, all_ended, (long)wk->begun, "the last iteration's pulls to be acknowledged",
		    NULL, -1);
	wk->done = true;
	pthread_mutex_unlock(&n->mu);
	return r;
}

bool ps_worker_finished(const struct ps_node *n)
{
	return n->worker && n->worker->done;
}

void ps_worker_result(const struct ps_node *n, struct ps_result *res)
{
	const struct ps_worker_state *wk = n->worker;

	res->mismatches = wk ? wk->mismatches : 0;
	res->pulls_checked = wk ? wk->pulls_checked : 0;
	res->max_inflight = wk ? wk->max_inflight : 0;
	res->inflight_left = wk ? wk->inflight : 0;
}
