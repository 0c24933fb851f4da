// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests of the PS's pure logic: MXNet placement, per-node egress bytes, the ideal bound. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <math.h>

#include "ideal.h"
#include "placement.h"
#include "ps.h"
#include "mercury_groups.h"

static void test_big_arrays_split_evenly(void **state)
{
	(void)state;
	uint64_t orig[] = {1000, 1000001, 10}, len[] = {1000, 1000001, 10};
	struct ps_placement pl;

	assert_int_equal(ps_place(orig, len, 3, 4, 1000000, false, false, 0, &pl), 0);
	assert_int_equal(pl.count[0], 1);
	assert_int_equal(pl.count[1], 4);
	assert_int_equal(pl.count[2], 1);
	/* 1000001 = 4 * 250000 + 1: the first slice takes the remainder, offsets contiguous. */
	const struct ps_slice *s = &pl.slices[pl.first[1]];
	assert_int_equal(s[0].len, 250001);
	assert_int_equal(s[1].off, 250001);
	uint64_t sum = 0;
	for (int i = 0; i < 4; i++) {
		assert_int_equal(s[i].server, i);
		assert_int_equal(s[i].layer, 1);
		sum += s[i].len;
	}
	assert_int_equal(sum, 1000001);
	/* Small arrays live whole on (key * 9973) % servers. */
	assert_int_equal(pl.slices[pl.first[0]].server, 0);
	assert_int_equal(pl.slices[pl.first[2]].server, (2 * 9973) % 4);
	assert_int_equal(pl.slices[pl.first[2]].len, 10);
	ps_placement_free(&pl);
}

static void test_bound_is_exclusive_and_split_all(void **state)
{
	(void)state;
	uint64_t orig[] = {1000000, 7}, len[] = {1000000, 7};
	struct ps_placement pl;

	assert_int_equal(ps_place(orig, len, 2, 3, 1000000, false, false, 0, &pl), 0);
	assert_int_equal(pl.count[0], 1); /* exactly at the bound: whole, as MXNet does */
	ps_placement_free(&pl);
	assert_int_equal(ps_place(orig, len, 2, 3, 1000000, true, false, 0, &pl), 0);
	assert_int_equal(pl.count[0], 3);
	assert_int_equal(pl.count[1], 3);
	assert_int_equal(pl.slices[pl.first[1]].len + pl.slices[pl.first[1] + 1].len +
			     pl.slices[pl.first[1] + 2].len,
			 7);
	ps_placement_free(&pl);
}

static void test_shrunk_sizes_keep_the_original_decision(void **state)
{
	(void)state;
	uint64_t orig[] = {4000000, 2}, len[] = {400, 2};
	struct ps_placement pl;

	assert_int_equal(ps_place(orig, len, 2, 4, 1000000, false, false, 0, &pl), 0);
	assert_int_equal(pl.count[0], 4); /* decided on 4M, sliced on 400 */
	assert_int_equal(pl.slices[pl.first[0] + 3].len, 100);
	ps_placement_free(&pl);
	/* A split tensor smaller than the server count: one parameter per slice. */
	assert_int_equal(ps_place(orig, len, 2, 4, 1, false, false, 0, &pl), 0);
	assert_int_equal(pl.count[1], 2);
	ps_placement_free(&pl);
}

/* Partition mode places every partition as a tensor of its own (ByteScheduler's keys): the
 * partitions of one layer follow each other in offset order, consecutive ones on different
 * servers, and one above the bound is itself sliced over every server. */
