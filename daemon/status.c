/* mercuryd status: what is attached where, and the classifier's counters. */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "band_plan.h"
#include "cli.h"
#include "iface_pins.h"
#include "pins.h"
#include "qdisc.h"
#include "tagged_sockets.h"
#include <bpf/bpf.h>

struct status_walk {
	const struct cli_ctx *ctx;
	struct json_object *list;
	int n;
};

static struct json_object *counter_json(const struct mercury_counter *c)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "packets", json_object_new_int64((int64_t)c->packets));
	json_object_object_add(o, "bytes", json_object_new_int64((int64_t)c->bytes));
	return o;
}

static int show_one(const char *iface, void *arg)
{
	struct status_walk *w = arg;
	const char *root = w->ctx->pin_root;
	struct mercury_attach_state st;
	struct mercury_iface_cfg cfg;
	struct mercury_stats sum;
	const char *hook;
	char dir[PATH_MAX];
	int r;

	if ((r = iface_state_read(root, iface, &st)) || (r = iface_cfg_read(root, iface, &cfg)) ||
	    (r = iface_stats_read(root, iface, &sum))) {
		cli_error(w->ctx, "status %s: %s", iface,
			  r == -ENOENT ? "not attached" : strerror(-r));
		return r;
	}
	w->n++;
	hook = iface_hook_name(st.hook);
	pins_path(dir, sizeof(dir), root, iface, NULL);
	if (w->ctx->json) {
		struct json_object *o = json_object_new_object(), *bands = json_object_new_array(),
				   *outs = json_object_new_object();

		json_object_object_add(o, "iface", json_object_new_string(iface));
		json_object_object_add(o, "ifindex", json_object_new_int((int)st.ifindex));
		json_object_object_add(o, "health",
				       json_object_new_string(iface_health(root, iface, &st)));
		json_object_object_add(o, "backend",
				       json_object_new_string(backend_name(st.backend)));
		json_object_object_add(o, "bands", json_object_new_int((int)st.nbands));
		json_object_object_add(o, "default_band",
				       json_object_new_int((int)st.default_band));
		json_object_object_add(o, "rate_bps", json_object_new_int64((int64_t)st.rate_bps));
		json_object_object_add(o, "hook", json_object_new_string(hook));
		json_object_object_add(o, "qdisc_handle",
				       json_object_new_int64(st.qdisc_handle >> 16));
		json_object_object_add(o, "mqprio_hw", json_object_new_boolean(st.mqprio_hw));
		json_object_object_add(o, "replaced_root_saved",
				       json_object_new_boolean(st.saved_tree_len > 0));
		json_object_object_add(o, "attached_at_ns",
				       json_object_new_int64((int64_t)st.attached_at_ns));
		json_object_object_add(o, "pins", json_object_new_string(dir));
		for (unsigned b = 0; b < st.nbands && b < MERCURY_MAX_BANDS; b++) {
			struct json_object *c = counter_json(&sum.band[b]);

			json_object_object_add(c, "band", json_object_new_int((int)b));
			json_object_object_add(c, "skb_priority",
					       json_object_new_int64(cfg.skb_priority[b]));
			json_object_array_add(bands, c);
		}
		json_object_object_add(o, "per_band", bands);
		for (int i = 0; i < MERCURY_OUT_MAX; i++)
			json_object_object_add(outs, iface_outcome_name(i),
					       counter_json(&sum.outcome[i]));
		json_object_object_add(o, "outcomes", outs);
		json_object_array_add(w->list, o);
		return 0;
	}
	printf("%s: %s, %s root %x:, %u bands, untagged -> band %u, hook %s", iface,
	       iface_health(root, iface, &st), backend_name(st.backend), st.qdisc_handle >> 16,
	       st.nbands, st.default_band, hook);
	if (st.rate_bps)
		printf(", rate %.0f Mbit/s", st.rate_bps * 8 / 1e6);
	printf("\n  pins: %s\n  band  skb_priority      packets          bytes\n", dir);
	for (unsigned b = 0; b < st.nbands && b < MERCURY_MAX_BANDS; b++)
		printf("  %4u  0x%08x  %12llu  %14llu\n", b, cfg.skb_priority[b],
		       (unsigned long long)sum.band[b].packets,
		       (unsigned long long)sum.band[b].bytes);
	printf("  outcome           packets          bytes\n");
	for (int i = 0; i < MERCURY_OUT_MAX; i++)
		printf("  %-10s  %12llu  %14llu\n", iface_outcome_name(i),
		       (unsigned long long)sum.outcome[i].packets,
		       (unsigned long long)sum.outcome[i].bytes);
	return 0;
}

#define STATUS_MAX_LISTED 256

static void add_tagged(const struct tagged_socket *t, void *arg)
{
	struct json_object *list = arg, *o;

	if (!list || json_object_array_length(list) >= STATUS_MAX_LISTED)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "cookie", json_object_new_int64((int64_t)t->cookie));
	json_object_object_add(o, "owner", json_object_new_int64((int64_t)t->owner));
	json_object_object_add(o, "ranges", json_object_new_int((int)t->ranges));
	json_object_array_add(list, o);
}

/* Sockets holding tags, over every interface (the tag map is shared): 0 when there is no tag
 * map, -errno when the kernel refuses the iterator that lists them. */
static int tagged_count(const struct cli_ctx *ctx, struct json_object *list)
{
	char path[PATH_MAX];
	int fd, n;

	pins_path(path, sizeof(path), ctx->pin_root, NULL, "sock_tags");
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	n = tagged_sockets_walk(fd, add_tagged, list);
	close(fd);
	return n;
}

int do_status(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct status_walk w = {.ctx = ctx};
	int r;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: mercuryd status [<iface>]\n\n"
		       "Shows each attached interface: backend, bands, hook, health, pins and the\n"
		       "classifier's per-band and per-outcome counters.\n");
		return 0;
	}
	if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
		cli_error(ctx, "status: takes at most one interface: mercuryd status [<iface>]");
		return 2;
	}
	if (argc == 2 && !if_nametoindex(argv[1]) && access(ctx->pin_root, F_OK)) {
		cli_error(ctx, "status: no interface '%s' (see ip link)", argv[1]);
		return 1;
	}
	w.list = json_object_new_array();
	r = argc == 2 ? show_one(argv[1], &w) : iface_for_each(ctx->pin_root, show_one, &w);
	if (ctx->json && r == 0) {
		struct json_object *o = json_object_new_object(), *tagged = json_object_new_array();
		int n = tagged_count(ctx, tagged);

		json_object_object_add(o, "pin_root", json_object_new_string(ctx->pin_root));
		/* null, not 0, when they cannot be counted (a kernel refusing tracing programs) */
		json_object_object_add(o, "tagged_sockets", n < 0 ? NULL : json_object_new_int(n));
		if (n < 0)
			json_object_object_add(o, "tagged_sockets_error",
					       json_object_new_string(strerror(-n)));
		json_object_object_add(o, "tagged", tagged);
		json_object_object_add(o, "interfaces", json_object_get(w.list));
		printf("%s\n", json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN));
		json_object_put(o);
	} else if (r == 0 && w.n == 0) {
		printf("no interface attached (pin root %s)\n", ctx->pin_root);
	} else if (r == 0) {
		int n = tagged_count(ctx, NULL);

		if (n >= 0)
			printf("sockets holding tags: %d\n", n);
		else
			printf(
			    "sockets holding tags: unknown (the kernel refused the iterator that "
			    "lists them: %s)\n",
			    strerror(-n));
	}
	json_object_put(w.list);
	return r ? 1 : 0;
}
