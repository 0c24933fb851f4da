/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Edits of a socket's range table (struct mercury_sock_tags), shared by mercuryd's tag store
 * and the tag fast path (bpf/tag_fastpath.bpf.c), so both accept and refuse exactly the same
 * tags. Written for the verifier: loops bounded by MERCURY_RANGES_PER_SOCK, indices masked.
 *
 * A tag of several pieces is all or nothing: tag_table_check() says whether every piece fits
 * before tag_table_append() writes any.
 */
#ifndef MERCURY_TAG_TABLE_H
#define MERCURY_TAG_TABLE_H

#include "mercury_abi.h"

#include "mercury_inline.h"

#ifndef __VMLINUX_H__
#include <errno.h>
#endif

#define MERCURY_RANGE_MASK (MERCURY_RANGES_PER_SOCK - 1)

/* An index into ranges[]. On BPF the mask is kept behind a compiler barrier: clang drops it
 * as redundant after a bounds check the verifier cannot follow. */
#ifdef __VMLINUX_H__
#define TAG_IDX(i)                                                                                 \
	({                                                                                         \
		__u32 __idx = (i);                                                                 \
		asm volatile("" : "+r"(__idx));                                                    \
		__idx &MERCURY_RANGE_MASK;                                                         \
	})
#else
#define TAG_IDX(i) ((i)&MERCURY_RANGE_MASK)
#endif

_Static_assert((MERCURY_RANGES_PER_SOCK & MERCURY_RANGE_MASK) == 0,
	       "range table size must be a power of two");

/* Same owner of the bytes: adjacent ranges that can be one. Branch-free: fewer verifier paths. */
MERCURY_INLINE int tag_range_same(const struct mercury_range *a, const struct mercury_range *b)
{
	return ((__u64)(a->job ^ b->job) | (__u64)(a->job_gen ^ b->job_gen) |
		(__u64)(a->layer ^ b->layer) | (__u64)(a->level ^ b->level) |
		(__u64)(a->dir ^ b->dir) | (a->iteration ^ b->iteration)) == 0;
}

/* Forgets ranges the peer acknowledged in full: they can no longer match a packet. */
MERCURY_INLINE void tag_table_drop_acked(struct mercury_sock_tags *t, __u64 acked)
{
	__u32 n = t->count, drop = 0;

	if (n > MERCURY_RANGES_PER_SOCK)
		n = MERCURY_RANGES_PER_SOCK;
	for (__u32 i = 0; i < MERCURY_RANGES_PER_SOCK; i++) {
		if (i >= n || t->ranges[TAG_IDX(i)].end > acked)
			break;
		drop = i + 1;
	}
	if (!drop)
		return;
	/* Two loops with one exit each: the verifier walks them in linear time. */
	for (__u32 i = 0; i < MERCURY_RANGES_PER_SOCK; i++) {
		if (i + drop >= n)
			break;
		t->ranges[TAG_IDX(i)] = t->ranges[TAG_IDX(i + drop)];
	}
	for (__u32 i = 0; i < MERCURY_RANGES_PER_SOCK; i++) {
		if (i >= drop)
			break;
		__builtin_memset(&t->ranges[TAG_IDX(n - drop + i)], 0, sizeof(t->ranges[0]));
	}
	t->count = n - drop;
}

/* End of the last range, 0 when there is none. */
MERCURY_INLINE __u64 tag_table_end(const struct mercury_sock_tags *t)
{
	__u32 n = t->count;

	if (n == 0 || n > MERCURY_RANGES_PER_SOCK)
		return 0;
	return t->ranges[TAG_IDX(n - 1)].end;
}

/*
 * Whether n pieces, the first starting at first->start, fit after what is tagged:
 * -EEXIST if it starts before the last range ends (overlap or out of order), -ENOSPC if the
 * table has no room for the ranges that do not merge (merges: pieces beyond the first with
 * tag_range_same() as their predecessor, the first with the last range it touches).
 * new_ranges: how many of the n pieces need a new entry. -EINVAL for a corrupt count.
 */
MERCURY_INLINE int tag_table_check(const struct mercury_sock_tags *t,
				   const struct mercury_range *first, __u32 new_ranges)
{
	__u32 n = t->count;
	const struct mercury_range *last;

	if (n > MERCURY_RANGES_PER_SOCK)
		return -EINVAL;
	if (n) {
		last = &t->ranges[TAG_IDX(n - 1)];
		if (first->start < last->end)
			return -EEXIST;
		if (last->end == first->start && tag_range_same(last, first))
			new_ranges--; /* the first piece extends the last range */
	}
	if (n + new_ranges > MERCURY_RANGES_PER_SOCK)
		return -ENOSPC;
	return 0;
}

/* Appends r (after a successful check): extends the last range if r continues it. */
MERCURY_INLINE void tag_table_append(struct mercury_sock_tags *t, const struct mercury_range *r)
{
	__u32 n = t->count;

	if (n > MERCURY_RANGES_PER_SOCK)
		return;
	if (n) {
		struct mercury_range *last = &t->ranges[TAG_IDX(n - 1)];

		if (last->end == r->start && tag_range_same(last, r)) {
			last->end = r->end;
			return;
		}
	}
	if (n == MERCURY_RANGES_PER_SOCK)
		return;
	t->ranges[TAG_IDX(n)] = *r;
	t->count = n + 1;
}

#endif
