// SPDX-License-Identifier: BSD-2-Clause
/*
 * The classifier under BPF_PROG_TEST_RUN (root). Each table row is a packet built here, a
 * socket view (test_view/test_tags maps of the test variant, which runs the production
 * code with only the socket source swapped), a cfg, and what must come out: return value,
 * skb->priority, which outcome and band counters rise, the per-socket counters, and the
 * packet bytes unchanged. The production program is loaded and run too (dummy socket).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <linux/if_arp.h>
#include <linux/if_packet.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/in6.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <linux/udp.h>
#include <linux/icmp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "mercury_abi.h"
#include "classifier_test_view.h"
#include "../loopback.h"
#include "../tcp_pair.h"
#include "classifier.skel.h"
#include "classifier_test.skel.h"

#define FRAME_MAX     2048
#define PRIO_UNSET    0xdead0000u /* ctx_in priority: what an untouched skb keeps */
#define PRIO_BASE     0x10010u	  /* cfg: skb_priority[b] = PRIO_BASE + b */
#define NO_BAND	      (-1)
#define GiB	      (1ull << 30)
#define TCP_FIN	      0x01
#define TCP_SYN	      0x02
#define TCP_RST	      0x04
#define TCP_PSH	      0x08
#define TCP_ACK	      0x10
#define IP_MF	      0x2000
#define NEXTHDR_HOP   0
#define NEXTHDR_ROUTE 43
#define NEXTHDR_FRAG  44
#define NEXTHDR_DEST  60

/* ---- packet builders ---------------------------------------------------------------- */

struct pkt_spec {
	int l3;		   /* 4, 6, or 0 for ARP */
	int l4;		   /* IPPROTO_TCP (default), IPPROTO_UDP, IPPROTO_ICMP/ICMPV6 */
	bool vlan;	   /* one 802.1Q tag */
	int ip_opt_words;  /* IPv4 option words (ihl = 5 + this) */
	int ihl;	   /* IPv4 ihl written instead of the right one, when non-zero */
	int ip_version;	   /* version nibble written instead of the right one, when non-zero */
	bool zero_tot_len; /* IPv4 tot_len / IPv6 payload_len 0, as BIG TCP / GSO can have */
	uint16_t frag;	   /* fragment offset in 8-byte units (IPv4 or IPv6 fragment header) */
	bool more_frags;   /* IPv4 MF / IPv6 M bit */
	uint8_t ext[6];	   /* IPv6 extension headers before L4, in order */
	int n_ext;
	uint32_t seq;
	uint8_t flags;	   /* TCP flags; 0 means ACK|PSH */
	int doff;	   /* TCP doff written instead of the right one, when non-zero */
	int tcp_opt_words; /* TCP option words (doff = 5 + this) */
	uint32_t payload;  /* L4 payload bytes */
	uint32_t truncate; /* cut the frame to this many bytes, when non-zero */
};

static void put16(uint8_t *p, uint16_t v)
{
	v = htons(v);
	memcpy(p, &v, 2);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htonl(v);
	memcpy(p, &v, 4);
}

static size_t put_eth(uint8_t *p, uint16_t ethertype, bool vlan)
{
	static const uint8_t dst[ETH_ALEN] = {2, 0, 0, 0, 0, 2}, src[ETH_ALEN] = {2, 0, 0, 0, 0, 1};
	size_t n = 12;

	memcpy(p, dst, ETH_ALEN);
	memcpy(p + ETH_ALEN, src, ETH_ALEN);
	if (vlan) {
		put16(p + n, ETH_P_8021Q);
		put16(p + n + 2, 42); /* VID */
		n += 4;
	}
	put16(p + n, ethertype);
	return n + 2;
}

static size_t put_arp(uint8_t *p)
{
	put16(p, ARPHRD_ETHER);
	put16(p + 2, ETH_P_IP);
	p[4] = ETH_ALEN;
	p[5] = 4;
	put16(p + 6, ARPOP_REQUEST);
	memset(p + 8, 0, 20);
	return 28;
}

/* IPv4 header with options; tot_len is patched by build_frame(). */
static size_t put_ipv4(uint8_t *p, const struct pkt_spec *s, uint8_t proto)
{
	size_t n = 20 + 4 * (size_t)s->ip_opt_words;
	uint16_t frag = (uint16_t)(s->frag | (s->more_frags ? IP_MF : 0));

	memset(p, 0, n);
	p[0] = (uint8_t)((s->ip_version ? s->ip_version : 4) << 4 |
			 (s->ihl ? s->ihl : 5 + s->ip_opt_words));
	put16(p + 6, frag);
	p[8] = 64;
	p[9] = proto;
	put32(p + 12, 0x0a000001);
	put32(p + 16, 0x0a000002);
	memset(p + 20, 1, n - 20); /* NOP options */
	return n;
}

static size_t put_ipv6(uint8_t *p, const struct pkt_spec *s, uint8_t nexthdr)
{
	memset(p, 0, 40);
	p[0] = (uint8_t)((s->ip_version ? s->ip_version : 6) << 4);
	p[6] = nexthdr;
	p[7] = 64;
	p[8] = 0xfd;
	p[23] = 1;
	p[24] = 0xfd;
	p[39] = 2;
	return 40;
}

/* One IPv6 extension header of `type`; options headers are 16 bytes (hdrlen 1). */
static size_t put_ipv6_ext(uint8_t *p, uint8_t type, uint8_t next, const struct pkt_spec *s)
{
	if (type == NEXTHDR_FRAG) {
		memset(p, 0, 8);
		p[0] = next;
		put16(p + 2, (uint16_t)(s->frag << 3 | (s->more_frags ? 1 : 0)));
		put32(p + 4, 0x1234);
		return 8;
	}
	memset(p, 0, 16);
	p[0] = next;
	p[1] = 1; /* (1 + 1) * 8 bytes */
	p[2] = 1; /* PadN option filling the rest */
	p[3] = 12;
	return 16;
}

static size_t put_tcp(uint8_t *p, const struct pkt_spec *s)
{
	size_t n = 20 + 4 * (size_t)s->tcp_opt_words;

	memset(p, 0, n);
	put16(p, 40000);
	put16(p + 2, 9000);
	put32(p + 4, s->seq);
	put32(p + 8, 777);
	p[12] = (uint8_t)((s->doff ? s->doff : 5 + s->tcp_opt_words) << 4);
	p[13] = s->flags ? s->flags : TCP_ACK | TCP_PSH;
	put16(p + 14, 65535);
	memset(p + 20, 1, n - 20); /* NOP options */
	return n;
}

static size_t put_udp(uint8_t *p, uint32_t payload)
{
	put16(p, 40000);
	put16(p + 2, 9000);
	put16(p + 4, (uint16_t)(8 + payload));
	put16(p + 6, 0);
	return 8;
}

static size_t put_icmp_echo(uint8_t *p, uint8_t type)
{
	memset(p, 0, 8);
	p[0] = type;
	return 8;
}

/* The frame for a spec; returns its length. */
static size_t build_frame(const struct pkt_spec *s, uint8_t *buf)
{
	uint8_t l4 = s->l4 ? (uint8_t)s->l4 : IPPROTO_TCP;
	size_t n, l3_at;

	memset(buf, 0, FRAME_MAX);
	if (s->l3 == 0) {
		n = put_eth(buf, ETH_P_ARP, s->vlan);
		n += put_arp(buf + n);
		return s->truncate ? s->truncate : n;
	}
	n = put_eth(buf, s->l3 == 4 ? ETH_P_IP : ETH_P_IPV6, s->vlan);
	l3_at = n;
	if (s->l3 == 4) {
		n += put_ipv4(buf + n, s, l4);
	} else {
		n += put_ipv6(buf + n, s, s->n_ext ? s->ext[0] : l4);
		for (int i = 0; i < s->n_ext; i++)
			n += put_ipv6_ext(buf + n, s->ext[i], i + 1 < s->n_ext ? s->ext[i + 1] : l4,
					  s);
	}
	if (l4 == IPPROTO_TCP)
		n += put_tcp(buf + n, s);
	else if (l4 == IPPROTO_UDP)
		n += put_udp(buf + n, s->payload);
	else
		n += put_icmp_echo(buf + n, s->l3 == 4 ? ICMP_ECHO : 128);
	for (uint32_t i = 0; i < s->payload; i++)
		buf[n + i] = (uint8_t)(i * 7 + 3);
	n += s->payload;
	assert_true(n <= FRAME_MAX);
	if (!s->zero_tot_len) {
		if (s->l3 == 4)
			put16(buf + l3_at + 2, (uint16_t)(n - l3_at));
		else
			put16(buf + l3_at + 4, (uint16_t)(n - l3_at - 40));
	}
	return s->truncate ? s->truncate : n;
}

/* ---- fixtures: configurations and tag tables --------------------------------------------- */

/* 3 bands, default 1, level l -> band l (levels >= 3 rely on the clamp to band 2). */
static struct mercury_iface_cfg cfg3(void)
{
	struct mercury_iface_cfg c = {.nbands = 3, .default_band = 1};

	for (unsigned int l = 0; l < MERCURY_MAX_LEVELS; l++)
		c.band_of_level[l] = l;
	for (unsigned int b = 0; b < MERCURY_MAX_BANDS; b++)
		c.skb_priority[b] = PRIO_BASE + b;
	return c;
}

static struct mercury_iface_cfg cfg_unconfigured(void)
{
	struct mercury_iface_cfg c = cfg3();

	c.nbands = 0;
	return c;
}

static struct mercury_iface_cfg cfg_default_beyond(void)
{
	struct mercury_iface_cfg c = cfg3();

	c.default_band = 9; /* must clamp to band 2 */
	return c;
}

/* 16 bands, level l -> band l, default 15. */
static struct mercury_iface_cfg cfg16(void)
{
	struct mercury_iface_cfg c = cfg3();

	c.nbands = 16;
	c.default_band = 15;
	return c;
}

