// SPDX-License-Identifier: BSD-2-Clause
/*
 * Saving and replaying a device's egress qdisc tree (tc_tree.h): dump qdiscs, classes and
 * filters over rtnetlink, rewrite each into the message that creates it, order parents
 * first; replay sends them back; verify replays on a scratch veth and compares.
 */
#include "tc_tree.h"
#include "qdisc_ctx.h"
#include "scratch.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <net/if.h>

#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_cls.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/attr.h>
#include <netlink/route/link.h>

#define TREE_MAX_OBJS 4096
#define KERR_LEN      256

/* Qdiscs whose classes are made by tc class add; every other kind's classes come with it. */
static bool kind_has_user_classes(const char *kind)
{
	static const char *const kinds[] = {"htb", "hfsc", "drr", "qfq"};

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i]))
			return true;
	return false;
}

/* ---- one object: a creatable message ---- */

struct obj_list {
	struct nlmsghdr **v;
	unsigned n;
};

static void obj_list_free(struct obj_list *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int obj_list_push(struct obj_list *l, struct nlmsghdr *h)
{
	struct nlmsghdr **v;

	if (l->n >= TREE_MAX_OBJS)
		return -E2BIG;
	v = realloc(l->v, (l->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	l->v = v;
	l->v[l->n++] = h;
	return 0;
}

static const struct tcmsg *tcm_of(const struct nlmsghdr *h)
{
	return nlmsg_data(h);
}

static void kind_of(const struct nlmsghdr *h, char *kind, size_t len)
{
	struct nlattr *tb[TCA_MAX + 1];

	snprintf(kind, len, "?");
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(struct tcmsg), tb, TCA_MAX, NULL) == 0 &&
	    tb[TCA_KIND])
		snprintf(kind, len, "%.*s", nla_len(tb[TCA_KIND]),
			 (const char *)nla_data(tb[TCA_KIND]));
}

/*
 * codel keeps its times in units of 1024 ns and reports them in whole microseconds, rounded
 * down, so the reported value sent back would come back 1 us lower. The smallest value that
 * gives the kept time again, which the kernel then reports as before.
 */
static uint32_t codel_us_to_send(uint32_t reported_us)
{
	uint64_t kept = ((uint64_t)reported_us * 1000 + 1023) / 1024;

	return (uint32_t)((kept * 1024 + 999) / 1000);
}

/* target, interval and ce_threshold of fq_codel (1, 3, 7) and codel (1, 3, 5) */
static bool is_codel_time(const char *kind, int t)
{
	if (!strcmp(kind, "fq_codel"))
		return t == TCA_FQ_CODEL_TARGET || t == TCA_FQ_CODEL_INTERVAL ||
		       t == TCA_FQ_CODEL_CE_THRESHOLD;
	return t == TCA_CODEL_TARGET || t == TCA_CODEL_INTERVAL || t == TCA_CODEL_CE_THRESHOLD;
}

/* Qdiscs whose options are attributes, not a struct. Dumps leave NLA_F_NESTED off, and a kind
 * that parses strictly (ets) refuses them without it. */
static bool nested_options(int type, const char *kind)
{
	static const char *const kinds[] = {"ets", "fq",   "fq_codel", "fq_pie", "codel", "pie",
					    "red", "cake", "taprio",   "hhf",	 "choke", "tbf"};

	if (type != RTM_NEWQDISC)
		return false;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i]))
			return true;
	return false;
}

/* The attribute of a filter kind's flags word, which a dump fills with hardware status bits. */
static int filter_flags_attr(int type, const char *kind)
{
	if (type != RTM_NEWTFILTER)
		return -1;
	if (!strcmp(kind, "u32"))
		return TCA_U32_FLAGS;
	if (!strcmp(kind, "matchall"))
		return TCA_MATCHALL_FLAGS;
	if (!strcmp(kind, "flower"))
		return TCA_FLOWER_FLAGS;
	return -1;
}

/* Copies one TCA_OPTIONS attribute, dropping counters and putting back what a dump writes
 * differently from what a create takes. */
