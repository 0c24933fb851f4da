// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tc layer's netlink context (libnl-route-3): one socket bound to a device, requests
 * with extack errors, qdisc/class adds, the root's reading and deletion. Used by the backend
 * builders, the tree save/replay and qdisc.c; it calls none of them.
 */
#include "qdisc_ctx.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/route/link.h>
#include <netlink/route/qdisc.h>
#include <netlink/route/class.h>

#ifndef SOL_NETLINK
#define SOL_NETLINK 270
#endif

#define NL_TIMEOUT_S 5
#define NL_MAX_RECVS 4096 /* bounds one request's answer (a dump of a big namespace) */
#define KERR_LEN     256

int qdisc_ctx_open(struct qdisc_ctx *c, int ifindex, char *err, size_t errlen)
{
	struct rtnl_link *link = NULL;
	struct timeval tv = {.tv_sec = NL_TIMEOUT_S};
	int one = 1, rc, fd;

	memset(c, 0, sizeof(*c));
	c->ifindex = ifindex;
	c->err = err;
	c->errlen = errlen;
	if (err && errlen)
		err[0] = '\0';
	c->sk = nl_socket_alloc();
	if (!c->sk) {
		snprintf(err, errlen, "cannot allocate a netlink socket: out of memory");
		return -ENOMEM;
	}
	rc = nl_connect(c->sk, NETLINK_ROUTE);
	if (rc < 0) {
		snprintf(err, errlen, "cannot open rtnetlink: %s", nl_geterror(rc));
		qdisc_ctx_close(c);
		return -EIO;
	}
	nl_socket_enable_msg_peek(c->sk);
	fd = nl_socket_get_fd(c->sk);
	/* Kernel error text (extack) makes failures explain themselves; the timeout bounds
	 * every wait for an answer. */
	setsockopt(fd, SOL_NETLINK, NETLINK_EXT_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	rc = rtnl_link_get_kernel(c->sk, ifindex, NULL, &link);
	if (rc < 0 || !link) {
		snprintf(err, errlen,
			 "no network device with ifindex %d in this network namespace (%s)",
			 ifindex, nl_geterror(rc));
		qdisc_ctx_close(c);
		return -ENODEV;
	}
	snprintf(c->ifname, sizeof(c->ifname), "%s",
		 rtnl_link_get_name(link) ? rtnl_link_get_name(link) : "?");
	c->num_tx_queues = rtnl_link_get_num_tx_queues(link);
	c->txqlen = rtnl_link_get_txqlen(link);
	rtnl_link_put(link);
	return 0;
}

void qdisc_ctx_close(struct qdisc_ctx *c)
{
	if (c->sk)
		nl_socket_free(c->sk);
	c->sk = NULL;
}

struct nl_answer {
	bool done;
	int error; /* negative errno from the kernel */
	char *kerr;
	size_t kerrlen;
	int (*valid)(struct nl_msg *msg, void *arg);
	void *valid_arg;
};

static int on_valid(struct nl_msg *msg, void *arg)
{
	struct nl_answer *a = arg;

	return a->valid ? a->valid(msg, a->valid_arg) : NL_OK;
}

static int on_done(struct nl_msg *msg, void *arg)
{
	struct nl_answer *a = arg;

	(void)msg;
	a->done = true;
	return NL_STOP;
}

/* Copies NLMSGERR_ATTR_MSG of an extended ACK into a->kerr. */
static void read_extack(struct nl_answer *a, struct nlmsgerr *e)
{
	struct nlmsghdr *h = (struct nlmsghdr *)((char *)e - NLMSG_HDRLEN);
	struct nlattr *tb[NLMSGERR_ATTR_MAX + 1];
	size_t off = sizeof(*e);

	if (!a->kerr || !(h->nlmsg_flags & NLM_F_ACK_TLVS))
		return;
	if (!(h->nlmsg_flags & NLM_F_CAPPED))
		off += e->msg.nlmsg_len - NLMSG_HDRLEN;
	if (h->nlmsg_len < NLMSG_HDRLEN + off)
		return;
	if (nla_parse(tb, NLMSGERR_ATTR_MAX, (struct nlattr *)((char *)e + off),
		      (int)(h->nlmsg_len - NLMSG_HDRLEN - off), NULL) < 0)
		return;
	if (tb[NLMSGERR_ATTR_MSG])
		snprintf(a->kerr, a->kerrlen, "%.*s", nla_len(tb[NLMSGERR_ATTR_MSG]),
			 (const char *)nla_data(tb[NLMSGERR_ATTR_MSG]));
}

static int on_error(struct sockaddr_nl *who, struct nlmsgerr *e, void *arg)
{
	struct nl_answer *a = arg;

	(void)who;
	a->error = e->error;
	a->done = true;
	read_extack(a, e);
	return NL_STOP;
}

/* Sends msg (not consumed) and receives until ACK, error or end of dump. */
int qdisc_nl_request(struct qdisc_ctx *c, struct nl_msg *msg, int (*valid)(struct nl_msg *, void *),
		     void *arg, char *kerr, size_t kerrlen)
{
	struct nl_answer a = {.kerr = kerr, .kerrlen = kerrlen, .valid = valid, .valid_arg = arg};
	struct nl_cb *cb;
	int rc;

	if (kerr && kerrlen)
		kerr[0] = '\0';
	cb = nl_cb_alloc(NL_CB_DEFAULT);
	if (!cb)
		return -ENOMEM;
	nl_cb_set(cb, NL_CB_VALID, NL_CB_CUSTOM, on_valid, &a);
	nl_cb_set(cb, NL_CB_ACK, NL_CB_CUSTOM, on_done, &a);
	nl_cb_set(cb, NL_CB_FINISH, NL_CB_CUSTOM, on_done, &a);
	nl_cb_err(cb, NL_CB_CUSTOM, on_error, &a);

	rc = nl_send_auto(c->sk, msg);
	if (rc < 0) {
		nl_cb_put(cb);
		return -EIO;
	}
	for (int i = 0; i < NL_MAX_RECVS && !a.done; i++) {
		rc = nl_recvmsgs(c->sk, cb);
		if (rc < 0 && !a.done) {
			nl_cb_put(cb);
			if (kerr && kerrlen)
				snprintf(kerr, kerrlen, "netlink: %s", nl_geterror(rc));
			return rc == -NLE_AGAIN ? -ETIMEDOUT : -EIO;
		}
	}
	nl_cb_put(cb);
	if (!a.done)
		return -ETIMEDOUT;
	return a.error;
}

int qdisc_nl_transact(struct qdisc_ctx *c, struct nl_msg *msg, char *kerr, size_t kerrlen)
{
	int rc = qdisc_nl_request(c, msg, NULL, NULL, kerr, kerrlen);

	nlmsg_free(msg);
	return rc;
}

static bool kind_is_unknown(int rc, const char *kerr)
{
	if (rc != -ENOENT && rc != -EOPNOTSUPP)
		return false;
	return !kerr || !kerr[0] || strstr(kerr, "unknown") || strstr(kerr, "Unknown");
}

int qdisc_fail(struct qdisc_ctx *c, int rc, const char *kind, const char *what, const char *kerr)
{
	if (kind && kind_is_unknown(rc, kerr)) {
		snprintf(c->err, c->errlen,
			 "qdisc '%s' is not available in this kernel (sch_%s not built or loaded); "
			 "use --qdisc htb --rate R or load sch_%s",
			 kind, kind, kind);
		return -EOPNOTSUPP;
	}
	snprintf(c->err, c->errlen, "%s on %s: %s%s%s%s", what, c->ifname, strerror(-rc),
		 kerr && kerr[0] ? " (kernel: " : "", kerr && kerr[0] ? kerr : "",
		 kerr && kerr[0] ? ")" : "");
	return rc;
}

int qdisc_add(struct qdisc_ctx *c, struct rtnl_qdisc *q, int flags, const char *what,
	      int (*extra)(struct nl_msg *msg, void *arg), void *arg)
{
	const char *kind = rtnl_tc_get_kind(TC_CAST(q));
	struct nl_msg *msg = NULL;
	char kerr[KERR_LEN];
	int rc;

	rtnl_tc_set_ifindex(TC_CAST(q), c->ifindex);
	rc = rtnl_qdisc_build_add_request(q, flags, &msg);
	if (rc == 0 && extra && extra(msg, arg) < 0)
		rc = -NLE_NOMEM;
	if (rc < 0) {
		nlmsg_free(msg);
		snprintf(c->err, c->errlen, "%s on %s: cannot build the request: %s", what,
			 c->ifname, nl_geterror(rc));
		return -EINVAL;
	}
	rc = qdisc_nl_transact(c, msg, kerr, sizeof(kerr));
	return rc < 0 ? qdisc_fail(c, rc, kind, what, kerr) : 0;
}

int qdisc_add_class(struct qdisc_ctx *c, struct rtnl_class *cl, const char *what)
{
	return qdisc_set_class(c, cl, NLM_F_CREATE | NLM_F_EXCL, what);
}

int qdisc_set_class(struct qdisc_ctx *c, struct rtnl_class *cl, int flags, const char *what)
{
	struct nl_msg *msg = NULL;
	char kerr[KERR_LEN];
	int rc;

	rtnl_tc_set_ifindex(TC_CAST(cl), c->ifindex);
	rc = rtnl_class_build_add_request(cl, flags, &msg);
	if (rc < 0) {
		snprintf(c->err, c->errlen, "%s on %s: cannot build the request: %s", what,
			 c->ifname, nl_geterror(rc));
		return -EINVAL;
	}
	rc = qdisc_nl_transact(c, msg, kerr, sizeof(kerr));
	return rc < 0 ? qdisc_fail(c, rc, NULL, what, kerr) : 0;
}

/* ---- the root qdisc as the kernel reports it ---- */

struct root_find {
	int ifindex;
	struct nlmsghdr *found; /* malloc'd copy */
};

static int on_qdisc(struct nl_msg *msg, void *arg)
{
	struct root_find *f = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg);
	struct tcmsg *t;

	if (h->nlmsg_type != RTM_NEWQDISC || h->nlmsg_len < NLMSG_LENGTH(sizeof(*t)))
		return NL_OK;
	t = nlmsg_data(h);
	if (t->tcm_ifindex != f->ifindex || t->tcm_parent != TC_H_ROOT || f->found)
		return NL_OK;
	f->found = malloc(h->nlmsg_len);
	if (f->found)
		memcpy(f->found, h, h->nlmsg_len);
	return NL_OK;
}

