// SPDX-License-Identifier: BSD-2-Clause
/*
 * mqprio backend: one traffic class per band (num_tc = N <= tx queues), priority p -> TC p - 1
 * for 1 <= p <= N, priority 0 and all others -> the default band (see band_plan.h: Mercury's
 * band b is priority b + 1, so unsteered traffic stays out of band 0); the tx queues are split
 * evenly and in order between the TCs. Hardware offload (hw 1) is tried first: only a NIC that
 * arbitrates its TCs enforces priority. Software mqprio (hw 0) merely separates queues.
 */
#include "qdisc_backend.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/attr.h>
#include <netlink/msg.h>
#include <netlink/netlink.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/mqprio.h>

static int try_mqprio(struct qdisc_ctx *c, const struct qdisc_spec *s, int hw)
{
	uint8_t map[TC_QOPT_BITMASK + 1];
	uint16_t count[TC_QOPT_MAX_QUEUE] = {0}, offset[TC_QOPT_MAX_QUEUE] = {0};
	unsigned ntc = s->nbands, base = c->num_tx_queues / ntc, extra = c->num_tx_queues % ntc;
	unsigned next = 0;
	struct rtnl_qdisc *q;
	int rc;

	for (unsigned p = 0; p <= TC_QOPT_BITMASK; p++)
		map[p] = (uint8_t)(p >= 1 && p <= ntc ? p - 1 : s->default_band);
	for (unsigned tc = 0; tc < ntc; tc++) {
		count[tc] = (uint16_t)(base + (tc < extra));
		offset[tc] = (uint16_t)next;
		next += count[tc];
	}
	q = rtnl_qdisc_alloc();
	if (!q)
		return -ENOMEM;
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rtnl_tc_set_handle(TC_CAST(q), s->handle);
	rc = rtnl_tc_set_kind(TC_CAST(q), "mqprio");
	if (rc == 0)
		rc = rtnl_qdisc_mqprio_set_num_tc(q, (int)ntc);
	if (rc == 0)
		rc = rtnl_qdisc_mqprio_set_priomap(q, map, sizeof(map));
	if (rc == 0)
		rc = rtnl_qdisc_mqprio_hw_offload(q, hw);
	if (rc == 0)
		rc = rtnl_qdisc_mqprio_set_queue(q, count, offset, (int)ntc);
	if (rc < 0) {
		snprintf(c->err, c->errlen, "mqprio root: libnl: %s", nl_geterror(rc));
		rtnl_qdisc_put(q);
		return -EINVAL;
	}
	rc = qdisc_add(c, q, NLM_F_CREATE | NLM_F_REPLACE,
		       hw ? "creating root qdisc mqprio hw 1" : "creating root qdisc mqprio hw 0",
		       NULL, NULL);
	rtnl_qdisc_put(q);
	return rc;
}

/* The kernel reports in the dump whether the driver took the offload. */
static bool root_is_offloaded(struct qdisc_ctx *c)
{
	struct nlattr *tb[TCA_MAX + 1];
	struct nlmsghdr *h = NULL;
	bool hw = false;

	if (qdisc_root_fetch(c, &h) < 0 || !h)
		return false;
	if (nlmsg_parse(h, sizeof(struct tcmsg), tb, TCA_MAX, NULL) == 0 && tb[TCA_OPTIONS] &&
	    nla_len(tb[TCA_OPTIONS]) >= (int)sizeof(struct tc_mqprio_qopt)) {
		const struct tc_mqprio_qopt *o = nla_data(tb[TCA_OPTIONS]);

		hw = o->hw != 0;
	}
	free(h);
	return hw;
}

int qdisc_mqprio_create(struct qdisc_ctx *c, const struct qdisc_spec *s, bool hw_only, bool *hw,
			char *warn, size_t warnlen)
{
	char hw_err[256];
	int rc;

	*hw = false;
	if (c->num_tx_queues < 2) {
		snprintf(c->err, c->errlen,
			 "mqprio needs a multiqueue device: %s has %u tx queue; use --qdisc htb "
			 "--rate R (or prio/ets)",
			 c->ifname, c->num_tx_queues);
		return -EINVAL;
	}
	if (s->nbands > c->num_tx_queues) {
		snprintf(c->err, c->errlen,
			 "mqprio: %u bands need %u tx queues, %s has %u; use --bands %u", s->nbands,
			 s->nbands, c->ifname, c->num_tx_queues, c->num_tx_queues);
		return -EINVAL;
	}
	rc = try_mqprio(c, s, 1);
	if (rc == 0 && root_is_offloaded(c)) {
		*hw = true;
		return 0;
	}
	if (rc == -EOPNOTSUPP && strstr(c->err, "not available"))
		return rc; /* the kernel has no mqprio at all */
	if (rc == 0)
		snprintf(c->err, c->errlen,
			 "the driver of %s accepted mqprio but did not offload it", c->ifname);
	if (hw_only)
		return rc < 0 ? rc : -EOPNOTSUPP;
	snprintf(hw_err, sizeof(hw_err), "%s", c->err);
	rc = try_mqprio(c, s, 0);
	if (rc < 0)
		return rc;
	snprintf(warn, warnlen,
		 "mqprio on %s runs in software (hw offload failed: %s): it separates tx queues "
		 "but does not enforce priority unless the NIC arbitrates its traffic classes; "
		 "for strict priority use --qdisc prio, ets or htb --rate R",
		 c->ifname, hw_err);
	return 0;
}