/* [1,1000) L0, [1000,2000) L2, gap, [3000,4000) L5, [4000,5000) L20 (not a valid level). */
static const struct mercury_sock_tags tags_basic = {
    .count = 4,
    .ranges = {{1, 1000, .level = 0},
	       {1000, 2000, .level = 2},
	       {3000, 4000, .level = 5},
	       {4000, 5000, .level = 20}},
};

/* Beyond 4 GiB: [5G, 5G+4096) L0, [5G+4096, 5G+1M) L2. */
static const struct mercury_sock_tags tags_wrap = {
    .count = 2,
    .ranges = {{5 * GiB, 5 * GiB + 4096, .level = 0},
	       {5 * GiB + 4096, 5 * GiB + (1 << 20), .level = 2}},
};

/* count 1: the entry after it must not be searched. */
static const struct mercury_sock_tags tags_stale = {
    .count = 1,
    .ranges = {{1, 1000, .level = 0}, {1000, 2000, .level = 2}},
};

static const struct mercury_sock_tags tags_empty = {.count = 0, .ranges = {{1, 1000, .level = 0}}};

/* A corrupt count must not make the search read beyond the table. */
static const struct mercury_sock_tags tags_bad_count = {
    .count = 0xffffffffu,
    .ranges = {{1, 1000, .level = 0}},
};

/*
 * Job tags, resolved per packet from the "jobs" map (job_states below, written at setup):
 * job 1 (slot 0, 8 layers, iteration 5 open), job 2 (slot 1, gone), job 3 (slot 2, reused:
 * the tag's generation is the old job's).
 */
#define JOB_TAG(s, e, slot_, gen_, layer_, it_)                                                    \
	{                                                                                          \
		.start = (s), .end = (e), .iteration = (it_), .job = (slot_) + 1,                  \
		.job_gen = (gen_), .layer = (layer_)                                               \
	}
static const struct mercury_sock_tags tags_jobs = {
    .count = 6,
    .ranges = {JOB_TAG(1, 1000, 0, 1, 1, 5), JOB_TAG(1000, 2000, 0, 1, 8, 5),
	       JOB_TAG(2000, 3000, 0, 1, 1, 6), JOB_TAG(3000, 4000, 0, 1, 1, 7),
	       JOB_TAG(4000, 5000, 1, 1, 1, 5), JOB_TAG(5000, 6000, 2, 2, 1, 5)},
};
static const struct mercury_job_state job_states[3] = {
    {.gen = 1, .active = 1, .n_layers = 8, .weight = 1, .has_open = 1, .oldest_open = 5},
    {.gen = 1, .active = 0, .n_layers = 8, .weight = 1},
    {.gen = 3, .active = 1, .n_layers = 8, .weight = 1},
};

/* ---- the table ------------------------------------------------------------------------- */

struct sock_spec {
	bool has_sock;
	uint32_t snd_una;
	uint64_t bytes_acked;
	const struct mercury_sock_tags *tags; /* NULL: untagged */
};

struct row {
	const char *name;
	struct pkt_spec pkt;
	struct sock_spec sock;
	struct mercury_iface_cfg (*cfg)(void);
	enum mercury_outcome outcome;
	int band; /* NO_BAND: priority untouched, nothing counted */
};

/* A socket whose unacknowledged data starts at stream offset 1500 (seq 50000). */
#define SOCK_BASIC(t)                                                                              \
	{                                                                                          \
		.has_sock = true, .snd_una = 50000, .bytes_acked = 1500, .tags = (t)               \
	}
#define SEQ_AT(off) ((uint32_t)(50000 + (off)-1500)) /* seq of stream offset `off` */
#define TCP4(off)   .l3 = 4, .seq = SEQ_AT(off), .payload = 100
#define TCP6(off)   .l3 = 6, .seq = SEQ_AT(off), .payload = 100