/* Dumps qdiscs and returns a copy of ifindex's root message; *out NULL when the device has
 * none to show (noop on a device that is down). */
int qdisc_root_fetch(struct qdisc_ctx *c, struct nlmsghdr **out)
{
	struct tcmsg t = {.tcm_family = AF_UNSPEC, .tcm_ifindex = c->ifindex};
	struct root_find f = {.ifindex = c->ifindex};
	char kerr[KERR_LEN];
	struct nl_msg *msg;
	int rc;

	*out = NULL;
	msg = nlmsg_alloc_simple(RTM_GETQDISC, NLM_F_DUMP);
	if (!msg || nlmsg_append(msg, &t, sizeof(t), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		snprintf(c->err, c->errlen, "cannot build a qdisc dump request: out of memory");
		return -ENOMEM;
	}
	rc = qdisc_nl_request(c, msg, on_qdisc, &f, kerr, sizeof(kerr));
	nlmsg_free(msg);
	if (rc < 0) {
		free(f.found);
		return qdisc_fail(c, rc, NULL, "dumping qdiscs", kerr);
	}
	*out = f.found;
	return 0;
}

static void root_from_msg(const struct nlmsghdr *h, struct qdisc_root *r)
{
	struct nlattr *tb[TCA_MAX + 1];
	const struct tcmsg *t = nlmsg_data(h);

	snprintf(r->kind, sizeof(r->kind), "?");
	r->handle = t->tcm_handle;
	r->is_default = t->tcm_handle == 0;
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(*t), tb, TCA_MAX, NULL) == 0 && tb[TCA_KIND])
		snprintf(r->kind, sizeof(r->kind), "%.*s", nla_len(tb[TCA_KIND]),
			 (const char *)nla_data(tb[TCA_KIND]));
}

