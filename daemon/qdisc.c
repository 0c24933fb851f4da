/*
 * Root qdisc management over rtnetlink (libnl-route-3): reading, saving and restoring the
 * root, installing a backend with rollback, removing it, and picking a backend by trying.
 */
#include "qdisc.h"
#include "band_plan.h"
#include "tc_tree.h"

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
	struct nl_msg *msg = NULL;
	char kerr[KERR_LEN];
	int rc;

	rtnl_tc_set_ifindex(TC_CAST(cl), c->ifindex);
	rc = rtnl_class_build_add_request(cl, NLM_F_CREATE | NLM_F_EXCL, &msg);
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

int qdisc_get_root(int ifindex, struct qdisc_root *out, char *err, size_t errlen)
{
	struct qdisc_ctx c;
	int rc = qdisc_ctx_open(&c, ifindex, err, errlen);

	if (rc < 0)
		return rc;
	rc = ctx_root(&c, out);
	qdisc_ctx_close(&c);
	return rc;
}

/* ---- install / remove ---- */

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

static int create_backend(struct qdisc_ctx *c, const struct qdisc_spec *s, bool hw_only, bool *hw,
			  char *warn, size_t warnlen)
{
	switch (s->backend) {
	case MERCURY_BACKEND_HTB:
		return qdisc_htb_create(c, s);
	case MERCURY_BACKEND_TBF:
		return qdisc_tbf_create(c, s);
	case MERCURY_BACKEND_PRIO:
		return qdisc_prio_create(c, s);
	case MERCURY_BACKEND_ETS:
		return qdisc_ets_create(c, s);
	case MERCURY_BACKEND_MQPRIO:
		return qdisc_mqprio_create(c, s, hw_only, hw, warn, warnlen);
	default:
		snprintf(c->err, c->errlen, "no qdisc backend chosen: resolve 'auto' first");
		return -EINVAL;
	}
}

/* Puts things back after a failed create or a trial: our root goes, a foreign tree comes back. */
static void rollback(struct qdisc_ctx *c, uint32_t handle, const struct tc_tree *saved)
{
	struct qdisc_root now;
	char *keep_err = c->err;
	size_t keep_len = c->errlen;
	char scratch[256];

	/* The create's message stays in err; rollback errors go to scratch. */
	c->err = scratch;
	c->errlen = sizeof(scratch);
	if (ctx_root(c, &now) == 0) {
		if (now.handle == handle)
			qdisc_ctx_delete_root(c, handle);
		if (saved->count && ctx_root(c, &now) == 0 && now.is_default)
			tc_tree_replay_ctx(c, saved->buf, saved->len);
	}
	c->err = keep_err;
	c->errlen = keep_len;
}

static int ctx_install(struct qdisc_ctx *c, const struct qdisc_spec *spec, bool hw_only, bool *hw,
		       char *warn, size_t warnlen)
{
	struct qdisc_spec s = *spec;
	struct mercury_iface_cfg plan;
	struct qdisc_root root;
	struct tc_tree saved = {0};
	int rc;

	if (!s.handle)
		s.handle = MERCURY_QDISC_HANDLE;
	rc = band_plan(s.backend, s.nbands, s.default_band, s.handle, &plan, c->err, c->errlen);
	if (rc < 0)
		return rc;
	rc = ctx_root(c, &root);
	if (rc < 0)
		return rc;
	if (root.handle == s.handle && !root.is_default)
		/* Mercury's own root (a crash leftover or a re-attach): the kernel cannot
		 * replace a qdisc by one of another kind under the same handle, so it goes. */
		rc = qdisc_ctx_delete_root(c, s.handle);
	else if (!root.is_default)
		rc = tc_tree_save_ctx(c, &saved); /* for the rollback */
	if (rc < 0)
		return rc;

	rc = create_backend(c, &s, hw_only, hw, warn, warnlen);
	if (rc < 0)
		rollback(c, s.handle, &saved);
	tc_tree_free(&saved);
	return rc;
}

int qdisc_install(const struct qdisc_spec *spec, bool *mqprio_hw, char *warn, size_t warnlen,
		  char *err, size_t errlen)
{
	struct qdisc_ctx c;
	bool hw = false;
	int rc;

	if (warn && warnlen)
		warn[0] = '\0';
	rc = qdisc_ctx_open(&c, spec->ifindex, err, errlen);
	if (rc < 0)
		return rc;
	rc = ctx_install(&c, spec, false, &hw, warn, warnlen);
	if (rc == 0 && err && errlen)
		err[0] = '\0'; /* drop a failed hw-offload attempt's text */
	if (mqprio_hw)
		*mqprio_hw = rc == 0 && hw;
	qdisc_ctx_close(&c);
	return rc;
}

int qdisc_remove(int ifindex, uint32_t handle, char *err, size_t errlen)
{
	struct qdisc_root root;
	struct qdisc_ctx c;
	int rc = qdisc_ctx_open(&c, ifindex, err, errlen);

	if (rc < 0)
		return rc;
	if (!handle)
		handle = MERCURY_QDISC_HANDLE;
	rc = ctx_root(&c, &root);
	if (rc == 0 && root.handle != handle) {
		snprintf(err, errlen, "root qdisc of %s is '%s' %x:, not Mercury's %x:; left alone",
			 c.ifname, root.kind, root.handle >> 16, handle >> 16);
		rc = -ENOENT;
	} else if (rc == 0) {
		rc = qdisc_ctx_delete_root(&c, handle);
	}
	qdisc_ctx_close(&c);
	return rc;
}

