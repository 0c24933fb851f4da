// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Tests only: a tc ingress program that drops about one packet in 32 of those longer than
 * 200 bytes (data segments, not ACKs), at random, so that a sender has to retransmit. The
 * namespace test of the DSCP export (tests/integration/test_dscp.sh) puts it on the
 * receiver's veth, behind a packet capture, to see retransmissions carry the DSCP too.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tc")
int mercury_test_drop(struct __sk_buff *skb)
{
	if (skb->len > 200 && (bpf_get_prandom_u32() & 31) == 0)
		return 2; /* TC_ACT_SHOT */
	return 0;	  /* TC_ACT_OK */
}
