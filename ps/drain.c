// SPDX-License-Identifier: BSD-2-Clause
/*
 * Iteration end for the tags, mercury mode: an iteration is over at this node when its
 * worker has every pull and every pull its server owes has been acknowledged by the worker
 * it went to. "Written into the socket" is not enough: a pull still in the socket or in a
 * low band of the qdisc would lose its precedence to the next iteration's front layers the
 * moment the iteration ended, and the worker waiting for it falls a whole iteration behind
 * (seen on AlexNet: fc8 pulls to one node starved ~1 s behind other nodes' fc6 pushes).
 *
 * When the last pull of an iteration is written, the byte count written on every server
 * connection is noted; a drainer thread polls the kernel's count of acknowledged bytes
 * (common/tcp_stream.c) until each connection's reaches it.
 */
#include <errno.h>
#include <time.h>

#include "drain.h"
#include "tag.h"

/* 0.2 ms: far below a layer's pull time in any profile. The unit test sets it slower, so
 * that an iteration's end lags its worker. */
long ps_drain_poll_ns = 200000L;

static bool slot_ready(const struct ps_node *n, int i)
{
	/* a process with one half has the other's side done from the start */
	return (n->worker_pulled[i] || !ps_has_worker(n)) && n->pulls_written[i] >= n->pulls_owed &&
	       (!n->drainer_started || n->drained[i]);
}

/* n->mu held. */
static void try_end(struct ps_node *n, int i, uint64_t iter)
{
	if (!slot_ready(n, i))
		return;
	n->worker_pulled[i] = false;
	n->pulls_written[i] = 0;
	n->drain_armed[i] = false;
	n->drained[i] = false;
	iter_window_end(&n->win, iter); /* < PS_ITER_SLOTS apart */
	ps_tag_iteration(n, iter, false);
	ps_record(n, 'e', -1, iter, ps_now(), ps_now());
	pthread_cond_broadcast(&n->cv);
}

void ps_iteration_side_done(struct ps_node *n, uint64_t iter, bool worker_side)
{
	int i = (int)(iter % PS_ITER_SLOTS);

	if (worker_side)
		n->worker_pulled[i] = true;
	else if (++n->pulls_written[i] == n->pulls_owed && n->drainer_started) {
		for (int w = 0; w < n->cfg.nodes; w++)
			for (int k = 0; k < n->C; k++)
				n->drain_target[i][w][k] =
				    n->sconn[w][k] ? atomic_load(&n->sconn[w][k]->written) : 0;
		n->drain_iter[i] = iter;
		n->drain_armed[i] = true;
		pthread_cond_broadcast(&n->drain_cv);
	}
	try_end(n, i, iter);
}

/* Bytes the peer has acknowledged, or UINT64_MAX once the socket is unusable. */
static uint64_t acked(struct ps_conn *c)
{
	uint64_t n;

	if (tcp_bytes_acked(c->fd, &n, NULL))
		return UINT64_MAX;
	return n - c->acked_base;
}

/* Whether every server connection from *next on (flattened worker x connection index) has
 * its target acknowledged; on false, *next is the first that has not. The count only grows,
 * so a caller polling one slot can resume there instead of re-reading every socket. */
bool ps_drain_slot_done(struct ps_node *n, int i, int *next)
{
	for (int j = *next; j < n->cfg.nodes * n->C; j++) {
		int w = j / n->C, k = j % n->C;
		struct ps_conn *c = n->sconn[w][k];

		if (c && acked(c) < n->drain_target[i][w][k]) {
			*next = j;
			return false;
		}
	}
	return true;
}

static void *drainer(void *arg)
{
	struct ps_node *n = arg;
	const struct timespec pause = {0, ps_drain_poll_ns};
	int polled = -1, next = 0; /* the slot being polled and where its check resumes */

	pthread_mutex_lock(&n->mu);
	while (!atomic_load(&n->closing)) {
		int armed = -1;

		for (int i = 0; i < PS_ITER_SLOTS && armed < 0; i++)
			if (n->drain_armed[i] && !n->drained[i])
				armed = i;
		if (armed < 0) {
			/* Woken by arming, or by ps_drain_stop() (closing is set by then). */
			pthread_cond_wait(&n->drain_cv, &n->mu);
			continue;
		}
		if (armed != polled) {
			polled = armed;
			next = 0;
		}
		/* The targets of an armed slot do not change until it ends (n->mu not needed). */
		pthread_mutex_unlock(&n->mu);
		bool done = ps_drain_slot_done(n, armed, &next);
		if (!done)
			nanosleep(&pause, NULL);
		pthread_mutex_lock(&n->mu);
		if (done) {
			polled = -1; /* a slot is re-armed for a later iteration: start over then */
			n->drained[armed] = true;
			try_end(n, armed, n->drain_iter[armed]);
		}
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

int ps_drain_start(struct ps_node *n)
{
	pthread_cond_init(&n->drain_cv, NULL);
	if (pthread_create(&n->drainer, NULL, drainer, n)) {
		pthread_cond_destroy(&n->drain_cv);
		return -EAGAIN;
	}
	pthread_setname_np(n->drainer, "mps-drain");
	n->drainer_started = true;
	return 0;
}

void ps_drain_stop(struct ps_node *n)
{
	if (!n->drainer_started)
		return;
	pthread_mutex_lock(&n->mu);
	pthread_cond_broadcast(&n->drain_cv);
	pthread_mutex_unlock(&n->mu);
	pthread_join(n->drainer, NULL);
	pthread_cond_destroy(&n->drain_cv);
	n->drainer_started = false;
}
