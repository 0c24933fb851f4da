/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * Header parsing of an egress packet, up to the sequence number of its first TCP payload
 * byte; no map, no socket.
 */
#ifndef MERCURY_PARSE_H
#define MERCURY_PARSE_H

#define ETH_P_IP      0x0800
#define ETH_P_IPV6    0x86DD
#define ETH_P_8021Q   0x8100
#define ETH_P_8021AD  0x88A8
#define IP_OFFSET     0x1FFF /* IPv4 fragment offset bits */
#define IP6_OFFSET    0xFFF8 /* IPv6 fragment header offset bits */
#define IP6_EXT_WALK  4	     /* extension headers walked before giving up (NOT_TCP) */
#define NEXTHDR_HOP   0
#define NEXTHDR_ROUTE 43
#define NEXTHDR_FRAG  44
#define NEXTHDR_DEST  60

/* Parse result meaning "TCP with payload: the socket view decides". */
#define MERCURY_NEEDS_SOCK MERCURY_OUT_MAX

/* Per-packet state between mercury_begin() and mercury_finish(). */
struct mercury_classify_ctx {
	const struct mercury_iface_cfg *cfg;
	__u32 outcome; /* enum mercury_outcome or MERCURY_NEEDS_SOCK */
	__u32 seq;     /* sequence number of the first payload byte */
	__u32 end_seq; /* sequence number just past the last payload byte */
	__u32 l3_off;  /* offset of the IP header (valid for MERCURY_NEEDS_SOCK) */
	__u32 ipv6;    /* 1: that header is IPv6, 0: IPv4 */
};

/*
 * IPv6 extension headers up to the L4 header. Returns the L4 protocol (255 when it is not
 * known after IP6_EXT_WALK headers or a non-first fragment) and advances *off past them.
 */
static __always_inline int mercury_skip_ipv6_ext(void *data, void *data_end, __u32 *off,
						 __u8 nexthdr)
{
	__u32 l4 = *off;

	for (int i = 0; i < IP6_EXT_WALK; i++) {
		if (nexthdr == IPPROTO_TCP)
			break;
		if (nexthdr == NEXTHDR_HOP || nexthdr == NEXTHDR_ROUTE || nexthdr == NEXTHDR_DEST) {
			struct ipv6_opt_hdr *oh = data + l4;

			if ((void *)(oh + 1) > data_end)
				return -1;
			nexthdr = oh->nexthdr;
			l4 += ((__u32)oh->hdrlen + 1) * 8;
		} else if (nexthdr == NEXTHDR_FRAG) {
			struct frag_hdr *fh = data + l4;

			if ((void *)(fh + 1) > data_end)
				return -1;
			if (fh->frag_off & bpf_htons(IP6_OFFSET))
				return 255;
			nexthdr = fh->nexthdr;
			l4 += sizeof(*fh);
		} else {
			break;
		}
	}
	*off = l4;
	return nexthdr;
}

/* Ethernet with one optional VLAN tag: the L3 protocol and its header's offset; false when
 * the packet is too short for them. */
static __always_inline bool mercury_parse_l2(void *data, void *data_end, __u32 *off, __be16 *proto)
{
	struct ethhdr *eth = data;

	if ((void *)(eth + 1) > data_end)
		return false;
	*proto = eth->h_proto;
	*off = sizeof(*eth);
	if (*proto == bpf_htons(ETH_P_8021Q) || *proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *vh = data + *off;

		if ((void *)(vh + 1) > data_end)
			return false;
		*proto = vh->h_vlan_encapsulated_proto;
		*off += sizeof(*vh);
	}
	return true;
}

/*
 * Headers of an egress packet: L2 (Ethernet, one optional VLAN tag), IPv4 or IPv6 with up to
 * IP6_EXT_WALK extension headers, TCP. Returns an outcome, or MERCURY_NEEDS_SOCK with *seq set
 * for TCP segments with payload. The payload length comes from skb->len, never from the IP
 * length fields (GSO and BIG TCP packets carry 0 or the length of one segment there).
 */
static __always_inline __u32 mercury_parse(struct __sk_buff *skb, struct mercury_classify_ctx *c)
{
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	struct tcphdr *th;
	__u32 off, hdrs, len;
	__be16 proto;

	if (!mercury_parse_l2(data, data_end, &off, &proto))
		return MERCURY_OUT_MALFORMED;
	c->l3_off = off;

	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *iph = data + off;
		__u8 ver_ihl;

		if ((void *)(iph + 1) > data_end)
			return MERCURY_OUT_MALFORMED;
		ver_ihl = *(__u8 *)iph;
		/* version 4 and ihl 5..15 in one compare */
		if ((__u8)(ver_ihl - 0x45) > 0x0A)
			return MERCURY_OUT_MALFORMED;
		if (iph->protocol != IPPROTO_TCP || (iph->frag_off & bpf_htons(IP_OFFSET)))
			return MERCURY_OUT_NOT_TCP;
		off += (ver_ihl & 0x0F) * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = data + off;
		int l4proto;

		if ((void *)(ip6 + 1) > data_end)
			return MERCURY_OUT_MALFORMED;
		if ((*(__u8 *)ip6 >> 4) != 6)
			return MERCURY_OUT_MALFORMED;
		c->ipv6 = 1;
		off += sizeof(*ip6);
		l4proto = mercury_skip_ipv6_ext(data, data_end, &off, ip6->nexthdr);
		if (l4proto < 0)
			return MERCURY_OUT_MALFORMED;
		if (l4proto != IPPROTO_TCP)
			return MERCURY_OUT_NOT_TCP;
	} else {
		return MERCURY_OUT_NOT_TCP;
	}

	th = data + off;
	if ((void *)(th + 1) > data_end)
		return MERCURY_OUT_MALFORMED;
	hdrs = off + th->doff * 4;
	len = skb->len;
	if (th->doff < 5 || hdrs > len)
		return MERCURY_OUT_MALFORMED;
	if (hdrs == len)
		return MERCURY_OUT_NO_PAYLOAD;
	/* A SYN takes one sequence number before its data (TCP Fast Open). */
	c->seq = bpf_ntohl(th->seq) + th->syn;
	c->end_seq = c->seq + (len - hdrs);
	return MERCURY_NEEDS_SOCK;
}

#endif
