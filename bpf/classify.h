/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The classifier's per-packet path, from the headers by concern: iface_maps.h and
 * shared_maps.h (the maps), parse.h (headers), decide.h (range search, job state -> level ->
 * band), dscp_mark.h (DSCP export); here the program's two halves and the counters. The
 * production program is classifier.bpf.c; its test variant (classifier_test.bpf.c) includes
 * it and swaps only where the socket view (struct mercury_sock_view) comes from.
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

#include "classifier_test_view.h"

#ifdef __bpf__

#define TC_ACT_UNSPEC (-1) /* same value as TCX_NEXT: later filters still run */

#include "shared_maps.h"
#include "iface_maps.h"
#include "parse.h"
#include "decide.h"
#include "dscp_mark.h"

/*
 * Whether packets of the socket other than skb are still queued below TCP (qdisc, driver).
 * Each program defines it: the production one from the socket, the test one from its map.
 */
static __always_inline bool mercury_sock_queued(struct __sk_buff *skb,
						const struct mercury_sock_view *v);

/* Looks up cfg and parses the headers; false: not configured, leave the packet alone. */
static __always_inline bool mercury_begin(struct __sk_buff *skb, struct mercury_classify_ctx *c)
{
	__u32 zero = 0;

	c->cfg = bpf_map_lookup_elem(&cfg, &zero);
	if (!c->cfg || !c->cfg->nbands)
		return false;
	c->seq = 0;
	c->end_seq = 0;
	c->l3_off = 0;
	c->ipv6 = 0;
	c->outcome = mercury_parse(skb, c);
	return true;
}

#define MERCURY_F_KEPT	    1u /* the order guard kept the socket's previous band */
#define MERCURY_F_RELEASED  2u /* ... or let it go, its time bound passed */
#define MERCURY_F_MARKED    4u /* DSCP written */
#define MERCURY_F_DKEPT	    8u /* the fabric guard kept the previous DSCP */
#define MERCURY_F_DRELEASED 16u

/*
 * The order guard: a packet that would overtake its own socket's earlier packets (a more
 * urgent band while they still wait in a less urgent one) is a reordered TCP stream to the
 * receiver, taken for loss. It keeps the previous band until they have left, but no longer
 * than cfg.order_guard_us from the first packet it held: a band below busy traffic may drain
 * only at its guaranteed rate, and a socket that writes continuously always has packets there
 * (TSQ refills its queue as each leaves), so without the bound it would never move up. Past
 * the bound it moves, reordering at most the bytes it has queued, once. Returns the band.
 */
static __always_inline __u64 mercury_order_guard(struct __sk_buff *skb,
						 const struct mercury_iface_cfg *conf,
						 const struct mercury_sock_view *v,
						 struct mercury_sock_stats *ss, __u64 band,
						 __u64 last, __u32 *flags)
{
	__u64 prev = ss->last_band;
	__u32 since = ss->guard_since_us, now_us;

	if (prev && band + 1 < prev && prev <= last + 1 && mercury_sock_queued(skb, v)) {
		now_us = (__u32)(bpf_ktime_get_ns() / 1000) | 1;
		if (!since) {
			since = now_us;
			*flags |= MERCURY_F_KEPT;
		} else if (!conf->order_guard_us || now_us - since < conf->order_guard_us) {
			*flags |= MERCURY_F_KEPT;
		} else {
			since = 0;
			*flags |= MERCURY_F_RELEASED;
		}
		if (*flags & MERCURY_F_KEPT)
			band = prev - 1;
	} else {
		since = 0;
	}
	ss->guard_since_us = since;
	ss->last_band = (__u32)band + 1;
	return band;
}

static __always_inline void mercury_add(struct mercury_counter *k, __u64 len)
{
	k->packets++;
	k->bytes += len;
}

