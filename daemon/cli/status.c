// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd status: what is attached where, and the classifier's counters. */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "tc/band_plan.h"
#include "attach_args.h"
#include "cli.h"
#include "loader/fastpath.h"
#include "loader/iface_pins.h"
#include "loader/pins.h"
#include "tc/qdisc.h"
#include "service/tagged_sockets.h"
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

/* One interface as JSON: its record, configuration and counters. */
static struct json_object *status_json(const char *root, const char *iface, const char *dir,
				       const struct mercury_attach_state *st,
				       const struct mercury_iface_cfg *cfg,
				       const struct mercury_stats *sum)
{
	struct json_object *o = json_object_new_object(), *bands = json_object_new_array(),
			   *outs = json_object_new_object();

	json_object_object_add(o, "iface", json_object_new_string(iface));
	json_object_object_add(o, "ifindex", json_object_new_int((int)st->ifindex));
	json_object_object_add(o, "health", json_object_new_string(iface_health(root, iface, st)));
	json_object_object_add(o, "backend", json_object_new_string(backend_name(st->backend)));
	json_object_object_add(o, "bands", json_object_new_int((int)st->nbands));
	json_object_object_add(o, "default_band", json_object_new_int((int)st->default_band));
	/* TCP segments without payload: band 0 (and band 0's DSCP) or as untagged traffic */
	json_object_object_add(o, "control",
			       json_object_new_string(control_name(cfg->control_first)));
	json_object_object_add(o, "rate_bps", json_object_new_int64((int64_t)st->rate_bps));
	json_object_object_add(o, "job_policy",
			       json_object_new_string(job_policy_name(st->job_policy) ?: "?"));
	json_object_object_add(o, "hook", json_object_new_string(iface_hook_name(st->hook)));
	json_object_object_add(o, "qdisc_handle", json_object_new_int64(st->qdisc_handle >> 16));
	json_object_object_add(o, "mqprio_hw", json_object_new_boolean(st->mqprio_hw));
	json_object_object_add(o, "replaced_root_saved",
			       json_object_new_boolean(st->saved_tree_len > 0));
	json_object_object_add(o, "attached_at_ns",
			       json_object_new_int64((int64_t)st->attached_at_ns));
	json_object_object_add(o, "pins", json_object_new_string(dir));
	for (unsigned b = 0; b < st->nbands && b < MERCURY_MAX_BANDS; b++) {
		struct json_object *c = counter_json(&sum->band[b]);

		json_object_object_add(c, "band", json_object_new_int((int)b));
		json_object_object_add(c, "skb_priority",
				       json_object_new_int64(cfg->skb_priority[b]));
		json_object_array_add(bands, c);
	}
	json_object_object_add(o, "per_band", bands);
	for (int i = 0; i < MERCURY_OUT_MAX; i++)
		json_object_object_add(outs, iface_outcome_name(i), counter_json(&sum->outcome[i]));
	json_object_object_add(o, "outcomes", outs);
	/* packets held in their socket's previous band to keep its stream in order */
	json_object_object_add(o, "order_kept", counter_json(&sum->order_kept));
	/* rises let through by the guard's bound, and the bound */
	json_object_object_add(o, "order_released", counter_json(&sum->order_released));
	json_object_object_add(o, "order_guard_us",
			       json_object_new_int64((int64_t)cfg->order_guard_us));
	/* the band -> DSCP map the classifier reads (null: off), and what it marked */
	json_object_object_add(o, "dscp", dscp_json(cfg->dscp_on, cfg->dscp, st->nbands));
	json_object_object_add(o, "dscp_marked", counter_json(&sum->dscp_marked));
	/* the fabric order guard: on or off, its bound, what it held and let through */
	json_object_object_add(o, "dscp_guard", json_object_new_boolean(cfg->dscp_guard != 0));
	json_object_object_add(o, "dscp_guard_us",
			       json_object_new_int64((int64_t)cfg->dscp_guard_us));
	json_object_object_add(o, "dscp_kept", counter_json(&sum->dscp_kept));
	json_object_object_add(o, "dscp_released", counter_json(&sum->dscp_released));
	return o;
}

