// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Does nothing: the baseline that bench/classifier_cost.c subtracts. */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

SEC("tc")
int mercury_noop(struct __sk_buff *skb)
{
	(void)skb;
	return -1; /* TC_ACT_UNSPEC */
}
