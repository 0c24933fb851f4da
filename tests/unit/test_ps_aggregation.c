// SPDX-License-Identifier: BSD-2-Clause
/*
 * The PS end to end over loopback, nodes as threads: what every worker pulls equals, bit for
 * bit, the sum computed locally in the same order — in every mode, with sizes that are no
 * multiple of the chunk or partition, split and whole placement, a slow worker — and a worker
 * that drops out mid-iteration makes every node fail fast instead of hanging.
 */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>
#include <unistd.h>

#include "core.h"
#include "drain.h"
#include "tag.h"
#include "profile.h"

/* Tags are libmercury's business; these tests exercise the PS alone. */
int ps_tag_open(struct ps_node *n)
{
	(void)n;
	return 0;
}
void ps_tag_close(struct ps_node *n)
{
	(void)n;
}
/* Iteration ends per rank, and whether each came with every pull acknowledged. */
static struct {
	pthread_mutex_t mu;
	int ends[PS_MAX_NODES];
	uint64_t last[PS_MAX_NODES];
	int out_of_order, undelivered;
} marks = {.mu = PTHREAD_MUTEX_INITIALIZER};

void ps_tag_iteration(struct ps_node *n, uint64_t iter, bool begin)
{
	if (begin)
		return;
	int r = n->cfg.rank, from = 0;
	bool delivered =
	    !ps_drain_running(n) || ps_drain_slot_done(n, (int)(iter % PS_ITER_SLOTS), &from);

	pthread_mutex_lock(&marks.mu);
	marks.out_of_order += marks.ends[r] > 0 && iter != marks.last[r] + 1;
	marks.undelivered += !delivered;
	marks.ends[r]++;
	marks.last[r] = iter;
	pthread_mutex_unlock(&marks.mu);
}
uint64_t ps_tag_split_sockets(struct ps_node *n, uint64_t *split_queues)
{
	(void)n;
	*split_queues = 0;
	return 0;
}
int ps_tag_register(struct ps_conn *c)
{
	c->tag = c; /* registered: what the PS does with tagged sockets applies */
	return 0;
}
/* Pushes to another node's server tagged while an older iteration was still open here. */
static atomic_int pushes_ahead, pushes_remote;
int ps_tag_next(struct ps_conn *c, uint64_t nbytes, int layer, enum ps_dir dir, uint64_t iter)
{
	(void)nbytes, (void)layer;
	if (dir != PS_DIR_PUSH || c->peer == c->node->cfg.rank)
		return 0;
	pthread_mutex_lock(&c->node->mu);
	atomic_fetch_add(&pushes_ahead, iter > c->node->win.oldest_open);
	pthread_mutex_unlock(&c->node->mu);
	atomic_fetch_add(&pushes_remote, 1);
	return 0;
}
void ps_tag_unregister(struct ps_conn *c)
{
	(void)c;
}
void ps_tag_counts(struct ps_node *n, uint64_t *fastpath, uint64_t *service)
{
	(void)n;
	*fastpath = *service = 0;
}

/* 1 (less than a chunk), 999, 1001 (one more than a chunk), 12345, and one array over the
 * split bound, so both placements and ragged tails are exercised. */
static struct ps_layer layers[] = {
    {"a", 1, 0.0005, 0.001},	 {"b", 999, 0.0005, 0.001},    {"c", 1001, 0.0005, 0.001},
    {"d", 12345, 0.0005, 0.001}, {"e", 100003, 0.0005, 0.001},
};
static struct ps_profile prof = {"unit", 5, layers};

struct node_arg {
	struct ps_config cfg;
	struct ps_result res;
	double fp_end[16];
	int rc;
	char err[256];
};

static void *node_main(void *p)
{
	struct node_arg *a = p;

	a->res.fp_end = a->fp_end;
	a->rc = ps_node_run(&a->cfg, &prof, &a->res, a->err, sizeof(a->err));
	return NULL;
}

static uint16_t next_port(void)
{
	static uint16_t base;

	if (!base)
		base = (uint16_t)(20000 + (getpid() % 1000) * 12);
	base += 4;
	return base;
}

