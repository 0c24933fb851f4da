// SPDX-License-Identifier: BSD-2-Clause
/*
 * The attach transaction (iface_attach.h): plan, apply, undo. A root qdisc backend and the
 * classifier at TC egress, pinned so that they outlive mercuryd.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "log.h"
#include "fastpath.h"
#include "iface_attach.h"
#include "iface_pins.h"
#include "pins.h"
#include "share_sync.h"
#include "tc/qdisc.h"
#include "tc/tc_hook.h"
#include "classifier.skel.h"

/* ---- plan ---- */

/* Does the attach record carry the DSCP export asked for? Not given: anything matches. */
static bool dscp_matches(const struct mercury_attach_state *st, const struct attach_request *a)
{
	uint8_t want[MERCURY_MAX_BANDS];
	char err[128];

	if (a->dscp_guard.given && st->dscp_on &&
	    (a->dscp_guard.off == (bool)st->dscp_guard ||
	     (!a->dscp_guard.off && a->dscp_guard.bound_us != st->dscp_guard_us)))
		return false;
	if (!a->dscp.given)
		return true;
	if (!a->dscp.on || !st->dscp_on)
		return a->dscp.on == (bool)st->dscp_on;
	if (dscp_opt_fill(&a->dscp, st->nbands, want, err, sizeof(err)))
		return false;
	return memcmp(want, st->dscp, st->nbands < MERCURY_MAX_BANDS ? st->nbands : 0) == 0;
}

/* Does the existing attach already give what was asked? Unset arguments match anything. */
static bool attach_matches(const struct mercury_attach_state *st, const struct attach_request *a)
{
	return st->ifindex == (__u32)a->ifindex && dscp_matches(st, a) &&
	       (a->backend == MERCURY_BACKEND_NONE || a->backend == st->backend) &&
	       (a->bands == 0 || a->bands == st->nbands) &&
	       (a->default_band < 0 || (__u32)a->default_band == st->default_band) &&
	       (a->rate_bps == 0 || a->rate_bps == st->rate_bps) &&
	       (a->job_policy < 0 || (__u32)a->job_policy == st->job_policy) &&
	       (a->control < 0 || (__u32)a->control == st->control_first) &&
	       (a->hook == MERCURY_HOOK_NONE || a->hook == st->hook);
}

/*
 * A root qdisc Mercury did not create is replaced only with --force, and only if its whole
 * tree can be put back exactly: it is saved into *tree and re-created on a scratch device
 * first. Nothing on the interface changes before that check passes.
 */
static int root_qdisc_conflict(const struct attach_request *a, struct tc_tree *tree,
			       unsigned *num_tx_queues, char *err, size_t errlen)
{
	struct qdisc_root root;
	char why[384];
	int r = qdisc_get_root(a->ifindex, &root, err, errlen);

	if (r)
		return r;
	*num_tx_queues = root.num_tx_queues;
	/* A root with Mercury's handle but no attach record is a leftover of a crash. */
	if (root.is_default || root.handle == MERCURY_QDISC_HANDLE)
		return 0;
	if (!a->force) {
		snprintf(err, errlen,
			 "%s has a root qdisc '%s %x:' that Mercury did not create; remove it "
			 "(tc qdisc del dev %s root) or use --force (detach restores it)",
			 a->iface, root.kind, root.handle >> 16, a->iface);
		return -EBUSY;
	}
	r = tc_tree_save(a->ifindex, tree, err, errlen);
	if (r)
		return r;
	if (tree->len > MERCURY_SAVED_TREE_MAX) {
		snprintf(err, errlen,
			 "the qdisc tree of %s (%u objects, %zu bytes) is larger than the %d bytes "
			 "Mercury can keep to restore it; nothing was changed",
			 a->iface, tree->count, tree->len, MERCURY_SAVED_TREE_MAX);
		return -E2BIG;
	}
	r = tc_tree_verify(tree->buf, tree->len, root.num_tx_queues, why, sizeof(why));
	if (r) {
		snprintf(err, errlen,
			 "cannot replace the root qdisc '%s %x:' of %s: its tree could not be "
			 "restored exactly on detach (%s); nothing was changed",
			 root.kind, root.handle >> 16, a->iface, why);
		return r;
	}
	log_warn("replacing root qdisc '%s %x:' of %s (%u qdiscs, classes and filters); detach "
		 "will restore them",
		 root.kind, root.handle >> 16, a->iface, tree->count);
	return 0;
}

