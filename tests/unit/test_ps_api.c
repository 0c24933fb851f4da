// SPDX-License-Identifier: BSD-2-Clause
/*
 * libmercury-ps as a framework uses it (include/mercury_ps.h), two nodes as threads over
 * loopback: every pulled value is the sum of both workers' pushes; pushes out of order and
 * pulls of layers never pushed are refused with a reason; two workers whose models differ
 * fail at open naming the layout; bad options are refused before any socket is opened.
 * A worker pushing in place (mercury_ps_push_inplace) gets the same sums in its own buffers.
 * With external_servers the same sums come from server-only nodes (what `mercury-ps serve`
 * runs), each serving its job to the end.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "mercury_ps.h"
#include "placement.h"
#include "ps.h" /* the server role, as `mercury-ps serve` starts it */

#define NODES 2
#define ITERS 3

static const uint64_t sizes[] = {3, 1001, 70000, 1200001}; /* the last is sliced over both */
#define LAYERS (int)(sizeof(sizes) / sizeof(sizes[0]))

struct worker {
	int rank;
	const char *hosts[NODES];
	uint64_t params[LAYERS];
	enum mercury_ps_mode mode;
	int external_servers;
	int inplace; /* mercury_ps_push_inplace: per-layer buffers, nothing copied */
	enum mercury_ps_placement placement;
	int dscp_queues;
	int rc, bad_sums, out_of_order_rc, unpushed_rc, unpushed_ready_rc, not_ready_after_wait;
	char err[256];
};

static float grad_value(int rank, int layer, int iter, uint64_t j)
{
	return (float)((rank + 1) * 1000 + layer * 100 + iter) + (float)(j % 7) * 0.25f;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct mercury_ps_options o = MERCURY_PS_OPTIONS_INIT;
	struct mercury_ps *ps;
	float *buf = malloc(sizes[LAYERS - 1] * sizeof(float));

	o.rank = w->rank;
	o.nodes = NODES;
	o.hosts = w->hosts;
	o.layer_params = w->params;
	o.nlayers = LAYERS;
	o.mode = w->mode;
	o.timeout_s = 10;
	o.external_servers = w->external_servers;
	o.placement = w->placement;
	o.dscp_queues = w->dscp_queues;
	w->rc = mercury_ps_open(&o, &ps, w->err, sizeof(w->err));
	if (w->rc) {
		free(buf);
		return NULL;
	}
	float *grads[LAYERS], *outs[LAYERS];

	for (int l = 0; l < LAYERS; l++) {
		grads[l] = w->inplace ? malloc(sizes[l] * sizeof(float)) : NULL;
		outs[l] = w->inplace ? malloc(sizes[l] * sizeof(float)) : NULL;
	}
	for (int it = 0; it < ITERS; it++) {
		for (int l = LAYERS - 1; l >= 0; l--) { /* backward order */
			float *g = w->inplace ? grads[l] : buf;

			for (uint64_t j = 0; j < sizes[l]; j++)
				g[j] = grad_value(w->rank, l, it, j);
			if (w->inplace)
				mercury_ps_push_inplace(ps, l, (uint64_t)it, g, outs[l]);
			else
				mercury_ps_push(ps, l, (uint64_t)it, g);
		}
		if (it == 0) {
			w->out_of_order_rc = mercury_ps_push(ps, 0, 5, buf);
			w->unpushed_rc = mercury_ps_wait_pull(ps, 0, 7, buf);
			w->unpushed_ready_rc = mercury_ps_pull_ready(ps, 0, 7);
		}
		for (int l = 0; l < LAYERS; l++) { /* next forward pass */
			float *o = w->inplace ? outs[l] : buf;

			if (mercury_ps_wait_pull(ps, l, (uint64_t)it, o))
				break;
			w->not_ready_after_wait += mercury_ps_pull_ready(ps, l, (uint64_t)it) != 1;
			for (uint64_t j = 0; j < sizes[l]; j++)
				w->bad_sums +=
				    o[j] != grad_value(0, l, it, j) + grad_value(1, l, it, j);
		}
	}
	for (int l = 0; l < LAYERS; l++) {
		free(grads[l]);
		free(outs[l]);
	}
	w->rc = mercury_ps_close(ps, w->err, sizeof(w->err));
	free(buf);
	return NULL;
}

static char addr[NODES][32]; /* the nodes' servers, new ports for every run */