static int put_options(struct nl_msg *out, int type, const char *kind, const struct nlattr *opt)
{
	struct nlattr *nest, *a;
	int rem;

	bool htb_qdisc = type == RTM_NEWQDISC && !strcmp(kind, "htb");
	bool codel = type == RTM_NEWQDISC && (!strcmp(kind, "fq_codel") || !strcmp(kind, "codel"));
	bool u32_filter = type == RTM_NEWTFILTER && !strcmp(kind, "u32");
	int flags_attr = filter_flags_attr(type, kind);

	if (!htb_qdisc && !codel && flags_attr < 0)
		return nla_put(out, opt->nla_type | (nested_options(type, kind) ? NLA_F_NESTED : 0),
			       nla_len(opt), nla_data(opt));
	nest = nla_nest_start(out, opt->nla_type & NLA_TYPE_MASK);
	if (!nest)
		return -NLE_NOMEM;
	nla_for_each_nested(a, opt, rem)
	{
		int t = nla_type(a);

		if (u32_filter && t == TCA_U32_PCNT)
			continue; /* hit counters */
		if (codel && is_codel_time(kind, t) && nla_len(a) == sizeof(__u32)) {
			if (nla_put_u32(out, t, codel_us_to_send(nla_get_u32(a))) < 0)
				return -NLE_NOMEM;
			continue;
		}
		if (t == flags_attr && nla_len(a) == sizeof(__u32)) {
			/* in_hw / not_in_hw are the kernel's report; a create takes only skip_* */
			if (nla_put_u32(out, t,
					nla_get_u32(a) &
					    (TCA_CLS_FLAGS_SKIP_HW | TCA_CLS_FLAGS_SKIP_SW)) < 0)
				return -NLE_NOMEM;
			continue;
		}
		if (htb_qdisc && t == TCA_HTB_INIT &&
		    nla_len(a) >= (int)sizeof(struct tc_htb_glob)) {
			struct tc_htb_glob g;

			memcpy(&g, nla_data(a), sizeof(g));
			g.version = 3; /* dumped as HTB_VER, created only as HTB_VER >> 16 */
			g.direct_pkts = 0;
			if (nla_put(out, t, sizeof(g), &g) < 0)
				return -NLE_NOMEM;
			continue;
		}
		if (nla_put(out, a->nla_type, nla_len(a), nla_data(a)) < 0)
			return -NLE_NOMEM;
	}
	nla_nest_end(out, nest);
	return 0;
}

/* The message that creates the dumped object h (type RTM_NEW*), malloc'd into *out. */
static int creatable(const struct nlmsghdr *h, struct nlmsghdr **out)
{
	struct nlattr *tb[TCA_MAX + 1];
	struct tcmsg t = *tcm_of(h);
	struct nl_msg *msg;
	char kind[IFNAMSIZ];
	int rc = 0;

	*out = NULL;
	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(t), tb, TCA_MAX, NULL) < 0 || !tb[TCA_KIND])
		return -EPROTO;
	kind_of(h, kind, sizeof(kind));
	t.tcm_ifindex = 0;
	if (h->nlmsg_type != RTM_NEWTFILTER)
		t.tcm_info = 0; /* a qdisc's refcount, a class's leaf handle */
	if (h->nlmsg_type == RTM_NEWTCLASS && t.tcm_parent == TC_H_ROOT)
		t.tcm_parent = TC_H_MAJ(t.tcm_handle); /* a top class, as `parent X:` */
	msg = nlmsg_alloc_simple(h->nlmsg_type, 0);
	if (!msg)
		return -ENOMEM;
	if (nlmsg_append(msg, &t, sizeof(t), NLMSG_ALIGNTO) < 0 ||
	    nla_put(msg, TCA_KIND, nla_len(tb[TCA_KIND]), nla_data(tb[TCA_KIND])) < 0 ||
	    (tb[TCA_OPTIONS] && put_options(msg, h->nlmsg_type, kind, tb[TCA_OPTIONS]) < 0) ||
	    (tb[TCA_CHAIN] && nla_put_u32(msg, TCA_CHAIN, nla_get_u32(tb[TCA_CHAIN])) < 0) ||
	    (tb[TCA_STAB] && nla_put(msg, tb[TCA_STAB]->nla_type, nla_len(tb[TCA_STAB]),
				     nla_data(tb[TCA_STAB])) < 0)) {
		rc = -ENOMEM;
	} else {
		*out = malloc(nlmsg_hdr(msg)->nlmsg_len);
		if (*out)
			memcpy(*out, nlmsg_hdr(msg), nlmsg_hdr(msg)->nlmsg_len);
		else
			rc = -ENOMEM;
	}
	nlmsg_free(msg);
	return rc;
}

static void describe(const struct nlmsghdr *h, char *out, size_t len);

/* ---- dumping ---- */

struct dump_ctx {
	int ifindex;
	int type; /* RTM_NEWQDISC, RTM_NEWTCLASS, RTM_NEWTFILTER */
	uint32_t parent;
	struct obj_list *raw;
	int rc;
};