/* ---- auto ---- */

int qdisc_link_rate(int ifindex, uint64_t *rate_bps)
{
	char ifname[16], path[64], line[32];
	struct qdisc_ctx c;
	long long mbit = -1;
	FILE *f;

	if (qdisc_ctx_open(&c, ifindex, NULL, 0) < 0)
		return -ENODEV;
	snprintf(ifname, sizeof(ifname), "%s", c.ifname);
	qdisc_ctx_close(&c);
	snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
	f = fopen(path, "r");
	if (!f)
		return -ENODATA;
	if (fgets(line, sizeof(line), f))
		mbit = strtoll(line, NULL, 10);
	fclose(f);
	if (mbit <= 0)
		return -ENODATA;
	*rate_bps = (uint64_t)mbit * 125000u;
	return 0;
}

static void append(char *buf, size_t len, const char *fmt, const char *a, const char *b)
{
	size_t used = strnlen(buf, len);

	if (used + 1 < len)
		snprintf(buf + used, len - used, fmt, a, b);
}

static void trim_tail(char *s)
{
	size_t n = strlen(s);

	while (n && (s[n - 1] == ' ' || s[n - 1] == ';'))
		s[--n] = '\0';
}

int qdisc_pick_auto(int ifindex, uint64_t rate_bps, enum mercury_backend *out, char *why,
		    size_t whylen)
{
	static const enum mercury_backend order[] = {MERCURY_BACKEND_MQPRIO, MERCURY_BACKEND_PRIO,
						     MERCURY_BACKEND_ETS, MERCURY_BACKEND_HTB,
						     MERCURY_BACKEND_TBF};
	char tried[512] = "", err[256], rate_src[64] = "";
	struct tc_tree saved = {0};
	struct qdisc_ctx c;
	struct qdisc_root root;
	int rc;

	*out = MERCURY_BACKEND_NONE;
	rc = qdisc_ctx_open(&c, ifindex, why, whylen);
	if (rc < 0)
		return rc;
	rc = ctx_root(&c, &root);
	if (rc == 0 && root.handle == MERCURY_QDISC_HANDLE) {
		/* A leftover of Mercury's (the caller checked its attach record): drop it. */
		rc = qdisc_ctx_delete_root(&c, MERCURY_QDISC_HANDLE);
	} else if (rc == 0 && !root.is_default) {
		/* Trials replace the root: keep a foreign tree to put back after each. */
		rc = tc_tree_save_ctx(&c, &saved);
	}
	if (rc < 0)
		goto out;
	if (rate_bps) {
		snprintf(rate_src, sizeof(rate_src), " at %llu B/s (given)",
			 (unsigned long long)rate_bps);
	} else if (qdisc_link_rate(ifindex, &rate_bps) == 0) {
		snprintf(rate_src, sizeof(rate_src), " at %llu B/s (link speed)",
			 (unsigned long long)rate_bps);
	}

	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		enum mercury_backend b = order[i];
		bool shaper = b == MERCURY_BACKEND_HTB || b == MERCURY_BACKEND_TBF;
		struct qdisc_spec s = {
		    .ifindex = ifindex,
		    .backend = b,
		    .nbands = backend_default_bands(b),
		    .rate_bps = rate_bps,
		};
		bool hw = false;

		if (b == MERCURY_BACKEND_MQPRIO) {
			if (c.num_tx_queues < 2) {
				append(tried, sizeof(tried), "%s: %s; ", "mqprio",
				       "single tx queue");
				continue;
			}
			s.nbands = band_plan_fit_bands(b, s.nbands, c.num_tx_queues);
		}
		if (shaper && !rate_bps) {
			append(tried, sizeof(tried), "%s: %s; ", backend_name(b),
			       "no --rate and no link speed");
			continue;
		}
		s.default_band = s.nbands - 1;
		c.err = err;
		c.errlen = sizeof(err);
		rc = ctx_install(&c, &s, true, &hw, NULL, 0);
		if (rc == 0) {
			/* Only a trial: take it down and put a foreign root back. */
			rollback(&c, MERCURY_QDISC_HANDLE, &saved);
			*out = b;
			trim_tail(tried);
			snprintf(why, whylen, "%s%s%s%s%s", backend_name(b),
				 b == MERCURY_BACKEND_MQPRIO ? " with hardware offload" : "",
				 shaper ? rate_src : "", tried[0] ? "; not chosen: " : "", tried);
			goto out;
		}
		append(tried, sizeof(tried), "%s: %s; ", backend_name(b),
		       rc == -EOPNOTSUPP ? "not available in this kernel" : err);
	}
	trim_tail(tried);
	snprintf(why, whylen, "no qdisc backend works on %s: %s", c.ifname, tried);
	rc = -EOPNOTSUPP;
out:
	tc_tree_free(&saved);
	qdisc_ctx_close(&c);
	return rc;
}
