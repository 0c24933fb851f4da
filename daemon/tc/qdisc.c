// SPDX-License-Identifier: BSD-2-Clause
/*
 * Root qdisc management over rtnetlink (libnl-route-3): reading, saving and restoring the
 * root, installing a backend with rollback, removing it, and picking a backend by trying.
 */
#include "qdisc.h"
#include "band_plan.h"
#include "qdisc_backend.h"
#include "scratch.h"
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

#define KERR_LEN 256

int qdisc_get_root(int ifindex, struct qdisc_root *out, char *err, size_t errlen)
{
	struct qdisc_ctx c;
	int rc = qdisc_ctx_open(&c, ifindex, err, errlen);

	if (rc < 0)
		return rc;
	rc = qdisc_ctx_root(&c, out);
	qdisc_ctx_close(&c);
	return rc;
}

/* ---- install / remove ---- */

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
	if (qdisc_ctx_root(c, &now) == 0) {
		if (now.handle == handle)
			qdisc_ctx_delete_root(c, handle);
		if (saved->count && qdisc_ctx_root(c, &now) == 0 && now.is_default)
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
	rc = qdisc_ctx_root(c, &root);
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
	rc = qdisc_ctx_root(&c, &root);
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

/* The one trial auto makes on the live device: whether the NIC offloads mqprio, which no
 * scratch device can tell. A NIC without offload refuses it before anything changes; one with
 * offload takes it, and it is taken down again (a foreign tree is put back). */
static int try_mqprio_hw(struct qdisc_ctx *c, char *tried, size_t triedlen)
{
	struct qdisc_spec s = {.ifindex = c->ifindex, .backend = MERCURY_BACKEND_MQPRIO};
	struct tc_tree saved = {0};
	struct qdisc_root root;
	char err[256];
	bool hw = false;
	int rc;

	s.nbands =
	    band_plan_fit_bands(s.backend, backend_default_bands(s.backend), c->num_tx_queues);
	s.default_band = s.nbands - 1;
	rc = qdisc_ctx_root(c, &root);
	if (rc == 0 && !root.is_default && root.handle != MERCURY_QDISC_HANDLE)
		rc = tc_tree_save_ctx(c, &saved);
	if (rc == 0) {
		c->err = err;
		c->errlen = sizeof(err);
		rc = ctx_install(c, &s, true, &hw, NULL, 0);
		if (rc == 0)
			rollback(c, MERCURY_QDISC_HANDLE, &saved);
		else
			append(tried, triedlen, "%s: %s; ", "mqprio",
			       rc == -EOPNOTSUPP ? "not available in this kernel" : err);
	}
	tc_tree_free(&saved);
	return rc;
}

struct probe {
	uint64_t rate_bps;
	const char *rate_src;
};

/* On a scratch device (scratch.h): the software backends in auto's order. Answers
 * "<backend number> <what was tried>" in msg. */
static int probe_software(int ifindex, void *arg, char *msg, size_t msglen)
{
	static const enum mercury_backend order[] = {MERCURY_BACKEND_PRIO, MERCURY_BACKEND_ETS,
						     MERCURY_BACKEND_HTB, MERCURY_BACKEND_TBF};
	const struct probe *p = arg;
	char tried[512] = "", err[256];
	struct qdisc_ctx c;
	int rc = qdisc_ctx_open(&c, ifindex, msg, msglen);

	if (rc < 0)
		return rc;
	rc = -EOPNOTSUPP;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]) && rc; i++) {
		enum mercury_backend b = order[i];
		struct qdisc_spec s = {.ifindex = ifindex,
				       .backend = b,
				       .nbands = backend_default_bands(b),
				       .rate_bps = p->rate_bps};

		if ((b == MERCURY_BACKEND_HTB || b == MERCURY_BACKEND_TBF) && !p->rate_bps) {
			append(tried, sizeof(tried), "%s: %s; ", backend_name(b),
			       "no --rate and no link speed");
			continue;
		}
		s.default_band = s.nbands - 1;
		c.err = err;
		c.errlen = sizeof(err);
		rc = ctx_install(&c, &s, true, NULL, NULL, 0);
		if (rc == 0)
			snprintf(msg, msglen, "%d %s", (int)b, tried);
		else
			append(tried, sizeof(tried), "%s: %s; ", backend_name(b),
			       rc == -EOPNOTSUPP ? "not available in this kernel" : err);
	}
	if (rc)
		snprintf(msg, msglen, "%s", tried);
	qdisc_ctx_close(&c);
	return rc;
}

int qdisc_pick_auto(int ifindex, uint64_t rate_bps, enum mercury_backend *out, char *why,
		    size_t whylen)
{
	char tried[512] = "", answer[768], rate_src[64] = "";
	struct qdisc_ctx c;
	int rc, b = 0, used = 0;

	*out = MERCURY_BACKEND_NONE;
	rc = qdisc_ctx_open(&c, ifindex, why, whylen);
	if (rc < 0)
		return rc;
	if (rate_bps)
		snprintf(rate_src, sizeof(rate_src), " at %llu B/s (given)",
			 (unsigned long long)rate_bps);
	else if (qdisc_link_rate(ifindex, &rate_bps) == 0)
		snprintf(rate_src, sizeof(rate_src), " at %llu B/s (link speed)",
			 (unsigned long long)rate_bps);
	if (c.num_tx_queues < 2) {
		append(tried, sizeof(tried), "%s: %s; ", "mqprio", "single tx queue");
	} else if (try_mqprio_hw(&c, tried, sizeof(tried)) == 0) {
		*out = MERCURY_BACKEND_MQPRIO;
		snprintf(why, whylen, "mqprio with hardware offload");
		goto out;
	}
	/* Every other backend is software: whether this kernel has it is tried on a scratch
	 * device, never on this one (a trial would replace its root and drop its queue). */
	struct probe p = {rate_bps, rate_src};
	rc = scratch_run(c.num_tx_queues, probe_software, &p, answer, sizeof(answer));
	if (rc == 0 && sscanf(answer, "%d %n", &b, &used) == 1 && b > MERCURY_BACKEND_NONE &&
	    b < MERCURY_BACKEND_MAX) {
		bool shaper = b == MERCURY_BACKEND_HTB || b == MERCURY_BACKEND_TBF;

		append(tried, sizeof(tried), "%s%s", answer + used, "");
		trim_tail(tried);
		*out = (enum mercury_backend)b;
		snprintf(why, whylen, "%s%s%s%s (probed on a scratch device)", backend_name(*out),
			 shaper ? rate_src : "", tried[0] ? "; not chosen: " : "", tried);
		goto out;
	}
	if (rc == -EOPNOTSUPP)
		append(tried, sizeof(tried), "%s%s", answer, "");
	trim_tail(tried);
	if (rc == -EOPNOTSUPP || rc == 0) {
		snprintf(why, whylen, "no qdisc backend works on %s: %s", c.ifname, tried);
		rc = -EOPNOTSUPP;
	} else {
		snprintf(why, whylen, "cannot probe the qdisc backends: %s", answer);
	}
out:
	qdisc_ctx_close(&c);
	return rc;
}