static void test_partitions_are_tensors_spread_over_servers(void **state)
{
	(void)state;
	uint64_t orig[] = {10, 9000000, 2500000}, len[] = {10, 9000000, 2500000};
	struct ps_placement pl;

	assert_int_equal(ps_place(orig, len, 3, 4, 1000000, false, false, 1000000, &pl), 0);
	assert_int_equal(pl.count[0], 1); /* below the partition size: the layer itself */
	assert_int_equal(pl.count[1], 9);
	assert_int_equal(pl.count[2], 3); /* 1M, 1M and a ragged 0.5M */
	assert_int_equal(pl.nparts, 1 + 9 + 3);
	const struct ps_slice *s = &pl.slices[pl.first[1]];
	for (int i = 0; i < 9; i++) {
		assert_int_equal(s[i].layer, 1);
		assert_int_equal(s[i].part, 1 + i);
		assert_int_equal(s[i].off, (uint64_t)i * 1000000);
		assert_int_equal(s[i].len, 1000000);
		if (i > 0) /* neighbours never share a server (the old order sent a layer's
			    * partitions bound for one server, then the next) */
			assert_int_not_equal(s[i].server, s[i - 1].server);
	}
	const struct ps_slice *last = &pl.slices[pl.first[2] + 2];
	assert_int_equal(last->len, 500000);
	assert_int_equal(last->off + last->len, 2500000);
	ps_placement_free(&pl);

	/* Partitions of 2M parameters exceed the bound: each is sliced over the 4 servers. */
	assert_int_equal(ps_place(orig, len, 3, 4, 1000000, false, false, 2000000, &pl), 0);
	assert_int_equal(pl.count[1], 4 * 4 + 1); /* the last 1M is not above the bound */
	for (int i = 0; i < 4; i++) {
		assert_int_equal(pl.slices[pl.first[1] + i].server, i);
		assert_int_equal(pl.slices[pl.first[1] + i].part, 1);
	}
	assert_int_equal(pl.slices[pl.first[1] + 4].part, 2);
	ps_placement_free(&pl);

	/* Shrunk: the decision is on the original size of each partition. */
	uint64_t o2[] = {4000000}, l2[] = {400};
	assert_int_equal(ps_place(o2, l2, 1, 4, 1000000, false, false, 200, &pl), 0);
	assert_int_equal(pl.count[0], 2 * 4); /* 2M-parameter partitions: sliced */
	ps_placement_free(&pl);
	assert_int_equal(ps_place(o2, l2, 1, 4, 1000000, false, false, 100, &pl), 0);
	assert_int_equal(pl.count[0], 4); /* 1M each: whole, on servers 0, 1, 2, 3 by key */
	ps_placement_free(&pl);
}

static void test_egress_bytes_colocated(void **state)
{
	(void)state;
	uint64_t orig[] = {2000000, 100}, len[] = {2000000, 100};
	struct ps_placement pl;
	double eg[2 * 2];

	assert_int_equal(ps_place(orig, len, 2, 2, 1000000, false, false, 0, &pl), 0);
	ps_egress_bytes(&pl, 2, eg);
	/* Split layer: each node pushes its half-gradient for the other server (4 MB) and pulls
	 * its own half back to the other worker (4 MB). */
	assert_true(eg[0 * 2 + 0] == 8e6 && eg[1 * 2 + 0] == 8e6);
	/* Whole layer 1 on server (9973 % 2) = 1: node 0 pushes 400 B, node 1 pulls 400 B. */
	assert_true(eg[0 * 2 + 1] == 400 && eg[1 * 2 + 1] == 400);
	ps_placement_free(&pl);
}

/* inception_v3's shape: big and small layers alternate, so the key hash puts every big one on
 * server 0; balanced placement sends each whole tensor to the least loaded server instead. */
