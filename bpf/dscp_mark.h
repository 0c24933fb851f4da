/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* DSCP export: the band's DSCP written into a tagged packet's IP header. */
#ifndef MERCURY_DSCP_MARK_H
#define MERCURY_DSCP_MARK_H

#include "parse.h"

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

/* The DSCP the packet carries (IPv4 TOS or IPv6 traffic class, high 6 bits); 0xff when the
 * header cannot be read. */
static __always_inline __u8 mercury_get_dscp(struct __sk_buff *skb,
					     const struct mercury_classify_ctx *c)
{
	__u32 off = c->l3_off & 0xff;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u8 *ip = data + off;

	if ((void *)(ip + 2) > data_end)
		return 0xff;
	if (c->ipv6)
		return (__u8)(((ip[0] & 0x0f) << 2) | (ip[1] >> 6));
	return ip[1] >> 2;
}

/* What the fabric order guard did with a packet (mercury_dscp_guard). */
#define MERCURY_DSCP_KEPT     1
#define MERCURY_DSCP_RELEASED 2

/*
 * The fabric order guard: the band whose DSCP a tagged packet of a socket with per-socket
 * state carries. A switch port with strict-priority queues serves a more urgent queue first,
 * so a packet with a more urgent DSCP than its socket's earlier packets overtakes those of
 * them still queued there: the receiver sees a reordered stream, takes it for loss (SACK,
 * RACK), retransmits and cuts the window. So a rise (band more urgent than the last marked
 * packet's, with another DSCP) keeps the previous DSCP while any byte the socket sent before
 * is unacknowledged: acknowledged bytes have left every switch. A move to a less urgent DSCP
 * never waits: the earlier packets sit in a queue served before it. A rise held for
 * cfg.dscp_guard_us (0: no bound) goes ahead, once: a socket that keeps writing may never be
 * fully acknowledged. Retransmissions are judged like any packet (they keep the DSCP while
 * bytes after them are unacknowledged). *how gets MERCURY_DSCP_KEPT or _RELEASED, or stays.
 */
static __always_inline __u64 mercury_dscp_guard(const struct mercury_iface_cfg *conf,
						const struct mercury_sock_view *v,
						struct mercury_sock_stats *ss, __u64 band,
						__u64 last, __u32 *how)
{
	__u64 prev = ss->dscp_band;
	__u32 since = ss->dscp_since_us, now_us;

	if (prev && band + 1 < prev && prev <= last + 1 && (__s32)(v->snd_una - ss->dscp_end) < 0 &&
	    conf->dscp[band & (MERCURY_MAX_BANDS - 1)] !=
		conf->dscp[(prev - 1) & (MERCURY_MAX_BANDS - 1)]) {
		if (!conf->dscp_guard_us) { /* no bound: no clock to read */
			*how = MERCURY_DSCP_KEPT;
		} else if (!since) {
			since = (__u32)(bpf_ktime_get_ns() / 1000) | 1;
			*how = MERCURY_DSCP_KEPT;
		} else if ((now_us = (__u32)(bpf_ktime_get_ns() / 1000) | 1) - since <
			   conf->dscp_guard_us) {
			*how = MERCURY_DSCP_KEPT;
		} else {
			since = 0;
			*how = MERCURY_DSCP_RELEASED;
		}
		if (*how == MERCURY_DSCP_KEPT)
			band = prev - 1;
	} else {
		since = 0;
	}
	ss->dscp_since_us = since;
	ss->dscp_band = (__u32)band + 1;
	return band;
}

#endif
