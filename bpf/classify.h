/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The classifier's logic, shared by the production program (classifier.bpf.c) and its
 * test variant (classifier_test.bpf.c) so that both run exactly the same code: the maps,
 * header parsing, the range search, the job state -> level -> band mapping and the counters.
 * A program differs only in where its socket view (struct mercury_sock_view) comes from.
 *
 * A program is:
 *	if (!mercury_begin(skb, &c)) return TC_ACT_UNSPEC;   (cfg + headers)
 *	if (c.outcome == MERCURY_NEEDS_SOCK) <fill the socket view>;
 *	return mercury_finish(skb, &c, &view);                (search, priority, counters)
 *
 * Cost matters (it runs for every egress packet): one cfg and one stats lookup per
 * packet, helpers only for packets that carry TCP payload, few branches.
 */
#ifndef MERCURY_CLASSIFY_H
#define MERCURY_CLASSIFY_H

/*
 * Value of the test variant's "test_view" map: the socket as BPF_PROG_TEST_RUN cannot give
 * it. Visible to user space (the tests and the benchmark include this header); the rest of
 * the header is BPF only.
 */
struct mercury_test_view {
	__u32 has_sock; /* a full TCP socket: snd_una and bytes_acked are valid */
	__u32 snd_una;
	__u64 bytes_acked;
	__u32 has_tags; /* use the "test_tags" entry as the socket's tags */
	__u32 queued;	/* earlier packets of the socket are still queued below TCP */
};

#ifdef __bpf__

#define TC_ACT_UNSPEC (-1) /* same value as TCX_NEXT: later filters still run */

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

#include "shared_maps.h"

/* The per-interface maps; names and layouts are what mercuryd expects. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_stats);
} stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_iface_cfg);
} cfg SEC(".maps");

/* Unused by the code; here so that libbpf creates it BTF-typed for mercuryd to pin. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_attach_state);
} attach_state SEC(".maps");

/* Unused by the code, like attach_state: the qdisc tree detach puts back. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct mercury_saved_tree);
} saved_tree SEC(".maps");

/* What the classifier knows about the packet's socket. Zeroed: no socket. */
struct mercury_sock_view {
	__u32 has_sock;
	__u32 snd_una;
	__u64 bytes_acked;
	const struct mercury_sock_tags *tags;  /* NULL: socket has no tags */
	struct mercury_sock_stats *sock_stats; /* NULL: not counted per socket */
	struct bpf_tcp_sock *tp;	       /* production: the socket (NULL in the test) */
	__u32 test_queued;		       /* test variant: mercury_sock_queued()'s answer */
};

/*
 * Whether packets of the socket other than skb are still queued below TCP (qdisc, driver).
 * Each program defines it: the production one from the socket, the test one from its map.
 */
static __always_inline bool mercury_sock_queued(struct __sk_buff *skb,
						const struct mercury_sock_view *v);

/* Per-packet state between mercury_begin() and mercury_finish(). */
struct mercury_classify_ctx {
	const struct mercury_iface_cfg *cfg;
	__u32 outcome; /* enum mercury_outcome or MERCURY_NEEDS_SOCK */
	__u32 seq;     /* sequence number of the first payload byte */
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
	struct ethhdr *eth = data;
	struct tcphdr *th;
	__u32 off = sizeof(*eth), hdrs, len;
	__be16 proto;

	if ((void *)(eth + 1) > data_end)
		return MERCURY_OUT_MALFORMED;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_8021Q) || proto == bpf_htons(ETH_P_8021AD)) {
		struct vlan_hdr *vh = data + off;

		if ((void *)(vh + 1) > data_end)
			return MERCURY_OUT_MALFORMED;
		proto = vh->h_vlan_encapsulated_proto;
		off += sizeof(*vh);
	}
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
	return MERCURY_NEEDS_SOCK;
}

/*
 * Binary search of the socket's sorted, disjoint [start, end) ranges: find the last range
 * starting at or before off, then check that off is before its end. Steps of 16, 8, 4, 2, 1
 * entries from a pointer: constant load offsets, no index multiply, the same five probes for
 * every offset (MERCURY_RANGE_SEARCH_STEPS - 1, plus the final check).
 */
_Static_assert(1 << (MERCURY_RANGE_SEARCH_STEPS - 1) == MERCURY_RANGES_PER_SOCK,
	       "the search's steps must cover the whole range table");