static void test_balanced_placement_evens_the_bytes(void **state)
{
	(void)state;
	uint64_t orig[] = {900, 10, 900, 10, 900, 10, 2000000, 5}, len[8];
	uint64_t held[2][2] = {{0, 0}, {0, 0}}; /* [balanced][server] */
	struct ps_placement pl;

	for (int i = 0; i < 8; i++)
		len[i] = orig[i];
	for (int balanced = 0; balanced < 2; balanced++) {
		assert_int_equal(ps_place(orig, len, 8, 2, 1000000, false, balanced, 0, &pl), 0);
		for (int i = 0; i < pl.nslices; i++)
			held[balanced][pl.slices[i].server] += pl.slices[i].len;
		/* the big layer is still sliced over both servers, whatever the rule */
		assert_int_equal(pl.count[6], 2);
		ps_placement_free(&pl);
	}
	assert_int_equal(held[0][0], 1002700); /* hash: 900 x 3 on server 0 */
	assert_int_equal(held[0][1], 1000035);
	/* balanced: 900 | 10 | 900 (server 1 held 10) | 10 | 900 | ... : 1810 against 925 */
	assert_int_equal(held[1][0] + held[1][1], held[0][0] + held[0][1]);
	assert_true(held[1][0] - 1000000 <= 1810 && held[1][1] - 1000000 <= 1810);
	assert_int_equal(ps_place(orig, len, 8, 2, 1000000, false, true, 0, &pl), 0);
	assert_int_equal(pl.slices[pl.first[0]].server, 0);
	assert_int_equal(pl.slices[pl.first[1]].server, 1);
	assert_int_equal(pl.slices[pl.first[2]].server, 1); /* 10 < 900 */
	ps_placement_free(&pl);
}

static void test_connections_never_span_two_groups(void **state)
{
	(void)state;
	int conn_of[54];

	/* ResNet-50: 54 layers, 6 priority groups of 9, 16 sockets: 3,3,3,3,2,2 per group. */
	assert_int_equal(ps_map_connections(54, 16, 6, conn_of), 16);
	for (int l = 1; l < 54; l++) {
		assert_true(conn_of[l] >= conn_of[l - 1]); /* input side on the lowest sockets */
		if (l * 6 / 54 != (l - 1) * 6 / 54)
			assert_true(conn_of[l] > conn_of[l - 1]); /* group boundary: new socket */
	}
	assert_int_equal(conn_of[0], 0);
	assert_int_equal(conn_of[53], 15);
	/* VGG16: 16 layers, 16 sockets, 6 groups of 2-3 layers: a socket per layer is not
	 * possible without spanning groups only if a group has fewer layers than its share. */
	int v[16];
	int used = ps_map_connections(16, 16, 6, v);
	assert_true(used <= 16);
	for (int l = 1; l < 16; l++)
		if (l * 6 / 16 != (l - 1) * 6 / 16)
			assert_true(v[l] != v[l - 1]);
	/* Fewer sockets than groups: whole groups share. */
	int t[12];
	assert_int_equal(ps_map_connections(12, 2, 6, t), 2);
	assert_int_equal(t[0], 0);
	assert_int_equal(t[11], 1);
}

/* The switch queue of layer l's bytes: its group's band, that band's queue. */
static int queue_of_layer(int l, int nlayers, int nbands, const int *qb)
{
	return qb[mercury_layer_group((uint32_t)l, (uint32_t)nlayers,
				      mercury_current_groups((unsigned)nbands))];
}

/* What every queue-aware map must hold: each connection carries one switch queue (the one it
 * reports), every connection of 0..used-1 carries a layer, the input side on the lowest. */
static void check_one_queue_per_conn(int nlayers, int nbands, const int *qb, const int *conn_of,
				     const int *qc, int used)
{
	int seen[PS_MAX_CONNS] = {0};

	assert_true(used >= 1 && used <= PS_MAX_CONNS);
	for (int l = 0; l < nlayers; l++) {
		assert_true(conn_of[l] >= 0 && conn_of[l] < used);
		assert_int_equal(qc[conn_of[l]], queue_of_layer(l, nlayers, nbands, qb));
		seen[conn_of[l]] = 1;
		if (l > 0)
			assert_true(conn_of[l] >= conn_of[l - 1]);
	}
	for (int k = 0; k < used; k++)
		assert_true(seen[k]);
	assert_int_equal(conn_of[0], 0);
}

static void test_band_queues_even(void **state)
{
	(void)state;
	int qb[15];

	/* cluster/lib.sh cl_queue_of: 15 bands on 8 queues, b * 8 / 15 */
	ps_band_queues_even(15, 8, qb);
	int want8[15] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7};
	for (int b = 0; b < 15; b++)
		assert_int_equal(qb[b], want8[b]);
	ps_band_queues_even(15, 4, qb);
	int want4[15] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3};
	for (int b = 0; b < 15; b++)
		assert_int_equal(qb[b], want4[b]);
	ps_band_queues_even(15, 1, qb);
	for (int b = 0; b < 15; b++)
		assert_int_equal(qb[b], 0);
}

