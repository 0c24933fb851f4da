// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * Mercury's TC egress classifier: the packet's byte offset in its socket's send stream
 * selects a tagged priority level, the level a qdisc band, the band skb->priority. With DSCP
 * export on (mercuryd attach --dscp) a tagged packet's IP header also carries its band's
 * DSCP. It never drops a packet and always returns TC_ACT_UNSPEC so later filters still run.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "mercury_abi.h"
#include "job_level.h"
#include "classify.h"

/*
 * The socket view. classifier_test.bpf.c includes this file with its own (MERCURY_SOCK_VIEW:
 * from maps, as BPF_PROG_TEST_RUN has no real socket), its own program name and its own
 * licence line; the rest is this program.
 */
#ifndef MERCURY_SOCK_VIEW
char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define MERCURY_SOCK_VIEW(skb, v) sock_view_from_skb(skb, v)
#define MERCURY_EGRESS		  mercury_egress

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
	v->tp = tp;
	v->snd_una = tp->snd_una;
	v->bytes_acked = tp->bytes_acked;
	v->tags = bpf_sk_storage_get(&sock_tags, tp, 0, 0);
	if (v->tags)
		v->sock_stats = bpf_sk_storage_get(&sock_stats, tp, 0, BPF_SK_STORAGE_GET_F_CREATE);
}

/*
 * Bytes the socket has below TCP (qdisc, driver): sk_wmem_alloc holds 1 plus the truesize of
 * every such skb, this one included. truesize is the payload plus the skb's own head (about
 * 1.2 KiB here), which skb->len (payload and headers) does not count, so anything beyond
 * MERCURY_SKB_HEAD_MAX after subtracting len is another packet of the socket.
 */
#define MERCURY_SKB_HEAD_MAX 2048

static __always_inline bool mercury_sock_queued(struct __sk_buff *skb,
						const struct mercury_sock_view *v)
{
	struct tcp_sock *ts = v->tp ? bpf_skc_to_tcp_sock(v->tp) : NULL;
	__s64 others;

	if (!ts)
		return false;
	others = (__s64)ts->inet_conn.icsk_inet.sk.sk_wmem_alloc.refs.counter - 1 - skb->len;
	return others > MERCURY_SKB_HEAD_MAX;
}
#endif /* MERCURY_SOCK_VIEW */

SEC("tc")
int MERCURY_EGRESS(struct __sk_buff *skb)
{
	struct mercury_sock_view view = {};
	struct mercury_classify_ctx c;

	if (!mercury_begin(skb, &c))
		return TC_ACT_UNSPEC;
	if (c.outcome == MERCURY_NEEDS_SOCK)
		MERCURY_SOCK_VIEW(skb, &view);
	return mercury_finish(skb, &c, &view);
}
