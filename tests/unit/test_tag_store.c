// SPDX-License-Identifier: BSD-2-Clause
/* Range table logic: insertion order, merging, capacity, search at the boundaries. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "service/tag_store.h"

/* Index of the range holding offset, or -1: what a classifier lookup would find. */
static int tags_find(const struct mercury_sock_tags *tags, uint64_t offset)
{
	for (uint32_t i = 0; i < tags->count && i < MERCURY_RANGES_PER_SOCK; i++)
		if (tags->ranges[i].start <= offset && offset < tags->ranges[i].end)
			return (int)i;
	return -1;
}

static void test_insert_and_find(void **state)
{
	struct mercury_sock_tags t = {0};

	(void)state;
	assert_int_equal(tags_insert(&t, 100, 50, 3, 0), 0);
	assert_int_equal(tags_insert(&t, 200, 10, 1, 0), 0);
	assert_int_equal(t.count, 2);
	assert_int_equal(tags_find(&t, 99), -1);
	assert_int_equal(tags_find(&t, 100), 0); /* start inclusive */
	assert_int_equal(tags_find(&t, 149), 0);
	assert_int_equal(tags_find(&t, 150), -1); /* end exclusive */
	assert_int_equal(tags_find(&t, 199), -1); /* gap */
	assert_int_equal(tags_find(&t, 209), 1);
	assert_int_equal(tags_find(&t, 210), -1);
}

static void test_out_of_order_rejected(void **state)
{
	struct mercury_sock_tags t = {0};

	(void)state;
	assert_int_equal(tags_insert(&t, 100, 50, 3, 0), 0);
	assert_int_equal(tags_insert(&t, 120, 10, 3, 0), -EEXIST); /* overlap */
	assert_int_equal(tags_insert(&t, 0, 10, 3, 0), -EEXIST);   /* before */
	assert_int_equal(tags_insert(&t, 150, 0, 3, 0), -EINVAL);  /* empty */
	assert_int_equal(tags_insert(&t, 150, 1, MERCURY_MAX_LEVELS, 0), -EINVAL);
	assert_int_equal(tags_insert(&t, UINT64_MAX - 1, 5, 1, 0), -EINVAL); /* wraps */
	assert_int_equal(t.count, 1);
}

static void test_adjacent_same_level_merges(void **state)
{
	struct mercury_sock_tags t = {0};

	(void)state;
	assert_int_equal(tags_insert(&t, 0, 10, 2, 0), 0);
	assert_int_equal(tags_insert(&t, 10, 10, 2, 0), 0);
	assert_int_equal(t.count, 1);
	assert_int_equal(t.ranges[0].end, 20);
	assert_int_equal(tags_insert(&t, 20, 10, 4, 0), 0);
	assert_int_equal(t.count, 2);
}

static void test_full_table_and_ack_recycling(void **state)
{
	struct mercury_sock_tags t = {0};
	uint64_t off = 1ull << 33; /* beyond 4 GiB */

	(void)state;
	for (int i = 0; i < MERCURY_RANGES_PER_SOCK; i++)
		assert_int_equal(tags_insert(&t, off + 100 * i, 50, i % 2, 0), 0);
	assert_int_equal(tags_insert(&t, off + 100 * 40, 50, 1, 0), -ENOSPC);
	for (int i = 0; i < MERCURY_RANGES_PER_SOCK; i++) {
		assert_int_equal(tags_find(&t, off + 100 * i), i);
		assert_int_equal(tags_find(&t, off + 100 * i + 49), i);
		assert_int_equal(tags_find(&t, off + 100 * i + 50), -1);
	}
	/* The peer acknowledged the first three ranges: they make room. */
	assert_int_equal(tags_insert(&t, off + 100 * 40, 50, 1, off + 250), 0);
	assert_int_equal(t.count, MERCURY_RANGES_PER_SOCK - 2);
	assert_int_equal(t.ranges[0].start, off + 300);
	assert_int_equal(tags_find(&t, off + 100 * 40 + 10), MERCURY_RANGES_PER_SOCK - 3);
}

/* Job pieces merge only with the same job, generation, layer, direction and iteration; a tag
 * of several pieces is all or none, also when only its last piece has no room. */
static void test_job_pieces(void **state)
{
	struct mercury_sock_tags t = {0}, before;
	struct tag_piece p[3] = {
	    {.len = 100, .id = {.job = 1, .job_gen = 7, .layer = 2, .iteration = 5}},
	    {.len = 50, .id = {.job = 1, .job_gen = 7, .layer = 2, .iteration = 5}},
	    {.len = 10, .id = {.job = 1, .job_gen = 7, .layer = 2, .iteration = 6}},
	};

	(void)state;
	assert_int_equal(tags_apply(&t, 1000, p, 3, 0), 0);
	assert_int_equal(t.count, 2); /* the first two are one range */
	assert_int_equal(t.ranges[0].start, 1000);
	assert_int_equal(t.ranges[0].end, 1150);
	assert_int_equal(t.ranges[1].iteration, 6);
	/* Continuing the last range merges with it; another generation does not. */
	p[2].id.job_gen = 7;
	assert_int_equal(tags_apply(&t, 1160, &p[2], 1, 0), 0);
	assert_int_equal(t.count, 2);
	p[2].id.job_gen = 8;
	assert_int_equal(tags_apply(&t, 1170, &p[2], 1, 0), 0);
	assert_int_equal(t.count, 3);
	/* Fill to one free entry, then a tag of two new ranges: refused whole. */
	for (uint64_t off = 2000; t.count < MERCURY_RANGES_PER_SOCK - 1; off += 100) {
		struct tag_piece q = {.len = 10, .id = {.level = (uint8_t)(t.count % 2)}};

		assert_int_equal(tags_apply(&t, off, &q, 1, 0), 0);
	}
	before = t;
	p[0].id.layer = 3;
	p[1].id.layer = 4;
	assert_int_equal(tags_apply(&t, 1ull << 40, p, 2, 0), -ENOSPC);
	assert_memory_equal(&t, &before, sizeof(t));
	/* A fixed level out of range, and an empty piece, are refused before anything. */
	p[0] = (struct tag_piece){.len = 10, .id = {.level = MERCURY_MAX_LEVELS}};
	assert_int_equal(tags_apply(&t, 1ull << 41, p, 1, 0), -EINVAL);
	p[0] = (struct tag_piece){.len = 0, .id = {.job = 1}};
	assert_int_equal(tags_apply(&t, 1ull << 41, p, 1, 0), -EINVAL);
	assert_memory_equal(&t, &before, sizeof(t));
}

static void test_stream_offset_wrap(void **state)
{
	(void)state;
	/* snd_una just below 2^32, seq wrapped past zero, 5 GiB acked so far. */
	uint64_t acked = 5ull << 30;

	assert_int_equal(mercury_stream_offset(0x10u, 0xfffffff0u, acked), acked + 0x20);
	assert_int_equal(mercury_stream_offset(0xfffffff0u, 0xfffffff0u, acked), acked);
	/* A segment that starts before snd_una (partly acked retransmission). */
	assert_int_equal(mercury_stream_offset(0xffffffe0u, 0x10u, acked), acked - 0x30);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_insert_and_find),
	    cmocka_unit_test(test_out_of_order_rejected),
	    cmocka_unit_test(test_adjacent_same_level_merges),
	    cmocka_unit_test(test_full_table_and_ack_recycling),
	    cmocka_unit_test(test_job_pieces),
	    cmocka_unit_test(test_stream_offset_wrap),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