/* The same as text. */
static void status_text(const char *root, const char *iface, const char *dir,
			const struct mercury_attach_state *st, const struct mercury_iface_cfg *cfg,
			const struct mercury_stats *sum)
{
	printf("%s: %s, %s root %x:, %u bands, untagged -> band %u, hook %s", iface,
	       iface_health(root, iface, st), backend_name(st->backend), st->qdisc_handle >> 16,
	       st->nbands, st->default_band, iface_hook_name(st->hook));
	if (st->rate_bps)
		printf(", rate %.0f Mbit/s", st->rate_bps * 8 / 1e6);
	printf(", job policy %s", job_policy_name(st->job_policy) ?: "?");
	printf(", ACKs/SYN/FIN/RST -> %s", cfg->control_first ? "band 0" : "as untagged");
	printf("\n  pins: %s\n  band  skb_priority      packets          bytes\n", dir);
	for (unsigned b = 0; b < st->nbands && b < MERCURY_MAX_BANDS; b++)
		printf("  %4u  0x%08x  %12llu  %14llu\n", b, cfg->skb_priority[b],
		       (unsigned long long)sum->band[b].packets,
		       (unsigned long long)sum->band[b].bytes);
	printf("  outcome           packets          bytes\n");
	for (int i = 0; i < MERCURY_OUT_MAX; i++)
		printf("  %-10s  %12llu  %14llu\n", iface_outcome_name(i),
		       (unsigned long long)sum->outcome[i].packets,
		       (unsigned long long)sum->outcome[i].bytes);
	printf("  kept in their socket's previous band (stream order): %llu packets, %llu bytes\n",
	       (unsigned long long)sum->order_kept.packets,
	       (unsigned long long)sum->order_kept.bytes);
	printf("  moved up past the order guard's bound (%.1f ms): %llu packets\n",
	       cfg->order_guard_us / 1000.0, (unsigned long long)sum->order_released.packets);
	{
		char map[256];

		dscp_text(cfg->dscp_on, cfg->dscp, st->nbands, map, sizeof(map));
		printf("  dscp of tagged packets%s: %s",
		       cfg->dscp_on && cfg->control_first
			   ? " (and of unmarked ACKs/SYN/FIN/RST: band 0's)"
			   : "",
		       map);
		if (cfg->dscp_on)
			printf("; marked %llu packets, %llu bytes",
			       (unsigned long long)sum->dscp_marked.packets,
			       (unsigned long long)sum->dscp_marked.bytes);
		printf("\n");
		if (cfg->dscp_on && cfg->dscp_guard) {
			printf("  kept their socket's previous DSCP (bytes before unacknowledged): "
			       "%llu packets, %llu bytes\n",
			       (unsigned long long)sum->dscp_kept.packets,
			       (unsigned long long)sum->dscp_kept.bytes);
			if (cfg->dscp_guard_us)
				printf("  moved up past the fabric guard's bound (%.1f ms): %llu "
				       "packets\n",
				       cfg->dscp_guard_us / 1000.0,
				       (unsigned long long)sum->dscp_released.packets);
			else
				printf("  fabric guard without bound\n");
		} else if (cfg->dscp_on) {
			printf("  fabric guard off\n");
		}
	}
}

static int show_one(const char *iface, void *arg)
{
	struct status_walk *w = arg;
	const char *root = w->ctx->pin_root;
	struct mercury_attach_state st;
	struct mercury_iface_cfg cfg;
	struct mercury_stats sum;
	char dir[PATH_MAX];
	int r;

	if ((r = iface_state_read(root, iface, &st)) || (r = iface_cfg_read(root, iface, &cfg)) ||
	    (r = iface_stats_read(root, iface, &sum))) {
		char why[512];

		if (r == -EPROTO) /* another layout: say how to clear it */
			iface_state_strerror(root, iface, r, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "%s",
				 r == -ENOENT ? "not attached" : strerror(-r));
		cli_error(w->ctx, "status %s: %s", iface, why);
		return r;
	}
	w->n++;
	pins_path(dir, sizeof(dir), root, iface, NULL);
	if (w->ctx->json)
		json_object_array_add(w->list, status_json(root, iface, dir, &st, &cfg, &sum));
	else
		status_text(root, iface, dir, &st, &cfg, &sum);
	return 0;
}