/* What is attached already: ATTACH_APPLIED go on, ATTACH_ALREADY attached as asked,
 * ATTACH_FAILED refused (err). */
static int plan_previous(const char *root, struct attach_plan *p, char *err, size_t errlen)
{
	const char *iface = p->a.iface;
	struct tc_hook_result h;
	char why[512];
	int r = iface_state_read(root, iface, &p->old);

	if (r == -ENOENT)
		return ATTACH_APPLIED;
	if (r) {
		iface_state_strerror(root, iface, r, why, sizeof(why));
		snprintf(err, errlen, "attach %s: %s", iface, why);
		return ATTACH_FAILED;
	}
	if (p->old.netns_ino != current_netns_ino()) {
		snprintf(err, errlen,
			 "attach: %s/%s belongs to an interface '%s' of another network "
			 "namespace; give this one its own --pin-root",
			 root, iface, iface);
		return ATTACH_FAILED;
	}
	iface_state_hook(&p->old, &h);
	if (attach_matches(&p->old, &p->a) && tc_hook_present(p->a.ifindex, &h, p->link_pin))
		return ATTACH_ALREADY;
	if (p->old.ifindex != (__u32)p->a.ifindex) {
		p->stale_pins = true; /* the device was deleted and re-created */
		return ATTACH_APPLIED;
	}
	if (!p->a.force) {
		snprintf(err, errlen,
			 "attach: %s is already attached (%s, %u bands); detach it first or use "
			 "--force to re-attach with other settings",
			 iface, backend_name(p->old.backend), p->old.nbands);
		return ATTACH_FAILED;
	}
	p->replace_old = true;
	return ATTACH_APPLIED;
}

/* Priority everywhere: every published measurement of a single job ran under it, and share
 * (weights as link shares) changes the qdisc tree, so an operator asks for it by name. */
enum mercury_job_policy iface_default_job_policy(enum mercury_backend b, unsigned nbands)
{
	(void)b;
	(void)nbands;
	return MERCURY_POLICY_PRIORITY;
}

/* Backend, rate and bands: what the new root qdisc and the classifier will be. 0 or -1
 * (err). */
