// SPDX-License-Identifier: BSD-2-Clause
/*
 * htb backend: strict priority by HTB class prio under one shaped parent.
 *   M: htb, default -> leaf of the default band
 *   M:1 rate = ceil = R (the bottleneck)
 *   M:(0x10 + b) rate r, ceil R, prio b, each with a pfifo child
 * Above 8 bands (HTB's prio count) the leaf of root prio `host` holds a second htb instead of
 * a pfifo, (M + 1):, whose classes mirror the root's: (M + 1):1 and leaves (M + 1):(0x10 + p)
 * for the nested bands (band_plan.h, htb_layout()). The nested parent runs at 2 R so that
 * only the root shapes: a nested htb that throttled itself would stall its host leaf.
 * HTB lends the parent's spare rate to the smallest prio value first, so band 0 gets all of R it
 * can use and lower bands only their small guaranteed r (qdisc_htb_band_rate()). r is what
 * bounds a level rise: the bytes a socket already has queued in a lower band (TCP small
 * queues: tcp_limit_output_bytes plus one GSO packet) drain at r before its later ones,
 * now in a more urgent band, can be delivered in order (rise_bound.h).
 * Each leaf gets an explicit pfifo (limit txqueuelen, 1000 if the device has 0) instead of
 * HTB's default one, whose limit would be the device's txqueuelen even when that is 0
 * (dropping everything).
 */
#include "qdisc.h"
#include "qdisc_backend.h"
#include "band_plan.h"

#include <errno.h>
#include <stdio.h>

#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/class.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/fifo.h>
#include <netlink/route/qdisc/htb.h>

#define HTB_MIN_RATE	  1250u	  /* bytes/s (10 kbit/s): below this r would round to 0 */
#define HTB_LEAF_RATE_MIN 125000u /* bytes/s (1 Mbit/s): a band's guarantee, at least */
#define HTB_LEAF_RATE_DIV 100u	  /* and 1 % of R where that is more (qdisc_htb_band_rate) */
#define HTB_QUANTUM	  60000u  /* explicit, so the kernel does not warn about r2q */
#define LEAF_PFIFO_LIMIT  1000

/*
 * Burst of a rate: what it sends in 1 ms (tc's default, HZ=1000), at least 64 KiB. libnl
 * would derive it from the psched clock (1 GHz here), i.e. one MTU, and leave cburst 0: then
 * a class cannot borrow faster than about 20 Gbit/s, far below an unshaped veth or a 100G NIC.
 */
static uint32_t htb_burst(uint64_t rate)
{
	uint64_t b = rate / 1000 + 1514;

	if (b < 65536)
		b = 65536;
	return b > UINT32_MAX / 2 ? UINT32_MAX / 2 : (uint32_t)b;
}

static int set_rates(struct rtnl_class *cl, uint64_t rate, uint64_t ceil)
{
	int rc = rate > UINT32_MAX ? rtnl_htb_set_rate64(cl, rate)
				   : rtnl_htb_set_rate(cl, (uint32_t)rate);

	if (rc == 0)
		rc = ceil > UINT32_MAX ? rtnl_htb_set_ceil64(cl, ceil)
				       : rtnl_htb_set_ceil(cl, (uint32_t)ceil);
	if (rc == 0)
		rc = rtnl_htb_set_rbuffer(cl, htb_burst(rate));
	if (rc == 0)
		rc = rtnl_htb_set_cbuffer(cl, htb_burst(ceil));
	return rc;
}

static int add_htb_class(struct qdisc_ctx *c, uint32_t parent, uint32_t handle, uint64_t rate,
			 uint64_t ceil, int prio, const char *what)
{
	struct rtnl_class *cl = rtnl_class_alloc();
	int rc;

	if (!cl)
		return -ENOMEM;
	rtnl_tc_set_parent(TC_CAST(cl), parent);
	rtnl_tc_set_handle(TC_CAST(cl), handle);
	rc = rtnl_tc_set_kind(TC_CAST(cl), "htb");
	if (rc == 0)
		rc = set_rates(cl, rate, ceil);
	if (rc == 0)
		rc = rtnl_htb_set_quantum(cl, HTB_QUANTUM);
	if (rc == 0 && prio >= 0)
		rc = rtnl_htb_set_prio(cl, (uint32_t)prio);
	if (rc < 0) {
		snprintf(c->err, c->errlen, "%s: libnl: %s", what, nl_geterror(rc));
		rtnl_class_put(cl);
		return -EINVAL;
	}
	rc = qdisc_add_class(c, cl, what);
	rtnl_class_put(cl);
	return rc;
}

static int add_leaf_fifo(struct qdisc_ctx *c, uint32_t parent, const char *what)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int rc;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_parent(TC_CAST(q), parent);
	rc = rtnl_tc_set_kind(TC_CAST(q), "pfifo");
	if (rc == 0)
		rc = rtnl_qdisc_fifo_set_limit(q, c->txqlen ? (int)c->txqlen : LEAF_PFIFO_LIMIT);
	if (rc < 0) {
		snprintf(c->err, c->errlen, "%s: libnl: %s", what, nl_geterror(rc));
		rtnl_qdisc_put(q);
		return -EINVAL;
	}
	/* handle 0: the kernel numbers the leaf qdisc itself. */
	rc = qdisc_add(c, q, NLM_F_CREATE | NLM_F_EXCL, what, NULL, NULL);
	rtnl_qdisc_put(q);
	return rc;
}

