/*
 * Root qdisc backends, configured over rtnetlink with libnl-route-3.
 *
 * Every function works on the network namespace of the calling thread, opens its own netlink
 * socket, returns 0 or a negative errno and, on failure, writes a one-line message naming the
 * problem and what to do into err. Handles follow band_plan.h (root MERCURY_QDISC_HANDLE,
 * tbf's pfifo_fast child = root major + 1).
 *
 * How attach/detach use this:
 *   attach: qdisc_get_root(); if the root is not the kernel default and not to be replaced,
 *           stop; with --force, tc_tree_save() + tc_tree_verify() (tc_tree.h) into the
 *           saved_tree pin first.
 *           For auto, qdisc_pick_auto() (and qdisc_link_rate() for htb/tbf without --rate).
 *           band_plan_fit_bands() (mqprio) -> band_plan() -> qdisc_install().
 *   detach: qdisc_remove(ifindex, attach_state.qdisc_handle) -> the kernel re-creates its
 *           default root; then, if a tree was saved, tc_tree_replay().
 *           -ENOENT from qdisc_remove means Mercury's root is no longer there (someone
 *           replaced or deleted it): nothing was touched; warn and carry on.
 */
#ifndef MERCURY_QDISC_H
#define MERCURY_QDISC_H

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

int qdisc_get_root(int ifindex, struct qdisc_root *out, char *err, size_t errlen);

struct qdisc_spec {
	int ifindex;
	enum mercury_backend backend; /* not NONE: resolve auto with qdisc_pick_auto() */
	unsigned nbands;	      /* as validated by band_plan() */
	unsigned default_band;
	uint64_t rate_bps; /* bytes/s; required by htb and tbf, ignored by the others */
	uint32_t handle;   /* root major << 16; 0 = MERCURY_QDISC_HANDLE */
};

/*
 * Replaces the root with the backend's tree. On failure it deletes what it created and puts
 * the previous root back (a foreign root is saved and restored internally), so the device is
 * as before. A root that already has spec->handle is taken as Mercury's own (a crash
 * leftover, a re-attach) and deleted first: check the attach record before calling.
 * -EOPNOTSUPP when the kernel lacks the qdisc ("qdisc 'prio' is not available ...").
 * mqprio: *mqprio_hw tells whether the NIC took the offload; without it warn explains that
 * software mqprio separates queues but does not enforce priority. warn is "" otherwise.
 * mqprio_hw and warn may be NULL.
 */
int qdisc_install(const struct qdisc_spec *spec, bool *mqprio_hw, char *warn, size_t warnlen,
		  char *err, size_t errlen);

/*
 * Deletes the root if its handle is `handle` (0 = MERCURY_QDISC_HANDLE); the kernel then
 * re-creates its default root. -ENOENT, touching nothing, when the root is something else.
 */
int qdisc_remove(int ifindex, uint32_t handle, char *err, size_t errlen);

/*
 * Chooses a backend by trying each candidate on the device (install, then remove): mqprio
 * with hardware offload (multiqueue devices only), prio, ets, then, when a rate is known
 * (rate_bps, else qdisc_link_rate()), htb, then tbf. The device ends as it was (a foreign
 * root is saved and put back; a root with Mercury's handle is deleted as a leftover). *out is
 * the choice; why says what was chosen and why the others were not. -EOPNOTSUPP if nothing
 * fits.
 * For htb/tbf chosen without rate_bps, install with qdisc_link_rate()'s rate.
 */
int qdisc_pick_auto(int ifindex, uint64_t rate_bps, enum mercury_backend *out, char *why,
		    size_t whylen);

/* Link speed from /sys/class/net/<dev>/speed in bytes/s; -ENODATA when unknown. */
int qdisc_link_rate(int ifindex, uint64_t *rate_bps);

/* ---- shared by qdisc*.c only ---- */
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

/* Backend builders: create the tree only (no cleanup); the root replaces the current one. */
int qdisc_htb_create(struct qdisc_ctx *c, const struct qdisc_spec *spec);
int qdisc_tbf_create(struct qdisc_ctx *c, const struct qdisc_spec *spec);
int qdisc_prio_create(struct qdisc_ctx *c, const struct qdisc_spec *spec);
int qdisc_ets_create(struct qdisc_ctx *c, const struct qdisc_spec *spec);
/* hw_only: fail instead of falling back to software mqprio (used by auto). */
int qdisc_mqprio_create(struct qdisc_ctx *c, const struct qdisc_spec *spec, bool hw_only, bool *hw,
			char *warn, size_t warnlen);

#endif