static int on_dumped(struct nl_msg *msg, void *arg)
{
	struct dump_ctx *d = arg;
	struct nlmsghdr *h = nlmsg_hdr(msg), *copy;

	if (h->nlmsg_type != d->type || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct tcmsg)) ||
	    tcm_of(h)->tcm_ifindex != d->ifindex || d->rc)
		return NL_OK;
	copy = malloc(h->nlmsg_len);
	if (!copy) {
		d->rc = -ENOMEM;
		return NL_OK;
	}
	memcpy(copy, h, h->nlmsg_len);
	/* A filter dump names only the qdisc (X:), also for a class's filters: the block is
	 * the one asked for. */
	if (d->type == RTM_NEWTFILTER && d->parent)
		((struct tcmsg *)nlmsg_data(copy))->tcm_parent = d->parent;
	d->rc = obj_list_push(d->raw, copy);
	if (d->rc)
		free(copy);
	return NL_OK;
}

static int dump(struct qdisc_ctx *c, int get_type, uint32_t parent, struct obj_list *raw)
{
	struct tcmsg t = {.tcm_family = AF_UNSPEC, .tcm_ifindex = c->ifindex, .tcm_parent = parent};
	struct dump_ctx d = {
	    .ifindex = c->ifindex, .type = get_type - 2, .parent = parent, .raw = raw};
	char kerr[KERR_LEN];
	struct nl_msg *msg = nlmsg_alloc_simple(get_type, NLM_F_DUMP);
	int rc;

	if (!msg || nlmsg_append(msg, &t, sizeof(t), NLMSG_ALIGNTO) < 0) {
		nlmsg_free(msg);
		return -ENOMEM;
	}
	rc = qdisc_nl_request(c, msg, on_dumped, &d, kerr, sizeof(kerr));
	nlmsg_free(msg);
	return rc ? rc : d.rc;
}

static const struct nlmsghdr *find_qdisc(const struct obj_list *q, uint32_t major)
{
	for (unsigned i = 0; i < q->n; i++)
		if (tcm_of(q->v[i])->tcm_handle == major)
			return q->v[i];
	return NULL;
}

static bool is_root_u32_table(const struct nlmsghdr *h)
{
	uint32_t handle = tcm_of(h)->tcm_handle;
	char kind[8];

	kind_of(h, kind, sizeof(kind));
	/* hash table ids 0x800-0xfff are the kernel's own: each u32 instance makes its root */
	return !strcmp(kind, "u32") && (handle & 0xfffff) == 0 && (handle >> 20) >= 0x800;
}

static uint32_t chain_of(const struct nlmsghdr *h)
{
	struct nlattr *tb[TCA_MAX + 1];

	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(struct tcmsg), tb, TCA_MAX, NULL) == 0 &&
	    tb[TCA_CHAIN])
		return nla_get_u32(tb[TCA_CHAIN]);
	return 0;
}

/* Same filter instance: one block (parent), chain and preference. */
static bool same_instance(const struct nlmsghdr *a, const struct nlmsghdr *b)
{
	return tcm_of(a)->tcm_parent == tcm_of(b)->tcm_parent &&
	       TC_H_MAJ(tcm_of(a)->tcm_info) == TC_H_MAJ(tcm_of(b)->tcm_info) &&
	       chain_of(a) == chain_of(b);
}

static bool is_u32(const struct nlmsghdr *h)
{
	char kind[8];

	kind_of(h, kind, sizeof(kind));
	return !strcmp(kind, "u32");
}

/*
 * u32 instances of one qdisc share one space of hash-table ids, handed out in creation order
 * (800:, 801:, ...), and a dump of one instance lists every table of its preference, its
 * neighbours' on other classes too. So: replay the instances in the order of their root
 * table's id, and refuse a tree where two instances share a preference, whose tables no dump
 * can tell apart.
 */
