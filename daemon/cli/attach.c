// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd attach: parses, runs the attach transaction (daemon/loader/iface_attach.c), prints. */
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "attach_args.h"
#include "attach_from.h"
#include "tc/band_plan.h"
#include "cli.h"
#include "loader/iface_attach.h"
#include "loader/iface_pins.h"
#include "loader/pins.h"

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
		json_object_object_add(
		    o, "job_policy",
		    json_object_new_string(job_policy_name(st->job_policy) ?: "?"));
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
	printf(", job policy %s, hook %s, pins %s\n", job_policy_name(st->job_policy) ?: "?",
	       iface_hook_name(st->hook), dir);
	if (st->dscp_on) {
		char map[256];

		dscp_text(st->dscp_on, st->dscp, st->nbands, map, sizeof(map));
		printf("dscp (tagged packets, band 0 first): %s\n", map);
	}
	if (why && *why)
		printf("auto: %s\n", why);
}

static void request_from_args(struct attach_request *r, const struct attach_args *a, int ifindex)
{
	*r = (struct attach_request){.iface = a->iface,
				     .ifindex = ifindex,
				     .backend = a->backend,
				     .hook = a->hook,
				     .bands = a->bands,
				     .rate_bps = a->rate_bps,
				     .default_band = a->default_band,
				     .force = a->force,
				     .dscp = a->dscp,
				     .job_policy = a->job_policy};
}

int do_attach(const struct cli_ctx *ctx, int argc, char **argv)
{
	static struct attach_plan p; /* large: keep it off the stack */
	char err[512] = "", undo_err[512];
	struct attach_args a;
	int ifindex, r;

	memset(&p, 0, sizeof(p));
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
	request_from_args(&p.a, &a, ifindex);
	r = iface_attach(ctx->pin_root, &p, err, sizeof(err), undo_err, sizeof(undo_err));
	if (r == ATTACH_APPLIED)
		print_attached(ctx, a.iface, &p.st, "attached", p.warn, p.why);
	else if (r == ATTACH_ALREADY)
		print_attached(ctx, a.iface, &p.old, "already attached", NULL, NULL);
	else
		cli_error(ctx, "%s", err);
	if (undo_err[0])
		cli_error(ctx, "%s", undo_err);
	attach_plan_free(&p);
	return r == ATTACH_FAILED ? 1 : 0;
}
