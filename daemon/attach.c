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

#define MERCURY_QDISC_HANDLE 0x4d450000u /* root "4d45:" ('ME') */

/* Does the existing attach already give what was asked? Unset arguments match anything. */
static bool attach_matches(const struct mercury_attach_state *st, const struct attach_args *a,
			   int ifindex)
{
	return st->ifindex == (__u32)ifindex &&
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
		json_object_object_add(o, "pins", json_object_new_string(dir));
		if (why && *why)
			json_object_object_add(o, "auto", json_object_new_string(why));
		if (warn && *warn)
			json_object_object_add(o, "warning", json_object_new_string(warn));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
		return;
	}
	printf("%s %s: %s root %x:, %u bands (untagged -> band %u)", how, iface,
	       backend_name(st->backend), st->qdisc_handle >> 16, st->nbands, st->default_band);
	if (st->rate_bps)
		printf(", rate %.0f Mbit/s", st->rate_bps * 8 / 1e6);
	printf(", hook %s, pins %s\n", iface_hook_name(st->hook), dir);
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

int do_attach(const struct cli_ctx *ctx, int argc, char **argv)
{
	char err[512] = "", warn[256] = "", why[512] = "", link_pin[PATH_MAX];
	struct mercury_attach_state st = {0}, old;
	struct mercury_iface_cfg cfg = {0};
	struct classifier_bpf *skel = NULL;
	struct tc_hook_result hook = {0};
	struct tc_tree tree = {0};
	struct attach_args a;
	int globals[GM_COUNT] = {-1, -1, -1, -1}, lock_fd = -1, ifindex, r, ret = 1;
	bool qdisc_done = false, hook_done = false, pinning = false;
	__u32 key = 0;
	bool mqprio_hw = false;
	unsigned num_tx_queues = 1;

	if (attach_args_parse(argc, argv, &a, err, sizeof(err))) {
		cli_error(ctx, "attach: %s", err);
		return 2;
	}
	if (a.help) {
		cli_usage(stdout, &attach_command);
		return 0;
	}
	if (a.from)
		return attach_from_file(ctx, a.from, do_attach);
	ifindex = (int)if_nametoindex(a.iface);
	if (!ifindex) {
		cli_error(ctx, "attach: no interface '%s' (see ip link)", a.iface);
		return 1;
	}
	if (geteuid() != 0) {
		cli_error(ctx, "attach: must run as root (needs CAP_BPF, CAP_NET_ADMIN, "
			       "CAP_SYS_ADMIN for bpffs)");
		return 1;
	}
	if (pins_prepare(ctx->pin_root, err, sizeof(err)) ||
	    (lock_fd = pins_lock(ctx->pin_root, err, sizeof(err))) < 0) {
		cli_error(ctx, "attach %s: %s", a.iface, err);
		return 1;
	}
	pins_path(link_pin, sizeof(link_pin), ctx->pin_root, a.iface, PIN_LINK);

	r = iface_state_read(ctx->pin_root, a.iface, &old);
	if (r == 0 && old.netns_ino != current_netns_ino()) {
		cli_error(
		    ctx,
		    "attach: %s/%s belongs to an interface '%s' of another network namespace; "
		    "give this one its own --pin-root",
		    ctx->pin_root, a.iface, a.iface);
		goto out;
	}
	if (r == 0) {
		struct tc_hook_result h;

		iface_state_hook(&old, &h);
		if (attach_matches(&old, &a, ifindex) && tc_hook_present(ifindex, &h, link_pin)) {
			print_attached(ctx, a.iface, &old, "already attached", NULL, NULL);
			ret = 0;
			goto out;
		}
		if (old.ifindex != (__u32)ifindex) {
			/* The device was deleted and re-created: its old pins are stale. */
			iface_unpin_all(ctx->pin_root, a.iface);
		} else if (!a.force) {
			cli_error(ctx,
				  "attach: %s is already attached (%s, %u bands); detach it first "
				  "or use --force to re-attach with other settings",
				  a.iface, backend_name(old.backend), old.nbands);
			goto out;
		} else if ((r = iface_teardown(ctx->pin_root, a.iface, &old, err, sizeof(err))) <
			   0) {
			cli_error(ctx, "attach %s: cannot remove the previous attach: %s", a.iface,
				  err);
			goto out;
		} else if (r > 0) {
			cli_warn(ctx, "%s: %s", a.iface, err);
		}
	} else if (r != -ENOENT) {
		iface_state_strerror(ctx->pin_root, a.iface, r, err, sizeof(err));
		cli_error(ctx, "attach %s: %s", a.iface, err);
		goto out;
	}

	if (root_qdisc_conflict(ctx, &a, ifindex, &tree, &num_tx_queues, err, sizeof(err))) {
		cli_error(ctx, "attach: %s", err);
		goto out;
	}
	st.backend = a.backend;
	st.rate_bps = a.rate_bps;
	if (st.backend == MERCURY_BACKEND_NONE &&
	    qdisc_pick_auto(ifindex, a.rate_bps, (enum mercury_backend *)&st.backend, why,
			    sizeof(why))) {
		cli_error(ctx, "attach %s: --qdisc auto found no usable backend: %s", a.iface, why);
		goto out;
	}
	if (st.rate_bps == 0 &&
	    (st.backend == MERCURY_BACKEND_HTB || st.backend == MERCURY_BACKEND_TBF) &&
	    a.backend == MERCURY_BACKEND_NONE) {
		/* auto chose a shaper without --rate: shape at the link's speed */
		uint64_t link_rate = 0;

		if (qdisc_link_rate(ifindex, &link_rate) == 0)
			st.rate_bps = link_rate;
	}
	st.nbands = a.bands ? a.bands : backend_default_bands(st.backend);
	if (!a.bands && num_tx_queues >= 2) /* mqprio: no more bands than TX queues */
		st.nbands = band_plan_fit_bands(st.backend, st.nbands, num_tx_queues);
	st.default_band = a.default_band >= 0 ? (unsigned)a.default_band : st.nbands - 1;
	st.qdisc_handle = MERCURY_QDISC_HANDLE;
	if (band_plan(st.backend, st.nbands, st.default_band, st.qdisc_handle, &cfg, err,
		      sizeof(err))) {
		cli_error(ctx, "attach %s: %s", a.iface, err);
		goto out;
	}
	st.nbands = cfg.nbands; /* the backend may have fewer bands than asked (tbf: 3) */
	st.default_band = cfg.default_band;

	struct qdisc_spec spec = {.ifindex = ifindex,
				  .backend = st.backend,
				  .nbands = st.nbands,
				  .default_band = st.default_band,
				  .rate_bps = st.rate_bps,
				  .handle = st.qdisc_handle};
	if (qdisc_install(&spec, &mqprio_hw, warn, sizeof(warn), err, sizeof(err))) {
		cli_error(ctx, "attach %s: %s", a.iface, err);
		goto out;
	}
	qdisc_done = true;
	st.mqprio_hw = mqprio_hw;
	if (warn[0])
		cli_warn(ctx, "%s: %s", a.iface, warn);

	if (pins_global_maps(ctx->pin_root, globals, err, sizeof(err))) {
		cli_error(ctx, "attach %s: %s", a.iface, err);
		goto out;
	}
	skel = classifier_bpf__open();
	if (!skel || pins_reuse_globals(skel->obj, globals) || classifier_bpf__load(skel)) {
		cli_error(ctx,
			  "attach %s: cannot load the classifier: %s (run with -v for the "
			  "verifier log)",
			  a.iface, strerror(errno));
		goto out;
	}
	if ((r = save_tree_map(skel, &tree, &st))) {
		cli_error(ctx, "attach %s: cannot record the replaced qdisc tree: %s", a.iface,
			  strerror(-r));
		goto out;
	}
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.cfg), &key, &cfg, BPF_ANY)) {
		cli_error(ctx, "attach %s: cannot write the band configuration: %s", a.iface,
			  strerror(errno));
		goto out;
	}

	pinning = true;
	if (pin_iface(skel, ctx->pin_root, a.iface, err, sizeof(err)) ||
	    tc_hook_attach(bpf_program__fd(skel->progs.mercury_egress), ifindex, a.hook, link_pin,
			   &hook, err, sizeof(err))) {
		cli_error(ctx, "attach %s: %s", a.iface, err);
		goto out;
	}
	hook_done = true;
	st.layout_version = MERCURY_LAYOUT_VERSION;
	st.ifindex = (__u32)ifindex;
	st.netns_ino = current_netns_ino();
	st.hook = hook.hook;
	st.created_clsact = hook.created_clsact;
	st.tc_handle = hook.tc_handle;
	st.tc_priority = hook.tc_priority;
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	st.attached_at_ns = (__u64)now.tv_sec * 1000000000ull + (__u64)now.tv_nsec;
	if (bpf_map_update_elem(bpf_map__fd(skel->maps.attach_state), &key, &st, BPF_ANY)) {
		cli_error(ctx, "attach %s: cannot write the attach record: %s", a.iface,
			  strerror(errno));
		goto out;
	}
	print_attached(ctx, a.iface, &st, "attached", warn, why);
	ret = 0;
out:
	if (ret) {
		/* Leave nothing half-attached: undo in reverse order. */
		char e2[256];

		if (hook_done)
			tc_hook_detach(ifindex, &hook, link_pin, e2, sizeof(e2));
		if (qdisc_done) {
			qdisc_remove(ifindex, st.qdisc_handle, e2, sizeof(e2));
			if (tree.count &&
			    tc_tree_replay(ifindex, tree.buf, tree.len, e2, sizeof(e2)))
				cli_error(ctx, "attach %s: %s", a.iface, e2);
		}
		if (pinning)
			iface_unpin_all(ctx->pin_root, a.iface);
		fastpath_release_unused(ctx->pin_root);
	}
	classifier_bpf__destroy(skel);
	tc_tree_free(&tree);
	pins_close_globals(globals);
	if (lock_fd >= 0)
		close(lock_fd);
	return ret;
}