static __always_inline const struct mercury_range *
mercury_find_range(const struct mercury_sock_tags *tags, __u64 off)
{
	const struct mercury_range *r = tags->ranges;
	__u64 n = tags->count, i = 0;

	if (n > MERCURY_RANGES_PER_SOCK)
		n = MERCURY_RANGES_PER_SOCK;
#pragma unroll
	for (int step = MERCURY_RANGES_PER_SOCK / 2; step > 0; step /= 2) {
		if (i + step < n && r[step].start <= off) {
			r += step;
			i += step;
		}
	}
	if (!n || off < r->start || off >= r->end)
		return NULL;
	return r;
}

/*
 * Outcome for a TCP segment with payload, given its socket view; for TAGGED, *band gets the
 * level's band (clamped by the caller, like every band). A job tag's level comes from the
 * job's state now; a tag whose job slot is free or holds another job is JOB_GONE and keeps
 * the default band: demoted, never dropped.
 */
static __always_inline __u32 mercury_decide(const struct mercury_classify_ctx *c,
					    const struct mercury_sock_view *v, __u64 *band)
{
	const struct mercury_range *r;
	__u32 level;

	if (!v->has_sock)
		return MERCURY_OUT_NO_OFFSET;
	if (!v->tags)
		return MERCURY_OUT_UNTAGGED;
	r = mercury_find_range(v->tags, mercury_stream_offset(c->seq, v->snd_una, v->bytes_acked));
	if (!r)
		return MERCURY_OUT_TAG_MISS;
	if (r->job) {
		__u32 slot = r->job - 1u;
		const struct mercury_job_state *js = bpf_map_lookup_elem(&jobs, &slot);

		if (!js || !js->active || (__u16)js->gen != r->job_gen)
			return MERCURY_OUT_JOB_GONE;
		level = mercury_job_level(js, r->layer, r->iteration, c->cfg->nbands);
	} else {
		level = r->level;
	}
	if (level >= MERCURY_MAX_LEVELS)
		level = MERCURY_MAX_LEVELS - 1;
	barrier_var(level); /* keep the mask: the verifier does not follow the clamp */
	*band = c->cfg->band_of_level[level & (MERCURY_MAX_LEVELS - 1)];
	return MERCURY_OUT_TAGGED;
}

/* Looks up cfg and parses the headers; false: not configured, leave the packet alone. */
static __always_inline bool mercury_begin(struct __sk_buff *skb, struct mercury_classify_ctx *c)
{
	__u32 zero = 0;

	c->cfg = bpf_map_lookup_elem(&cfg, &zero);
	if (!c->cfg || !c->cfg->nbands)
		return false;
	c->seq = 0;
	c->l3_off = 0;
	c->ipv6 = 0;
	c->outcome = mercury_parse(skb, c);
	return true;
}

/*
 * Writes dscp into the IP header at c->l3_off (parsed by mercury_parse: IPv4 with a valid
 * ihl, or IPv6), keeping the two ECN bits. IPv4: the TOS byte, and the header checksum fixed
 * incrementally (RFC 1624: HC' = ~(~HC + ~m + m') over the 16-bit word that holds the TOS).
 * IPv6: the traffic class, which straddles the first two bytes (version, class, flow label);
 * there is no header checksum. One bpf_skb_store_bytes() a packet, the header read directly:
 * a program that writes packet data directly gets an unclone prologue run on every packet,
 * and TCP transmits clones; the helper only copies a header that is not writable (TCP's
 * pushed headers are). BPF_F_RECOMPUTE_CSUM keeps a CHECKSUM_COMPLETE skb's sum right.
 * Returns false when the header could not be written (the packet still goes, unmarked).
 */
static __always_inline bool mercury_set_dscp(struct __sk_buff *skb,
					     const struct mercury_classify_ctx *c, __u8 dscp)
{
	__u32 off = c->l3_off & 0xff; /* Ethernet + one VLAN tag: well below 256 */
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u8 *ip = data + off;

	if ((void *)(ip + 12) > data_end) /* IPv4's first 12 bytes, IPv6's first 2 */
		return false;
	if (c->ipv6) {
		__u8 tclass = (__u8)(dscp << 2 | ((ip[1] >> 4) & 0x03));
		__u8 out[2] = {(__u8)((ip[0] & 0xf0) | tclass >> 4),
			       (__u8)(tclass << 4 | (ip[1] & 0x0f))};

		return !bpf_skb_store_bytes(skb, off, out, 2, BPF_F_RECOMPUTE_CSUM);
	} else {
		/* bytes 1..11: the new TOS, the 8 bytes between as they are, the new checksum */
		__u8 out[11];
		__u16 old_word, new_word, check;
		__u32 sum;

		__builtin_memcpy(out, ip + 1, 11);
		out[0] = (__u8)(dscp << 2 | (ip[1] & 0x03));
		__builtin_memcpy(&old_word, ip, 2);
		new_word = old_word;
		__builtin_memcpy((__u8 *)&new_word + 1, out, 1);
		__builtin_memcpy(&check, ip + 10, 2);
		sum = (__u16)~check + (__u32)(__u16)~old_word + new_word;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		check = (__u16)~sum;
		__builtin_memcpy(out + 9, &check, 2);
		return !bpf_skb_store_bytes(skb, off + 1, out, 11, BPF_F_RECOMPUTE_CSUM);
	}
}