/* Runs n nodes with cfg; fills a[0..n). Returns the wall time. */
static double run_cluster(const struct ps_config *cfg, int n, struct node_arg *a)
{
	pthread_t th[PS_MAX_NODES];
	uint16_t port = next_port();
	double t0 = ps_now();

	for (int i = 0; i < n; i++) {
		memset(&a[i], 0, sizeof(a[i]));
		a[i].cfg = *cfg;
		a[i].cfg.nodes = n;
		a[i].cfg.rank = i;
		for (int j = 0; j < n; j++)
			snprintf(a[i].cfg.hosts[j], sizeof(a[i].cfg.hosts[j]), "127.0.0.1:%u",
				 port + j);
		assert_int_equal(pthread_create(&th[i], NULL, node_main, &a[i]), 0);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return ps_now() - t0;
}

static void base_config(struct ps_config *c, enum ps_mode mode)
{
	ps_config_defaults(c);
	c->mode = mode;
	c->verify = true;
	c->iters = 2;
	c->warmup = 1;
	c->chunk = 1000;   /* none of the sizes is a multiple of it */
	c->part = 3000;	   /* partitions with ragged ends */
	c->credit = 10000; /* a few partitions in flight */
	c->bound = 50000;  /* layer e is split over all servers */
	c->conns = 3;
	c->timeout_s = 20;
}

static void expect_exact(struct node_arg *a, int n)
{
	for (int i = 0; i < n; i++)
		if (a[i].rc)
			print_message("node %d: %s\n", i, a[i].err);
	for (int i = 0; i < n; i++) {
		if (a[i].rc)
			fail_msg("node %d failed: %s", i, a[i].err);
		assert_int_equal(a[i].res.mismatches, 0);
		/* every layer of every iteration was pulled and checked */
		assert_int_equal(a[i].res.pulls_checked,
				 (uint64_t)prof.nlayers * (a[i].cfg.iters + a[i].cfg.warmup));
	}
}

static void check_mode(enum ps_mode mode, bool split_all, int slow)
{
	struct ps_config c;
	struct node_arg a[3];

	base_config(&c, mode);
	c.split_all = split_all;
	if (slow) {
		c.slow_rank = 1;
		c.slow_s = 0.004;
	}
	run_cluster(&c, 3, a);
	expect_exact(a, 3);
}

static void test_fifo_exact(void **s)
{
	(void)s;
	check_mode(PS_FIFO, false, 0);
}
static void test_partition_exact(void **s)
{
	(void)s;
	check_mode(PS_PARTITION, false, 0);
}
static void test_mercury_exact(void **s)
{
	(void)s;
	check_mode(PS_MERCURY, false, 0);
}
/* Mercury mode: every iteration ends at every node, in order, and only once the pulls its
 * server wrote are acknowledged (else the next iteration's tags outrank them). */
static void test_mercury_iteration_ends_after_delivery(void **s)
{
	(void)s;
	struct ps_config c;
	struct node_arg a[3];

	memset(marks.ends, 0, sizeof(marks.ends));
	marks.out_of_order = marks.undelivered = 0;
	base_config(&c, PS_MERCURY);
	run_cluster(&c, 3, a);
	expect_exact(a, 3);
	for (int r = 0; r < 3; r++)
		assert_int_equal(marks.ends[r], c.warmup + c.iters);
	assert_int_equal(marks.out_of_order, 0);
	assert_int_equal(marks.undelivered, 0);
}

/* Mercury mode: a push to another node's server is written (and tagged) only once every
 * older iteration has ended at its node, so it never keeps the next-iteration level. */
static void test_mercury_pushes_wait_for_the_iteration_end(void **s)
{
	(void)s;
	struct ps_config c;
	struct node_arg a[3];

	base_config(&c, PS_MERCURY);
	c.iters = 4;
	atomic_store(&pushes_ahead, 0);
	atomic_store(&pushes_remote, 0);
	run_cluster(&c, 3, a);
	expect_exact(a, 3);
	assert_true(atomic_load(&pushes_remote) > 0);
	assert_int_equal(atomic_load(&pushes_ahead), 0);
}

/* Partition mode's credit covers a task from push to pull: never more than C parameters in
 * flight at a worker, more than one partition at a time when C allows, and everything given
 * back by the end. A slow worker shifts the ranks' timing apart: with credit held to the
 * pull, ranks dispatching in orders of their own would deadlock here (rank 0 orders). */
static void test_partition_credit(void **s)
{
	(void)s;
	struct ps_config c;
	struct node_arg a[3];

	for (int slow = 0; slow < 2; slow++) {
		base_config(&c, PS_PARTITION);
		c.iters = 3;
		c.slow_rank = slow ? 2 : -1;
		c.slow_s = 0.003;
		run_cluster(&c, 3, a);
		expect_exact(a, 3);
		for (int i = 0; i < 3; i++) {
			assert_true(a[i].res.max_inflight <= c.credit);
			assert_true(a[i].res.max_inflight > c.part);
			assert_int_equal(a[i].res.inflight_left, 0);
		}
	}
}

static void test_split_all_exact(void **s)
{
	(void)s;
	check_mode(PS_MERCURY, true, 0);
	check_mode(PS_PARTITION, true, 0);
}
static void test_slow_worker_exact(void **s)
{
	(void)s;
	check_mode(PS_MERCURY, false, 1);
	check_mode(PS_PARTITION, false, 1);
	check_mode(PS_FIFO, false, 1);
}

/* The check above can fail: the test values make float sums depend on their order. */
static void test_values_are_order_sensitive(void **s)
{
	(void)s;
	int differ = 0;

	for (uint64_t j = 0; j < 1000; j++) {
		float fwd = ps_grad_value(0, 3, 1, j), rev = ps_grad_value(2, 3, 1, j);
		fwd += ps_grad_value(1, 3, 1, j);
		fwd += ps_grad_value(2, 3, 1, j);
		rev += ps_grad_value(1, 3, 1, j);
		rev += ps_grad_value(0, 3, 1, j);
		differ += memcmp(&fwd, &rev, sizeof(fwd)) != 0;
	}
	assert_true(differ > 10);
	assert_true(ps_grad_value(0, 1, 0, 5) != ps_grad_value(1, 1, 0, 5));
	assert_true(ps_grad_value(0, 1, 0, 5) != ps_grad_value(0, 1, 1, 5));
}

static void test_disconnect_fails_fast(void **s)
{
	(void)s;
	for (int m = 0; m < PS_MODE_MAX; m++) {
		struct ps_config c;
		struct node_arg a[3];
		bool reported = false;

		base_config(&c, (enum ps_mode)m);
		c.iters = 3;
		c.die_rank = 2;
		c.timeout_s = 30; /* far above the bound checked: detection, not the timeout */
		double wall = run_cluster(&c, 3, a);
		assert_true(wall < 5.0);
		for (int i = 0; i < 3; i++) {
			assert_int_not_equal(a[i].rc, 0);
			/* Whichever side notices first (a read or a write) names rank 2. */
			if (strstr(a[i].err, "worker 2 disconnected") ||
			    strstr(a[i].err, "server 2 went away") ||
			    strstr(a[i].err, "node 2 disconnected"))
				reported = true;
		}
		assert_true(reported);
	}
}

static void test_bad_address_is_reported(void **s)
{
	(void)s;
	struct ps_config c;
	struct ps_result r = {0};
	double fp[8];
	char err[256] = "";

	base_config(&c, PS_FIFO);
	c.nodes = 1;
	snprintf(c.hosts[0], sizeof(c.hosts[0]), "not-an-ip");
	r.fp_end = fp;
	assert_int_equal(ps_node_run(&c, &prof, &r, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "bad address"));
}

/* Mercury mode: a layer's pull goes on a socket of its own, the push connection's index + K,
 * so the worker's ACKs of pull data never ride on its push packets (queued in a low band
 * they held the pull until its retransmission timeout); fifo keeps one socket per pair, and
 * so does partition (its second one carries only rank 0's order messages). */
static void test_pulls_have_their_own_sockets(void **state)
{
	static struct ps_node n; /* large; zeroed */
	int conn_of[6] = {0, 0, 1, 2, 3, 3};

	(void)state;
	n.cfg.mode = PS_MERCURY;
	n.K = 4;
	n.C = 8;
	n.conn_of = conn_of;
	for (int l = 0; l < 6; l++) {
		assert_int_equal(ps_conn_of_layer(&n, l, PS_DIR_PUSH), conn_of[l]);
		assert_int_equal(ps_conn_of_layer(&n, l, PS_DIR_PULL), 4 + conn_of[l]);
	}
	n.cfg.mode = PS_FIFO;
	n.K = n.C = 1;
	assert_int_equal(ps_conn_of_layer(&n, 5, PS_DIR_PUSH), 0);
	assert_int_equal(ps_conn_of_layer(&n, 5, PS_DIR_PULL), 0);
	n.cfg.mode = PS_PARTITION;
	n.C = 2;
	assert_int_equal(ps_conn_of_layer(&n, 5, PS_DIR_PUSH), 0);
	assert_int_equal(ps_conn_of_layer(&n, 5, PS_DIR_PULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_values_are_order_sensitive),
	    cmocka_unit_test(test_fifo_exact),
	    cmocka_unit_test(test_partition_exact),
	    cmocka_unit_test(test_partition_credit),
	    cmocka_unit_test(test_mercury_exact),
	    cmocka_unit_test(test_pulls_have_their_own_sockets),
	    cmocka_unit_test(test_mercury_iteration_ends_after_delivery),
	    cmocka_unit_test(test_mercury_pushes_wait_for_the_iteration_end),
	    cmocka_unit_test(test_split_all_exact),
	    cmocka_unit_test(test_slow_worker_exact),
	    cmocka_unit_test(test_disconnect_fails_fast),
	    cmocka_unit_test(test_bad_address_is_reported),
	};
	/* The node ends an iteration up to 20 ms after its worker could go on: pushes would be
	 * written ahead of the end if the PS did not hold them. */
	ps_drain_poll_ns = 20000000L;
	return cmocka_run_group_tests(tests, NULL, NULL);
}
