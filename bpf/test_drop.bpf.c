// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Tests only: a tc ingress program that drops one packet in 32 of each flow's packets longer
 * than 200 bytes (data segments, not ACKs), so that every sender has to retransmit. Counted
 * per flow, not drawn at random: a flow of 169 packets went through a 1-in-32 random dropper
 * untouched (CI, stop 39), and the test that reads its retransmissions failed. The namespace
 * test of the DSCP export (tests/integration/test_dscp.sh) puts it on the receiver's veth,
 * behind a packet capture, to see retransmissions carry the DSCP too.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define DROP_EVERY 32
#define DROP_AT	   7 /* the 8th, 40th, ... data packet of a flow: after its slow start began */

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32); /* the flow hash of the packet */
	__type(value, __u32);
} data_packets SEC(".maps");

SEC("tc")
int mercury_test_drop(struct __sk_buff *skb)
{
	__u32 flow, first = 1, *seen;

	if (skb->len <= 200)
		return 0; /* TC_ACT_OK */
	flow = bpf_get_hash_recalc(skb);
	seen = bpf_map_lookup_elem(&data_packets, &flow);
	if (!seen) {
		bpf_map_update_elem(&data_packets, &flow, &first, BPF_ANY);
		return 0;
	}
	/* not atomic (clang's default BPF CPU has no fetch-add): two CPUs counting one flow at
	 * once may lose a count, which moves a drop by a packet, never skips all of them */
	if ((*seen)++ % DROP_EVERY == DROP_AT)
		return 2; /* TC_ACT_SHOT */
	return 0;
}
