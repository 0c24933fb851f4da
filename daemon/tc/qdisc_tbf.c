// SPDX-License-Identifier: BSD-2-Clause
/*
 * tbf backend: tbf M: shapes to R so the queue builds below it, in a pfifo_fast child
 * (handle M + 1) whose fixed prio2band gives three strict bands (priority 6 -> band 0,
 * 0 -> band 1, 2 -> band 2). pfifo_fast ignores its options; libnl still wants a priomap.
 */
#include "qdisc_backend.h"
#include "band_plan.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>

#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/prio.h>
#include <netlink/route/qdisc/tbf.h>

#define TBF_MIN_RATE   1250u	   /* bytes/s */
#define TBF_MIN_BURST  (64u << 10) /* at least one full GSO packet */
#define TBF_BURST_HZ   250u	   /* burst = 4 ms worth of rate when that is larger */
#define TBF_LATENCY_US 50000	   /* limit of tbf's own queue, unused with the child */

/* The kernel's pfifo_fast map (sch_generic.c prio2band), sent only to satisfy libnl. */
static uint8_t pfifo_fast_map[TC_PRIO_MAX + 1] = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};

static int add_child(struct qdisc_ctx *c, uint32_t major)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int rc;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_parent(TC_CAST(q), TC_H_MAKE(major, 1));
	rtnl_tc_set_handle(TC_CAST(q), major + 0x10000u);
	rc = rtnl_tc_set_kind(TC_CAST(q), "pfifo_fast");
	if (rc == 0) {
		rtnl_qdisc_prio_set_bands(q, MERCURY_TBF_BANDS);
		rc = rtnl_qdisc_prio_set_priomap(q, pfifo_fast_map, sizeof(pfifo_fast_map));
	}
	if (rc < 0) {
		snprintf(c->err, c->errlen, "pfifo_fast child: libnl: %s", nl_geterror(rc));
		rtnl_qdisc_put(q);
		return -EINVAL;
	}
	rc =
	    qdisc_add(c, q, NLM_F_CREATE | NLM_F_EXCL, "creating pfifo_fast under tbf", NULL, NULL);
	rtnl_qdisc_put(q);
	return rc;
}

int qdisc_tbf_create(struct qdisc_ctx *c, const struct qdisc_spec *s)
{
	uint64_t rate = s->rate_bps, burst;
	struct rtnl_qdisc *q;
	int rc;

	if (!rate) {
		snprintf(c->err, c->errlen,
			 "tbf needs --rate (the bottleneck rate of %s, e.g. --rate 1gbit)",
			 c->ifname);
		return -EINVAL;
	}
	/* libnl's tbf takes an int rate and has no 64-bit rate attribute. */
	if (rate < TBF_MIN_RATE || rate > INT_MAX) {
		snprintf(c->err, c->errlen,
			 "tbf rate %llu B/s is out of range %u..%d B/s; use --qdisc htb above it",
			 (unsigned long long)rate, TBF_MIN_RATE, INT_MAX);
		return -EINVAL;
	}
	if (s->handle >= 0xfffe0000u) {
		snprintf(c->err, c->errlen, "tbf needs two majors: handle %x: is too high",
			 s->handle >> 16);
		return -EINVAL;
	}
	burst = rate / TBF_BURST_HZ;
	if (burst < TBF_MIN_BURST)
		burst = TBF_MIN_BURST;

	q = rtnl_qdisc_alloc();
	if (!q)
		return -ENOMEM;
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rtnl_tc_set_handle(TC_CAST(q), s->handle);
	rc = rtnl_tc_set_kind(TC_CAST(q), "tbf");
	if (rc == 0) {
		rtnl_qdisc_tbf_set_rate(q, (int)rate, (int)burst, 0);
		rc = rtnl_qdisc_tbf_set_limit_by_latency(q, TBF_LATENCY_US);
	}
	if (rc < 0) {
		snprintf(c->err, c->errlen, "tbf root: libnl: %s", nl_geterror(rc));
		rtnl_qdisc_put(q);
		return -EINVAL;
	}
	rc = qdisc_add(c, q, NLM_F_CREATE | NLM_F_REPLACE, "creating root qdisc tbf", NULL, NULL);
	rtnl_qdisc_put(q);
	if (rc < 0)
		return rc;
	return add_child(c, s->handle);
}
