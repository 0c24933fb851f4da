// SPDX-License-Identifier: BSD-2-Clause
/*
 * prio backend: prio M: with N strict bands. Its priomap sends every priority to the default
 * band; Mercury's packets carry skb->priority = M:(b + 1), which prio reads as band b.
 */
#include "qdisc_backend.h"

#include <errno.h>
#include <stdio.h>

#include <linux/pkt_sched.h>
#include <netlink/netlink.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/qdisc/prio.h>

int qdisc_prio_create(struct qdisc_ctx *c, const struct qdisc_spec *s)
{
	uint8_t map[TC_PRIO_MAX + 1];
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	int rc;

	if (!q)
		return -ENOMEM;
	for (unsigned p = 0; p <= TC_PRIO_MAX; p++)
		map[p] = (uint8_t)s->default_band;
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rtnl_tc_set_handle(TC_CAST(q), s->handle);
	rc = rtnl_tc_set_kind(TC_CAST(q), "prio");
	if (rc == 0) {
		rtnl_qdisc_prio_set_bands(q, (int)s->nbands);
		rc = rtnl_qdisc_prio_set_priomap(q, map, sizeof(map));
	}
	if (rc < 0) {
		snprintf(c->err, c->errlen, "prio root: libnl: %s", nl_geterror(rc));
		rtnl_qdisc_put(q);
		return -EINVAL;
	}
	rc = qdisc_add(c, q, NLM_F_CREATE | NLM_F_REPLACE, "creating root qdisc prio", NULL, NULL);
	rtnl_qdisc_put(q);
	return rc;
}