static int ctx_root(struct qdisc_ctx *c, struct qdisc_root *r)
{
	struct nlmsghdr *h;
	int rc = qdisc_root_fetch(c, &h);

	if (rc < 0)
		return rc;
	memset(r, 0, sizeof(*r));
	r->num_tx_queues = c->num_tx_queues;
	if (h) {
		root_from_msg(h, r);
	} else {
		snprintf(r->kind, sizeof(r->kind), "noop");
		r->is_default = true;
	}
	free(h);
	return 0;
}

int qdisc_ctx_root(struct qdisc_ctx *c, struct qdisc_root *r)
{
	return ctx_root(c, r);
}

int qdisc_ctx_delete_root(struct qdisc_ctx *c, uint32_t handle)
{
	struct rtnl_qdisc *q = rtnl_qdisc_alloc();
	struct nl_msg *msg = NULL;
	char kerr[KERR_LEN];
	int rc;

	if (!q)
		return -ENOMEM;
	rtnl_tc_set_ifindex(TC_CAST(q), c->ifindex);
	rtnl_tc_set_parent(TC_CAST(q), TC_H_ROOT);
	rtnl_tc_set_handle(TC_CAST(q), handle);
	rc = rtnl_qdisc_build_delete_request(q, &msg);
	rtnl_qdisc_put(q);
	if (rc < 0) {
		snprintf(c->err, c->errlen, "cannot build a qdisc delete request: %s",
			 nl_geterror(rc));
		return -EINVAL;
	}
	rc = qdisc_nl_transact(c, msg, kerr, sizeof(kerr));
	if (rc < 0) {
		char what[64];

		snprintf(what, sizeof(what), "deleting root qdisc %x:", handle >> 16);
		return qdisc_fail(c, rc, NULL, what, kerr);
	}
	return 0;
}