static int add_htb_qdisc(struct qdisc_ctx *c, uint32_t parent, uint32_t major, uint32_t defcls,
			 const char *what)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int rc;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_parent(TC_CAST(q), parent);
	rtnl_tc_set_handle(TC_CAST(q), major);
	rc = rtnl_tc_set_kind(TC_CAST(q), "htb");
	if (rc == 0)
		rc = rtnl_htb_set_defcls(q, defcls); /* a minor */
	if (rc < 0) {
		snprintf(c->err, c->errlen, "%s: libnl: %s", what, nl_geterror(rc));
		rtnl_qdisc_put(q);
		return -EINVAL;
	}
	rc = qdisc_add(
	    c, q, parent == TC_H_ROOT ? NLM_F_CREATE | NLM_F_REPLACE : NLM_F_CREATE | NLM_F_EXCL,
	    what, NULL, NULL);
	rtnl_qdisc_put(q);
	return rc;
}

/* One htb level: parent class M:1 at `rate`, leaves M:(0x10 + p) for p < leaves, each with a
 * pfifo except the one of prio `host` when `nest` (the caller fills that one). */
static int add_htb_level(struct qdisc_ctx *c, uint32_t major, uint64_t rate, uint64_t ceil,
			 uint64_t leaf_rate, unsigned leaves, int host)
{
	uint32_t parent_cls = major | MERCURY_HTB_PARENT_MINOR;
	char what[64];
	int rc;

	snprintf(what, sizeof(what), "creating htb parent class %x:1", major >> 16);
	rc = add_htb_class(c, major, parent_cls, rate, ceil, -1, what);
	for (unsigned p = 0; rc == 0 && p < leaves; p++) {
		uint32_t leaf = major | (MERCURY_HTB_LEAF_MINOR0 + p);

		snprintf(what, sizeof(what), "creating htb leaf class %x:%x", major >> 16,
			 leaf & 0xffffu);
		rc = add_htb_class(c, parent_cls, leaf, leaf_rate, ceil, (int)p, what);
		if (rc == 0 && (int)p != host) {
			snprintf(what, sizeof(what), "creating pfifo under %x:%x", major >> 16,
				 leaf & 0xffffu);
			rc = add_leaf_fifo(c, leaf, what);
		}
	}
	return rc;
}

/*
 * The rate guaranteed to each band: 1 % of R, at least 1 Mbit/s (a queue of 128 KiB drains in
 * about 1 s at 1 Mbit/s, in 0.1 s at 10 Mbit/s), and all bands together below half of R.
 * A band that is backlogged takes r from the more urgent ones: 1 % of R per busy band.
 */
uint64_t qdisc_htb_band_rate(uint64_t rate, unsigned nbands)
{
	uint64_t r = rate / HTB_LEAF_RATE_DIV, cap = rate / (2 * (nbands ? nbands : 1));

	if (r < HTB_LEAF_RATE_MIN)
		r = HTB_LEAF_RATE_MIN;
	return r < cap ? r : cap;
}

int qdisc_htb_create(struct qdisc_ctx *c, const struct qdisc_spec *s)
{
	uint32_t major = s->handle, nested_major = s->handle + (1u << 16);
	struct htb_layout lo = htb_layout(s->nbands, s->default_band);
	uint64_t rate = s->rate_bps, leaf_rate;
	int host = lo.nested ? (int)lo.host : -1;
	int rc;

	if (!rate) {
		snprintf(c->err, c->errlen,
			 "htb needs --rate (the bottleneck rate of %s, e.g. --rate 10gbit)",
			 c->ifname);
		return -EINVAL;
	}
	if (rate < HTB_MIN_RATE) {
		snprintf(c->err, c->errlen, "htb rate %llu B/s is too low: give at least %u B/s",
			 (unsigned long long)rate, HTB_MIN_RATE);
		return -EINVAL;
	}
	leaf_rate = qdisc_htb_band_rate(rate, s->nbands);

	rc = add_htb_qdisc(c, TC_H_ROOT, major, MERCURY_HTB_LEAF_MINOR0 + lo.root_default,
			   "creating root qdisc htb");
	if (rc == 0)
		rc = add_htb_level(c, major, rate, rate, leaf_rate, lo.root_leaves, host);
	if (rc == 0 && host >= 0) {
		uint64_t fast = rate > UINT64_MAX / 2 ? rate : 2 * rate;

		rc = add_htb_qdisc(c, major | (MERCURY_HTB_LEAF_MINOR0 + lo.host), nested_major,
				   MERCURY_HTB_LEAF_MINOR0 + lo.nested_default,
				   "creating nested htb");
		if (rc == 0)
			rc = add_htb_level(c, nested_major, fast, fast, leaf_rate, lo.nested, -1);
	}
	return rc;
}
