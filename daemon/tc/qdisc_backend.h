/* SPDX-License-Identifier: BSD-2-Clause */
/* Backend builders (qdisc_<kind>.c), called by qdisc.c's install. */
#ifndef MERCURY_QDISC_BACKEND_H
#define MERCURY_QDISC_BACKEND_H

#include "qdisc_ctx.h"

/* Backend builders: create the tree only (no cleanup); the root replaces the current one. */
int qdisc_htb_create(struct qdisc_ctx *c, const struct qdisc_spec *spec);
int qdisc_tbf_create(struct qdisc_ctx *c, const struct qdisc_spec *spec);
int qdisc_prio_create(struct qdisc_ctx *c, const struct qdisc_spec *spec);
int qdisc_ets_create(struct qdisc_ctx *c, const struct qdisc_spec *spec);
/* hw_only: fail instead of falling back to software mqprio (used by auto). */
int qdisc_mqprio_create(struct qdisc_ctx *c, const struct qdisc_spec *spec, bool hw_only, bool *hw,
			char *warn, size_t warnlen);

#endif