static int u32_order(struct qdisc_ctx *c, struct obj_list *f)
{
	uint32_t *key = calloc(f->n ? f->n : 1, sizeof(*key));

	if (!key)
		return -ENOMEM;
	for (unsigned i = 0; i < f->n; i++) {
		if (!is_u32(f->v[i]) || !tcm_of(f->v[i])->tcm_handle)
			continue;
		for (unsigned j = 0; j < f->n; j++) {
			const struct nlmsghdr *o = f->v[j];

			if (j == i || !is_u32(o))
				continue;
			if (same_instance(o, f->v[i])) {
				if (is_root_u32_table(o) &&
				    (!key[i] || (tcm_of(o)->tcm_handle >> 20) < key[i]))
					key[i] = tcm_of(o)->tcm_handle >> 20;
				continue;
			}
			if (tcm_of(o)->tcm_handle != tcm_of(f->v[i])->tcm_handle ||
			    TC_H_MAJ(tcm_of(o)->tcm_info) != TC_H_MAJ(tcm_of(f->v[i])->tcm_info))
				continue;
			snprintf(c->err, c->errlen,
				 "u32 filters of pref %u on %x:%x and %x:%x of %s share their hash "
				 "tables in every dump, so which is whose cannot be saved; give "
				 "them different prefs",
				 TC_H_MAJ(tcm_of(o)->tcm_info) >> 16,
				 TC_H_MAJ(tcm_of(o)->tcm_parent) >> 16,
				 TC_H_MIN(tcm_of(o)->tcm_parent),
				 TC_H_MAJ(tcm_of(f->v[i])->tcm_parent) >> 16,
				 TC_H_MIN(tcm_of(f->v[i])->tcm_parent), c->ifname);
			free(key);
			return -ENOTSUP;
		}
		if (is_root_u32_table(f->v[i]) &&
		    (!key[i] || (tcm_of(f->v[i])->tcm_handle >> 20) < key[i]))
			key[i] = tcm_of(f->v[i])->tcm_handle >> 20;
	}
	/* stable insertion sort by key: other kinds (key 0) keep their place ahead */
	for (unsigned i = 1; i < f->n; i++) {
		struct nlmsghdr *h = f->v[i];
		uint32_t k = key[i];
		unsigned j = i;

		for (; j > 0 && key[j - 1] > k; j--) {
			f->v[j] = f->v[j - 1];
			key[j] = key[j - 1];
		}
		f->v[j] = h;
		key[j] = k;
	}
	free(key);
	return 0;
}

/* A rate estimator shows only as its readings (TCA_STATS2 / TCA_STATS_RATE_EST*): its
 * interval and averaging constant cannot be read back, so it cannot be re-created. */
static bool has_rate_estimator(const struct nlmsghdr *h)
{
	struct nlattr *tb[TCA_MAX + 1], *a;
	int rem;

	if (nlmsg_parse((struct nlmsghdr *)h, sizeof(struct tcmsg), tb, TCA_MAX, NULL) < 0 ||
	    !tb[TCA_STATS2])
		return false;
	nla_for_each_nested(a, tb[TCA_STATS2], rem)
	{
		if (nla_type(a) == TCA_STATS_RATE_EST || nla_type(a) == TCA_STATS_RATE_EST64)
			return true;
	}
	return false;
}

/* What no replay can bring back, found in the dump itself: refused with its name. */
static int unsavable(struct qdisc_ctx *c, const struct obj_list *l)
{
	for (unsigned i = 0; i < l->n; i++) {
		char d[96];

		if (!has_rate_estimator(l->v[i]))
			continue;
		describe(l->v[i], d, sizeof(d));
		snprintf(
		    c->err, c->errlen,
		    "%s of %s has a rate estimator, whose settings no dump shows; it cannot be "
		    "restored exactly (remove it: tc ... estimator, then attach)",
		    d, c->ifname);
		return -ENOTSUP;
	}
	return 0;
}

/* The root tree's qdiscs (kernel-made ones left out), classes and filters, as dumped. */
static int dump_tree(struct qdisc_ctx *c, struct obj_list *qd, struct obj_list *cl,
		     struct obj_list *fl)
{
	struct obj_list all = {0}, classes = {0}, filters = {0};
	uint32_t root = 0;
	int rc = dump(c, RTM_GETQDISC, 0, &all);