static int plan_backend(struct attach_plan *p, char *err, size_t errlen)
{
	struct mercury_attach_state *st = &p->st;
	const struct attach_request *a = &p->a;
	unsigned num_tx_queues = 1;
	char why[512];

	if (root_qdisc_conflict(a, &p->tree, &num_tx_queues, why, sizeof(why))) {
		snprintf(err, errlen, "attach: %s", why);
		return -1;
	}
	st->backend = a->backend;
	st->rate_bps = a->rate_bps;
	if (st->backend == MERCURY_BACKEND_NONE &&
	    qdisc_pick_auto(a->ifindex, a->rate_bps, (enum mercury_backend *)&st->backend, p->why,
			    sizeof(p->why))) {
		snprintf(err, errlen, "attach %s: --qdisc auto found no usable backend: %s",
			 a->iface, p->why);
		return -1;
	}
	if (st->rate_bps == 0 && a->backend == MERCURY_BACKEND_NONE &&
	    (st->backend == MERCURY_BACKEND_HTB || st->backend == MERCURY_BACKEND_TBF)) {
		uint64_t link_rate = 0; /* auto chose a shaper: the link's speed */

		if (qdisc_link_rate(a->ifindex, &link_rate) == 0)
			st->rate_bps = link_rate;
	}
	st->nbands = a->bands ? a->bands : backend_default_bands(st->backend);
	if (!a->bands && num_tx_queues >= 2) /* mqprio: no more bands than TX queues */
		st->nbands = band_plan_fit_bands(st->backend, st->nbands, num_tx_queues);
	st->default_band = a->default_band >= 0 ? (unsigned)a->default_band : st->nbands - 1;
	st->qdisc_handle = MERCURY_QDISC_HANDLE;
	if (band_plan(st->backend, st->nbands, st->default_band, st->qdisc_handle, &p->cfg, why,
		      sizeof(why))) {
		snprintf(err, errlen, "attach %s: %s", a->iface, why);
		return -1;
	}
	st->nbands = p->cfg.nbands; /* the backend may have fewer bands than asked (tbf: 3) */
	st->default_band = p->cfg.default_band;
	st->job_policy = a->job_policy >= 0 ? (__u32)a->job_policy
					    : iface_default_job_policy(st->backend, st->nbands);
	if (band_plan_job_policy(st->backend, st->job_policy, st->qdisc_handle, &p->cfg, why,
				 sizeof(why))) {
		snprintf(err, errlen, "attach %s: %s", a->iface, why);
		return -1;
	}
	if (dscp_opt_fill(&a->dscp, st->nbands, st->dscp, why, sizeof(why))) {
		snprintf(err, errlen, "attach %s: %s", a->iface, why);
		return -1;
	}
	st->dscp_on = a->dscp.on;
	p->cfg.order_guard_us = MERCURY_ORDER_GUARD_US;
	p->cfg.dscp_on = st->dscp_on;
	st->dscp_guard = st->dscp_on && !a->dscp_guard.off;
	st->dscp_guard_us =
	    st->dscp_guard ? (a->dscp_guard.given ? a->dscp_guard.bound_us : MERCURY_DSCP_GUARD_US)
			   : 0;
	p->cfg.dscp_guard = st->dscp_guard;
	p->cfg.dscp_guard_us = st->dscp_guard_us;
	memcpy(p->cfg.dscp, st->dscp, sizeof(p->cfg.dscp));
	st->control_first = a->control != 0;
	p->cfg.control_first = st->control_first;
	st->layout_version = MERCURY_LAYOUT_VERSION;
	st->ifindex = (__u32)a->ifindex;
	st->netns_ino = current_netns_ino();
	return 0;
}

/* ---- apply ---- */

static int pin_iface(struct classifier_bpf *skel, const char *root, const char *iface, char *err,
		     size_t errlen)
{
	struct {
		struct bpf_map *map;
		const char *name;
	} maps[] = {{skel->maps.cfg, PIN_CFG},
		    {skel->maps.stats, PIN_STATS},
		    {skel->maps.attach_state, PIN_STATE},
		    {skel->maps.saved_tree, PIN_SAVED_TREE}};
	char path[PATH_MAX];

	pins_path(path, sizeof(path), root, iface, NULL);
	if (mkdir(path, 0700) && errno != EEXIST)
		goto fail;
	pins_path(path, sizeof(path), root, iface, PIN_PROG);
	unlink(path);
	if (bpf_program__pin(skel->progs.mercury_egress, path))
		goto fail;
	for (size_t i = 0; i < sizeof(maps) / sizeof(maps[0]); i++) {
		pins_path(path, sizeof(path), root, iface, maps[i].name);
		unlink(path);
		if (bpf_map__pin(maps[i].map, path))
			goto fail;
	}
	return 0;
fail:
	snprintf(err, errlen, "cannot pin %s: %s", path, strerror(errno));
	return -errno;
}

/* Records the replaced tree next to the attach record, where detach finds it. */
static int save_tree_map(struct classifier_bpf *skel, const struct tc_tree *tree,
			 struct mercury_attach_state *st)
{
	struct mercury_saved_tree *v;
	__u32 key = 0;
	int r = 0;

	st->saved_tree_len = (__u32)tree->len;
	st->saved_tree_objs = tree->count;
	st->saved_root = tc_tree_root_handle(tree->buf, tree->len);
	if (!tree->len)
		return 0;
	v = calloc(1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	v->len = (__u32)tree->len;
	v->count = tree->count;
	memcpy(v->msgs, tree->buf, tree->len);
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.saved_tree), &key, v, BPF_ANY))
		r = -errno;
	free(v);
	return r;
}