static void test_map_connections_queues_resnet50(void **state)
{
	(void)state;
	int qb[15], conn_of[54], qc[PS_MAX_CONNS];

	/* ResNet-50 (54 layers), 15 bands (13 current groups), 8 switch queues: the groups fall in
	 * queues 0..6 (band 13, the next iteration, shares queue 6 with group 12; band 14 is
	 * queue 7): the default 4 connections become one per queue, 7. */
	ps_band_queues_even(15, 8, qb);
	int used = ps_map_connections_queues(54, 4, 15, qb, conn_of, qc);
	assert_int_equal(used, 7);
	check_one_queue_per_conn(54, 15, qb, conn_of, qc, used);
	for (int k = 0; k < used; k++)
		assert_int_equal(qc[k], k);
	/* layers 0..8 are groups 0 and 1 (l * 13 / 54 < 2): both in queue 0, one socket */
	for (int l = 0; l < 54; l++)
		assert_int_equal(conn_of[l] == 0, l * 13 / 54 < 2);

	/* 4 queues: the 13 groups fall in 4 queues, so 4 connections (one per queue) */
	ps_band_queues_even(15, 4, qb);
	used = ps_map_connections_queues(54, 4, 15, qb, conn_of, qc);
	assert_int_equal(used, 4);
	check_one_queue_per_conn(54, 15, qb, conn_of, qc, used);

	/* 16 connections on 8 queues: 16 / 7 = 2 each, the first 2 queues 3; a queue with a
	 * socket per group or more never has a socket span two groups. */
	ps_band_queues_even(15, 8, qb);
	used = ps_map_connections_queues(54, 16, 15, qb, conn_of, qc);
	assert_int_equal(used, 16);
	check_one_queue_per_conn(54, 15, qb, conn_of, qc, used);
	int per_queue[8] = {0};
	for (int k = 0; k < used; k++)
		per_queue[qc[k]]++;
	int want[8] = {3, 3, 2, 2, 2, 2, 2, 0};
	for (int q = 0; q < 8; q++)
		assert_int_equal(per_queue[q], want[q]);
	for (int l = 1; l < 54; l++)
		if (l * 13 / 54 != (l - 1) * 13 / 54)
			assert_true(conn_of[l] != conn_of[l - 1]);
}

static void test_map_connections_queues_default_dscp(void **state)
{
	(void)state;
	/* mercuryd's `--dscp default` on 8 bands: bands 0..3 CS5..CS2, bands 4.. CS0, each
	 * class a queue of its own: groups 4 and 5 (of 6) share the CS0 queue and its socket. */
	int qb[8] = {5, 4, 3, 2, 0, 0, 0, 0}, conn_of[16], qc[PS_MAX_CONNS];
	int used = ps_map_connections_queues(16, 4, 8, qb, conn_of, qc);

	assert_int_equal(used, 5);
	check_one_queue_per_conn(16, 8, qb, conn_of, qc, used);
	assert_int_equal(qc[0], 5);
	assert_int_equal(qc[4], 0);
	/* as many queues as groups: the same as a socket per group */
	int ident[8] = {0, 1, 2, 3, 4, 5, 6, 7}, a[16], b[16];
	assert_int_equal(ps_map_connections_queues(16, 6, 8, ident, a, qc), 6);
	assert_int_equal(ps_map_connections(16, 6, 6, b), 6);
	for (int l = 0; l < 16; l++)
		assert_int_equal(a[l], b[l]);
	/* one queue: every layer shares it, the layers spread over the connections in order */
	int one[8] = {0};
	assert_int_equal(ps_map_connections_queues(16, 4, 8, one, a, qc), 4);
	check_one_queue_per_conn(16, 8, one, a, qc, 4);
}