#define STATUS_MAX_LISTED 256

static void add_tagged(const struct tagged_socket *t, void *arg)
{
	struct json_object *list = arg, *o;

	if (!list || json_object_array_length(list) >= STATUS_MAX_LISTED)
		return;
	o = json_object_new_object();
	json_object_object_add(o, "cookie", json_object_new_uint64(t->cookie));
	json_object_object_add(o, "owner", json_object_new_uint64(t->owner));
	if (t->owner & MERCURY_OWNER_FAST) /* tagged by this process through the fast path */
		json_object_object_add(
		    o, "fastpath_pid",
		    json_object_new_int64((int64_t)(t->owner & ~MERCURY_OWNER_FAST)));
	json_object_object_add(o, "ranges", json_object_new_int((int)t->ranges));
	json_object_array_add(list, o);
}

/* Sockets holding tags, over every interface (the tag map is shared): 0 when there is no tag
 * map, -errno when the kernel refuses both ways of listing them; *via: which way answered. */
static int tagged_count(const struct cli_ctx *ctx, struct json_object *list, const char **via)
{
	char path[PATH_MAX];
	int fd, n;

	*via = NULL;
	pins_path(path, sizeof(path), ctx->pin_root, NULL, "sock_tags");
	fd = bpf_obj_get(path);
	if (fd < 0)
		return 0;
	n = tagged_sockets_walk(fd, add_tagged, list, via);
	close(fd);
	return n;
}

/* The published job state (the "jobs" map the classifier reads): active slots only. */
static struct json_object *jobs_json(const struct cli_ctx *ctx)
{
	struct json_object *list = json_object_new_array();
	char path[PATH_MAX];
	int fd;

	pins_path(path, sizeof(path), ctx->pin_root, NULL, global_maps[GM_JOBS].name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		return list;
	for (uint32_t i = 0; i < MERCURY_MAX_JOBS; i++) {
		struct mercury_job_state js;
		struct json_object *o;

		if (bpf_map_lookup_elem(fd, &i, &js) || !js.active)
			continue;
		o = json_object_new_object();
		json_object_object_add(o, "slot", json_object_new_int((int)i));
		json_object_object_add(o, "uid", json_object_new_int64(js.uid));
		json_object_object_add(o, "job", json_object_new_int64(js.job));
		json_object_object_add(o, "layers", json_object_new_int64(js.n_layers));
		json_object_object_add(o, "weight", json_object_new_int64(js.weight));
		json_object_object_add(o, "shift", json_object_new_int64(js.shift));
		json_object_object_add(o, "oldest_open_iteration",
				       js.has_open ? json_object_new_int64((int64_t)js.oldest_open)
						   : NULL);
		json_object_array_add(list, o);
	}
	close(fd);
	return list;
}

static struct json_object *fastpath_json(const struct cli_ctx *ctx)
{
	struct mercury_fastpath_state st;
	struct json_object *o;
	unsigned prog_id;

	if (fastpath_state(ctx->pin_root, &st, &prog_id))
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "cgroup", json_object_new_string(st.cgroup));
	json_object_object_add(o, "prog_id", json_object_new_int64(prog_id));
	json_object_object_add(o, "attached", json_object_new_boolean(prog_id != 0));
	return o;
}