	for (unsigned i = 0; rc == 0 && i < all.n; i++)
		if (tcm_of(all.v[i])->tcm_parent == TC_H_ROOT)
			root = tcm_of(all.v[i])->tcm_handle;
	if (rc || !root)
		goto out;
	/* Reachable from the root, made by someone (handle != 0): parents come earlier in a
	 * qdisc dump than their children, so one pass keeps each whose parent is kept. */
	for (unsigned i = 0; i < all.n; i++) {
		const struct tcmsg *t = tcm_of(all.v[i]);

		if (!t->tcm_handle || t->tcm_parent == TC_H_INGRESS) /* ingress, clsact */
			continue;
		if (t->tcm_parent != TC_H_ROOT && !find_qdisc(qd, TC_H_MAJ(t->tcm_parent)))
			continue;
		rc = obj_list_push(qd, all.v[i]);
		if (rc)
			goto out;
		all.v[i] = NULL;
	}
	rc = dump(c, RTM_GETTCLASS, 0, &classes);
	for (unsigned i = 0; rc == 0 && i < classes.n; i++) {
		const struct nlmsghdr *q =
		    find_qdisc(qd, TC_H_MAJ(tcm_of(classes.v[i])->tcm_handle));
		char kind[IFNAMSIZ];

		if (!q)
			continue;
		kind_of(q, kind, sizeof(kind));
		if (kind_has_user_classes(kind)) {
			rc = obj_list_push(cl, classes.v[i]);
			classes.v[i] = NULL;
		}
	}
	/* Filters hang off a qdisc (parent X:) or a class with a block of its own (X:Y). */
	for (unsigned i = 0; rc == 0 && i < qd->n; i++)
		rc = dump(c, RTM_GETTFILTER, tcm_of(qd->v[i])->tcm_handle, &filters);
	for (unsigned i = 0; rc == 0 && i < cl->n; i++)
		rc = dump(c, RTM_GETTFILTER, tcm_of(cl->v[i])->tcm_handle, &filters);
	if (rc == 0)
		rc = unsavable(c, qd);
	if (rc == 0)
		rc = unsavable(c, cl);
	if (rc == 0)
		rc = u32_order(c, &filters);
	for (unsigned i = 0; rc == 0 && i < filters.n; i++) {
		/* handle 0 is the header of a filter instance, made with its first filter */
		if (!tcm_of(filters.v[i])->tcm_handle || is_root_u32_table(filters.v[i]))
			continue;
		rc = obj_list_push(fl, filters.v[i]);
		filters.v[i] = NULL;
	}
out:
	obj_list_free(&all);
	obj_list_free(&classes);
	obj_list_free(&filters);
	return rc;
}

/* ---- ordering and the saved form ---- */

static bool emitted_handle(const struct obj_list *done, int type, uint32_t handle)
{
	for (unsigned i = 0; i < done->n; i++)
		if (done->v[i]->nlmsg_type == type && tcm_of(done->v[i])->tcm_handle == handle)
			return true;
	return false;
}

/* Can a qdisc or class with this parent be created once `done` exists? */
static bool parent_ready(const struct obj_list *done, uint32_t parent)
{
	const struct nlmsghdr *q = find_qdisc(done, TC_H_MAJ(parent));
	char kind[IFNAMSIZ];

	if (!q)
		return false;
	if (!TC_H_MIN(parent))
		return true;
	kind_of(q, kind, sizeof(kind));
	/* classes of prio, mq, ets ... exist with their qdisc */
	return !kind_has_user_classes(kind) || emitted_handle(done, RTM_NEWTCLASS, parent);
}

/* A qdisc needs its parent; a class its qdisc and, below the top, its parent class. A top
 * class is dumped with parent TC_H_ROOT even when its qdisc is not the root. */
static bool creatable_now(const struct obj_list *done, const struct nlmsghdr *h)
{
	const struct tcmsg *t = tcm_of(h);

	if (h->nlmsg_type == RTM_NEWTCLASS)
		return parent_ready(done, t->tcm_parent == TC_H_ROOT ? TC_H_MAJ(t->tcm_handle)
								     : t->tcm_parent);
	return t->tcm_parent == TC_H_ROOT || parent_ready(done, t->tcm_parent);
}

static int tree_append(struct tc_tree *t, const struct nlmsghdr *h)
{
	size_t need = NLMSG_ALIGN(h->nlmsg_len);

	if (t->len + need > t->cap) {
		size_t cap = t->cap ? t->cap * 2 : 4096;
		uint8_t *b;

		while (cap < t->len + need)
			cap *= 2;
		b = realloc(t->buf, cap);
		if (!b)
			return -ENOMEM;
		t->buf = b;
		t->cap = cap;
	}
	memset(t->buf + t->len, 0, need);
	memcpy(t->buf + t->len, h, h->nlmsg_len);
	t->len += need;
	t->count++;
	return 0;
}

static void describe(const struct nlmsghdr *h, char *out, size_t len)
{
	const struct tcmsg *t = tcm_of(h);
	char kind[IFNAMSIZ];

	kind_of(h, kind, sizeof(kind));
	if (h->nlmsg_type == RTM_NEWTFILTER)
		snprintf(out, len, "filter %s parent %x:%x pref %u handle %x", kind,
			 TC_H_MAJ(t->tcm_parent) >> 16, TC_H_MIN(t->tcm_parent),
			 TC_H_MAJ(t->tcm_info) >> 16, t->tcm_handle);
	else if (t->tcm_parent == TC_H_ROOT)
		snprintf(out, len, "qdisc %s %x: root", kind, t->tcm_handle >> 16);
	else
		snprintf(out, len, "%s %s %x:%x parent %x:%x",
			 h->nlmsg_type == RTM_NEWQDISC ? "qdisc" : "class", kind,
			 TC_H_MAJ(t->tcm_handle) >> 16, TC_H_MIN(t->tcm_handle),
			 TC_H_MAJ(t->tcm_parent) >> 16, TC_H_MIN(t->tcm_parent));
}

