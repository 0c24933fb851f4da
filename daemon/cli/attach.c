// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd attach: root qdisc backend + classifier at TC egress, pinned so it outlives us. */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <json-c/json.h>

#include "attach_args.h"
#include "attach_from.h"
#include "band_plan.h"
#include "cli.h"
#include "fastpath.h"
#include "iface_pins.h"
#include "pins.h"
#include "qdisc.h"
#include "tc_hook.h"
#include "tc_tree.h"
#include "classifier.skel.h"

/* Does the attach record carry the DSCP export asked for? Not given: anything matches. */
static bool dscp_matches(const struct mercury_attach_state *st, const struct attach_args *a)
{
	uint8_t want[MERCURY_MAX_BANDS];
	char err[128];

	if (!a->dscp.given)
		return true;
	if (!a->dscp.on || !st->dscp_on)
		return a->dscp.on == (bool)st->dscp_on;
	if (dscp_opt_fill(&a->dscp, st->nbands, want, err, sizeof(err)))
		return false;
	return memcmp(want, st->dscp, st->nbands < MERCURY_MAX_BANDS ? st->nbands : 0) == 0;
}

/* Does the existing attach already give what was asked? Unset arguments match anything. */
static bool attach_matches(const struct mercury_attach_state *st, const struct attach_args *a,
			   int ifindex)
{
	return st->ifindex == (__u32)ifindex && dscp_matches(st, a) &&
	       (a->backend == MERCURY_BACKEND_NONE || a->backend == st->backend) &&
	       (a->bands == 0 || a->bands == st->nbands) &&
	       (a->default_band < 0 || (__u32)a->default_band == st->default_band) &&
	       (a->rate_bps == 0 || a->rate_bps == st->rate_bps) &&
	       (a->hook == MERCURY_HOOK_NONE || a->hook == st->hook);
}

static void print_attached(const struct cli_ctx *ctx, const char *iface,
			   const struct mercury_attach_state *st, const char *how, const char *warn,
			   const char *why)
{
	char dir[PATH_MAX];

	pins_path(dir, sizeof(dir), ctx->pin_root, iface, NULL);
	if (ctx->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "iface", json_object_new_string(iface));
		json_object_object_add(o, "result", json_object_new_string(how));
		json_object_object_add(o, "backend",
				       json_object_new_string(backend_name(st->backend)));
		json_object_object_add(o, "bands", json_object_new_int((int)st->nbands));
		json_object_object_add(o, "default_band",
				       json_object_new_int((int)st->default_band));
		json_object_object_add(o, "rate_bps", json_object_new_int64((int64_t)st->rate_bps));
		json_object_object_add(o, "hook",
				       json_object_new_string(iface_hook_name(st->hook)));
		json_object_object_add(o, "qdisc_handle",
				       json_object_new_int64(st->qdisc_handle >> 16));
		json_object_object_add(o, "mqprio_hw", json_object_new_boolean(st->mqprio_hw));
		json_object_object_add(o, "dscp", dscp_json(st->dscp_on, st->dscp, st->nbands));
		json_object_object_add(o, "pins", json_object_new_string(dir));
		if (why && *why)
			json_object_object_add(o, "auto", json_object_new_string(why));
		if (warn && *warn)
			json_object_object_add(o, "warning", json_object_new_string(warn));
		cli_json_print(ctx, o);
		return;
	}
	printf("%s %s: %s root %x:, %u bands (untagged -> band %u)", how, iface,
	       backend_name(st->backend), st->qdisc_handle >> 16, st->nbands, st->default_band);
	if (st->rate_bps)
		printf(", rate %.0f Mbit/s", st->rate_bps * 8 / 1e6);
	printf(", hook %s, pins %s\n", iface_hook_name(st->hook), dir);
	if (st->dscp_on) {
		char map[256];

		dscp_text(st->dscp_on, st->dscp, st->nbands, map, sizeof(map));
		printf("dscp (tagged packets, band 0 first): %s\n", map);
	}
	if (why && *why)
		printf("auto: %s\n", why);
}

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

