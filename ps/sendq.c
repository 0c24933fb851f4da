// SPDX-License-Identifier: BSD-2-Clause
/* Per-connection send queue: a binary heap on (key, seq), so equal keys stay FIFO. */
#include <errno.h>
#include <stdlib.h>

#include "sendq.h"

void ps_sendq_init(struct ps_sendq *q)
{
	pthread_mutex_init(&q->mu, NULL);
	pthread_cond_init(&q->cv, NULL);
	q->heap = NULL;
	q->n = q->cap = 0;
	q->seq = 0;
	q->closed = false;
}

void ps_sendq_destroy(struct ps_sendq *q)
{
	free(q->heap);
	pthread_mutex_destroy(&q->mu);
	pthread_cond_destroy(&q->cv);
}

static bool before(const struct ps_send_item *a, const struct ps_send_item *b)
{
	return a->key < b->key || (a->key == b->key && a->seq < b->seq);
}

int ps_sendq_push(struct ps_sendq *q, const struct ps_send_item *it)
{
	pthread_mutex_lock(&q->mu);
	if (q->closed) {
		pthread_mutex_unlock(&q->mu);
		return -EPIPE;
	}
	if (q->n == q->cap) {
		int cap = q->cap ? q->cap * 2 : 64;
		struct ps_send_item *h = realloc(q->heap, cap * sizeof(*h));

		if (!h) {
			pthread_mutex_unlock(&q->mu);
			return -ENOMEM;
		}
		q->heap = h;
		q->cap = cap;
	}
	int i = q->n++;
	q->heap[i] = *it;
	q->heap[i].seq = q->seq++;
	while (i > 0 && before(&q->heap[i], &q->heap[(i - 1) / 2])) {
		struct ps_send_item t = q->heap[i];
		q->heap[i] = q->heap[(i - 1) / 2];
		q->heap[(i - 1) / 2] = t;
		i = (i - 1) / 2;
	}
	pthread_cond_signal(&q->cv);
	pthread_mutex_unlock(&q->mu);
	return 0;
}

bool ps_sendq_pop(struct ps_sendq *q, struct ps_send_item *out)
{
	pthread_mutex_lock(&q->mu);
	while (!q->closed && q->n == 0)
		pthread_cond_wait(&q->cv, &q->mu);
	if (q->closed) {
		pthread_mutex_unlock(&q->mu);
		return false;
	}
	*out = q->heap[0];
	q->heap[0] = q->heap[--q->n];
	for (int i = 0;;) {
		int l = 2 * i + 1, r = l + 1, m = i;

		if (l < q->n && before(&q->heap[l], &q->heap[m]))
			m = l;
		if (r < q->n && before(&q->heap[r], &q->heap[m]))
			m = r;
		if (m == i)
			break;
		struct ps_send_item t = q->heap[i];
		q->heap[i] = q->heap[m];
		q->heap[m] = t;
		i = m;
	}
	pthread_mutex_unlock(&q->mu);
	return true;
}

void ps_sendq_close(struct ps_sendq *q)
{
	pthread_mutex_lock(&q->mu);
	q->closed = true;
	pthread_cond_broadcast(&q->cv);
	pthread_mutex_unlock(&q->mu);
}