static const struct row rows[] = {
    /* tagged hits */
    {"ipv4 tagged hit", {TCP4(500)}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_TAGGED, 0},
    /* job tags: 16 bands = 14 layer groups + next iteration + further ahead */
    {"job tag, open iteration, layer 1",
     {TCP4(500)},
     SOCK_BASIC(&tags_jobs),
     cfg16,
     MERCURY_OUT_TAGGED,
     0},
    {"job tag, open iteration, layer 8 of 8",
     {TCP4(1500)},
     SOCK_BASIC(&tags_jobs),
     cfg16,
     MERCURY_OUT_TAGGED,
     12},
    {"job tag, next iteration",
     {TCP4(2500)},
     SOCK_BASIC(&tags_jobs),
     cfg16,
     MERCURY_OUT_TAGGED,
     14},
    {"job tag, two iterations ahead",
     {TCP6(3500)},
     SOCK_BASIC(&tags_jobs),
     cfg16,
     MERCURY_OUT_TAGGED,
     15},
    {"job tag, 3 bands: layer 8 in the back half",
     {TCP4(1500)},
     SOCK_BASIC(&tags_jobs),
     cfg3,
     MERCURY_OUT_TAGGED,
     1},
    {"job tag, 3 bands: next iteration last",
     {TCP4(2500)},
     SOCK_BASIC(&tags_jobs),
     cfg3,
     MERCURY_OUT_TAGGED,
     2},
    {"job gone: default band", {TCP4(4500)}, SOCK_BASIC(&tags_jobs), cfg3, MERCURY_OUT_JOB_GONE, 1},
    {"slot reused by another job: default band",
     {TCP4(5500)},
     SOCK_BASIC(&tags_jobs),
     cfg3,
     MERCURY_OUT_JOB_GONE,
     1},
    {"ipv6 tagged hit", {TCP6(1500)}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_TAGGED, 2},
    {"ipv4 vlan tagged hit",
     {TCP4(500), .vlan = true},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    {"ipv4 options tagged hit",
     {TCP4(500), .ip_opt_words = 3},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    {"tcp options tagged hit",
     {TCP4(1200), .tcp_opt_words = 3},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     2},
    {"ipv4 tot_len 0 (BIG TCP)",
     {TCP4(500), .zero_tot_len = true},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    {"ipv4 first fragment",
     {TCP4(500), .more_frags = true},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    {"ipv6 hop-by-hop",
     {TCP6(500), .ext = {NEXTHDR_HOP}, .n_ext = 1},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    {"ipv6 hop+route+dst+frag0",
     {TCP6(500), .ext = {NEXTHDR_HOP, NEXTHDR_ROUTE, NEXTHDR_DEST, NEXTHDR_FRAG}, .n_ext = 4},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    {"tfo syn with data: first byte after the SYN",
     {.l3 = 4, .seq = 9999, .flags = TCP_SYN, .payload = 50},
     {.has_sock = true, .snd_una = 9999, .bytes_acked = 0, .tags = &tags_basic},
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    /* level -> band clamp (3 bands) */
    {"level 5 clamps to band 2",
     {TCP4(3500)},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     2},
    {"level 20 (invalid) clamps",
     {TCP4(4999)},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     2},
    {"default band beyond nbands clamps",
     {TCP4(2500)},
     SOCK_BASIC(&tags_basic),
     cfg_default_beyond,
     MERCURY_OUT_TAG_MISS,
     2},
    /* range boundaries */
    {"first byte of a range", {TCP4(1)}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_TAGGED, 0},
    {"last byte of a range", {TCP4(999)}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_TAGGED, 0},
    {"end is the next range's start",
     {TCP4(1000)},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     2},
    {"end exclusive before a gap",
     {TCP4(2000)},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAG_MISS,
     1},
    /* tag misses */
    {"before the first range", {TCP4(0)}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_TAG_MISS, 1},
    {"gap between ranges", {TCP4(2500)}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_TAG_MISS, 1},
    {"beyond the last range", {TCP4(5000)}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_TAG_MISS, 1},
    {"entries past count ignored",
     {TCP4(1500)},
     SOCK_BASIC(&tags_stale),
     cfg3,
     MERCURY_OUT_TAG_MISS,
     1},
    {"empty table", {TCP4(500)}, SOCK_BASIC(&tags_empty), cfg3, MERCURY_OUT_TAG_MISS, 1},
    {"corrupt count bounded",
     {TCP4(2500)},
     SOCK_BASIC(&tags_bad_count),
     cfg3,
     MERCURY_OUT_TAG_MISS,
     1},
    /* retransmissions: offsets below snd_nxt, at and below snd_una */
    {"retransmit at snd_una",
     {.l3 = 4, .seq = 50000, .payload = 100},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     2},
    {"retransmit behind snd_nxt",
     {.l3 = 4, .seq = 51600, .payload = 100},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     2},
    {"retransmit of acked bytes",
     {.l3 = 4, .seq = 49000, .payload = 100},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    /* sequence wrap, offsets beyond 4 GiB */
    {"seq wrapped, offset > 4 GiB",
     {.l3 = 4, .seq = 0x00000100, .payload = 100},
     {.has_sock = true, .snd_una = 0xffffff00, .bytes_acked = 5 * GiB + 100, .tags = &tags_wrap},
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    {"seq wrapped, next range",
     {.l3 = 6, .seq = 0x00001100, .payload = 100},
     {.has_sock = true, .snd_una = 0xffffff00, .bytes_acked = 5 * GiB + 100, .tags = &tags_wrap},
     cfg3,
     MERCURY_OUT_TAGGED,
     2},
    {"seq before wrap, snd_una after",
     {.l3 = 4, .seq = 0xfffffff0, .payload = 100},
     {.has_sock = true, .snd_una = 0x10, .bytes_acked = 5 * GiB + 4096 + 0x10, .tags = &tags_wrap},
     cfg3,
     MERCURY_OUT_TAGGED,
     0},
    /* socket view */
    {"untagged socket", {TCP4(500)}, SOCK_BASIC(NULL), cfg3, MERCURY_OUT_UNTAGGED, 1},
    {"no socket",
     {TCP4(500)},
     {.has_sock = false, .tags = &tags_basic},
     cfg3,
     MERCURY_OUT_NO_OFFSET,
     1},
    /* no payload */
    {"pure ack",
     {.l3 = 4, .seq = SEQ_AT(500), .flags = TCP_ACK},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NO_PAYLOAD,
     1},
    {"syn",
     {.l3 = 6, .seq = 1, .flags = TCP_SYN, .tcp_opt_words = 5},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NO_PAYLOAD,
     1},
    {"fin",
     {.l3 = 4, .seq = SEQ_AT(500), .flags = TCP_FIN | TCP_ACK},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NO_PAYLOAD,
     1},
    {"rst",
     {.l3 = 4, .seq = SEQ_AT(500), .flags = TCP_RST},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NO_PAYLOAD,
     1},
    /* not TCP */
    {"udp",
     {.l3 = 4, .l4 = IPPROTO_UDP, .payload = 100},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NOT_TCP,
     1},
    {"udp6",
     {.l3 = 6, .l4 = IPPROTO_UDP, .payload = 100},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NOT_TCP,
     1},
    {"icmp",
     {.l3 = 4, .l4 = IPPROTO_ICMP, .payload = 56},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NOT_TCP,
     1},
    {"icmpv6",
     {.l3 = 6, .l4 = IPPROTO_ICMPV6, .payload = 56},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NOT_TCP,
     1},
    {"arp", {.l3 = 0}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_NOT_TCP, 1},
    {"ipv4 non-first fragment",
     {TCP4(500), .frag = 185},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NOT_TCP,
     1},
    {"ipv6 non-first fragment",
     {TCP6(500), .ext = {NEXTHDR_FRAG}, .n_ext = 1, .frag = 185},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NOT_TCP,
     1},
    {"ipv6 five extension headers",
     {TCP6(500), .ext = {NEXTHDR_HOP, NEXTHDR_DEST, NEXTHDR_ROUTE, NEXTHDR_DEST, NEXTHDR_DEST},
      .n_ext = 5},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_NOT_TCP,
     1},
    /* malformed */
    /* test_run refuses frames whose EtherType is IP but lack a full IP header: use VLAN */
    {"truncated ipv4 header",
     {TCP4(500), .vlan = true, .truncate = 18 + 10},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    {"truncated ipv6 header",
     {TCP6(500), .vlan = true, .truncate = 18 + 39},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    {"truncated vlan tag",
     {TCP4(500), .vlan = true, .truncate = 16},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    {"truncated tcp header",
     {TCP4(500), .truncate = 14 + 20 + 10},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    {"truncated tcp options",
     {.l3 = 4, .seq = 1, .tcp_opt_words = 4, .truncate = 14 + 20 + 30},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    {"truncated ipv6 extension",
     {TCP6(500), .ext = {NEXTHDR_HOP}, .n_ext = 1, .truncate = 14 + 40 + 1},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    {"ihl 4", {TCP4(500), .ihl = 4}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_MALFORMED, 1},
    {"ihl beyond the packet",
     {.l3 = 4, .seq = 1, .ihl = 15, .truncate = 14 + 30},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    {"ip version 6 in an ipv4 frame",
     {TCP4(500), .ip_version = 6},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    {"doff 4", {TCP4(500), .doff = 4}, SOCK_BASIC(&tags_basic), cfg3, MERCURY_OUT_MALFORMED, 1},
    {"doff beyond the packet",
     {.l3 = 4, .seq = 1, .doff = 15, .payload = 8},
     SOCK_BASIC(&tags_basic),
     cfg3,
     MERCURY_OUT_MALFORMED,
     1},
    /* not configured: leave the packet alone */
    {"nbands 0",
     {TCP4(500)},
     SOCK_BASIC(&tags_basic),
     cfg_unconfigured,
     MERCURY_OUT_TAGGED,
     NO_BAND},
};

/* ---- running a row ---------------------------------------------------------------------- */

struct fixture {
	struct classifier_test_bpf *skel;
	int ncpus;
};

static struct fixture fx;

static void set_elem(const struct bpf_map *map, const void *value)
{
	uint32_t zero = 0;

	assert_int_equal(bpf_map_update_elem(bpf_map__fd(map), &zero, value, BPF_ANY), 0);
}

/* The per-CPU "stats" value summed over all possible CPUs. */
static void read_stats(const struct bpf_map *map, struct mercury_stats *sum)
{
	struct mercury_stats *percpu = calloc((size_t)fx.ncpus, sizeof(*percpu));
	uint32_t zero = 0;

	assert_non_null(percpu);
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(map), &zero, percpu), 0);
	memset(sum, 0, sizeof(*sum));
	for (int c = 0; c < fx.ncpus; c++) {
		for (int b = 0; b < MERCURY_MAX_BANDS; b++) {
			sum->band[b].packets += percpu[c].band[b].packets;
			sum->band[b].bytes += percpu[c].band[b].bytes;
		}
		for (int o = 0; o < MERCURY_OUT_MAX; o++) {
			sum->outcome[o].packets += percpu[c].outcome[o].packets;
			sum->outcome[o].bytes += percpu[c].outcome[o].bytes;
		}
		sum->order_kept.packets += percpu[c].order_kept.packets;
		sum->order_kept.bytes += percpu[c].order_kept.bytes;
		sum->order_released.packets += percpu[c].order_released.packets;
		sum->dscp_marked.packets += percpu[c].dscp_marked.packets;
		sum->dscp_marked.bytes += percpu[c].dscp_marked.bytes;
		sum->dscp_kept.packets += percpu[c].dscp_kept.packets;
		sum->dscp_released.packets += percpu[c].dscp_released.packets;
	}
	free(percpu);
}

struct run_result {
	uint32_t retval;
	uint32_t priority;
	bool bytes_unchanged;
};

static struct run_result run_once(int prog_fd, const uint8_t *frame, size_t len)
{
	static uint8_t out[FRAME_MAX];
	struct __sk_buff ctx_in = {.priority = PRIO_UNSET}, ctx_out = {0};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = sizeof(out), .ctx_in = &ctx_in,
		    .ctx_size_in = sizeof(ctx_in), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);
	struct run_result r = {0};

	memset(out, 0xa5, sizeof(out));
	assert_int_equal(bpf_prog_test_run_opts(prog_fd, &opts), 0);
	r.retval = opts.retval;
	r.priority = ctx_out.priority;
	r.bytes_unchanged = opts.data_size_out == len && memcmp(out, frame, len) == 0;
	return r;
}

/* Checks one counter family: exactly `expect` rose by one packet and `len` bytes. */
static void check_counter_deltas(const char *name, const char *what,
				 const struct mercury_counter *before,
				 const struct mercury_counter *after, int n, int expect, size_t len)
{
	for (int i = 0; i < n; i++) {
		uint64_t dp = after[i].packets - before[i].packets;
		uint64_t db = after[i].bytes - before[i].bytes;
		uint64_t wp = i == expect ? 1 : 0, wb = i == expect ? len : 0;

		if (dp != wp || db != wb)
			fail_msg("%s: %s[%d] rose by %llu packets %llu bytes, want %llu/%llu", name,
				 what, i, (unsigned long long)dp, (unsigned long long)db,
				 (unsigned long long)wp, (unsigned long long)wb);
	}
}

static void run_row(const struct row *row)
{
	struct classifier_test_bpf *skel = fx.skel;
	struct mercury_iface_cfg cfg = row->cfg();
	struct mercury_test_view view = {
	    .has_sock = row->sock.has_sock,
	    .snd_una = row->sock.snd_una,
	    .bytes_acked = row->sock.bytes_acked,
	    .has_tags = row->sock.tags != NULL,
	};
	struct mercury_sock_stats ss_before, ss_after;
	struct mercury_stats before, after;
	uint8_t frame[FRAME_MAX];
	size_t len = build_frame(&row->pkt, frame);
	bool per_sock = row->outcome == MERCURY_OUT_TAGGED ||
			row->outcome == MERCURY_OUT_TAG_MISS ||
			row->outcome == MERCURY_OUT_JOB_GONE;
	uint32_t zero = 0, want_prio;
	struct run_result r;

	set_elem(skel->maps.cfg, &cfg);
	set_elem(skel->maps.test_view, &view);
	if (row->sock.tags)
		set_elem(skel->maps.test_tags, row->sock.tags);
	read_stats(skel->maps.stats, &before);
	assert_int_equal(
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.test_sock_stats), &zero, &ss_before), 0);

	r = run_once(bpf_program__fd(skel->progs.mercury_egress_test), frame, len);

	read_stats(skel->maps.stats, &after);
	assert_int_equal(
	    bpf_map_lookup_elem(bpf_map__fd(skel->maps.test_sock_stats), &zero, &ss_after), 0);
	if (r.retval != (uint32_t)TC_ACT_UNSPEC)
		fail_msg("%s: returned %d, want TC_ACT_UNSPEC (-1)", row->name, (int)r.retval);
	if (!r.bytes_unchanged)
		fail_msg("%s: packet bytes changed", row->name);
	want_prio = row->band == NO_BAND ? PRIO_UNSET : cfg.skb_priority[row->band];
	if (r.priority != want_prio)
		fail_msg("%s: priority %#x, want %#x", row->name, r.priority, want_prio);
	if (row->band == NO_BAND) {
		check_counter_deltas(row->name, "outcome", before.outcome, after.outcome,
				     MERCURY_OUT_MAX, -1, len);
		check_counter_deltas(row->name, "band", before.band, after.band, MERCURY_MAX_BANDS,
				     -1, len);
		return;
	}
	check_counter_deltas(row->name, "outcome", before.outcome, after.outcome, MERCURY_OUT_MAX,
			     (int)row->outcome, len);
	check_counter_deltas(row->name, "band", before.band, after.band, MERCURY_MAX_BANDS,
			     row->band, len);
	for (int b = 0; b < MERCURY_MAX_BANDS; b++) {
		uint64_t want = per_sock && b == row->band ? 1 : 0;

		if (ss_after.packets[b] - ss_before.packets[b] != want ||
		    ss_after.bytes[b] - ss_before.bytes[b] != want * len)
			fail_msg("%s: sock_stats band %d did not rise by %llu packet(s)", row->name,
				 b, (unsigned long long)want);
	}
}

static void test_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		print_message("[ ROW      ] %s\n", rows[i].name);
		run_row(&rows[i]);
	}
}

/*
 * The order guard: a packet that would go to a more urgent band than its socket's previous
 * packet while that one's band still holds packets of the socket keeps the previous band
 * (and is counted); once nothing is queued it moves; moving to a less urgent band never
 * waits.
 */
static void test_order_guard(void **state)
{
	struct classifier_test_bpf *skel = fx.skel;
	struct mercury_iface_cfg cfg = cfg3();
	struct mercury_test_view view = {
	    .has_sock = 1, .snd_una = 50000, .bytes_acked = 1500, .has_tags = 1, .queued = 1};
	struct mercury_sock_stats ss = {.last_band = 2 + 1}; /* the last packet went to band 2 */
	struct pkt_spec at_level0 = {TCP4(500)}, at_level2 = {TCP4(1500)};
	uint8_t frame[FRAME_MAX];
	struct mercury_stats before, after;
	int prog = bpf_program__fd(skel->progs.mercury_egress_test);
	size_t len;
	uint32_t zero = 0;

	(void)state;
	set_elem(skel->maps.cfg, &cfg);
	set_elem(skel->maps.test_tags, &tags_basic);
	set_elem(skel->maps.test_view, &view);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.test_sock_stats), &zero, &ss, BPF_ANY), 0);
	read_stats(skel->maps.stats, &before);
	len = build_frame(&at_level0, frame);
	/* Level 0 wants band 0, but band 2 still holds the socket's packets: stays in 2. */
	assert_int_equal(run_once(prog, frame, len).priority, PRIO_BASE + 2);
	read_stats(skel->maps.stats, &after);
	assert_int_equal(after.order_kept.packets - before.order_kept.packets, 1);
	assert_int_equal(after.band[2].packets - before.band[2].packets, 1);
	/* Drained: it moves up. */
	view.queued = 0;
	set_elem(skel->maps.test_view, &view);
	assert_int_equal(run_once(prog, frame, len).priority, PRIO_BASE + 0);
	/* Down to a less urgent band: no waiting, whatever is queued. */
	view.queued = 1;
	set_elem(skel->maps.test_view, &view);
	len = build_frame(&at_level2, frame);
	assert_int_equal(run_once(prog, frame, len).priority, PRIO_BASE + 2);
	read_stats(skel->maps.stats, &before);
	assert_int_equal(before.order_kept.packets, after.order_kept.packets);
	/* Leave the shared per-socket entry as the table rows expect it. */
	ss.last_band = 0;
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.test_sock_stats), &zero, &ss, BPF_ANY), 0);
}

static uint32_t monotonic_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* bpf_ktime_get_ns()'s clock */
	return (uint32_t)((uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u);
}

/*
 * A hold's start is read by the program between t0 and t1 (ORed with 1): checked against
 * that window, not against how fast the run was, which a slow VM under TCG cannot promise.
 */
static void assert_recorded_between(uint32_t since_us, uint32_t t0, uint32_t t1)
{
	assert_int_not_equal(since_us, 0);
	assert_true((uint32_t)(since_us - t0) <= (uint32_t)(t1 - t0) + 1);
}

/* Guard bounds in the tests: far longer than any run takes, and a start well past them. */
#define GUARD_BOUND_US	  10000000u /* 10 s */
#define GUARD_LONG_AGO_US 20000000u

/*
 * The order guard's bound: the first held packet records when; while held for less than
 * cfg.order_guard_us the socket stays; past it the packet moves up (order_released counts it)
 * although earlier packets are still queued, and the record is cleared.
 */
static void test_order_guard_bound(void **state)
{
	struct classifier_test_bpf *skel = fx.skel;
	struct mercury_iface_cfg cfg = cfg3();
	struct mercury_test_view view = {
	    .has_sock = 1, .snd_una = 50000, .bytes_acked = 1500, .has_tags = 1, .queued = 1};
	struct mercury_sock_stats ss = {.last_band = 2 + 1}, got;
	struct pkt_spec at_level0 = {TCP4(500)};
	struct mercury_stats before, after;
	uint8_t frame[FRAME_MAX];
	int prog = bpf_program__fd(skel->progs.mercury_egress_test);
	int map = bpf_map__fd(skel->maps.test_sock_stats);
	size_t len = build_frame(&at_level0, frame);
	uint32_t zero = 0;
	uint32_t t0, t1;

	(void)state;
	cfg.order_guard_us = GUARD_BOUND_US;
	set_elem(skel->maps.cfg, &cfg);
	set_elem(skel->maps.test_tags, &tags_basic);
	set_elem(skel->maps.test_view, &view);
	assert_int_equal(bpf_map_update_elem(map, &zero, &ss, BPF_ANY), 0);
	read_stats(skel->maps.stats, &before);
	/* first hold: kept, and the time recorded */
	t0 = monotonic_us();
	assert_int_equal(run_once(prog, frame, len).priority, PRIO_BASE + 2);
	t1 = monotonic_us();
	assert_int_equal(bpf_map_lookup_elem(map, &zero, &got), 0);
	assert_recorded_between(got.guard_since_us, t0, t1);
	/* held again within the bound: still kept, the first time kept */
	assert_int_equal(run_once(prog, frame, len).priority, PRIO_BASE + 2);
	assert_int_equal(bpf_map_lookup_elem(map, &zero, &ss), 0);
	assert_int_equal(ss.guard_since_us, got.guard_since_us);
	/* held since twice the bound ago: moves up, counted as released, record cleared */
	ss.guard_since_us = (monotonic_us() - GUARD_LONG_AGO_US) | 1;
	assert_int_equal(bpf_map_update_elem(map, &zero, &ss, BPF_ANY), 0);
	assert_int_equal(run_once(prog, frame, len).priority, PRIO_BASE + 0);
	read_stats(skel->maps.stats, &after);
	assert_int_equal(after.order_kept.packets - before.order_kept.packets, 2);
	assert_int_equal(after.order_released.packets - before.order_released.packets, 1);
	assert_int_equal(bpf_map_lookup_elem(map, &zero, &got), 0);
	assert_int_equal(got.guard_since_us, 0);
	assert_int_equal(got.last_band, 0 + 1);
	/* order_guard_us 0: no bound, held however long */
	cfg.order_guard_us = 0;
	set_elem(skel->maps.cfg, &cfg);
	ss = (struct mercury_sock_stats){.last_band = 2 + 1,
					 .guard_since_us = (monotonic_us() - 60000000) | 1};
	assert_int_equal(bpf_map_update_elem(map, &zero, &ss, BPF_ANY), 0);
	assert_int_equal(run_once(prog, frame, len).priority, PRIO_BASE + 2);
	ss = (struct mercury_sock_stats){0};
	assert_int_equal(bpf_map_update_elem(map, &zero, &ss, BPF_ANY), 0);
}

/* ---- DSCP export ------------------------------------------------------------------------ */

#define DSCP_OF_BAND(b) ((uint8_t)(46 - 12 * (b))) /* 46, 34, 22: distinct, none 0 */

static struct mercury_iface_cfg cfg3_dscp(void)
{
	struct mercury_iface_cfg c = cfg3();

	c.dscp_on = 1;
	for (unsigned int b = 0; b < MERCURY_MAX_BANDS; b++)
		c.dscp[b] = DSCP_OF_BAND(b < 3 ? b : 2);
	return c;
}

/* The ones'-complement sum of an IPv4 header: 0xffff when its checksum is right. */
static uint16_t ipv4_sum(const uint8_t *ip, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2)
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

static void ipv4_fix_checksum(uint8_t *ip, size_t len)
{
	ip[10] = ip[11] = 0;
	put16(ip + 10, (uint16_t)~ipv4_sum(ip, len));
}

/* Runs the test program on frame with the socket view *view (its has_tags from tags); out
 * gets the packet after it. */
static struct run_result run_dscp_view(const struct mercury_iface_cfg *cfg,
				       const struct mercury_sock_tags *tags,
				       struct mercury_test_view view, const uint8_t *frame,
				       size_t len, uint8_t *out)
{
	struct classifier_test_bpf *skel = fx.skel;
	struct __sk_buff ctx_in = {.priority = PRIO_UNSET}, ctx_out = {0};
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = FRAME_MAX, .ctx_in = &ctx_in,
		    .ctx_size_in = sizeof(ctx_in), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);
	struct run_result r = {0};

	view.has_tags = tags != NULL;
	set_elem(skel->maps.cfg, cfg);
	set_elem(skel->maps.test_view, &view);
	if (tags)
		set_elem(skel->maps.test_tags, tags);
	assert_int_equal(
	    bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mercury_egress_test), &opts), 0);
	assert_int_equal(opts.data_size_out, len);
	r.retval = opts.retval;
	r.priority = ctx_out.priority;
	r.bytes_unchanged = memcmp(out, frame, len) == 0;
	return r;
}

/* run_dscp_view with the usual socket: snd_una 50000 at stream offset 1500. */
static struct run_result run_dscp(const struct mercury_iface_cfg *cfg,
				  const struct mercury_sock_tags *tags, const uint8_t *frame,
				  size_t len, uint8_t *out)
{
	struct mercury_test_view view = {
	    .has_sock = 1, .snd_una = 50000, .bytes_acked = 1500, .has_tags = tags != NULL};

	return run_dscp_view(cfg, tags, view, frame, len, out);
}

/* Every byte of out equals frame's except those in [from, to). */
static void assert_same_outside(const char *name, const uint8_t *frame, const uint8_t *out,
				size_t len, size_t from, size_t to)
{
	for (size_t i = 0; i < len; i++)
		if ((i < from || i >= to) && frame[i] != out[i])
			fail_msg("%s: byte %zu changed (%#x -> %#x)", name, i, frame[i], out[i]);
}

/*
 * IPv4: a tagged packet's TOS gets its band's DSCP, its ECN bits stay, the header checksum
 * stays valid (fixed incrementally), nothing else changes; with IP options and VLAN too.
 */
static void test_dscp_ipv4(void **state)
{
	static const struct {
		const char *name;
		struct pkt_spec pkt;
		uint8_t tos;
		int band;
	} cases[] = {
	    {"band 0, ECN CE", {TCP4(500)}, 0x03, 0},
	    {"band 2, ECT(0), old DSCP replaced", {TCP4(1500)}, 0xb8 | 0x02, 2},
	    {"band 0, vlan and options, ECT(1)",
	     {TCP4(500), .vlan = true, .ip_opt_words = 3},
	     0x01,
	     0},
	    {"retransmission at snd_una (band 2)",
	     {.l3 = 4, .seq = 50000, .payload = 100},
	     0x02,
	     2},
	    {"retransmission of acked bytes (band 0)",
	     {.l3 = 4, .seq = 49000, .payload = 100},
	     0x00,
	     0},
	};
	struct mercury_iface_cfg cfg = cfg3_dscp();
	struct mercury_stats before, after;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t frame[FRAME_MAX], out[FRAME_MAX];
		size_t len = build_frame(&cases[i].pkt, frame);
		size_t l3 = cases[i].pkt.vlan ? 18 : 14, ihl = 20 + 4u * cases[i].pkt.ip_opt_words;
		uint8_t want_tos = (uint8_t)(DSCP_OF_BAND(cases[i].band) << 2 | (cases[i].tos & 3));
		struct run_result r;

		print_message("[ DSCP     ] ipv4 %s\n", cases[i].name);
		frame[l3 + 1] = cases[i].tos;
		ipv4_fix_checksum(frame + l3, ihl);
		read_stats(fx.skel->maps.stats, &before);
		r = run_dscp(&cfg, &tags_basic, frame, len, out);
		read_stats(fx.skel->maps.stats, &after);
		assert_int_equal(r.retval, (uint32_t)TC_ACT_UNSPEC);
		assert_int_equal(r.priority, PRIO_BASE + (uint32_t)cases[i].band);
		if (out[l3 + 1] != want_tos)
			fail_msg("%s: tos %#x, want %#x", cases[i].name, out[l3 + 1], want_tos);
		if (ipv4_sum(out + l3, ihl) != 0xffff)
			fail_msg("%s: IPv4 header checksum wrong after the rewrite (%#x)",
				 cases[i].name, ipv4_sum(out + l3, ihl));
		/* nothing else: the TOS byte and the checksum are the only bytes that differ */
		assert_same_outside(cases[i].name, frame, out, l3 + 10, l3 + 1, l3 + 2);
		assert_same_outside(cases[i].name, frame + l3 + 12, out + l3 + 12, len - l3 - 12, 0,
				    0);
		assert_int_equal(after.dscp_marked.packets - before.dscp_marked.packets, 1);
		assert_int_equal(after.dscp_marked.bytes - before.dscp_marked.bytes, len);
	}
}

