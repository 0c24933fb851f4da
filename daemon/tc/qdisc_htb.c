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
 * Job policy share (band_plan.h) adds one class per share slot under M:1, rate = the slot's
 * assured part of R (in proportion to its job's weight), ceil R, holding the slot's own band
 * leaves. HTB serves every class within its own assured rate (and its leaves within theirs)
 * before any class borrows beyond it, and lends what is left by prio: so backlogged jobs
 * converge to their weights' ratio, band order holds inside each job, a job alone borrows up
 * to R, and the root's leaves (untagged, fixed-level tags) keep their guarantee r.
 * Each leaf gets an explicit pfifo (limit txqueuelen, 1000 if the device has 0) instead of
 * HTB's default one, whose limit would be the device's txqueuelen even when that is 0
 * (dropping everything).
 */
#include "qdisc.h"
#include "qdisc_backend.h"
#include "qdisc.h"
#include "band_plan.h"

#include <errno.h>
#include <stdio.h>

#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/class.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/fifo.h>
#include <netlink/route/qdisc/htb.h>

#define HTB_QUANTUM	 60000u /* explicit, so the kernel does not warn about r2q */
#define LEAF_PFIFO_LIMIT 1000

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

/* An htb class as set_htb_class() sends it; prio < 0: none (inner classes). */
struct htb_cls {
	uint32_t parent, handle;
	uint64_t rate, ceil;
	int prio;
	uint32_t quantum;
};

/* flags: NLM_F_CREATE | NLM_F_EXCL adds the class, 0 changes an existing one (every
 * parameter: a change without prio would reset it). */
static int set_htb_class(struct qdisc_ctx *c, const struct htb_cls *k, int flags, const char *what)
{
	struct rtnl_class *cl = rtnl_class_alloc();
	int rc;

	if (!cl)
		return -ENOMEM;
	rtnl_tc_set_parent(TC_CAST(cl), k->parent);
	rtnl_tc_set_handle(TC_CAST(cl), k->handle);
	rc = rtnl_tc_set_kind(TC_CAST(cl), "htb");
	if (rc == 0)
		rc = set_rates(cl, k->rate, k->ceil);
	if (rc == 0)
		rc = rtnl_htb_set_quantum(cl, k->quantum);
	if (rc == 0 && k->prio >= 0)
		rc = rtnl_htb_set_prio(cl, (uint32_t)k->prio);
	if (rc < 0) {
		snprintf(c->err, c->errlen, "%s: libnl: %s", what, nl_geterror(rc));
		rtnl_class_put(cl);
		return -EINVAL;
	}
	rc = qdisc_set_class(c, cl, flags, what);
	rtnl_class_put(cl);
	return rc;
}

static int add_htb_class(struct qdisc_ctx *c, uint32_t parent, uint32_t handle, uint64_t rate,
			 uint64_t ceil, int prio, const char *what)
{
	struct htb_cls k = {parent, handle, rate, ceil, prio, HTB_QUANTUM};

	return set_htb_class(c, &k, NLM_F_CREATE | NLM_F_EXCL, what);
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
 * The rate guaranteed to each band under the priority rule (htb_leaf_rate, band_plan.c):
 * what bounds a level rise (rise_bound.h).
 */
uint64_t qdisc_htb_band_rate(uint64_t rate, unsigned nbands)
{
	return htb_leaf_rate(rate, nbands, MERCURY_POLICY_PRIORITY);
}

/*
 * Job policy share: each slot's class M:(2 + s) under M:1 at its assured rate, ceil R, and
 * its band leaves M:(0x100 (s + 1) + 0x10 + p) with a quantum in proportion to the job's
 * weight, so that what HTB lends beyond the assured rates to leaves of one prio is also
 * split by weight (band_plan.h). create: add them (and the leaves' pfifos), else change
 * their rates and quanta in place.
 */
static int share_classes(struct qdisc_ctx *c, uint32_t major, uint64_t rate, unsigned nbands,
			 const uint32_t weight[MERCURY_SHARE_SLOTS], bool create)
{
	uint64_t assured[MERCURY_SHARE_SLOTS], leaf_rate;
	uint32_t quantum[MERCURY_SHARE_SLOTS];
	int rc = 0, flags = create ? NLM_F_CREATE | NLM_F_EXCL : 0;
	char what[80];

	htb_share_rates(rate, nbands, weight, assured);
	htb_share_quanta(weight, HTB_QUANTUM, quantum);
	for (unsigned slot = 0; rc == 0 && slot < MERCURY_SHARE_SLOTS; slot++) {
		struct htb_cls k = {major | MERCURY_HTB_PARENT_MINOR,
				    major | htb_share_class_minor(slot),
				    assured[slot],
				    rate,
				    -1,
				    HTB_QUANTUM};

		snprintf(what, sizeof(what), "%s htb job class %x:%x",
			 create ? "creating" : "changing", major >> 16, k.handle & 0xffffu);
		rc = set_htb_class(c, &k, flags, what);
		/* A job's own bands keep the priority rule's guarantee (what bounds a level rise),
		 * within half of the job's assured rate; only the root's leaves are held to R/64.
		 */
		leaf_rate = htb_leaf_rate(rate, nbands, MERCURY_POLICY_PRIORITY);
		if (leaf_rate > assured[slot] / (2 * nbands))
			leaf_rate = assured[slot] / (2 * nbands);
		if (leaf_rate < MERCURY_HTB_MIN_RATE)
			leaf_rate = MERCURY_HTB_MIN_RATE;
		for (unsigned p = 0; rc == 0 && p < nbands; p++) {
			struct htb_cls leaf = {k.handle,  major | htb_share_leaf_minor(slot, p),
					       leaf_rate, rate,
					       (int)p,	  quantum[slot]};

			snprintf(what, sizeof(what), "%s htb leaf class %x:%x",
				 create ? "creating" : "changing", major >> 16,
				 leaf.handle & 0xffffu);
			rc = set_htb_class(c, &leaf, flags, what);
			if (rc == 0 && create) {
				snprintf(what, sizeof(what), "creating pfifo under %x:%x",
					 major >> 16, leaf.handle & 0xffffu);
				rc = add_leaf_fifo(c, leaf.handle, what);
			}
		}
	}
	return rc;
}

int qdisc_htb_share_update(int ifindex, uint32_t handle, uint64_t rate, unsigned nbands,
			   const uint32_t weight[MERCURY_SHARE_SLOTS], char *err, size_t errlen)
{
	struct qdisc_ctx c;
	int rc;

	if ((rc = qdisc_ctx_open(&c, ifindex, err, errlen)))
		return rc;
	rc = share_classes(&c, handle ? handle : MERCURY_QDISC_HANDLE, rate, nbands, weight, false);
	qdisc_ctx_close(&c);
	return rc;
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
	if (rate < MERCURY_HTB_MIN_RATE) {
		snprintf(c->err, c->errlen, "htb rate %llu B/s is too low: give at least %u B/s",
			 (unsigned long long)rate, MERCURY_HTB_MIN_RATE);
		return -EINVAL;
	}
	leaf_rate = htb_leaf_rate(rate, s->nbands, s->job_policy);

	rc = add_htb_qdisc(c, TC_H_ROOT, major, MERCURY_HTB_LEAF_MINOR0 + lo.root_default,
			   "creating root qdisc htb");
	if (rc == 0)
		rc = add_htb_level(c, major, rate, rate, leaf_rate, lo.root_leaves, host);
	if (rc == 0 && s->job_policy == MERCURY_POLICY_SHARE)
		rc = share_classes(c, major, rate, s->nbands, s->share_weight, true);
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