/* The interface's per-CPU counters (plain adds are safe) and the socket's own. */
static __always_inline void mercury_count(struct mercury_sock_stats *ss, __u64 band, __u64 outcome,
					  __u64 len, __u32 flags)
{
	__u32 zero = 0;
	struct mercury_stats *st = bpf_map_lookup_elem(&stats, &zero);

	if (st) {
		mercury_add(&st->band[band], len);
		if (outcome < MERCURY_OUT_MAX)
			mercury_add(&st->outcome[outcome], len);
		if (flags & MERCURY_F_KEPT)
			mercury_add(&st->order_kept, len);
		if (flags & MERCURY_F_RELEASED)
			mercury_add(&st->order_released, len);
		if (flags & MERCURY_F_MARKED)
			mercury_add(&st->dscp_marked, len);
		if (flags & MERCURY_F_DKEPT)
			mercury_add(&st->dscp_kept, len);
		else if (flags & MERCURY_F_DRELEASED)
			mercury_add(&st->dscp_released, len);
	}
	if (ss) {
		__sync_fetch_and_add(&ss->packets[band], 1);
		__sync_fetch_and_add(&ss->bytes[band], len);
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
	__u64 outcome = c->outcome, band = conf->default_band, last;
	__u32 share = 0, flags = 0, dguard = 0;
	bool dscp_fresh;

	if (outcome == MERCURY_NEEDS_SOCK) {
		outcome = mercury_decide(c, v, &band, &share);
		ss = v->sock_stats;
	} else if (outcome == MERCURY_OUT_NO_PAYLOAD && conf->control_first) {
		/* ACKs of the data coming in, SYNs and FINs: tiny, and whatever waits for them
		 * (the peer's window, a connection) is as urgent as its most urgent data. */
		band = 0;
		if (conf->dscp_on && mercury_get_dscp(skb, c) == 0 &&
		    mercury_set_dscp(skb, c, conf->dscp[0] & 0x3f))
			flags |= MERCURY_F_MARKED;
	}
	last = conf->nbands - 1; /* nbands >= 1: checked by mercury_begin() */
	if (last > MERCURY_MAX_BANDS - 1)
		last = MERCURY_MAX_BANDS - 1;
	if (band > last)
		band = last;
	if (ss)
		band = mercury_order_guard(skb, conf, v, ss, band, last, &flags);
	/* clang drops the mask as redundant after the clamp, but older verifiers (6.1) cannot
	 * follow a register-to-register clamp: keep the mask they can. */
	barrier_var(band);
	band &= MERCURY_MAX_BANDS - 1;
	if (share && share <= MERCURY_SHARE_SLOTS)
		skb->priority =
		    conf->skb_priority_share[(share - 1) & (MERCURY_SHARE_SLOTS - 1)][band];
	else
		skb->priority = conf->skb_priority[band];
	/* Whether the fabric guard has marked for this socket yet, read before the guard
	 * records this packet's band: until then the high-water mark is taken as it comes
	 * (an ISN in the upper half of sequence space is not "behind" 0). */
	dscp_fresh = ss && conf->dscp_guard && !ss->dscp_band;
	/* DSCP export of tagged packets (their band, kept or not, or the fabric guard's);
	 * segments without payload were marked above, others keep theirs. */
	if (conf->dscp_on && outcome == MERCURY_OUT_TAGGED) {
		__u64 dband = band;

		if (ss && conf->dscp_guard)
			dband = mercury_dscp_guard(conf, v, ss, band, last, &dguard);
		barrier_var(dband);
		if (mercury_set_dscp(skb, c, conf->dscp[dband & (MERCURY_MAX_BANDS - 1)] & 0x3f))
			flags |= MERCURY_F_MARKED;
	}
	/* The fabric guard's high-water mark: every payload packet of the socket, marked or not
	 * (set outright until a packet was marked, then only forward). */
	if (ss && conf->dscp_guard && (dscp_fresh || (__s32)(c->end_seq - ss->dscp_end) > 0))
		ss->dscp_end = c->end_seq;
	if (dguard == MERCURY_DSCP_KEPT)
		flags |= MERCURY_F_DKEPT;
	else if (dguard == MERCURY_DSCP_RELEASED)
		flags |= MERCURY_F_DRELEASED;
	mercury_count(ss, band, outcome, skb->len, flags);
	return TC_ACT_UNSPEC;
}

#endif /* __bpf__ */
#endif /* MERCURY_CLASSIFY_H */