/* IPv6: the traffic class (across bytes 0 and 1) gets the DSCP; version, ECN bits and the flow
 * label stay; with extension headers too. */
static void test_dscp_ipv6(void **state)
{
	static const struct {
		const char *name;
		struct pkt_spec pkt;
		uint8_t tclass;
		uint32_t flow;
		int band;
	} cases[] = {
	    {"band 0, ECN CE, flow label", {TCP6(500)}, 0x03, 0xabcde, 0},
	    {"band 2, ECT(0), old DSCP replaced", {TCP6(1500)}, 0xfe, 0x12345, 2},
	    {"band 0, hop-by-hop, vlan",
	     {TCP6(500), .vlan = true, .ext = {NEXTHDR_HOP}, .n_ext = 1},
	     0x01,
	     0xfffff,
	     0},
	};
	struct mercury_iface_cfg cfg = cfg3_dscp();

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t frame[FRAME_MAX], out[FRAME_MAX];
		size_t len = build_frame(&cases[i].pkt, frame);
		size_t l3 = cases[i].pkt.vlan ? 18 : 14;
		uint32_t word = 6u << 28 | (uint32_t)cases[i].tclass << 20 | cases[i].flow, got;
		uint8_t want_tc =
		    (uint8_t)(DSCP_OF_BAND(cases[i].band) << 2 | (cases[i].tclass & 3));
		struct run_result r;

		print_message("[ DSCP     ] ipv6 %s\n", cases[i].name);
		put32(frame + l3, word);
		r = run_dscp(&cfg, &tags_basic, frame, len, out);
		assert_int_equal(r.retval, (uint32_t)TC_ACT_UNSPEC);
		assert_int_equal(r.priority, PRIO_BASE + (uint32_t)cases[i].band);
		got = (uint32_t)out[l3] << 24 | (uint32_t)out[l3 + 1] << 16 |
		      (uint32_t)out[l3 + 2] << 8 | out[l3 + 3];
		if (got >> 28 != 6 || (got >> 20 & 0xff) != want_tc ||
		    (got & 0xfffff) != cases[i].flow)
			fail_msg("%s: first word %#x, want version 6, class %#x, flow %#x",
				 cases[i].name, got, want_tc, cases[i].flow);
		assert_same_outside(cases[i].name, frame, out, len, l3, l3 + 2);
	}
}

