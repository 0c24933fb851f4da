// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Test variant of classifier.bpf.c for BPF_PROG_TEST_RUN. There skb->sk is a dummy socket
 * (a fresh cookie per run, no TCP state, bpf_sk_storage_get() always NULL), so the real
 * socket path cannot be fed. This program is the production one, included below, except for
 * the source of the socket view: it reads snd_una, bytes_acked and the tags from the
 * "test_view" and "test_tags" maps, and counts per-socket bytes in "test_sock_stats" instead
 * of the socket-local "sock_stats".
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "mercury_abi.h"
#include "job_level.h"
#include "classify.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_test_view);
} test_view SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_sock_tags);
} test_tags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_sock_stats);
} test_sock_stats SEC(".maps");

/* The socket as the test_view map describes it. */
static __always_inline void sock_view_from_maps(struct mercury_sock_view *v)
{
	const struct mercury_test_view *tv;
	__u32 zero = 0;

	tv = bpf_map_lookup_elem(&test_view, &zero);
	if (!tv || !tv->has_sock)
		return;
	v->has_sock = 1;
	v->snd_una = tv->snd_una;
	v->bytes_acked = tv->bytes_acked;
	v->test_queued = tv->queued;
	if (!tv->has_tags)
		return;
	v->tags = bpf_map_lookup_elem(&test_tags, &zero);
	if (v->tags && !tv->no_sock_stats)
		v->sock_stats = bpf_map_lookup_elem(&test_sock_stats, &zero);
}

static __always_inline bool mercury_sock_queued(struct __sk_buff *skb,
						const struct mercury_sock_view *v)
{
	(void)skb;
	return v->test_queued;
}

#define MERCURY_SOCK_VIEW(skb, v) sock_view_from_maps(v)
#define MERCURY_EGRESS		  mercury_egress_test
#include "classifier.bpf.c"