/*
 * A root qdisc Mercury did not create is replaced only with --force, and only if its whole
 * tree can be put back exactly: it is saved into *tree and re-created on a scratch device
 * first. Nothing on the interface changes before that check passes.
 */
static int root_qdisc_conflict(const struct cli_ctx *ctx, const struct attach_args *a, int ifindex,
			       struct tc_tree *tree, unsigned *num_tx_queues, char *err,
			       size_t errlen)
{
	struct qdisc_root root;
	char why[384];
	int r = qdisc_get_root(ifindex, &root, err, errlen);

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
	r = tc_tree_save(ifindex, tree, err, errlen);
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
	cli_warn(ctx,
		 "replacing root qdisc '%s %x:' of %s (%u qdiscs, classes and filters); detach "
		 "will restore them",
		 root.kind, root.handle >> 16, a->iface, tree->count);
	return 0;
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

/* Everything attach decides before it changes anything on the interface. */
struct attach_plan {
	struct attach_args a;
	int ifindex;
	char link_pin[PATH_MAX];
	bool stale_pins;		 /* pins of a device since deleted and re-created */
	bool replace_old;		 /* --force over an attach with other settings */
	struct mercury_attach_state old; /* that attach */
	struct mercury_attach_state st;	 /* the record this attach writes */
	struct mercury_iface_cfg cfg;	 /* the classifier's band configuration */
	struct tc_tree tree;		 /* a foreign root's tree: replaced, restored on detach */
	char why[512];			 /* why auto chose its backend */
};

/* What is attached already: 0 go on, 1 attached as asked (printed), -1 refused (printed). */
static int plan_previous(const struct cli_ctx *ctx, struct attach_plan *p)
{
	const char *iface = p->a.iface;
	struct tc_hook_result h;
	char err[512];
	int r = iface_state_read(ctx->pin_root, iface, &p->old);

	if (r == -ENOENT)
		return 0;
	if (r) {
		iface_state_strerror(ctx->pin_root, iface, r, err, sizeof(err));
		cli_error(ctx, "attach %s: %s", iface, err);
		return -1;
	}
	if (p->old.netns_ino != current_netns_ino()) {
		cli_error(ctx,
			  "attach: %s/%s belongs to an interface '%s' of another network "
			  "namespace; give this one its own --pin-root",
			  ctx->pin_root, iface, iface);
		return -1;
	}
	iface_state_hook(&p->old, &h);
	if (attach_matches(&p->old, &p->a, p->ifindex) &&
	    tc_hook_present(p->ifindex, &h, p->link_pin)) {
		print_attached(ctx, iface, &p->old, "already attached", NULL, NULL);
		return 1;
	}
	if (p->old.ifindex != (__u32)p->ifindex) {
		p->stale_pins = true; /* the device was deleted and re-created */
		return 0;
	}
	if (!p->a.force) {
		cli_error(ctx,
			  "attach: %s is already attached (%s, %u bands); detach it first or use "
			  "--force to re-attach with other settings",
			  iface, backend_name(p->old.backend), p->old.nbands);
		return -1;
	}
	p->replace_old = true;
	return 0;
}

/* Backend, rate and bands: what the new root qdisc and the classifier will be. */
static int plan_backend(const struct cli_ctx *ctx, struct attach_plan *p)
{
	struct mercury_attach_state *st = &p->st;
	const struct attach_args *a = &p->a;
	unsigned num_tx_queues = 1;
	char err[512];

	if (root_qdisc_conflict(ctx, a, p->ifindex, &p->tree, &num_tx_queues, err, sizeof(err))) {
		cli_error(ctx, "attach: %s", err);
		return -1;
	}
	st->backend = a->backend;
	st->rate_bps = a->rate_bps;
	if (st->backend == MERCURY_BACKEND_NONE &&
	    qdisc_pick_auto(p->ifindex, a->rate_bps, (enum mercury_backend *)&st->backend, p->why,
			    sizeof(p->why))) {
		cli_error(ctx, "attach %s: --qdisc auto found no usable backend: %s", a->iface,
			  p->why);
		return -1;
	}
	if (st->rate_bps == 0 && a->backend == MERCURY_BACKEND_NONE &&
	    (st->backend == MERCURY_BACKEND_HTB || st->backend == MERCURY_BACKEND_TBF)) {
		uint64_t link_rate = 0; /* auto chose a shaper: the link's speed */

		if (qdisc_link_rate(p->ifindex, &link_rate) == 0)
			st->rate_bps = link_rate;
	}
	st->nbands = a->bands ? a->bands : backend_default_bands(st->backend);
	if (!a->bands && num_tx_queues >= 2) /* mqprio: no more bands than TX queues */
		st->nbands = band_plan_fit_bands(st->backend, st->nbands, num_tx_queues);
	st->default_band = a->default_band >= 0 ? (unsigned)a->default_band : st->nbands - 1;
	st->qdisc_handle = MERCURY_QDISC_HANDLE;
	if (band_plan(st->backend, st->nbands, st->default_band, st->qdisc_handle, &p->cfg, err,
		      sizeof(err))) {
		cli_error(ctx, "attach %s: %s", a->iface, err);
		return -1;
	}
	st->nbands = p->cfg.nbands; /* the backend may have fewer bands than asked (tbf: 3) */
	st->default_band = p->cfg.default_band;
	if (dscp_opt_fill(&a->dscp, st->nbands, st->dscp, err, sizeof(err))) {
		cli_error(ctx, "attach %s: %s", a->iface, err);
		return -1;
	}
	st->dscp_on = a->dscp.on;
	p->cfg.order_guard_us = MERCURY_ORDER_GUARD_US;
	p->cfg.dscp_on = st->dscp_on;
	memcpy(p->cfg.dscp, st->dscp, sizeof(p->cfg.dscp));
	st->layout_version = MERCURY_LAYOUT_VERSION;
	st->ifindex = (__u32)p->ifindex;
	st->netns_ino = current_netns_ino();
	return 0;
}

/* Loads the classifier on the shared maps and fills its per-interface maps. */
static int load_classifier(const struct cli_ctx *ctx, struct attach_plan *p,
			   struct classifier_bpf **out)
{
	struct classifier_bpf *skel;
	char err[512];
	__u32 key = 0;
	int r;

	*out = skel = classifier_bpf__open();
	if (skel && pins_use_globals(skel->obj, ctx->pin_root, err, sizeof(err))) {
		cli_error(ctx, "attach %s: %s", p->a.iface, err);
		return -1;
	}
	if (!skel || classifier_bpf__load(skel)) {
		cli_error(ctx,
			  "attach %s: cannot load the classifier: %s (run with -v for the "
			  "verifier log)",
			  p->a.iface, strerror(errno));
		return -1;
	}
	if ((r = save_tree_map(skel, &p->tree, &p->st))) {
		cli_error(ctx, "attach %s: cannot record the replaced qdisc tree: %s", p->a.iface,
			  strerror(-r));
		return -1;
	}
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.cfg), &key, &p->cfg, BPF_ANY)) {
		cli_error(ctx, "attach %s: cannot write the band configuration: %s", p->a.iface,
			  strerror(errno));
		return -1;
	}
	return 0;
}

