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
#include "tc/qdisc.h"
#include "tc/rise_bound.h"
#include "cli.h"
#include "log.h"
#include "loader/iface_attach.h"
#include "loader/iface_pins.h"
#include "loader/pins.h"

/*
 * htb: the time a level rise takes at most (rise_bound.h), from the bands' guaranteed rate and
 * this network namespace's tcp_limit_output_bytes; a warning with the limit that would bound
 * it by RISE_TARGET_US. 0 and no output for backends without a guaranteed rate per band.
 */
#define RISE_TARGET_US 1000000ull
static uint64_t rise_report(const struct mercury_attach_state *st, uint64_t *tsq, uint64_t *r)
{
	uint64_t b, want;

	if (st->backend != MERCURY_BACKEND_HTB || !st->rate_bps || rise_read_tsq(tsq))
		return 0;
	*r = qdisc_htb_band_rate(st->rate_bps, st->nbands); /* a job's bands, either policy */
	b = rise_bound_us(MERCURY_ORDER_GUARD_US, *tsq, *r);
	if (b > RISE_TARGET_US) {
		want = rise_tsq_for(MERCURY_ORDER_GUARD_US, RISE_TARGET_US, *r);
		if (want)
			log_warn("a level rise may take up to %.1f s here: sockets keep up to "
				 "net.ipv4.tcp_limit_output_bytes (%llu) below TCP, draining at a "
				 "band's guaranteed %.2f Mbit/s; set it to %llu or less in this "
				 "network namespace for 1 s",
				 b / 1e6, (unsigned long long)*tsq, *r * 8 / 1e6,
				 (unsigned long long)want);
		else
			log_warn("a level rise may take up to %.1f s here: a band's guaranteed "
				 "%.2f Mbit/s drains less than two GSO packets in 1 s",
				 b / 1e6, *r * 8 / 1e6);
	}
	return b;
}

static void print_attached(const struct cli_ctx *ctx, const char *iface,
			   const struct mercury_attach_state *st, const char *how, const char *warn,
			   const char *why)
{
	char dir[PATH_MAX];
	uint64_t tsq = 0, r = 0, rise = rise_report(st, &tsq, &r);

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
		json_object_object_add(o, "control",
				       json_object_new_string(control_name(st->control_first)));
		json_object_object_add(o, "pins", json_object_new_string(dir));
		if (why && *why)
			json_object_object_add(o, "auto", json_object_new_string(why));
		if (warn && *warn)
			json_object_object_add(o, "warning", json_object_new_string(warn));
		if (rise) {
			json_object_object_add(o, "band_rate_bps",
					       json_object_new_int64((int64_t)r));
			json_object_object_add(o, "tcp_limit_output_bytes",
					       json_object_new_int64((int64_t)tsq));
			json_object_object_add(o, "rise_bound_us",
					       json_object_new_int64((int64_t)rise));
		}
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
	if (rise)
		printf("level rise: within %.2f s (each band guaranteed %.2f Mbit/s, "
		       "tcp_limit_output_bytes %llu)\n",
		       rise / 1e6, r * 8 / 1e6, (unsigned long long)tsq);
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
				     .dscp_guard = a->dscp_guard,
				     .job_policy = a->job_policy,
				     .control = a->control};
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
		struct attach_args d;

		attach_args_defaults(&d);
		cli_usage(stdout, &attach_command, &d);
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