/* Loads the classifier on the shared maps and fills its per-interface maps. 0 or -1 (err). */
static int load_classifier(const char *root, struct attach_plan *p, struct classifier_bpf **out,
			   char *err, size_t errlen)
{
	struct classifier_bpf *skel;
	char why[512];
	__u32 key = 0;
	int r;

	*out = skel = classifier_bpf__open();
	if (skel && pins_use_globals(skel->obj, root, why, sizeof(why))) {
		snprintf(err, errlen, "attach %s: %s", p->a.iface, why);
		return -1;
	}
	if (!skel || classifier_bpf__load(skel)) {
		snprintf(err, errlen,
			 "attach %s: cannot load the classifier: %s (run with -v for the "
			 "verifier log)",
			 p->a.iface, strerror(errno));
		return -1;
	}
	if ((r = save_tree_map(skel, &p->tree, &p->st))) {
		snprintf(err, errlen, "attach %s: cannot record the replaced qdisc tree: %s",
			 p->a.iface, strerror(-r));
		return -1;
	}
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.cfg), &key, &p->cfg, BPF_ANY)) {
		snprintf(err, errlen, "attach %s: cannot write the band configuration: %s",
			 p->a.iface, strerror(errno));
		return -1;
	}
	return 0;
}

/* What was attached before goes first: stale pins, or an attach --force replaces. */
static int clear_previous(const char *root, struct attach_plan *p, char *err, size_t errlen)
{
	const char *iface = p->a.iface;
	char why[512];
	int r;

	if (p->stale_pins)
		iface_unpin_all(root, iface);
	if (!p->replace_old)
		return 0;
	r = iface_teardown(root, iface, &p->old, why, sizeof(why));
	if (r < 0) {
		snprintf(err, errlen, "attach %s: cannot remove the previous attach: %s", iface,
			 why);
		return -1;
	}
	if (r > 0)
		log_warn("%s: %s", iface, why);
	return 0;
}

/* Carries the plan out; *done collects the steps taken, for attach_undo. 0 or -1 (err). */
static int attach_apply(const char *root, struct attach_plan *p, unsigned *done, char *err,
			size_t errlen)
{
	int r = -1;
	struct mercury_attach_state *st = &p->st;
	struct classifier_bpf *skel = NULL;
	struct tc_hook_result hook = {0};
	const char *iface = p->a.iface;
	char why[512];
	__u32 key = 0;

	if (clear_previous(root, p, err, errlen))
		return -1;
	struct qdisc_spec spec = {.ifindex = p->a.ifindex,
				  .backend = st->backend,
				  .nbands = st->nbands,
				  .default_band = st->default_band,
				  .rate_bps = st->rate_bps,
				  .handle = st->qdisc_handle,
				  .job_policy = st->job_policy};
	bool mqprio_hw = false;
	if (st->job_policy == MERCURY_POLICY_SHARE)
		share_weights_read(root, spec.share_weight);
	if (qdisc_install(&spec, &mqprio_hw, p->warn, sizeof(p->warn), why, sizeof(why))) {
		snprintf(err, errlen, "attach %s: %s", iface, why);
		goto out;
	}
	*done |= ATTACH_DID_QDISC;
	st->mqprio_hw = mqprio_hw;
	if (p->warn[0])
		log_warn("%s: %s", iface, p->warn);
	if (load_classifier(root, p, &skel, err, errlen))
		goto out;
	*done |= ATTACH_DID_PINS; /* a failed pin_iface may have pinned some */
	if (pin_iface(skel, root, iface, why, sizeof(why)) ||
	    tc_hook_attach(bpf_program__fd(skel->progs.mercury_egress), p->a.ifindex, p->a.hook,
			   p->link_pin, &hook, why, sizeof(why))) {
		snprintf(err, errlen, "attach %s: %s", iface, why);
		goto out;
	}
	*done |= ATTACH_DID_HOOK;
	iface_state_set_hook(st, &hook);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	st->attached_at_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.attach_state), &key, st, BPF_ANY)) {
		snprintf(err, errlen, "attach %s: cannot write the attach record: %s", iface,
			 strerror(errno));
		goto out;
	}
	r = 0;
out:
	classifier_bpf__destroy(skel);
	return r;
}

/* ---- undo ---- */

/*
 * Puts back the tree attach --force replaced. Replays over the kernel's default root, or over
 * the saved root's own handle (a replay cut short). If someone installed another root since,
 * theirs wins: 1 with err saying so.
 */
