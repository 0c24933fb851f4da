/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tc layer's shared pieces: the root and backend-spec types, and the netlink context the
 * backends (qdisc_*.c), the tree save/replay (tc_tree.c) and qdisc.c build on.
 */
#ifndef MERCURY_QDISC_CTX_H
#define MERCURY_QDISC_CTX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mercury_abi.h"

struct qdisc_root {
	char kind[16];		/* TCA_KIND, e.g. "noqueue", "mq", "htb"; "noop" when none */
	uint32_t handle;	/* major << 16; 0 for the kernel's own default root */
	bool is_default;	/* handle 0: pfifo_fast, mq, noqueue created by the kernel */
	unsigned num_tx_queues; /* of the device */
};

struct qdisc_spec {
	int ifindex;
	enum mercury_backend backend; /* not NONE: resolve auto with qdisc_pick_auto() */
	unsigned nbands;	      /* as validated by band_plan() */
	unsigned default_band;
	uint64_t rate_bps; /* bytes/s; required by htb and tbf, ignored by the others */
	uint32_t handle;   /* root major << 16; 0 = MERCURY_QDISC_HANDLE */
	enum mercury_job_policy job_policy;	    /* share: htb's per-job classes (band_plan.h) */
	uint32_t share_weight[MERCURY_SHARE_SLOTS]; /* their jobs' weights now (0: none) */
};

struct nl_sock;
struct nl_msg;

struct qdisc_ctx {
	struct nl_sock *sk;
	int ifindex;
	char ifname[16];
	unsigned num_tx_queues;
	unsigned txqlen;
	char *err;
	size_t errlen;
};

int qdisc_ctx_open(struct qdisc_ctx *c, int ifindex, char *err, size_t errlen);
void qdisc_ctx_close(struct qdisc_ctx *c);

/* Copy (malloc'd) of the device's root qdisc message; *out NULL if the device shows none. */
struct nlmsghdr;
int qdisc_root_fetch(struct qdisc_ctx *c, struct nlmsghdr **out);

/* Sends msg (not consumed) and receives until ACK, error or end of dump; valid (may be
 * NULL) sees each answer. Returns 0 or a negative errno; kerr gets the extack text. */
int qdisc_nl_request(struct qdisc_ctx *c, struct nl_msg *msg, int (*valid)(struct nl_msg *, void *),
		     void *arg, char *kerr, size_t kerrlen);
/* The root as qdisc_get_root() reports it; deleting a root by handle. */
int qdisc_ctx_root(struct qdisc_ctx *c, struct qdisc_root *r);
int qdisc_ctx_delete_root(struct qdisc_ctx *c, uint32_t handle);

/* Sends msg (consumed) and waits for the kernel's answer; kerr gets the extack text. */
int qdisc_nl_transact(struct qdisc_ctx *c, struct nl_msg *msg, char *kerr, size_t kerrlen);

/* Formats "what failed on dev: strerror (kernel text)" into c->err; returns rc. A missing
 * qdisc kind becomes the 'not available' message and -EOPNOTSUPP. */
int qdisc_fail(struct qdisc_ctx *c, int rc, const char *kind, const char *what, const char *kerr);

/* Adds a qdisc / class built with libnl (flags: NLM_F_CREATE | NLM_F_REPLACE / EXCL).
 * extra, if set, appends attributes libnl has no module for (ets). what names the step in
 * error messages; a qdisc kind the kernel lacks gives the 'not available' error. */
struct rtnl_qdisc;
struct rtnl_class;
int qdisc_add(struct qdisc_ctx *c, struct rtnl_qdisc *q, int flags, const char *what,
	      int (*extra)(struct nl_msg *msg, void *arg), void *arg);
int qdisc_add_class(struct qdisc_ctx *c, struct rtnl_class *cl, const char *what);
/* The same with other flags: 0 changes an existing class (its handle) in place. */
int qdisc_set_class(struct qdisc_ctx *c, struct rtnl_class *cl, int flags, const char *what);

#endif