static void test_map_connections_queues_edges(void **state)
{
	(void)state;
	int qb[16], conn_of[3], qc[PS_MAX_CONNS];

	/* 3 layers, 15 bands: groups 0, 4 and 8 -> queues 0, 2, 4 on 8 queues: one socket each
	 * (never more sockets than layers) */
	ps_band_queues_even(15, 8, qb);
	assert_int_equal(ps_map_connections_queues(3, 4, 15, qb, conn_of, qc), 3);
	check_one_queue_per_conn(3, 15, qb, conn_of, qc, 3);
	assert_int_equal(qc[1], 2);
	assert_int_equal(qc[2], 4);
	/* no queue pointer wanted */
	assert_int_equal(ps_map_connections_queues(3, 1, 15, qb, conn_of, NULL), 3);
	/* bad input */
	assert_int_equal(ps_map_connections_queues(0, 4, 15, qb, conn_of, qc), -EINVAL);
	assert_int_equal(ps_map_connections_queues(3, 0, 15, qb, conn_of, qc), -EINVAL);
	assert_int_equal(ps_map_connections_queues(3, 4, 1, qb, conn_of, qc), -EINVAL);
	assert_int_equal(ps_map_connections_queues(3, 4, 17, qb, conn_of, qc), -EINVAL);
	qb[4] = -1;
	assert_int_equal(ps_map_connections_queues(3, 4, 15, qb, conn_of, qc), -EINVAL);
}

/* --pulls-below: every layer's pull lands in the next group (the same band for all of a
 * group's layers), the last group's stay; with one group nothing moves */
static void test_pulls_one_group_below(void **state)
{
	(void)state;
	const unsigned sizes[][2] = {{16, 6}, {161, 6}, {5, 6}, {53, 14}, {16, 1}};

	for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
		int L = (int)sizes[k][0];
		unsigned G = sizes[k][1];

		for (int l = 0; l < L; l++) {
			unsigned g = mercury_layer_group((uint32_t)l, (uint32_t)L, G);
			int p = ps_layer_one_group_below(l, L, G);
			unsigned pg = mercury_layer_group((uint32_t)p, (uint32_t)L, G);
			unsigned last = mercury_layer_group((uint32_t)(L - 1), (uint32_t)L, G);

			assert_true(p >= 0 && p < L);
			if (g == last) {
				assert_int_equal(p, l);
				continue;
			}
			/* the next group that has a layer, and its first layer */
			assert_true(pg > g);
			assert_true(p == 0 ||
				    mercury_layer_group((uint32_t)(p - 1), (uint32_t)L, G) < pg);
			for (int m = l + 1; m < p; m++)
				assert_true(mercury_layer_group((uint32_t)m, (uint32_t)L, G) <= g);
		}
	}
	/* VGG16 on 8 bands: fc6 (layer 13, group 4) is pulled in group 5 with fc7 and fc8 */
	assert_int_equal(ps_layer_one_group_below(13, 16, 6), 14);
	assert_int_equal(ps_layer_one_group_below(15, 16, 6), 15);
	assert_int_equal(ps_layer_one_group_below(0, 16, 6), 3);
}

static void test_ideal_no_comm_is_compute(void **state)
{
	(void)state;
	double f[] = {0.1, 0.2}, b[] = {0.2, 0.4}, eg[] = {0, 0}, comm, comp;
	struct ps_ideal_in in = {2, 1, f, b, eg, 1e9, NULL, 0};

	assert_true(fabs(ps_ideal_iteration(&in, &comm, &comp) - 0.9) < 1e-12);
	assert_true(fabs(comp - 0.9) < 1e-12);
	assert_true(comm == 0);
}

static void test_ideal_single_layer(void **state)
{
	(void)state;
	double f[] = {1}, b[] = {1}, eg[] = {3};
	struct ps_ideal_in in = {1, 1, f, b, eg, 1.0, NULL, 0};

	/* Forward 1, backward 1, then 3 s on the wire before the next forward: 5 s. */
	assert_true(fabs(ps_ideal_iteration(&in, NULL, NULL) - 5) < 1e-12);
}

