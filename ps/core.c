// SPDX-License-Identifier: BSD-2-Clause
/*
 * The primitives every part of a node uses (ps/core.h): the clock, failure (tear everything
 * down once), the event record, the layer -> connection map, queueing a message and waiting
 * on the node with a timeout. They call nothing above them.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

#include "core.h"

double ps_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ps_sleep_until(double t)
{
	struct timespec ts = {(time_t)t, (long)((t - (double)(time_t)t) * 1e9)};

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

void ps_shutdown_all(struct ps_node *n)
{
	for (int p = 0; p < n->cfg.nodes; p++)
		for (int k = 0; k < n->C; k++) {
			if (n->wconn[p][k]) {
				shutdown(n->wconn[p][k]->fd, SHUT_RDWR);
				ps_sendq_close(&n->wconn[p][k]->q);
			}
			if (n->sconn[p][k]) {
				shutdown(n->sconn[p][k]->fd, SHUT_RDWR);
				ps_sendq_close(&n->sconn[p][k]->q);
			}
		}
	if (n->listen_fd >= 0)
		shutdown(n->listen_fd, SHUT_RDWR);
	pthread_mutex_lock(&n->mu); /* wakes senders holding a push (hold_until_current) */
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
}

void ps_fail(struct ps_node *n, const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&n->err_mu);
	bool was = atomic_exchange(&n->failed, true);
	if (!was) {
		va_start(ap, fmt);
		vsnprintf(n->err, sizeof(n->err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&n->err_mu);
	if (!was)
		fprintf(stderr, "mercury-ps: %s\n", n->err);
	pthread_mutex_lock(&n->mu);
	pthread_cond_broadcast(&n->cv);
	pthread_mutex_unlock(&n->mu);
	/* Tear everything down so peers see it at once and nobody waits on us (once: later
	 * callers may race with teardown, which shuts everything down itself). */
	if (!atomic_exchange(&n->closing, true))
		ps_shutdown_all(n);
}

void ps_record(struct ps_node *n, char kind, int layer, uint64_t iter, double t0, double t1)
{
	if (!n->cfg.timeline)
		return;
	bool lock = kind != 'l' && kind != 'e'; /* pull and iteration-end records: n->mu held */
	if (lock)
		pthread_mutex_lock(&n->mu);
	if (n->nev == n->capev) {
		int cap = n->capev ? n->capev * 2 : 4096;
		struct ps_event *e = realloc(n->ev, cap * sizeof(*e));
		if (e) {
			n->ev = e;
			n->capev = cap;
		}
	}
	if (n->nev < n->capev)
		n->ev[n->nev++] = (struct ps_event){iter, layer, kind, t0, t1};
	if (lock)
		pthread_mutex_unlock(&n->mu);
}

int ps_conn_of_layer(const struct ps_node *n, int layer, enum ps_dir dir)
{
	int k = n->K == 1 ? 0 : n->conn_of[layer];

	return dir == PS_DIR_PULL && n->cfg.mode == PS_MERCURY ? n->K + k : k;
}

int ps_enqueue(struct ps_conn *c, uint16_t type, int slice, uint64_t iter, uint64_t off,
	       uint64_t len, const void *data, uint64_t key)
{
	return ps_enqueue_at(c, type, slice, iter, off, len, data, key, 0);
}

int ps_enqueue_at(struct ps_conn *c, uint16_t type, int slice, uint64_t iter, uint64_t off,
		  uint64_t len, const void *data, uint64_t key, double not_before)
{
	struct ps_send_item it = {
	    .h = {PS_MAGIC, type, 0, 0, (uint32_t)slice, iter, off, len},
	    .data = data,
	    .key = key,
	    .not_before = not_before,
	};

	if (slice >= 0 && slice < c->node->pl.nslices)
		it.h.layer = (uint32_t)c->node->pl.slices[slice].layer;
	return ps_sendq_push(&c->q, &it);
}

int ps_wait(struct ps_node *n, bool (*cond)(struct ps_node *, long), long arg, const char *what,
	    ps_explain_fn *why, int layer)
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
			if (why)
				why(n, layer, lacks, sizeof(lacks));
			ps_fail(n, "worker %d: no progress for %.0f s waiting for %s%s",
				n->cfg.rank, n->cfg.timeout_s, what, lacks);
			pthread_mutex_lock(&n->mu);
			return -ETIMEDOUT;
		}
	}
	return 0;
}