/*
 * What is left alone: DSCP export off (tagged packets unchanged); on, every packet that is not
 * TAGGED (untagged socket, tag miss, no socket, pure ACK, UDP); nothing counted as marked.
 */
static void test_dscp_untouched(void **state)
{
	static const struct {
		const char *name;
		struct pkt_spec pkt;
		const struct mercury_sock_tags *tags;
		bool on;
	} cases[] = {
	    {"off: tagged ipv4", {TCP4(500)}, &tags_basic, false},
	    {"off: tagged ipv6", {TCP6(500)}, &tags_basic, false},
	    {"on: untagged socket", {TCP4(500)}, NULL, true},
	    {"on: tag miss", {TCP4(2500)}, &tags_basic, true},
	    {"on: pure ack", {.l3 = 4, .seq = SEQ_AT(500), .flags = TCP_ACK}, &tags_basic, true},
	    {"on: udp", {.l3 = 6, .l4 = IPPROTO_UDP, .payload = 100}, &tags_basic, true},
	};
	struct mercury_stats before, after;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mercury_iface_cfg cfg = cases[i].on ? cfg3_dscp() : cfg3();
		uint8_t frame[FRAME_MAX], out[FRAME_MAX];
		size_t len = build_frame(&cases[i].pkt, frame);

		print_message("[ DSCP     ] %s\n", cases[i].name);
		frame[14 + 1] = 0x21; /* a DSCP and ECN bit of the application's (v4 TOS / v6) */
		read_stats(fx.skel->maps.stats, &before);
		if (!run_dscp(&cfg, cases[i].tags, frame, len, out).bytes_unchanged)
			fail_msg("%s: packet bytes changed", cases[i].name);
		read_stats(fx.skel->maps.stats, &after);
		assert_int_equal(after.dscp_marked.packets, before.dscp_marked.packets);
	}
}

/*
 * control_first: TCP segments without payload (pure ACKs, SYN, FIN, RST) go to band 0 and,
 * with DSCP export on, those carrying DSCP 0 get band 0's (ECN bits kept, IPv4 checksum
 * right); an application's own DSCP stays; off, they are untagged traffic (default band,
 * untouched). Payload never takes this path: a tagged packet keeps its own band.
 */
static void test_control_first(void **state)
{
	static const struct {
		const char *name;
		struct pkt_spec pkt;
		uint8_t tos; /* IPv4 TOS / IPv6 traffic class before */
		bool first, dscp_on;
		int band;
		bool marked;
	} cases[] = {
	    {"ipv4 pure ack, dscp 0",
	     {.l3 = 4, .seq = 7, .flags = TCP_ACK},
	     0x00,
	     true,
	     true,
	     0,
	     true},
	    {"ipv4 syn, dscp 0, ECT(1) kept",
	     {.l3 = 4, .seq = 7, .flags = TCP_SYN},
	     0x01,
	     true,
	     true,
	     0,
	     true},
	    {"ipv4 fin|ack, vlan",
	     {.l3 = 4, .vlan = true, .flags = TCP_FIN | TCP_ACK},
	     0x00,
	     true,
	     true,
	     0,
	     true},
	    {"ipv6 pure ack, dscp 0, CE kept",
	     {.l3 = 6, .seq = 7, .flags = TCP_ACK},
	     0x03,
	     true,
	     true,
	     0,
	     true},
	    {"ipv4 rst, the application's dscp kept",
	     {.l3 = 4, .flags = TCP_RST},
	     0x30,
	     true,
	     true,
	     0,
	     false},
	    {"ipv6 pure ack, the application's dscp kept",
	     {.l3 = 6, .flags = TCP_ACK},
	     0xb8,
	     true,
	     true,
	     0,
	     false},
	    {"dscp export off: band 0, unmarked",
	     {.l3 = 4, .flags = TCP_ACK},
	     0x00,
	     true,
	     false,
	     0,
	     false},
	    {"control default: untagged traffic",
	     {.l3 = 4, .flags = TCP_ACK},
	     0x00,
	     false,
	     true,
	     1,
	     false},
	    {"payload: its own band", {TCP4(1500)}, 0x00, true, true, 2, true},
	};
	struct mercury_stats before, after;

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mercury_iface_cfg cfg = cases[i].dscp_on ? cfg3_dscp() : cfg3();
		uint8_t frame[FRAME_MAX], out[FRAME_MAX];
		size_t len = build_frame(&cases[i].pkt, frame);
		size_t l3 = cases[i].pkt.vlan ? 18 : 14;
		bool v6 = cases[i].pkt.l3 == 6;
		uint8_t want =
		    cases[i].marked
			? (uint8_t)(DSCP_OF_BAND(cases[i].band) << 2 | (cases[i].tos & 3))
			: cases[i].tos;
		uint8_t got;
		struct run_result r;

		print_message("[ CONTROL  ] %s\n", cases[i].name);
		cfg.control_first = cases[i].first;
		if (v6) {
			frame[l3] = (uint8_t)(0x60 | cases[i].tos >> 4);
			frame[l3 + 1] = (uint8_t)((cases[i].tos << 4) | (frame[l3 + 1] & 0x0f));
		} else {
			frame[l3 + 1] = cases[i].tos;
			ipv4_fix_checksum(frame + l3, 20);
		}
		read_stats(fx.skel->maps.stats, &before);
		r = run_dscp(&cfg, &tags_basic, frame, len, out);
		read_stats(fx.skel->maps.stats, &after);
		assert_int_equal(r.retval, (uint32_t)TC_ACT_UNSPEC);
		if (r.priority != PRIO_BASE + (uint32_t)cases[i].band)
			fail_msg("%s: priority %#x, want band %d's", cases[i].name, r.priority,
				 cases[i].band);
		got = v6 ? (uint8_t)((out[l3] & 0x0f) << 4 | out[l3 + 1] >> 4) : out[l3 + 1];
		if (got != want)
			fail_msg("%s: tos/class %#x, want %#x", cases[i].name, got, want);
		if (!v6 && ipv4_sum(out + l3, 20) != 0xffff)
			fail_msg("%s: IPv4 header checksum wrong", cases[i].name);
		if (!cases[i].marked && !r.bytes_unchanged)
			fail_msg("%s: packet bytes changed", cases[i].name);
		assert_int_equal(after.dscp_marked.packets - before.dscp_marked.packets,
				 cases[i].marked ? 1 : 0);
	}
}

