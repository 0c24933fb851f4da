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
#include <stdlib.h>
#include <time.h>

#include "drain.h"
#include "tag.h"

/* Indexed by iteration % PS_ITER_SLOTS; under n->mu. */
struct ps_drain_state {
	uint64_t pulls_written[PS_ITER_SLOTS]; /* (slice, worker) pulls fully written */
	bool worker_pulled[PS_ITER_SLOTS];     /* the worker has every pull of the iteration */
	uint64_t pulls_owed;		       /* own slices x workers */
	bool armed[PS_ITER_SLOTS], drained[PS_ITER_SLOTS];
	uint64_t iter[PS_ITER_SLOTS];
	uint64_t target[PS_ITER_SLOTS][PS_MAX_NODES][PS_MAX_PAIR_CONNS]; /* bytes written */
	pthread_t drainer;
	pthread_cond_t cv;
	bool started;
};

/* 0.2 ms: far below a layer's pull time in any profile. The unit test sets it slower, so
 * that an iteration's end lags its worker. */
long ps_drain_poll_ns = 200000L;

int ps_drain_init(struct ps_node *n)
{
	struct ps_drain_state *d = calloc(1, sizeof(*d));

	if (!d)
		return -ENOMEM;
	for (int i = 0; i < n->pl.nslices && ps_has_server(n); i++)
		if (n->pl.slices[i].server == n->cfg.rank)
			d->pulls_owed += (uint64_t)n->cfg.nodes;
	n->drain = d;
	return 0;
}

void ps_drain_free(struct ps_node *n)
{
	free(n->drain);
	n->drain = NULL;
}

bool ps_drain_running(const struct ps_node *n)
{
	return n->drain && n->drain->started;
}

static bool slot_ready(const struct ps_node *n, int i)
{
	const struct ps_drain_state *d = n->drain;

	/* a process with one half has the other's side done from the start */
	return (d->worker_pulled[i] || !ps_has_worker(n)) && d->pulls_written[i] >= d->pulls_owed &&
	       (!d->started || d->drained[i]);
}

/* n->mu held. */
static void try_end(struct ps_node *n, int i, uint64_t iter)
{
	struct ps_drain_state *d = n->drain;

	if (!slot_ready(n, i))
		return;
	d->worker_pulled[i] = false;
	d->pulls_written[i] = 0;
	d->armed[i] = false;
	d->drained[i] = false;
	iter_window_end(&n->win, iter); /* < PS_ITER_SLOTS apart */
	ps_tag_iteration(n, iter, false);
	ps_record(n, 'e', -1, iter, ps_now(), ps_now());
	pthread_cond_broadcast(&n->cv);
}

void ps_iteration_side_done(struct ps_node *n, uint64_t iter, bool worker_side)
{
	struct ps_drain_state *d = n->drain;
	int i = (int)(iter % PS_ITER_SLOTS);

	if (worker_side)
		d->worker_pulled[i] = true;
	else if (++d->pulls_written[i] == d->pulls_owed && d->started) {
		for (int w = 0; w < n->cfg.nodes; w++)
			for (int k = 0; k < n->C; k++)
				d->target[i][w][k] =
				    n->sconn[w][k] ? atomic_load(&n->sconn[w][k]->written) : 0;
		d->iter[i] = iter;
		d->armed[i] = true;
		pthread_cond_broadcast(&d->cv);
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

		if (c && acked(c) < n->drain->target[i][w][k]) {
			*next = j;
			return false;
		}
	}
	return true;
}

static void *drainer(void *arg)
{
	struct ps_node *n = arg;
	struct ps_drain_state *d = n->drain;
	const struct timespec pause = {0, ps_drain_poll_ns};
	int polled = -1, next = 0; /* the slot being polled and where its check resumes */

	pthread_mutex_lock(&n->mu);
	while (!atomic_load(&n->closing)) {
		int armed = -1;

		for (int i = 0; i < PS_ITER_SLOTS && armed < 0; i++)
			if (d->armed[i] && !d->drained[i])
				armed = i;
		if (armed < 0) {
			/* Woken by arming, or by ps_drain_stop() (closing is set by then). */
			pthread_cond_wait(&d->cv, &n->mu);
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
			d->drained[armed] = true;
			try_end(n, armed, d->iter[armed]);
		}
	}
	pthread_mutex_unlock(&n->mu);
	return NULL;
}

int ps_drain_start(struct ps_node *n)
{
	struct ps_drain_state *d = n->drain;

	pthread_cond_init(&d->cv, NULL);
	if (pthread_create(&d->drainer, NULL, drainer, n)) {
		pthread_cond_destroy(&d->cv);
		return -EAGAIN;
	}
	pthread_setname_np(d->drainer, "mps-drain");
	d->started = true;
	return 0;
}

void ps_drain_stop(struct ps_node *n)
{
	struct ps_drain_state *d = n->drain;

	if (!d || !d->started)
		return;
	pthread_mutex_lock(&n->mu);
	pthread_cond_broadcast(&d->cv);
	pthread_mutex_unlock(&n->mu);
	pthread_join(d->drainer, NULL);
	pthread_cond_destroy(&d->cv);
	d->started = false;
}