static void test_ideal_preempts_big_late_layer(void **state)
{
	(void)state;
	double f[] = {1, 1}, b[] = {1, 1}, eg[] = {1, 4};
	struct ps_ideal_in in = {2, 1, f, b, eg, 1.0, NULL, 0};

	/*
	 * Layer 1 (4 s of traffic) is ready at t+1 after the forward pass, layer 0 (1 s) at t+2
	 * and preempts it: layer 0 done at t+3, layer 1 at t+6; the next forward runs layer 0 at
	 * t+3..t+4 and layer 1 at t+6..t+7. Per iteration: 2 + 5 = 7 s (FIFO would give 8).
	 */
	assert_true(fabs(ps_ideal_iteration(&in, NULL, NULL) - 7) < 1e-12);
}

static void test_ideal_slowest_node_decides(void **state)
{
	(void)state;
	double f[] = {1}, b[] = {1}, eg[] = {1, 3}; /* node 1 sends 3 s worth */
	struct ps_ideal_in in = {1, 2, f, b, eg, 1.0, NULL, 0};

	assert_true(fabs(ps_ideal_iteration(&in, NULL, NULL) - 5) < 1e-12);
}

static void test_uplink_bytes_cross_racks_only(void **state)
{
	(void)state;
	/* 4 nodes, racks {0,1} and {2,3}; every array split over all four servers */
	uint64_t orig[] = {4000000}, len[] = {400};
	struct ps_placement pl;
	double up[2];

	assert_int_equal(ps_place(orig, len, 1, 4, 1000000, true, false, 0, &pl), 0);
	ps_uplink_bytes(&pl, 4, up);
	/* rack 0 -> 1: pushes of workers 0, 1 to servers 2, 3 (4 x 400 bytes) and the pulls of
	 * servers 0, 1 to workers 2, 3 (4 x 400); the same the other way */
	assert_true(fabs(up[0] - 3200) < 1e-9);
	assert_true(fabs(up[1] - 3200) < 1e-9);
	assert_int_equal(ps_rack_of(1, 4), 0);
	assert_int_equal(ps_rack_of(2, 4), 1);
	assert_int_equal(ps_rack_of(2, 5), 0);
	ps_placement_free(&pl);
}

static void test_ideal_slow_uplink_decides(void **state)
{
	(void)state;
	double f[] = {1}, b[] = {1}, eg[] = {1, 1}, up[] = {3, 1}; /* 3 s one way */
	struct ps_ideal_in in = {1, 2, f, b, eg, 1.0, up, 1.0};

	assert_true(fabs(ps_ideal_iteration(&in, NULL, NULL) - 5) < 1e-12);
	in.uplink_Bps = 0; /* one switch: the node links decide */
	assert_true(fabs(ps_ideal_iteration(&in, NULL, NULL) - 3) < 1e-12);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_big_arrays_split_evenly),
	    cmocka_unit_test(test_bound_is_exclusive_and_split_all),
	    cmocka_unit_test(test_shrunk_sizes_keep_the_original_decision),
	    cmocka_unit_test(test_partitions_are_tensors_spread_over_servers),
	    cmocka_unit_test(test_egress_bytes_colocated),
	    cmocka_unit_test(test_balanced_placement_evens_the_bytes),
	    cmocka_unit_test(test_connections_never_span_two_groups),
	    cmocka_unit_test(test_pulls_one_group_below),
	    cmocka_unit_test(test_ideal_no_comm_is_compute),
	    cmocka_unit_test(test_ideal_single_layer),
	    cmocka_unit_test(test_ideal_preempts_big_late_layer),
	    cmocka_unit_test(test_ideal_slowest_node_decides),
	    cmocka_unit_test(test_uplink_bytes_cross_racks_only),
	    cmocka_unit_test(test_ideal_slow_uplink_decides),
	    cmocka_unit_test(test_band_queues_even),
	    cmocka_unit_test(test_map_connections_queues_resnet50),
	    cmocka_unit_test(test_map_connections_queues_default_dscp),
	    cmocka_unit_test(test_map_connections_queues_edges),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