static int restore_tree(const char *root, const char *iface, const struct mercury_attach_state *st,
			char *err, size_t errlen)
{
	struct mercury_saved_tree *tree = malloc(sizeof(*tree));
	int r;

	if (!tree)
		return -ENOMEM;
	r = pins_read_value(root, iface, PIN_SAVED_TREE, tree, sizeof(*tree));
	if (r) {
		snprintf(err, errlen, "cannot read the saved qdisc tree (%s/%s/%s): %s", root,
			 iface, PIN_SAVED_TREE, strerror(-r));
	} else if (tree->len > sizeof(tree->msgs) || tree->len != st->saved_tree_len) {
		snprintf(err, errlen,
			 "the saved qdisc tree of %s is inconsistent (%u bytes, %u expected)",
			 iface, tree->len, st->saved_tree_len);
		r = -EPROTO;
	} else {
		r = tc_tree_replay((int)st->ifindex, tree->msgs, tree->len, err, errlen);
	}
	free(tree);
	return r;
}

int iface_undo(const char *root, const char *iface, const struct mercury_attach_state *st,
	       unsigned done, const struct tc_tree *tree, char *err, size_t errlen)
{
	struct tc_hook_result hook;
	char link_pin[PATH_MAX];
	int r = 0;

	err[0] = '\0';
	pins_path(link_pin, sizeof(link_pin), root, iface, PIN_LINK);
	if (done & ATTACH_DID_HOOK) {
		iface_state_hook(st, &hook);
		r = tc_hook_detach((int)st->ifindex, &hook, link_pin, err, errlen);
		if (r)
			return r;
	}
	if (done & ATTACH_DID_QDISC) {
		r = qdisc_remove((int)st->ifindex, st->qdisc_handle, err, errlen);
		if (r && r != -ENOENT)
			return r;
		r = 0;
		if (tree && tree->count)
			r = tc_tree_replay((int)st->ifindex, tree->buf, tree->len, err, errlen);
		else if (!tree && st->saved_tree_len)
			r = restore_tree(root, iface, st, err, errlen);
		if (r == -EBUSY)
			r = 1;
		if (r < 0)
			return r; /* the pins stay: a second detach tries again */
	}
	if (done & ATTACH_DID_PINS)
		iface_unpin_all(root, iface);
	return r > 0 ? 1 : 0;
}

int iface_teardown(const char *root, const char *iface, const struct mercury_attach_state *st,
		   char *err, size_t errlen)
{
	return iface_undo(root, iface, st, ATTACH_DID_ALL, NULL, err, errlen);
}

/* The exact inverse of what attach_apply did: leave nothing half-attached. */
static void attach_undo(const char *root, const struct attach_plan *p, unsigned done, char *err,
			size_t errlen)
{
	char why[256];

	if (iface_undo(root, p->a.iface, &p->st, done, &p->tree, why, sizeof(why)))
		snprintf(err, errlen, "attach %s: undoing: %s", p->a.iface, why);
	fastpath_release_unused(root);
}

/* ---- the transaction ---- */

int iface_attach(const char *root, struct attach_plan *p, char *err, size_t errlen, char *undo_err,
		 size_t undo_errlen)
{
	unsigned done = 0;
	char why[512];
	int lock_fd, r;

	err[0] = undo_err[0] = '\0';
	if ((lock_fd = pins_prepare_lock(root, why, sizeof(why))) < 0) {
		snprintf(err, errlen, "attach %s: %s", p->a.iface, why);
		return ATTACH_FAILED;
	}
	pins_path(p->link_pin, sizeof(p->link_pin), root, p->a.iface, PIN_LINK);
	r = plan_previous(root, p, err, errlen);
	if (r == ATTACH_APPLIED && plan_backend(p, err, errlen))
		r = ATTACH_FAILED;
	if (r == ATTACH_APPLIED && attach_apply(root, p, &done, err, errlen)) {
		attach_undo(root, p, done, undo_err, undo_errlen);
		r = ATTACH_FAILED;
	}
	close(lock_fd);
	return r;
}

void attach_plan_free(struct attach_plan *p)
{
	tc_tree_free(&p->tree);
}