/* Carries the plan out; *done collects the steps taken, for attach_undo. 0 or -1 (printed). */
static int attach_apply(const struct cli_ctx *ctx, struct attach_plan *p, unsigned *done,
			char *warn, size_t warnlen)
{
	int r = -1;
	struct mercury_attach_state *st = &p->st;
	struct classifier_bpf *skel = NULL;
	struct tc_hook_result hook = {0};
	const char *iface = p->a.iface;
	char err[512];
	__u32 key = 0;

	if (p->stale_pins)
		iface_unpin_all(ctx->pin_root, iface);
	if (p->replace_old) {
		r = iface_teardown(ctx->pin_root, iface, &p->old, err, sizeof(err));
		if (r < 0) {
			cli_error(ctx, "attach %s: cannot remove the previous attach: %s", iface,
				  err);
			return -1;
		}
		if (r > 0)
			cli_warn(ctx, "%s: %s", iface, err);
		r = -1;
	}
	struct qdisc_spec spec = {p->ifindex,	    st->backend,  st->nbands,
				  st->default_band, st->rate_bps, st->qdisc_handle};
	bool mqprio_hw = false;
	if (qdisc_install(&spec, &mqprio_hw, warn, warnlen, err, sizeof(err))) {
		cli_error(ctx, "attach %s: %s", iface, err);
		goto out;
	}
	*done |= ATTACH_DID_QDISC;
	st->mqprio_hw = mqprio_hw;
	if (warn[0])
		cli_warn(ctx, "%s: %s", iface, warn);
	if (load_classifier(ctx, p, &skel))
		goto out;
	*done |= ATTACH_DID_PINS; /* a failed pin_iface may have pinned some */
	if (pin_iface(skel, ctx->pin_root, iface, err, sizeof(err)) ||
	    tc_hook_attach(bpf_program__fd(skel->progs.mercury_egress), p->ifindex, p->a.hook,
			   p->link_pin, &hook, err, sizeof(err))) {
		cli_error(ctx, "attach %s: %s", iface, err);
		goto out;
	}
	*done |= ATTACH_DID_HOOK;
	iface_state_set_hook(st, &hook);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	st->attached_at_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.attach_state), &key, st, BPF_ANY)) {
		cli_error(ctx, "attach %s: cannot write the attach record: %s", iface,
			  strerror(errno));
		goto out;
	}
	r = 0;