static void next_addresses(void)
{
	static uint16_t port;

	if (!port)
		port = (uint16_t)(24000 + (getpid() % 1000) * 8);
	port += 2;
	for (int i = 0; i < NODES; i++)
		snprintf(addr[i], sizeof(addr[i]), "127.0.0.1:%u", port + i);
}

static int inplace_rank = -1;			      /* this worker pushes in place */
static enum mercury_ps_placement placement_of[NODES]; /* each rank's placement rule */
static int dscp_queues_of[NODES];		      /* each rank's switch queues */

static void run_workers(struct worker *w, enum mercury_ps_mode mode, uint64_t rank1_extra,
			int external_servers)
{
	pthread_t th[NODES];

	for (int i = 0; i < NODES; i++) {
		memset(&w[i], 0, sizeof(w[i]));
		w[i].rank = i;
		w[i].mode = mode;
		w[i].external_servers = external_servers;
		w[i].inplace = i == inplace_rank;
		w[i].placement = placement_of[i];
		w[i].dscp_queues = dscp_queues_of[i];
		for (int j = 0; j < NODES; j++)
			w[i].hosts[j] = addr[j];
		memcpy(w[i].params, sizes, sizeof(sizes));
	}
	w[1].params[1] += rank1_extra;
	for (int i = 0; i < NODES; i++)
		assert_int_equal(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	for (int i = 0; i < NODES; i++)
		pthread_join(th[i], NULL);
}

static void run_pair(struct worker *w, enum mercury_ps_mode mode, uint64_t rank1_extra)
{
	next_addresses();
	run_workers(w, mode, rank1_extra, 0);
}

static void assert_sums_right(const struct worker *w, int mode)
{
	for (int i = 0; i < NODES; i++) {
		if (w[i].rc)
			fprintf(stderr, "mode %d rank %d: %s\n", mode, i, w[i].err);
		assert_int_equal(w[i].rc, 0);
		assert_int_equal(w[i].bad_sums, 0);
		assert_int_equal(w[i].out_of_order_rc, -EALREADY);
		assert_int_equal(w[i].unpushed_rc, -EINVAL);
		assert_int_equal(w[i].unpushed_ready_rc, -EINVAL);
		assert_int_equal(w[i].not_ready_after_wait, 0);
	}
}

static void test_sums_in_every_mode(void **state)
{
	(void)state;
	for (int m = MERCURY_PS_FIFO; m <= MERCURY_PS_MERCURY; m++) {
		struct worker w[NODES];

		run_pair(w, (enum mercury_ps_mode)m, 0);
		assert_sums_right(w, m);
	}
}

/* Rank 0 pushes in place (its buffers read and written where they are), rank 1 copies. */
static void test_sums_in_place(void **state)
{
	(void)state;
	inplace_rank = 0;
	for (int m = MERCURY_PS_FIFO; m <= MERCURY_PS_MERCURY; m++) {
		struct worker w[NODES];

		run_pair(w, (enum mercury_ps_mode)m, 0);
		assert_sums_right(w, m);
	}
	inplace_rank = -1;
}

static void test_sums_with_servers_apart(void **state)
{
	(void)state;
	for (int m = MERCURY_PS_FIFO; m <= MERCURY_PS_MERCURY; m++) {
		struct ps_node *srv[NODES];
		struct worker w[NODES];
		char err[256];

		next_addresses();
		for (int i = 0; i < NODES; i++) { /* the library's defaults, as serve's */
			struct ps_config c;

			ps_config_defaults(&c);
			c.role = PS_ROLE_SERVER;
			c.mode = (enum ps_mode)m;
			c.nodes = NODES;
			c.rank = i;
			c.timeout_s = 10;
			for (int j = 0; j < NODES; j++)
				snprintf(c.hosts[j], sizeof(c.hosts[j]), "%s", addr[j]);
			assert_int_equal(
			    ps_node_start(&c, sizes, LAYERS, &srv[i], err, sizeof(err)), 0);
		}
		run_workers(w, (enum mercury_ps_mode)m, 0, 1);
		assert_sums_right(w, m);
		for (int i = 0; i < NODES; i++) {
			/* every worker closed: the server's job is over */
			assert_int_equal(ps_node_serve_wait(srv[i], 5), 0);
			assert_int_equal(ps_node_stop(srv[i], NULL, err, sizeof(err)), 0);
		}
	}
}

/* Connections by switch queue (dscp_queues 4 of the default 8 bands: the 4 layers' groups
 * 0, 1, 3, 4 lie in queues 0, 0, 1, 2, so the 4 connections go 2, 1, 1 to them): the same
 * sums; a worker whose map differs from its server's is refused at open. */
static void test_sums_by_switch_queue(void **state)
{
	struct worker w[NODES];

	(void)state;
	dscp_queues_of[0] = dscp_queues_of[1] = 4;
	run_pair(w, MERCURY_PS_MERCURY, 0);
	assert_sums_right(w, MERCURY_PS_MERCURY);
	dscp_queues_of[1] = 0;
	run_pair(w, MERCURY_PS_MERCURY, 0);
	for (int i = 0; i < NODES; i++) {
		assert_int_not_equal(w[i].rc, 0);
		assert_non_null(strstr(w[i].err, "model layout"));
	}
	dscp_queues_of[0] = dscp_queues_of[1] = 0;
}

static void test_other_model_fails_at_open(void **state)
{
	struct worker w[NODES];

	(void)state;
	run_pair(w, MERCURY_PS_FIFO, 1);
	for (int i = 0; i < NODES; i++) {
		assert_int_not_equal(w[i].rc, 0);
		assert_non_null(strstr(w[i].err, "model layout"));
	}
}

/* Workers that place the tensors differently would sum another server's share: HELLO refuses
 * them. Both balanced: the sums are right. */
static void test_placement_agreed_at_open(void **state)
{
	struct worker w[NODES];

	(void)state;
	placement_of[1] = MERCURY_PS_PLACE_BALANCED;
	run_pair(w, MERCURY_PS_MERCURY, 0);
	for (int i = 0; i < NODES; i++) {
		assert_int_not_equal(w[i].rc, 0);
		assert_non_null(strstr(w[i].err, "model layout"));
	}
	placement_of[0] = MERCURY_PS_PLACE_BALANCED;
	run_pair(w, MERCURY_PS_MERCURY, 0);
	assert_sums_right(w, MERCURY_PS_MERCURY);
	placement_of[0] = placement_of[1] = MERCURY_PS_PLACE_HASH;
}

static void test_bad_options(void **state)
{
	struct mercury_ps_options o = MERCURY_PS_OPTIONS_INIT;
	struct mercury_ps *ps = (struct mercury_ps *)1;
	char err[256] = "";

	(void)state;
	o.nodes = 2;
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_null(ps);
	assert_non_null(strstr(err, "layer_params"));
}

/* Options of one node with one layer: what a check of a single field starts from. */
static struct mercury_ps_options one_node_options(void)
{
	static const char *hosts[] = {"127.0.0.1:1"};
	static const uint64_t params[] = {10};
	struct mercury_ps_options o = MERCURY_PS_OPTIONS_INIT;

	o.nodes = 1;
	o.hosts = hosts;
	o.layer_params = params;
	o.nlayers = 1;
	return o;
}

/* The job's id, weight and band: out of range is -EINVAL naming the field; a caller built
 * before the fields existed (sz ending at placement) gets the defaults, whatever lies beyond
 * its options in memory (here: values that would be refused). */
static void test_job_options(void **state)
{
	struct mercury_ps_options o = one_node_options();
	struct mercury_ps *ps;
	char err[256] = "";

	(void)state;
	assert_int_equal(o.job, 1);
	assert_int_equal(o.weight, 1);
	assert_int_equal(o.job_band, -1);
	o.weight = 0;
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "weight 0"));
	o.weight = 1001;
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	o.weight = 2;
	o.job = 0;
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "job 0"));
	o.job = 7;
	o.job_band = 0;
	o.mode = MERCURY_PS_MERCURY; /* tags by layer */
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "job_band"));
	o.mode = MERCURY_PS_FIFO;
	o.job_band = 6; /* 8 bands: job bands 0..5 */
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "0..5"));
	o.job_band = -1;
	o.dscp_queues = 17;
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "dscp_queues 17"));
	o.dscp_queues = 0;
	o.pulls_alike = 2;
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "pulls_alike 2"));
	o.pulls_alike = 0;

	o.sz = offsetof(struct mercury_ps_options, job);
	o.job = 0;
	o.weight = 0;
	o.rank = 3; /* past the options, refused by the node's own check */
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad configuration"));
}