/* Rewrites every dumped object into its creating message and orders them for replay. */
static int build_tree(struct qdisc_ctx *c, struct obj_list *qd, struct obj_list *cl,
		      struct obj_list *fl, struct tc_tree *t)
{
	struct obj_list done = {0}; /* borrowed pointers */
	unsigned left = qd->n + cl->n;
	int rc = 0;

	while (left && rc == 0) {
		unsigned before = left;

		for (int pass = 0; pass < 2; pass++) {
			struct obj_list *l = pass ? cl : qd;

			for (unsigned i = 0; i < l->n && rc == 0; i++) {
				const struct nlmsghdr *h = l->v[i];

				if (emitted_handle(&done, h->nlmsg_type, tcm_of(h)->tcm_handle) ||
				    !creatable_now(&done, h))
					continue;
				rc = obj_list_push(&done, l->v[i]);
				left--;
			}
		}
		if (left == before && rc == 0) {
			snprintf(c->err, c->errlen,
				 "the qdisc tree of %s has objects whose parent is not in it; "
				 "cannot save it",
				 c->ifname);
			rc = -ENOTSUP;
		}
	}
	for (unsigned i = 0; i < fl->n && rc == 0; i++)
		rc = obj_list_push(&done, fl->v[i]);
	for (unsigned i = 0; i < done.n && rc == 0; i++) {
		struct nlmsghdr *m;

		rc = creatable(done.v[i], &m);
		if (rc == 0)
			rc = tree_append(t, m);
		free(m);
	}
	free(done.v);
	return rc;
}

int tc_tree_save_ctx(struct qdisc_ctx *c, struct tc_tree *t)
{
	struct obj_list qd = {0}, cl = {0}, fl = {0};
	int rc;

	memset(t, 0, sizeof(*t));
	rc = dump_tree(c, &qd, &cl, &fl);
	if (rc == 0 && qd.n)
		rc = build_tree(c, &qd, &cl, &fl, t);
	else if (rc && !c->err[0])
		rc = qdisc_fail(c, rc, NULL, "reading the qdisc tree", NULL);
	obj_list_free(&qd);
	obj_list_free(&cl);
	obj_list_free(&fl);
	if (rc)
		tc_tree_free(t);
	return rc;
}

int tc_tree_save(int ifindex, struct tc_tree *t, char *err, size_t errlen)
{
	struct qdisc_ctx c;
	int rc = qdisc_ctx_open(&c, ifindex, err, errlen);

	memset(t, 0, sizeof(*t));
	if (rc < 0)
		return rc;
	rc = tc_tree_save_ctx(&c, t);
	qdisc_ctx_close(&c);
	return rc;
}

void tc_tree_free(struct tc_tree *t)
{
	free(t->buf);
	memset(t, 0, sizeof(*t));
}

/* ---- walking the saved form ---- */

/* The message at *off (then advanced past it), or NULL at the end or where the buffer does
 * not hold a whole qdisc, class or filter message. */
static const struct nlmsghdr *msg_next(const uint8_t *buf, size_t len, size_t *off)
{
	const struct nlmsghdr *h = (const struct nlmsghdr *)(buf + *off);

	if (*off >= len || len - *off < NLMSG_LENGTH(sizeof(struct tcmsg)) ||
	    h->nlmsg_len > len - *off || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct tcmsg)) ||
	    (h->nlmsg_type != RTM_NEWQDISC && h->nlmsg_type != RTM_NEWTCLASS &&
	     h->nlmsg_type != RTM_NEWTFILTER))
		return NULL;
	*off += NLMSG_ALIGN(h->nlmsg_len);
	return h;
}

/* The i-th message, or NULL past the end or on a malformed buffer. */
static const struct nlmsghdr *msg_at(const uint8_t *buf, size_t len, unsigned i)
{
	const struct nlmsghdr *h;
	size_t off = 0;

	while ((h = msg_next(buf, len, &off)) && i--)
		;
	return h;
}

int tc_tree_count(const uint8_t *buf, size_t len)
{
	size_t off = 0;
	int n = 0;

	while (msg_next(buf, len, &off))
		n++;
	return off == len ? n : -EINVAL;
}