out:
	classifier_bpf__destroy(skel);
	return r;
}

/* The exact inverse of what attach_apply did: leave nothing half-attached. */
static void attach_undo(const struct cli_ctx *ctx, const struct attach_plan *p, unsigned done)
{
	char err[256];

	if (iface_undo(ctx->pin_root, p->a.iface, &p->st, done, &p->tree, err, sizeof(err)))
		cli_error(ctx, "attach %s: undoing: %s", p->a.iface, err);
	fastpath_release_unused(ctx->pin_root);
}

int do_attach(const struct cli_ctx *ctx, int argc, char **argv)
{
	static struct attach_plan p; /* large: keep it off the stack */
	char err[512] = "", warn[256] = "";
	unsigned done = 0;
	int lock_fd, r, ret = 1;

	memset(&p, 0, sizeof(p));
	if (attach_args_parse(argc, argv, &p.a, err, sizeof(err))) {
		cli_error(ctx, "attach: %s", err);
		return 2;
	}
	if (p.a.help) {
		cli_usage(stdout, &attach_command);
		return 0;
	}
	if (p.a.from)
		return attach_from_file(ctx, p.a.from, do_attach);
	p.ifindex = (int)if_nametoindex(p.a.iface);
	if (!p.ifindex) {
		cli_error(ctx, "attach: no interface '%s' (see ip link)", p.a.iface);
		return 1;
	}
	if (geteuid() != 0) {
		cli_error(ctx, "attach: must run as root (needs CAP_BPF, CAP_NET_ADMIN, "
			       "CAP_SYS_ADMIN for bpffs)");
		return 1;
	}
	if (pins_prepare(ctx->pin_root, err, sizeof(err)) ||
	    (lock_fd = pins_lock(ctx->pin_root, err, sizeof(err))) < 0) {
		cli_error(ctx, "attach %s: %s", p.a.iface, err);
		return 1;
	}
	pins_path(p.link_pin, sizeof(p.link_pin), ctx->pin_root, p.a.iface, PIN_LINK);
	r = plan_previous(ctx, &p);
	if (r == 0)
		r = plan_backend(ctx, &p);
	if (r == 0 && attach_apply(ctx, &p, &done, warn, sizeof(warn)) == 0) {
		print_attached(ctx, p.a.iface, &p.st, "attached", warn, p.why);
		ret = 0;
	} else if (r == 0) {
		attach_undo(ctx, &p, done);
	}
	if (r == 1)
		ret = 0; /* already attached as asked */
	tc_tree_free(&p.tree);
	close(lock_fd);
	return ret;
}