/* The window bound: by default by the node count (none at 1-2 nodes, where a downlink has one
 * sender; 16 KiB at 3-4 nodes, the same in-flight total towards one server's port from there,
 * never under 8 KiB); a value given, or 0 (autotuning), is kept whatever the count; below -1
 * is refused naming the field. */
static void test_rcvbuf_by_nodes(void **state)
{
	struct mercury_ps_options o = one_node_options();
	struct mercury_ps *ps;
	char err[256] = "";

	(void)state;
	assert_int_equal(o.rcvbuf, MERCURY_PS_RCVBUF_AUTO);
	assert_int_equal(ps_rcvbuf_for(MERCURY_PS_RCVBUF_AUTO, 1), 0);
	assert_int_equal(ps_rcvbuf_for(MERCURY_PS_RCVBUF_AUTO, 2), 0);
	assert_int_equal(ps_rcvbuf_for(MERCURY_PS_RCVBUF_AUTO, 3), 16384);
	assert_int_equal(ps_rcvbuf_for(MERCURY_PS_RCVBUF_AUTO, 4), 16384);
	assert_int_equal(ps_rcvbuf_for(MERCURY_PS_RCVBUF_AUTO, 5), 65536 / 5);
	assert_int_equal(ps_rcvbuf_for(MERCURY_PS_RCVBUF_AUTO, 8), 8192);
	assert_int_equal(ps_rcvbuf_for(MERCURY_PS_RCVBUF_AUTO, 16), 8192);
	assert_int_equal(ps_rcvbuf_for(0, 8), 0);
	assert_int_equal(ps_rcvbuf_for(65536, 16), 65536);

	o.rcvbuf = -2;
	assert_int_equal(mercury_ps_open(&o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "rcvbuf -2"));
}