uint32_t tc_tree_root_handle(const uint8_t *buf, size_t len)
{
	const struct nlmsghdr *h = len ? msg_at(buf, len, 0) : NULL;

	return h && h->nlmsg_type == RTM_NEWQDISC ? tcm_of(h)->tcm_handle : 0;
}

void tc_tree_describe(const uint8_t *buf, size_t len, unsigned i, char *out, size_t outlen)
{
	const struct nlmsghdr *h = msg_at(buf, len, i);

	if (h)
		describe(h, out, outlen);
	else
		snprintf(out, outlen, "object %u (none)", i);
}

/* ---- replay ---- */

int tc_tree_replay_ctx(struct qdisc_ctx *c, const uint8_t *buf, size_t len)
{
	int n = tc_tree_count(buf, len);
	struct qdisc_root now;
	uint32_t root = tc_tree_root_handle(buf, len);
	int rc;

	if (n <= 0 || !root) {
		snprintf(c->err, c->errlen,
			 "the saved qdisc tree of %s is unreadable (%zu bytes); set its qdiscs by "
			 "hand",
			 c->ifname, len);
		return -EINVAL;
	}
	const char *seam = getenv("MERCURYD_TEST_KILL_REPLAY_AT");
	int kill_at = seam ? atoi(seam) : -1;

	rc = qdisc_ctx_root(c, &now);
	if (rc)
		return rc;
	if (!now.is_default && now.handle != root) {
		snprintf(c->err, c->errlen,
			 "root qdisc of %s is now '%s %x:', not the kernel default: someone "
			 "replaced it, so the saved tree is not put back",
			 c->ifname, now.kind, now.handle >> 16);
		return -EBUSY;
	}
	if (!now.is_default) {
		/* the saved root's handle: a replay that was cut short; start again */
		rc = qdisc_ctx_delete_root(c, root);
		if (rc)
			return rc;
	}
	for (int i = 0; i < n; i++) {
		const struct nlmsghdr *h = msg_at(buf, len, (unsigned)i);

		if (i == kill_at)
			raise(SIGKILL); /* test seam: a replay cut short by a crash or kill -9 */
		int flags = NLM_F_CREATE | (i == 0 ? NLM_F_REPLACE : NLM_F_EXCL);
		struct nl_msg *msg = nlmsg_alloc_simple(h->nlmsg_type, flags);
		char kerr[KERR_LEN], what[128];
		struct tcmsg *t;

		if (!msg || nlmsg_append(msg, (void *)NLMSG_DATA(h), h->nlmsg_len - NLMSG_HDRLEN,
					 NLMSG_ALIGNTO) < 0) {
			nlmsg_free(msg);
			snprintf(c->err, c->errlen,
				 "cannot build a restore request: out of memory");
			return -ENOMEM;
		}
		t = nlmsg_data(nlmsg_hdr(msg));
		t->tcm_ifindex = c->ifindex;
		rc = qdisc_nl_transact(c, msg, kerr, sizeof(kerr));
		if (rc) {
			char d[96];

			describe(h, d, sizeof(d));
			snprintf(what, sizeof(what), "restoring %s", d);
			return qdisc_fail(c, rc, NULL, what, kerr);
		}
	}
	return 0;
}

int tc_tree_replay(int ifindex, const uint8_t *buf, size_t len, char *err, size_t errlen)
{
	struct qdisc_ctx c;
	int rc = qdisc_ctx_open(&c, ifindex, err, errlen);

	if (rc < 0)
		return rc;
	rc = tc_tree_replay_ctx(&c, buf, len);
	qdisc_ctx_close(&c);
	return rc;
}

/* ---- verify on a scratch device ---- */

static bool same_object(const struct nlmsghdr *a, const struct nlmsghdr *b)
{
	return a->nlmsg_type == b->nlmsg_type && a->nlmsg_len == b->nlmsg_len &&
	       !memcmp(NLMSG_DATA(a), NLMSG_DATA(b), a->nlmsg_len - NLMSG_HDRLEN);
}

/* Same object, maybe not the same settings: type, handle, parent and (filters) pref. */
static bool same_identity(const struct nlmsghdr *a, const struct nlmsghdr *b)
{
	return a->nlmsg_type == b->nlmsg_type && tcm_of(a)->tcm_handle == tcm_of(b)->tcm_handle &&
	       tcm_of(a)->tcm_parent == tcm_of(b)->tcm_parent &&
	       (a->nlmsg_type != RTM_NEWTFILTER || tcm_of(a)->tcm_info == tcm_of(b)->tcm_info);
}

