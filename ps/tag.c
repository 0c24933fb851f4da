// SPDX-License-Identifier: BSD-2-Clause
/*
 * The one place where the PS tells Mercury which bytes carry which layer, through libmercury:
 * one client per node (the job id and weight of --job/--weight, the profile's layer count),
 * every connection registered, and each message tagged (layer, direction, iteration) right
 * before its bytes are written. Iteration boundaries go to the daemon too, so the oldest
 * iteration's traffic goes first.
 *
 * Per-job priority (--job-band B, fifo and partition modes): the whole job in one band, as
 * TensorLights gives each job one priority at the host. With the public API only: the job
 * is declared as a model of G layers (G = the current iteration's layer groups of the bands,
 * mercury_current_groups()), every byte it writes is tagged layer B + 1 and no iteration is
 * ever opened, so each tag counts as the current iteration and lands in group B = band B
 * (plus the levels its weight yields to heavier jobs, common/job_level.h).
 *
 * If no mercuryd answers, mercury mode says so once and runs without packet priority (the
 * JSON result's "tagged" is false) rather than failing: the benchmark checks that flag.
 * A mercuryd that goes away mid-run costs priority, never progress: libmercury fails tags and
 * iteration events at once while it is gone (the bytes go out untagged, or through the
 * fast path with the job's last published state), says one warning here, and picks the
 * daemon up again within 100 ms of its return (one line says so).
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "tag.h"
#include "placement.h"
#include "mercury.h"
#include "mercury_groups.h"

static const char *why(int err)
{
	return mercury_strerror(err);
}

int ps_tag_open(struct ps_node *n)
{
	struct mercury_client *cl = NULL;
	int r;

	uint32_t layers = n->cfg.job_band >= 0 ? mercury_current_groups((unsigned)n->cfg.tag_levels)
					       : (uint32_t)n->L;

	r = mercury_connect(getenv("MERCURY_SOCKET"), &cl);
	if (!r)
		r = mercury_job_declare(cl, n->cfg.job, layers, n->cfg.weight);
	if (r) {
		/* once per process: `serve` opens a node per job, `local` several at once */
		static atomic_bool warned;

		if (!atomic_exchange(&warned, true))
			fprintf(stderr,
				"mercury-ps: node %d: cannot use mercuryd (%s): the run goes on "
				"without packet priority (start `mercuryd serve`, set "
				"MERCURY_SOCKET)\n",
				n->cfg.rank, why(r));
		if (cl)
			mercury_disconnect(cl);
		return r;
	}
	n->tagger = cl;
	return 0;
}

/* How many tags took mercuryd's fast path (one setsockopt each) and how many its service;
 * either pointer may be NULL. */
void ps_tag_counts(struct ps_node *n, uint64_t *fastpath, uint64_t *service)
{
	uint64_t none = 0;

	if (n->tagger) {
		mercury_tag_counts(n->tagger, fastpath, service);
		return;
	}
	*(fastpath ? fastpath : &none) = 0;
	*(service ? service : &none) = 0;
}

void ps_tag_close(struct ps_node *n)
{
	if (n->tagger)
		mercury_disconnect(n->tagger);
	n->tagger = NULL;
}

int ps_tag_register(struct ps_conn *c)
{
	if (!c->node->tagger)
		return -ENOTCONN;
	int r = mercury_register_socket(c->node->tagger, c->fd);
	if (r)
		fprintf(stderr, "mercury-ps: node %d: registering a socket with mercuryd: %s\n",
			c->node->cfg.rank, why(r));
	c->tag = r ? NULL : c->node->tagger;
	return r;
}

/* The daemon's loss and return, once each per outage and process (c: the client a call just
 * failed or succeeded on). */
static atomic_bool degraded;

static void watch_daemon(struct mercury_client *cl, int rank, int r)
{
	if (r && !mercury_daemon_connected(cl)) {
		if (!atomic_exchange(&degraded, true))
			fprintf(stderr,
				"mercury-ps: node %d: mercuryd went away (%s): training goes on "
				"without packet priority until it is back\n",
				rank, why(r));
	} else if (!r && atomic_load(&degraded) && mercury_daemon_connected(cl) &&
		   atomic_exchange(&degraded, false)) {
		fprintf(stderr, "mercury-ps: node %d: mercuryd is back: tags resumed\n", rank);
	}
}

int ps_tag_next(struct ps_conn *c, uint64_t nbytes, int layer, enum ps_dir dir, uint64_t iter)
{
	if (!c->tag)
		return -ENOTCONN;
	if (c->node->cfg.job_band >= 0)
		layer = c->node->cfg.job_band; /* the job's one band, whatever the layer */
	else if (dir == PS_DIR_PULL && ps_pulls_ranked_below(&c->node->cfg))
		layer = ps_layer_one_group_below(
		    layer, c->node->L, mercury_current_groups((unsigned)c->node->cfg.tag_levels));
	int r = mercury_tag_next(c->tag, c->fd, c->node->cfg.job, (uint32_t)layer + 1,
				 dir == PS_DIR_PUSH ? MERCURY_PUSH : MERCURY_PULL, iter, nbytes);
	if (r)
		atomic_fetch_add(&c->node->tag_errors, 1);
	watch_daemon(c->tag, c->node->cfg.rank, r);
	return r;
}

void ps_tag_iteration(struct ps_node *n, uint64_t iter, bool begin)
{
	if (!n->tagger || n->cfg.job_band >= 0) /* per-job priority: no iteration levels */
		return;
	int r = begin ? mercury_iteration_begin(n->tagger, n->cfg.job, iter)
		      : mercury_iteration_end(n->tagger, n->cfg.job, iter);
	if (r)
		atomic_fetch_add(&n->tag_errors, 1);
	watch_daemon(n->tagger, n->cfg.rank, r);
}

/*
 * A socket whose packets land in two bands reorders its own stream, which TCP takes for loss
 * (include/mercury_groups.h); the PS maps sockets to layer groups and holds next-iteration
 * pushes until the iteration turns so that it should not happen (with --write-ahead a
 * socket's bytes can move from the next iteration's band to a current one). Counted from the
 * classifier's per-socket counters, before the untagged goodbyes. With dscp_queues, also
 * the sockets whose bands lie in more than one switch queue (*split_queues): what the
 * queue-aware map (ps_map_connections_queues) is for; next-iteration bytes (band N - 2) in
 * another queue than their layer's still count.
 */
uint64_t ps_tag_split_sockets(struct ps_node *n, uint64_t *split_queues)
{
	uint64_t split = 0;

	*split_queues = 0;
	if (!n->tagger)
		return 0;
	for (int i = 0; i < PS_CONN_SLOTS; i++) {
		struct ps_conn *c = ps_conn_slot(n, i);
		struct mercury_socket_stats st;
		int bands = 0, q0 = -1;
		bool queues = false;

		if (!c || !c->tag || mercury_socket_stats(n->tagger, c->fd, &st))
			continue;
		for (size_t b = 0; b < sizeof(st.packets) / sizeof(st.packets[0]); b++) {
			if (!st.packets[b])
				continue;
			bands++;
			int q =
			    n->queue_of_band[b < MERCURY_MAX_LEVELS ? b : MERCURY_MAX_LEVELS - 1];
			queues |= q0 >= 0 && q != q0;
			q0 = q;
		}
		split += bands > 1;
		*split_queues += n->cfg.dscp_queues > 1 && queues;
	}
	return split;
}

void ps_tag_unregister(struct ps_conn *c)
{
	c->tag = NULL; /* the daemon forgets a socket when it closes */
}