/* The buffer a run sets: the node-count rule in mercury mode, none in the others. */
static void test_rcvbuf_of_mode(void **state)
{
	struct ps_config c;

	(void)state;
	ps_config_defaults(&c);
	c.nodes = 8;
	assert_int_equal(ps_rcvbuf_of(&c), 8192);
	c.rcvbuf = 65536;
	assert_int_equal(ps_rcvbuf_of(&c), 65536);
	c.mode = PS_FIFO;
	assert_int_equal(ps_rcvbuf_of(&c), 0);
}

/* Pulls ranked below their pushes only where tags follow layers: mercury mode, no job band. */
static void test_pulls_ranked_below(void **state)
{
	struct ps_config c;

	(void)state;
	ps_config_defaults(&c);
	assert_true(ps_pulls_ranked_below(&c));
	c.pulls_below = false;
	assert_false(ps_pulls_ranked_below(&c));
	c.pulls_below = true;
	c.job_band = 0;
	assert_false(ps_pulls_ranked_below(&c));
	c.job_band = -1;
	c.mode = PS_PARTITION;
	assert_false(ps_pulls_ranked_below(&c));
}

/* Options carry their size: one not made with MERCURY_PS_OPTIONS_INIT is refused; a newer
 * caller's longer options pass while their unknown tail is zero and fail when it asks for
 * something (a set field) this library does not have. */
static void test_options_size(void **state)
{
	struct {
		struct mercury_ps_options o;
		uint64_t newer_field;
	} big = {.o = MERCURY_PS_OPTIONS_INIT};
	struct mercury_ps_options zeroed;
	struct mercury_ps *ps;
	char err[256] = "";

	(void)state;
	memset(&zeroed, 0, sizeof(zeroed));
	zeroed.nodes = 1;
	assert_int_equal(mercury_ps_open(&zeroed, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "MERCURY_PS_OPTIONS_INIT"));

	big.o.sz = sizeof(big);
	big.o.nodes = 2; /* and no layers: past the size check, refused for what it lacks */
	assert_int_equal(mercury_ps_open(&big.o, &ps, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "layer_params"));

	big.newer_field = 1;
	assert_int_equal(mercury_ps_open(&big.o, &ps, err, sizeof(err)), -E2BIG);
	assert_null(ps);
	assert_non_null(strstr(err, "newer libmercury-ps"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_sums_in_every_mode),
	    cmocka_unit_test(test_sums_in_place),
	    cmocka_unit_test(test_sums_with_servers_apart),
	    cmocka_unit_test(test_other_model_fails_at_open),
	    cmocka_unit_test(test_sums_by_switch_queue),
	    cmocka_unit_test(test_placement_agreed_at_open),
	    cmocka_unit_test(test_bad_options),
	    cmocka_unit_test(test_options_size),
	    cmocka_unit_test(test_rcvbuf_by_nodes),
	    cmocka_unit_test(test_rcvbuf_of_mode),
	    cmocka_unit_test(test_pulls_ranked_below),
	    cmocka_unit_test(test_job_options),
	};

	setenv("MERCURY_SOCKET", "/nonexistent/mercury.sock", 1); /* mercury mode: untagged */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