/* A packet the order guard keeps in its socket's previous band carries that band's DSCP. */
static void test_dscp_order_guard(void **state)
{
	struct classifier_test_bpf *skel = fx.skel;
	struct mercury_iface_cfg cfg = cfg3_dscp();
	struct mercury_test_view view = {
	    .has_sock = 1, .snd_una = 50000, .bytes_acked = 1500, .has_tags = 1, .queued = 1};
	struct mercury_sock_stats ss = {.last_band = 2 + 1};
	struct pkt_spec at_level0 = {TCP4(500)};
	uint8_t frame[FRAME_MAX], out[FRAME_MAX];
	struct __sk_buff ctx_in = {.priority = PRIO_UNSET}, ctx_out = {0};
	size_t len = build_frame(&at_level0, frame);
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = (uint32_t)len,
		    .data_out = out, .data_size_out = FRAME_MAX, .ctx_in = &ctx_in,
		    .ctx_size_in = sizeof(ctx_in), .ctx_out = &ctx_out,
		    .ctx_size_out = sizeof(ctx_out), .repeat = 1);
	uint32_t zero = 0;

	(void)state;
	set_elem(skel->maps.cfg, &cfg);
	set_elem(skel->maps.test_tags, &tags_basic);
	set_elem(skel->maps.test_view, &view);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.test_sock_stats), &zero, &ss, BPF_ANY), 0);
	assert_int_equal(
	    bpf_prog_test_run_opts(bpf_program__fd(skel->progs.mercury_egress_test), &opts), 0);
	assert_int_equal(ctx_out.priority, PRIO_BASE + 2);
	assert_int_equal(out[14 + 1] >> 2, DSCP_OF_BAND(2));
	ss.last_band = 0;
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(skel->maps.test_sock_stats), &zero, &ss, BPF_ANY), 0);
}

/* The DSCP (bits 7..2 of the IPv4 TOS) of a frame without VLAN tag. */
#define DSCP4(frame) ((frame)[14 + 1] >> 2)

static void set_sock_stats(const struct mercury_sock_stats *ss)
{
	uint32_t zero = 0;

	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(fx.skel->maps.test_sock_stats), &zero, ss, BPF_ANY), 0);
}

static struct mercury_sock_stats get_sock_stats(void)
{
	struct mercury_sock_stats ss;
	uint32_t zero = 0;

	assert_int_equal(
	    bpf_map_lookup_elem(bpf_map__fd(fx.skel->maps.test_sock_stats), &zero, &ss), 0);
	return ss;
}

/*
 * The fabric order guard (cfg.dscp_guard): a socket whose band rises keeps its previous band's
 * DSCP (skb->priority follows the band: the host's own guard is separate) while bytes it sent
 * before are unacknowledged, and takes the new DSCP once they are; a move to a less urgent
 * band's DSCP never waits; a held rise goes ahead after cfg.dscp_guard_us; bands with one DSCP
 * are no rise; every payload packet carries the socket's high-water mark forward; guard off,
 * or no per-socket state (the socket storage could not be had), the band's own DSCP.
 */
static void test_dscp_fabric_guard(void **state)
{
	/* offsets [1, 3000) level 2, [3000, 6000) level 0 */
	static const struct mercury_sock_tags tags = {
	    .count = 2, .ranges = {{1, 3000, .level = 2}, {3000, 6000, .level = 0}}};
	struct mercury_iface_cfg cfg = cfg3_dscp();
	/* snd_una 50000 is offset 1500: bytes [50000, 51500) are unacknowledged */
	struct mercury_test_view view = {.has_sock = 1, .snd_una = 50000, .bytes_acked = 1500};
	struct pkt_spec rise = {TCP4(3000)}, low = {TCP4(1400)};
	struct mercury_stats before, after;
	struct mercury_sock_stats ss;
	uint8_t frame[FRAME_MAX], out[FRAME_MAX];
	size_t len = build_frame(&rise, frame);
	struct run_result r;
	uint32_t t0, t1;

	(void)state;
	ipv4_fix_checksum(frame + 14, 20);
	cfg.dscp_guard = 1;
	cfg.dscp_guard_us = 0;
	set_sock_stats(&(struct mercury_sock_stats){.dscp_band = 2 + 1, .dscp_end = SEQ_AT(3000)});
	read_stats(fx.skel->maps.stats, &before);
	/* rise with bytes [50000, 51500) unacknowledged: band 0 at the host, band 2's DSCP */
	r = run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_int_equal(r.priority, PRIO_BASE + 0);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(2));
	assert_true(ipv4_sum(out + 14, 20) == 0xffff);
	ss = get_sock_stats();
	assert_int_equal(ss.dscp_band, 2 + 1);
	assert_int_equal(ss.dscp_end, SEQ_AT(3000) + 100); /* carried forward by the packet */
	assert_int_equal(ss.dscp_since_us, 0);		   /* no bound: no clock read */
	read_stats(fx.skel->maps.stats, &after);
	assert_int_equal(after.dscp_kept.packets - before.dscp_kept.packets, 1);
	assert_int_equal(after.dscp_marked.packets - before.dscp_marked.packets, 1);
	/* one byte short of the mark: still kept */
	set_sock_stats(&(struct mercury_sock_stats){.dscp_band = 2 + 1, .dscp_end = SEQ_AT(3000)});
	view.snd_una = SEQ_AT(3000) - 1;
	view.bytes_acked = 3000 - 1;
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(2));
	/* the held packet carried the mark past itself: it is sent, so it counts too */
	assert_int_equal(get_sock_stats().dscp_end, SEQ_AT(3000) + 100);
	/* every byte before acknowledged: the rise takes effect */
	set_sock_stats(&(struct mercury_sock_stats){.dscp_band = 2 + 1, .dscp_end = SEQ_AT(3000)});
	view.snd_una = SEQ_AT(3000);
	view.bytes_acked = 3000;
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(0));
	assert_int_equal(get_sock_stats().dscp_band, 0 + 1);
	/* back down to level 2 with everything unacknowledged: at once */
	view = (struct mercury_test_view){.has_sock = 1, .snd_una = 50000, .bytes_acked = 1500};
	set_sock_stats(&(struct mercury_sock_stats){.dscp_band = 0 + 1, .dscp_end = SEQ_AT(3000)});
	len = build_frame(&low, frame);
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(2));
	assert_int_equal(get_sock_stats().dscp_band, 2 + 1);
	/* a retransmission below the mark leaves it where it is */
	assert_int_equal(get_sock_stats().dscp_end, SEQ_AT(3000));
	len = build_frame(&rise, frame);

	/* the bound: held within it (the hold's start recorded), released past it */
	cfg.dscp_guard_us = GUARD_BOUND_US;
	set_sock_stats(&(struct mercury_sock_stats){.dscp_band = 2 + 1, .dscp_end = SEQ_AT(3000)});
	t0 = monotonic_us();
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	t1 = monotonic_us();
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(2));
	ss = get_sock_stats();
	assert_recorded_between(ss.dscp_since_us, t0, t1);
	ss.dscp_since_us = (monotonic_us() - GUARD_LONG_AGO_US) | 1;
	set_sock_stats(&ss);
	read_stats(fx.skel->maps.stats, &before);
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	read_stats(fx.skel->maps.stats, &after);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(0));
	assert_int_equal(after.dscp_released.packets - before.dscp_released.packets, 1);
	assert_int_equal(after.dscp_kept.packets, before.dscp_kept.packets);
	ss = get_sock_stats();
	assert_int_equal(ss.dscp_since_us, 0);
	assert_int_equal(ss.dscp_band, 0 + 1);
	cfg.dscp_guard_us = 0;

	/* bands 0 and 2 with one DSCP: nothing to overtake in the switch, no hold */
	cfg.dscp[0] = cfg.dscp[2];
	set_sock_stats(&(struct mercury_sock_stats){.dscp_band = 2 + 1, .dscp_end = SEQ_AT(3000)});
	read_stats(fx.skel->maps.stats, &before);
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	read_stats(fx.skel->maps.stats, &after);
	assert_int_equal(after.dscp_kept.packets, before.dscp_kept.packets);
	assert_int_equal(get_sock_stats().dscp_band, 0 + 1);
	cfg = cfg3_dscp();
	cfg.dscp_guard = 1;

	/* a tag miss (not marked) carries the mark forward too */
	set_sock_stats(&(struct mercury_sock_stats){.dscp_band = 2 + 1, .dscp_end = SEQ_AT(3000)});
	{
		struct pkt_spec miss = {TCP4(7000)};
		size_t mlen = build_frame(&miss, frame);

		run_dscp_view(&cfg, &tags, view, frame, mlen, out);
		assert_int_equal(get_sock_stats().dscp_end, SEQ_AT(7000) + 100);
		assert_int_equal(get_sock_stats().dscp_band, 2 + 1);
	}
	len = build_frame(&rise, frame);

	/* guard off: the band's own DSCP whatever is unacknowledged, no state kept */
	cfg.dscp_guard = 0;
	set_sock_stats(&(struct mercury_sock_stats){.dscp_band = 2 + 1, .dscp_end = SEQ_AT(3000)});
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(0));
	assert_int_equal(get_sock_stats().dscp_band, 2 + 1);
	assert_int_equal(get_sock_stats().dscp_end, SEQ_AT(3000));

	/* fail-open: no per-socket state (socket storage not had), the band's DSCP */
	cfg.dscp_guard = 1;
	view.no_sock_stats = 1;
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(0));
	assert_int_equal(get_sock_stats().dscp_band, 2 + 1);
	/* and no full TCP socket: no offset, nothing marked (TAGGED needs the socket) */
	view = (struct mercury_test_view){0};
	r = run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_true(r.bytes_unchanged);
	set_sock_stats(&(struct mercury_sock_stats){0});
}

