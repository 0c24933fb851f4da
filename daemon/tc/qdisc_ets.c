// SPDX-License-Identifier: BSD-2-Clause
/*
 * ets backend: ets M: with N bands, all strict (nstrict = N), priomap -> default band; the
 * band is chosen by skb->priority = M:(b + 1) as for prio. libnl has no ets module, so the
 * options are appended to libnl's qdisc request with its generic attribute API.
 */
#include "qdisc_backend.h"

#include <errno.h>
#include <stdio.h>

#include <linux/pkt_sched.h>
#include <netlink/attr.h>
#include <netlink/netlink.h>
#include <netlink/route/qdisc.h>

static int put_ets_options(struct nl_msg *msg, void *arg)
{
	const struct qdisc_spec *s = arg;
	struct nlattr *opts, *map;

	/* The kernel parses these nests strictly: NLA_F_NESTED is required. */
	opts = nla_nest_start(msg, TCA_OPTIONS | NLA_F_NESTED);
	if (!opts || nla_put_u8(msg, TCA_ETS_NBANDS, (uint8_t)s->nbands) < 0 ||
	    nla_put_u8(msg, TCA_ETS_NSTRICT, (uint8_t)s->nbands) < 0)
		return -1;
	map = nla_nest_start(msg, TCA_ETS_PRIOMAP | NLA_F_NESTED);
	if (!map)
		return -1;
	for (unsigned p = 0; p <= TC_PRIO_MAX; p++)
		if (nla_put_u8(msg, TCA_ETS_PRIOMAP_BAND, (uint8_t)s->default_band) < 0)
			return -1;
	nla_nest_end(msg, map);
	nla_nest_end(msg, opts);
	return 0;
}

int qdisc_ets_create(struct qdisc_ctx *c, const struct qdisc_spec *s)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int rc;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rtnl_tc_set_handle(TC_CAST(q), s->handle);
	rc = rtnl_tc_set_kind(TC_CAST(q), "ets");
	if (rc < 0) {
		snprintf(c->err, c->errlen, "ets root: libnl: %s", nl_geterror(rc));
		rtnl_qdisc_put(q);
		return -EINVAL;
	}
	rc = qdisc_add(c, q, NLM_F_CREATE | NLM_F_REPLACE, "creating root qdisc ets",
		       put_ets_options, (void *)s);
	rtnl_qdisc_put(q);
	return rc;
}
