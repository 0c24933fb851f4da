// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * The emulated cluster's ECN-marking switch port (bench/port_ecn.c attaches it at tc egress of
 * a switch port, in front of that port's tbf FIFO). A real top-of-rack switch marks CE on an
 * ECN-capable packet that arrives while its port's queue is above a threshold (WRED/ECN with
 * min = max threshold, as DCTCP deployments set it). This kernel has no marking qdisc (no red,
 * codel, pie), and a tc program cannot read the tbf's backlog, so the program keeps the
 * queue's length itself: bytes arrive with each packet and drain at the port's rate, through
 * a token bucket of the tbf's burst, and a packet the tbf's limit would refuse is not counted
 * (the tbf drops it). Marking never drops and never delays: the tbf behind it does both.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include "mercury_abi.h"
#include "parse.h"
#include "ds_field.h"
#include "port_ecn.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set by the loader before load: the port's drain rate and its tbf's burst and limit. */
const volatile __u64 rate_bytes_per_s = 50000000;
const volatile __u64 burst_bytes = 65536;
const volatile __u64 limit_bytes = 262144;
const volatile __u64 mark_above_bytes = 65536;

struct port_queue {
	struct bpf_spin_lock lock;
	__u64 backlog; /* bytes the port holds, as the model counts them */
	__u64 tokens;  /* the bucket: bytes the port may send at once after an idle spell */
	__u64 last_ns;
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct port_queue);
} queue SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, PORT_ECN_NR_COUNTERS);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* The IP header's place, any transport (a switch marks UDP as well as TCP); false for what
 * is not IP. */
static __always_inline bool find_ip(struct __sk_buff *skb, struct mercury_classify_ctx *c)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u32 off;
	__be16 proto;
	__u8 *ip;

	if (!mercury_parse_l2(data, data_end, &off, &proto))
		return false;
	ip = data + (off & 0xff);
	if ((void *)(ip + 1) > data_end)
		return false;
	c->l3_off = off;
	c->ipv6 = proto == bpf_htons(ETH_P_IPV6);
	return (proto == bpf_htons(ETH_P_IP) && *ip >> 4 == 4) || (c->ipv6 && *ip >> 4 == 6);
}

static __always_inline void count(__u32 which)
{
	__u64 *n = bpf_map_lookup_elem(&counters, &which);

	if (n)
		(*n)++;
}

/* What the queue looks like on this packet's arrival: PORT_ECN_FULL when the tbf's limit
 * refuses it, else the bytes queued with it counted. */
static __always_inline __u64 enqueue(struct port_queue *q, __u64 now, __u64 len)
{
	__u64 dt = now > q->last_ns ? now - q->last_ns : 0, drained;

	/* at most a second's drain: dt * rate stays below 2^64 up to 18 GB/s */
	if (dt > 1000000000ULL)
		dt = 1000000000ULL;
	drained = dt * rate_bytes_per_s / 1000000000ULL;
	q->last_ns = now;
	if (drained >= q->backlog) {
		q->tokens += drained - q->backlog;
		if (q->tokens > burst_bytes)
			q->tokens = burst_bytes;
		q->backlog = 0;
	} else {
		q->backlog -= drained;
	}
	if (q->backlog == 0 && q->tokens >= len) {
		q->tokens -= len; /* out at once, on the bucket */
		return 0;
	}
	if (q->backlog + len > limit_bytes)
		return PORT_ECN_FULL;
	q->backlog += len;
	return q->backlog;
}

SEC("tc")
int mercury_port_ecn(struct __sk_buff *skb)
{
	struct mercury_classify_ctx c = {};
	__u32 key = 0;
	struct port_queue *q = bpf_map_lookup_elem(&queue, &key);
	__u64 now = bpf_ktime_get_ns(), queued;
	int ds;

	if (!q)
		return PORT_ECN_TC_ACT_OK;
	bpf_spin_lock(&q->lock);
	queued = enqueue(q, now, skb->len);
	bpf_spin_unlock(&q->lock);

	count(PORT_ECN_PACKETS);
	if (queued == PORT_ECN_FULL) {
		count(PORT_ECN_OVER_LIMIT);
		return PORT_ECN_TC_ACT_OK; /* the tbf drops it, not this program */
	}
	if (queued <= mark_above_bytes)
		return PORT_ECN_TC_ACT_OK;
	if (!find_ip(skb, &c))
		return PORT_ECN_TC_ACT_OK;
	ds = mercury_get_ds(skb, &c);
	if (ds < 0 || (ds & PORT_ECN_MASK) == PORT_ECN_NOT_ECT) {
		count(PORT_ECN_NOT_CAPABLE); /* a drop-tail port for this one: the tbf's limit */
		return PORT_ECN_TC_ACT_OK;
	}
	if ((ds & PORT_ECN_MASK) == PORT_ECN_CE || mercury_rewrite_ds(skb, &c, 0xfc, PORT_ECN_CE))
		count(PORT_ECN_MARKED);
	return PORT_ECN_TC_ACT_OK;
}