/*
 * Decides, sets skb->priority and counts. v is only read when c->outcome needs a socket.
 * Bands and limits are read from cfg here rather than carried through the search: fewer live
 * registers, fewer spills.
 */
static __always_inline int mercury_finish(struct __sk_buff *skb, struct mercury_classify_ctx *c,
					  const struct mercury_sock_view *v)
{
	const struct mercury_iface_cfg *conf = c->cfg;
	struct mercury_sock_stats *ss = NULL;
	__u64 outcome = c->outcome, band = conf->default_band, last, len;
	struct mercury_stats *st;
	bool kept = false, released = false, marked = false;
	__u32 zero = 0;

	if (outcome == MERCURY_NEEDS_SOCK) {
		outcome = mercury_decide(c, v, &band);
		ss = v->sock_stats;
	}
	last = conf->nbands - 1; /* nbands >= 1: checked by mercury_begin() */
	if (last > MERCURY_MAX_BANDS - 1)
		last = MERCURY_MAX_BANDS - 1;
	if (band > last)
		band = last;
	if (ss) {
		/* The order guard: a packet that would overtake its own socket's earlier packets
		 * (a more urgent band while they still wait in a less urgent one) is a reordered
		 * TCP stream to the receiver, taken for loss. It keeps the previous band until
		 * they have left, but no longer than cfg.order_guard_us from the first packet it
		 * held: a band below busy traffic may drain only at its guaranteed rate, and a
		 * socket that writes continuously always has packets there (TSQ refills its queue
		 * as each leaves), so without the bound it would never move up. Past the bound it
		 * moves, reordering at most the bytes it has queued, once. */
		__u64 prev = ss->last_band;
		__u32 since = ss->guard_since_us, now_us;

		if (prev && band + 1 < prev && prev <= last + 1 && mercury_sock_queued(skb, v)) {
			now_us = (__u32)(bpf_ktime_get_ns() / 1000) | 1;
			if (!since) {
				since = now_us;
				kept = true;
			} else if (!conf->order_guard_us || now_us - since < conf->order_guard_us) {
				kept = true;
			} else {
				since = 0;
				released = true;
			}
			if (kept)
				band = prev - 1;
		} else {
			since = 0;
		}
		ss->guard_since_us = since;
		ss->last_band = (__u32)band + 1;
	}
	/* clang drops the mask as redundant after the clamp, but older verifiers (6.1) cannot
	 * follow a register-to-register clamp: keep the mask they can. */
	barrier_var(band);
	band &= MERCURY_MAX_BANDS - 1;
	skb->priority = conf->skb_priority[band];
	/* DSCP export: tagged packets only (their band, kept or not); others keep theirs. */
	if (conf->dscp_on && outcome == MERCURY_OUT_TAGGED)
		marked = mercury_set_dscp(skb, c, conf->dscp[band] & 0x3f);

	len = skb->len;
	st = bpf_map_lookup_elem(&stats, &zero);
	if (st) {
		/* per-CPU value: plain adds are safe */
		st->band[band].packets++;
		st->band[band].bytes += len;
		if (outcome < MERCURY_OUT_MAX) {
			st->outcome[outcome].packets++;
			st->outcome[outcome].bytes += len;
		}
		if (kept) {
			st->order_kept.packets++;
			st->order_kept.bytes += len;
		}
		if (released) {
			st->order_released.packets++;
			st->order_released.bytes += len;
		}
		if (marked) {
			st->dscp_marked.packets++;
			st->dscp_marked.bytes += len;
		}
	}
	if (ss) {
		__sync_fetch_and_add(&ss->packets[band], 1);
		__sync_fetch_and_add(&ss->bytes[band], len);
	}
	return TC_ACT_UNSPEC;
}

#endif /* __bpf__ */
#endif /* MERCURY_CLASSIFY_H */