/*
 * The fabric guard on a socket whose sequence numbers lie in the upper half of the space (half
 * of all ISNs): its first packet sets the high-water mark outright, so that once every byte is
 * acknowledged a rise goes ahead. (A mark left at 0 looked 2^31 bytes ahead of snd_una and
 * held the socket's first DSCP for good.)
 */
static void test_dscp_fabric_guard_high_isn(void **state)
{
	static const struct mercury_sock_tags tags = {
	    .count = 2, .ranges = {{1, 3000, .level = 2}, {3000, 6000, .level = 0}}};
	const uint32_t una = 0x90000000u; /* stream offset 1500 */
	struct mercury_iface_cfg cfg = cfg3_dscp();
	struct mercury_test_view view = {.has_sock = 1, .snd_una = una, .bytes_acked = 1500};
	struct pkt_spec first = {.l3 = 4, .seq = una, .payload = 100};
	struct pkt_spec rise = {.l3 = 4, .seq = una + 1500, .payload = 100};
	uint8_t frame[FRAME_MAX], out[FRAME_MAX];
	struct mercury_sock_stats ss;
	size_t len;

	(void)state;
	cfg.dscp_guard = 1;
	set_sock_stats(&(struct mercury_sock_stats){0}); /* the socket's first packet */
	len = build_frame(&first, frame);
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(2));
	ss = get_sock_stats();
	assert_int_equal(ss.dscp_band, 2 + 1);
	assert_int_equal(ss.dscp_end, una + 100);
	/* bytes up to offset 3000 sent and acknowledged: the rise to level 0 goes ahead */
	ss.dscp_end = una + 1500;
	set_sock_stats(&ss);
	view.snd_una = una + 1500;
	view.bytes_acked = 3000;
	len = build_frame(&rise, frame);
	run_dscp_view(&cfg, &tags, view, frame, len, out);
	assert_int_equal(DSCP4(out), DSCP_OF_BAND(0));
	assert_int_equal(get_sock_stats().dscp_band, 0 + 1);
	set_sock_stats(&(struct mercury_sock_stats){0});
}

/* 32 disjoint ranges with gaps: every range found at its first and last byte, none at its end. */
static void test_full_table_every_range(void **state)
{
	static struct mercury_sock_tags tags32 = {.count = MERCURY_RANGES_PER_SOCK};
	const uint64_t base = 3 * GiB + 17;

	(void)state;
	for (unsigned int i = 0; i < MERCURY_RANGES_PER_SOCK; i++) {
		tags32.ranges[i].start = base + i * 1000ull;
		tags32.ranges[i].end = base + i * 1000ull + 600;
		tags32.ranges[i].level = i % MERCURY_MAX_LEVELS;
	}
	for (unsigned int i = 0; i < MERCURY_RANGES_PER_SOCK; i++) {
		const uint64_t probes[3] = {tags32.ranges[i].start, tags32.ranges[i].end - 1,
					    tags32.ranges[i].end};
		for (int p = 0; p < 3; p++) {
			char name[64];
			struct row row = {
			    .name = name,
			    .pkt = {.l3 = 4, .payload = 100},
			    /* offset = bytes_acked + (seq - snd_una) with snd_una = 7 */
			    .sock = {.has_sock = true,
				     .snd_una = 7,
				     .bytes_acked = base,
				     .tags = &tags32},
			    .cfg = cfg16,
			    .outcome = p < 2 ? MERCURY_OUT_TAGGED : MERCURY_OUT_TAG_MISS,
			    .band = p < 2 ? (int)(i % MERCURY_MAX_LEVELS) : 15,
			};

			row.pkt.seq = (uint32_t)(7 + (probes[p] - base));
			snprintf(name, sizeof(name), "range %u %s", i,
				 p == 0	  ? "start"
				 : p == 1 ? "last byte"
					  : "end");
			run_row(&row);
		}
	}
	/* A corrupt count searches the 32 entries there are, no more. */
	tags32.count = 0xffffffffu;
	for (unsigned int i = 0; i < MERCURY_RANGES_PER_SOCK; i += MERCURY_RANGES_PER_SOCK - 1) {
		struct row row = {
		    .name = "corrupt count, full table",
		    .pkt = {.l3 = 4,
			    .payload = 100,
			    .seq = (uint32_t)(7 + (tags32.ranges[i].start + 1 - base))},
		    .sock = {.has_sock = true, .snd_una = 7, .bytes_acked = base, .tags = &tags32},
		    .cfg = cfg16,
		    .outcome = MERCURY_OUT_TAGGED,
		    .band = (int)(i % MERCURY_MAX_LEVELS),
		};

		run_row(&row);
	}
}

/* The production program passes the verifier; under test_run its socket is a dummy. */
static void test_production_program(void **state)
{
	struct classifier_bpf *prod = classifier_bpf__open_and_load();
	struct mercury_iface_cfg cfg = cfg3();
	struct pkt_spec data = {.l3 = 4, .seq = 1000, .payload = 1000};
	struct pkt_spec ack = {.l3 = 6, .seq = 1000, .flags = TCP_ACK};
	struct mercury_stats before, after;
	uint8_t frame[FRAME_MAX];
	struct run_result r;
	uint64_t rose;
	size_t len;

	(void)state;
	assert_non_null(prod);
	/* attach_state must exist, BTF-typed, for mercuryd to pin and bpftool to dump */
	assert_true(bpf_map__fd(prod->maps.attach_state) >= 0);
	assert_int_not_equal(bpf_map__btf_value_type_id(prod->maps.attach_state), 0);
	assert_int_equal(bpf_map__value_size(prod->maps.attach_state),
			 sizeof(struct mercury_attach_state));
	set_elem(prod->maps.cfg, &cfg);

	len = build_frame(&data, frame);
	read_stats(prod->maps.stats, &before);
	r = run_once(bpf_program__fd(prod->progs.mercury_egress), frame, len);
	read_stats(prod->maps.stats, &after);
	assert_int_equal(r.retval, (uint32_t)TC_ACT_UNSPEC);
	assert_true(r.bytes_unchanged);
	assert_int_equal(r.priority, cfg.skb_priority[cfg.default_band]);
	rose = after.outcome[MERCURY_OUT_NO_OFFSET].packets -
	       before.outcome[MERCURY_OUT_NO_OFFSET].packets +
	       after.outcome[MERCURY_OUT_UNTAGGED].packets -
	       before.outcome[MERCURY_OUT_UNTAGGED].packets;
	assert_int_equal(rose, 1);
	assert_int_equal(after.band[cfg.default_band].bytes - before.band[cfg.default_band].bytes,
			 len);

	len = build_frame(&ack, frame);
	before = after;
	r = run_once(bpf_program__fd(prod->progs.mercury_egress), frame, len);
	read_stats(prod->maps.stats, &after);
	assert_int_equal(r.retval, (uint32_t)TC_ACT_UNSPEC);
	assert_int_equal(r.priority, cfg.skb_priority[cfg.default_band]);
	assert_int_equal(after.outcome[MERCURY_OUT_NO_PAYLOAD].packets -
			     before.outcome[MERCURY_OUT_NO_PAYLOAD].packets,
			 1);

	cfg.nbands = 0;
	set_elem(prod->maps.cfg, &cfg);
	r = run_once(bpf_program__fd(prod->progs.mercury_egress), frame, len);
	assert_int_equal(r.retval, (uint32_t)TC_ACT_UNSPEC);
	assert_int_equal(r.priority, PRIO_UNSET);
	classifier_bpf__destroy(prod);
}

/* Brings lo up in the current (fresh) network namespace. */
/* Sends n bytes on fd and reads them all on peer, so every segment has left; 10 s at most. */
static void send_and_drain(int fd, int peer, size_t n)
{
	static char buf[65536];
	size_t sent = 0, got = 0;
	time_t deadline = time(NULL) + 10;

	while (got < n) {
		ssize_t w, r;

		if (time(NULL) > deadline)
			fail_msg("only %zu of %zu bytes arrived within 10 s", got, n);
		if (sent < n) {
			w = send(fd, buf, n - sent < sizeof(buf) ? n - sent : sizeof(buf),
				 MSG_DONTWAIT);
			if (w > 0)
				sent += (size_t)w;
		}
		r = recv(peer, buf, sizeof(buf), MSG_DONTWAIT);
		if (r > 0)
			got += (size_t)r;
		else if (r == 0)
			fail_msg("peer closed after %zu of %zu bytes", got, n);
		else if (errno == EAGAIN)
			usleep(100);
	}
}

