/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* The IP header's DS byte (DSCP and ECN): read and rewritten in place, IPv4 and IPv6. */
#ifndef MERCURY_DS_FIELD_H
#define MERCURY_DS_FIELD_H

#include "parse.h"

/*
 * Rewrites the IP header's DS byte (IPv4 TOS, IPv6 traffic class) at c->l3_off (parsed by
 * mercury_parse: IPv4 with a valid ihl, or IPv6) to (byte & keep) | set: the DSCP export keeps
 * the two ECN bits, the emulated switch port's CE mark keeps the DSCP. IPv4: the header
 * checksum fixed incrementally (RFC 1624: HC' = ~(~HC + ~m + m') over the 16-bit word that
 * holds the TOS). IPv6: the traffic class straddles the first two bytes (version, class, flow
 * label); there is no header checksum. One bpf_skb_store_bytes() a packet, the header read
 * directly: a program that writes packet data directly gets an unclone prologue run on every
 * packet, and TCP transmits clones; the helper only copies a header that is not writable
 * (TCP's pushed headers are). BPF_F_RECOMPUTE_CSUM keeps a CHECKSUM_COMPLETE skb's sum right.
 * Returns false when the header could not be written (the packet still goes, unchanged).
 */
static __always_inline bool
mercury_rewrite_ds(struct __sk_buff *skb, const struct mercury_classify_ctx *c, __u8 keep, __u8 set)
{
	__u32 off = c->l3_off & 0xff; /* Ethernet + one VLAN tag: well below 256 */
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u8 *ip = data + off;

	if ((void *)(ip + 12) > data_end) /* IPv4's first 12 bytes, IPv6's first 2 */
		return false;
	if (c->ipv6) {
		__u8 old = (__u8)((ip[0] & 0x0f) << 4 | ip[1] >> 4);
		__u8 tclass = (__u8)((old & keep) | set);
		__u8 out[2] = {(__u8)((ip[0] & 0xf0) | tclass >> 4),
			       (__u8)(tclass << 4 | (ip[1] & 0x0f))};

		return !bpf_skb_store_bytes(skb, off, out, 2, BPF_F_RECOMPUTE_CSUM);
	} else {
		/* bytes 1..11: the new TOS, the 8 bytes between as they are, the new checksum */
		__u8 out[11];
		__u16 old_word, new_word, check;
		__u32 sum;

		__builtin_memcpy(out, ip + 1, 11);
		out[0] = (__u8)((ip[1] & keep) | set);
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

/* Writes dscp into the IP header, the ECN bits kept. */
static __always_inline bool mercury_set_dscp(struct __sk_buff *skb,
					     const struct mercury_classify_ctx *c, __u8 dscp)
{
	return mercury_rewrite_ds(skb, c, 0x03, (__u8)(dscp << 2));
}

/* The DS byte the packet carries (IPv4 TOS or IPv6 traffic class: DSCP and ECN); -1 when the
 * header cannot be read. */
static __always_inline int mercury_get_ds(struct __sk_buff *skb,
					  const struct mercury_classify_ctx *c)
{
	__u32 off = c->l3_off & 0xff;
	void *data = (void *)(long)skb->data;
	void *data_end = (void *)(long)skb->data_end;
	__u8 *ip = data + off;

	if ((void *)(ip + 2) > data_end)
		return -1;
	if (c->ipv6)
		return (ip[0] & 0x0f) << 4 | ip[1] >> 4;
	return ip[1];
}

/* The DSCP the packet carries (the DS byte's high 6 bits); 0xff when the header cannot be
 * read. */
static __always_inline __u8 mercury_get_dscp(struct __sk_buff *skb,
					     const struct mercury_classify_ctx *c)
{
	int ds = mercury_get_ds(skb, c);

	return ds < 0 ? 0xff : (__u8)(ds >> 2);
}

#endif