static void print_jobs_and_fastpath(const struct cli_ctx *ctx)
{
	struct json_object *jobs = jobs_json(ctx), *fp = fastpath_json(ctx);
	size_t n = json_object_array_length(jobs);

	if (fp)
		printf("tag fast path: cgroup %s (program %s)\n",
		       json_object_get_string(json_object_object_get(fp, "cgroup")),
		       json_object_get_string(json_object_object_get(fp, "prog_id")));
	else
		printf("tag fast path: not attached (mercuryd fastpath attach)\n");
	printf("jobs: %zu\n", n);
	for (size_t i = 0; i < n; i++) {
		struct json_object *j = json_object_array_get_idx(jobs, i), *open;

		open = json_object_object_get(j, "oldest_open_iteration");
		printf("  uid %s job %s: %s layers, weight %s (yields %s levels), oldest open "
		       "iteration %s\n",
		       json_object_get_string(json_object_object_get(j, "uid")),
		       json_object_get_string(json_object_object_get(j, "job")),
		       json_object_get_string(json_object_object_get(j, "layers")),
		       json_object_get_string(json_object_object_get(j, "weight")),
		       json_object_get_string(json_object_object_get(j, "shift")),
		       open ? json_object_get_string(open) : "none");
	}
	json_object_put(jobs);
	json_object_put(fp);
}

struct status_args {
	const char *iface; /* NULL: every attached interface */
};

/* clang-format off */
static const struct cli_opt status_opts[] = {
    {.name = "iface", .positional = true, .type = CLI_STRING, CLI_FIELD(struct status_args, iface),
     .arg = "<iface>"},
    {.type = CLI_END},
};
/* clang-format on */

const struct cli_command status_command = {
    .name = "status",
    .opts = status_opts,
    .operands = "[<iface>]",
    .about = "Shows each attached interface: backend, bands, hook, health, pins and the\n"
	     "classifier's per-band and per-outcome counters; then the jobs whose state\n"
	     "the classifier reads (layers, weight, oldest open iteration) and where the\n"
	     "tag fast path is attached.",
};

int do_status(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct status_walk w = {.ctx = ctx};
	struct status_args a = {0};
	char err[256];
	int r;

	r = cli_parse(&status_command, argc, argv, &a, NULL, err, sizeof(err));
	if (r == CLI_HELP) {
		cli_usage(stdout, &status_command, NULL);
		return 0;
	}
	if (r) {
		cli_error(ctx, "status: %s", err);
		return 2;
	}
	if (a.iface && !if_nametoindex(a.iface) && access(ctx->pin_root, F_OK)) {
		cli_error(ctx, "status: no interface '%s' (see ip link)", a.iface);
		return 1;
	}
	w.list = json_object_new_array();
	r = a.iface ? show_one(a.iface, &w) : iface_for_each(ctx->pin_root, show_one, &w);
	if (ctx->json && r == 0) {
		struct json_object *o = json_object_new_object(), *tagged = json_object_new_array();
		const char *via;
		int n = tagged_count(ctx, tagged, &via);

		json_object_object_add(o, "pin_root", json_object_new_string(ctx->pin_root));
		/* null, not 0, when they cannot be counted (a kernel refusing tracing programs) */
		json_object_object_add(o, "tagged_sockets", n < 0 ? NULL : json_object_new_int(n));
		/* "iterator": every namespace's sockets; "sock_diag": this namespace's TCP ones */
		json_object_object_add(o, "tagged_sockets_via",
				       n < 0 || !via ? NULL : json_object_new_string(via));
		if (n < 0)
			json_object_object_add(o, "tagged_sockets_error",
					       json_object_new_string(strerror(-n)));
		json_object_object_add(o, "tagged", tagged);
		json_object_object_add(o, "jobs", jobs_json(ctx));
		json_object_object_add(o, "fastpath", fastpath_json(ctx));
		json_object_object_add(o, "interfaces", json_object_get(w.list));
		cli_json_print(ctx, o);
	} else if (r == 0 && w.n == 0) {
		printf("no interface attached (pin root %s)\n", ctx->pin_root);
	} else if (r == 0) {
		const char *via;
		int n = tagged_count(ctx, NULL, &via);

		if (n >= 0 && via && strcmp(via, "sock_diag") == 0)
			printf(
			    "sockets holding tags: %d (this network namespace's, via sock_diag)\n",
			    n);
		else if (n >= 0)
			printf("sockets holding tags: %d\n", n);
		else
			printf(
			    "sockets holding tags: unknown (the kernel refused both the iterator "
			    "and sock_diag: %s)\n",
			    strerror(-n));
		print_jobs_and_fastpath(ctx);
	}
	json_object_put(w.list);
	return r ? 1 : 0;
}