/* Names the first attribute (inside TCA_OPTIONS where that is nested) that differs. */
static void name_difference(const struct nlmsghdr *a, const struct nlmsghdr *b, char *out,
			    size_t len)
{
	struct nlattr *ta[TCA_MAX + 1], *tb[TCA_MAX + 1];

	snprintf(out, len, "its header differs");
	if (nlmsg_parse((struct nlmsghdr *)a, sizeof(struct tcmsg), ta, TCA_MAX, NULL) < 0 ||
	    nlmsg_parse((struct nlmsghdr *)b, sizeof(struct tcmsg), tb, TCA_MAX, NULL) < 0)
		return;
	for (int t = 1; t <= TCA_MAX; t++) {
		struct nlattr *x = ta[t], *y = tb[t], *i, *j;
		int rx, ry;

		if (!x && !y)
			continue;
		if (x && y && nla_len(x) == nla_len(y) &&
		    !memcmp(nla_data(x), nla_data(y), nla_len(x)))
			continue;
		snprintf(out, len, "attribute %d differs (%d bytes saved, %d read back)", t,
			 x ? nla_len(x) : -1, y ? nla_len(y) : -1);
		if (t != TCA_OPTIONS || !x || !y || !nla_ok(nla_data(x), nla_len(x)))
			return;
		/* nested options: walk both in step */
		i = nla_data(x), rx = nla_len(x);
		j = nla_data(y), ry = nla_len(y);
		for (; nla_ok(i, rx) && nla_ok(j, ry); i = nla_next(i, &rx), j = nla_next(j, &ry)) {
			if (nla_type(i) != nla_type(j) || nla_len(i) != nla_len(j) ||
			    memcmp(nla_data(i), nla_data(j), nla_len(i))) {
				snprintf(
				    out, len,
				    "option %d differs (saved %d bytes, read back option %d of %d "
				    "bytes)",
				    nla_type(i), nla_len(i), nla_type(j), nla_len(j));
				return;
			}
		}
		return;
	}
}

/* First object of a with no equal in b (each used once), as its index, or -1. */
static int first_unmatched(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
	int na = tc_tree_count(a, alen), nb = tc_tree_count(b, blen);
	bool *used = calloc(nb > 0 ? (size_t)nb : 1, sizeof(bool));
	int miss = -1;

	if (!used)
		return 0;
	for (int i = 0; i < na && miss < 0; i++) {
		const struct nlmsghdr *x = msg_at(a, alen, (unsigned)i);
		bool found = false;

		for (int j = 0; j < nb && !found; j++) {
			if (!used[j] && same_object(x, msg_at(b, blen, (unsigned)j)))
				used[j] = found = true;
		}
		if (!found)
			miss = i;
	}
	free(used);
	return miss;
}

struct tree_buf {
	const uint8_t *buf;
	size_t len;
};

/* On the scratch device (scratch.h): replay, read back, compare. */
static int verify_here(int ifindex, void *arg, char *err, size_t errlen)
{
	const struct tree_buf *t = arg;
	const uint8_t *buf = t->buf;
	size_t len = t->len;
	struct tc_tree back;
	char what[128];
	int rc, miss;

	rc = tc_tree_replay(ifindex, buf, len, err, errlen);
	if (rc)
		return -ENOTSUP; /* err names the object the kernel refused */
	rc = tc_tree_save(ifindex, &back, err, errlen);
	if (rc)
		return rc;
	miss = first_unmatched(buf, len, back.buf, back.len);
	if (miss >= 0) {
		const struct nlmsghdr *h = msg_at(buf, len, (unsigned)miss), *o = NULL;
		char why[160] = "it is missing";

		for (unsigned k = 0; (o = msg_at(back.buf, back.len, k)); k++)
			if (same_identity(h, o))
				break;
		if (o)
			name_difference(h, o, why, sizeof(why));
		tc_tree_describe(buf, len, (unsigned)miss, what, sizeof(what));
		snprintf(err, errlen, "%s does not come back the same when re-created: %s", what,
			 why);
	} else if ((miss = first_unmatched(back.buf, back.len, buf, len)) >= 0) {
		tc_tree_describe(back.buf, back.len, (unsigned)miss, what, sizeof(what));
		snprintf(err, errlen, "re-creating the tree also makes %s", what);
	}
	tc_tree_free(&back);
	return miss >= 0 ? -ENOTSUP : 0;
}

int tc_tree_verify(const uint8_t *buf, size_t len, unsigned num_tx_queues, char *err, size_t errlen)
{
	struct tree_buf t = {buf, len};
	int rc = scratch_run(num_tx_queues, verify_here, &t, err, errlen);

	if (rc && errlen && !err[0])
		snprintf(err, errlen, "checking the qdisc tree on a scratch device failed");
	return rc;
}