/*
 * The production program on a real socket: in a private network namespace, attached at lo
 * egress, with tags written for the client socket by fd as mercuryd does. The first payload
 * byte of an actively opened socket has offset 1; bytes [1, 1 + TAGGED_BYTES) are level 2.
 */
static void test_production_real_socket(void **state)
{
	enum { TAGGED_BYTES = 200000, UNTAGGED_BYTES = 100000 };
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = 1, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, tc, .handle = 1, .priority = 1);
	struct mercury_sock_tags tags = {.count = 1, .ranges = {{1, 1 + TAGGED_BYTES, .level = 2}}};
	struct mercury_iface_cfg cfg = cfg3();
	struct mercury_stats s0, s1, s2;
	struct mercury_sock_stats ss;
	struct classifier_bpf *prod;
	int client, server;

	(void)state;
	if (unshare(CLONE_NEWNET)) {
		print_message("unshare(CLONE_NEWNET): %s; skipping the real-socket test\n",
			      strerror(errno));
		skip();
	}
	loopback_up();
	prod = classifier_bpf__open_and_load();
	assert_non_null(prod);
	set_elem(prod->maps.cfg, &cfg);
	assert_int_equal(bpf_tc_hook_create(&hook), 0);
	tc.prog_fd = bpf_program__fd(prod->progs.mercury_egress);
	assert_int_equal(bpf_tc_attach(&hook, &tc), 0);

	tcp_pair(&client, &server);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(prod->maps.sock_tags), &client, &tags, BPF_ANY), 0);
	read_stats(prod->maps.stats, &s0);
	send_and_drain(client, server, TAGGED_BYTES);
	read_stats(prod->maps.stats, &s1);
	send_and_drain(client, server, UNTAGGED_BYTES);
	read_stats(prod->maps.stats, &s2);

	/* tagged bytes went to band 2, none missed; the server's ACKs carry no payload */
	assert_true(s1.outcome[MERCURY_OUT_TAGGED].packets >
		    s0.outcome[MERCURY_OUT_TAGGED].packets);
	assert_int_equal(s1.outcome[MERCURY_OUT_TAG_MISS].packets,
			 s0.outcome[MERCURY_OUT_TAG_MISS].packets);
	assert_true(s1.outcome[MERCURY_OUT_NO_PAYLOAD].packets >
		    s0.outcome[MERCURY_OUT_NO_PAYLOAD].packets);
	assert_true(s1.band[2].bytes - s0.band[2].bytes >= TAGGED_BYTES);
	/* the bytes after the range miss and go to the default band */
	assert_true(s2.outcome[MERCURY_OUT_TAG_MISS].packets >
		    s1.outcome[MERCURY_OUT_TAG_MISS].packets);
	assert_int_equal(s2.outcome[MERCURY_OUT_TAGGED].packets,
			 s1.outcome[MERCURY_OUT_TAGGED].packets);
	/* the untagged server socket never got sock_stats; the client's match the bands */
	assert_int_equal(bpf_map_lookup_elem(bpf_map__fd(prod->maps.sock_stats), &client, &ss), 0);
	assert_true(ss.bytes[2] >= TAGGED_BYTES && ss.bytes[1] >= UNTAGGED_BYTES);
	assert_int_equal(ss.packets[0], 0);
	assert_true(bpf_map_lookup_elem(bpf_map__fd(prod->maps.sock_stats), &server, &ss) < 0);

	close(client);
	close(server);
	bpf_tc_hook_destroy(&hook); /* our own clsact in our own namespace */
	classifier_bpf__destroy(prod);
}

/*
 * The DSCP export on a real socket (both kernels of the matrix run this): in a private network
 * namespace with ECN on, the production program at lo egress with DSCP on, the client socket
 * tagged at level 2; a packet socket on lo sees every data segment of the client carry band
 * 2's DSCP with TCP's ECT(0) kept and a valid IPv4 header checksum, and the server's
 * untagged segments keep the application's TOS.
 */
static void test_production_real_socket_dscp(void **state)
{
	enum { BYTES = 300000 };
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = 1, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, tc, .handle = 1, .priority = 1);
	struct mercury_sock_tags tags = {.count = 1, .ranges = {{0, 1ull << 40, .level = 2}}};
	struct mercury_iface_cfg cfg = cfg3_dscp();
	struct sockaddr_in cli_addr;
	socklen_t alen = sizeof(cli_addr);
	struct classifier_bpf *prod;
	int client, server, pkt, ecn, tos = 0x30, rcvbuf;
	unsigned int seen = 0, reply_seen = 0;
	static uint8_t frame[70000];
	FILE *f;

	(void)state;
	if (unshare(CLONE_NEWNET)) {
		print_message("unshare(CLONE_NEWNET): %s; skipping\n", strerror(errno));
		skip();
	}
	loopback_up();
	f = fopen("/proc/sys/net/ipv4/tcp_ecn", "w");
	assert_non_null(f);
	fputs("1\n", f);
	fclose(f);
	prod = classifier_bpf__open_and_load();
	assert_non_null(prod);
	set_elem(prod->maps.cfg, &cfg);
	assert_int_equal(bpf_tc_hook_create(&hook), 0);
	tc.prog_fd = bpf_program__fd(prod->progs.mercury_egress);
	assert_int_equal(bpf_tc_attach(&hook, &tc), 0);
	pkt = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_IP));
	assert_true(pkt >= 0);
	rcvbuf = 8 << 20; /* every GSO packet of the transfer, none dropped */
	assert_int_equal(setsockopt(pkt, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)), 0);

	tcp_pair(&client, &server);
	assert_int_equal(setsockopt(server, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)), 0);
	assert_int_equal(getsockname(client, (struct sockaddr *)&cli_addr, &alen), 0);
	assert_int_equal(
	    bpf_map_update_elem(bpf_map__fd(prod->maps.sock_tags), &client, &tags, BPF_ANY), 0);
	send_and_drain(server, client, 1000);
	send_and_drain(client, server, BYTES);

	for (;;) {
		struct sockaddr_ll from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(pkt, frame, sizeof(frame), 0, (struct sockaddr *)&from, &flen);
		const uint8_t *ip = frame + 14, *th;
		size_t ihl;
		uint16_t sport;

		if (n < 0)
			break;
		if (from.sll_pkttype == PACKET_OUTGOING || n < 14 + 40 || ip[9] != IPPROTO_TCP)
			continue;
		ihl = (ip[0] & 0x0f) * 4u;
		th = ip + ihl;
		if ((size_t)n <= 14 + ihl + (th[12] >> 4) * 4u)
			continue; /* no payload */
		sport = (uint16_t)(th[0] << 8 | th[1]);
		ecn = ip[1] & 3;
		if (ipv4_sum(ip, ihl) != 0xffff)
			fail_msg("segment from port %u: IPv4 header checksum wrong", sport);
		if (sport == ntohs(cli_addr.sin_port)) {
			if (ip[1] >> 2 != DSCP_OF_BAND(2) || ecn != 2)
				fail_msg("client segment: tos %#x, want DSCP %u with ECT(0)", ip[1],
					 DSCP_OF_BAND(2));
			seen++;
		} else if ((ip[1] & 0xfc) == tos) {
			reply_seen++;
		} else {
			fail_msg("untagged server segment: tos %#x, want %#x kept", ip[1], tos);
		}
	}
	print_message("[ DSCP     ] %u tagged (GSO) packets marked, %u untagged kept\n", seen,
		      reply_seen);
	assert_true(seen >= 5);
	assert_true(reply_seen >= 1);
	close(pkt);
	close(client);
	close(server);
	bpf_tc_hook_destroy(&hook); /* our own clsact in our own namespace */
	classifier_bpf__destroy(prod);
}

static int setup(void **state)
{
	(void)state;
	fx.ncpus = libbpf_num_possible_cpus();
	if (fx.ncpus <= 0) {
		fprintf(stderr, "libbpf_num_possible_cpus: %s\n", strerror(-fx.ncpus));
		return -1;
	}
	fx.skel = classifier_test_bpf__open_and_load();
	if (!fx.skel) {
		fprintf(stderr,
			"loading classifier_test.bpf.o failed: %s; check the verifier log "
			"above\n",
			strerror(errno));
		return -1;
	}
	for (uint32_t i = 0; i < 3; i++)
		if (bpf_map_update_elem(bpf_map__fd(fx.skel->maps.jobs), &i, &job_states[i], 0)) {
			fprintf(stderr, "jobs map: %s\n", strerror(errno));
			return -1;
		}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	classifier_test_bpf__destroy(fx.skel);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_table),
	    cmocka_unit_test(test_full_table_every_range),
	    cmocka_unit_test(test_order_guard),
	    cmocka_unit_test(test_order_guard_bound),
	    cmocka_unit_test(test_dscp_ipv4),
	    cmocka_unit_test(test_dscp_ipv6),
	    cmocka_unit_test(test_control_first),
	    cmocka_unit_test(test_dscp_untouched),
	    cmocka_unit_test(test_dscp_order_guard),
	    cmocka_unit_test(test_dscp_fabric_guard),
	    cmocka_unit_test(test_dscp_fabric_guard_high_isn),
	    cmocka_unit_test(test_production_program),
	    cmocka_unit_test(test_production_real_socket),
	    cmocka_unit_test(test_production_real_socket_dscp),
	};

	if (geteuid() != 0) {
		fprintf(stderr, "test_classifier: needs root for BPF_PROG_TEST_RUN, skipping\n");
		return 77;
	}
	return cmocka_run_group_tests(tests, setup, teardown);
}
