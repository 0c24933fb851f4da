// SPDX-License-Identifier: BSD-2-Clause
/* Unit tests of the PS's pure logic: MXNet placement, per-node egress bytes, the ideal bound. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "ideal.h"
#include "placement.h"

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
	    cmocka_unit_test(test_ideal_no_comm_is_compute),
	    cmocka_unit_test(test_ideal_single_layer),
	    cmocka_unit_test(test_ideal_preempts_big_late_layer),
	    cmocka_unit_test(test_ideal_slowest_node_decides),
	    cmocka_unit_test(test_uplink_bytes_cross_racks_only),
	    cmocka_unit_test(test_ideal_slow_uplink_decides),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
