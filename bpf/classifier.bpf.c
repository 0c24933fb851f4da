// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Mercury's TC egress classifier: the packet's byte offset in its socket's send stream
 * selects a tagged priority level, the level a qdisc band, the band skb->priority. It never
 * drops or rewrites a packet and always returns TC_ACT_UNSPEC so later filters still run.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "mercury_abi.h"
#include "job_level.h"
#include "classify.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/*
 * The socket view from skb->sk. bpf_tcp_sock() returns NULL unless sk is a full TCP socket
 * (it does the bpf_sk_fullsock() check itself), which saves a helper call per packet.
 */
static __always_inline void sock_view_from_skb(struct __sk_buff *skb, struct mercury_sock_view *v)
{
	struct bpf_sock *sk = skb->sk;
	struct bpf_tcp_sock *tp;

	if (!sk)
		return;
	tp = bpf_tcp_sock(sk);
	if (!tp)
		return;
	v->has_sock = 1;
	v->snd_una = tp->snd_una;
	v->bytes_acked = tp->bytes_acked;
	v->tags = bpf_sk_storage_get(&sock_tags, tp, 0, 0);
	if (v->tags)
		v->sock_stats = bpf_sk_storage_get(&sock_stats, tp, 0, BPF_SK_STORAGE_GET_F_CREATE);
}

SEC("tc")
int mercury_egress(struct __sk_buff *skb)
{
	struct mercury_sock_view view = {};
	struct mercury_classify_ctx c;

	if (!mercury_begin(skb, &c))
		return TC_ACT_UNSPEC;
	if (c.outcome == MERCURY_NEEDS_SOCK)
		sock_view_from_skb(skb, &view);
	return mercury_finish(skb, &c, &view);
}
