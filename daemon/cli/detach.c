// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd detach: remove exactly what attach added and restore the previous root qdisc;
 * --all: every interface attached under the pin root, then the tag fast path and the shared
 * pins (what a package's removal runs). */
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "log.h"
#include "cli.h"
#include "loader/fastpath.h"
#include "loader/iface_attach.h"
#include "loader/iface_pins.h"
#include "loader/pins.h"

struct detach_args {
	const char *iface;
	bool all;
};

/* clang-format off */
static const struct cli_opt detach_opts[] = {
    {.name = "iface", .positional = true, .type = CLI_STRING, CLI_FIELD(struct detach_args, iface),
     .arg = "<iface>"},
    {.name = "all", .type = CLI_FLAG, CLI_FIELD(struct detach_args, all),
     .help = "every interface attached under the pin root, then the tag fast path and the "
	     "shared pins; nothing attached is success"},
    {.type = CLI_END},
};
/* clang-format on */
static const char *const detach_usage[] = {"--all", NULL};

const struct cli_command detach_command = {
    .name = "detach",
    .operands = "<iface>",
    .usage = detach_usage,
    .about = "Removes Mercury's classifier and root qdisc from <iface>, restores the root\n"
	     "qdisc it replaced, and removes the pins under the pin root.",
    .opts = detach_opts,
};

struct detached {
	bool restored; /* the saved qdisc tree was replayed */
	unsigned objs; /* its qdiscs, classes and filters */
	char warn[512];
};

/* Detaches one interface under the pin lock: 0, or 1 with err set (pins kept where a rerun
 * can finish the job). */
static int detach_one(const struct cli_ctx *ctx, const char *iface, struct detached *out, char *err,
		      size_t errlen)
{
	struct mercury_attach_state st;
	int r;

	memset(out, 0, sizeof(*out));
	r = iface_state_read(ctx->pin_root, iface, &st);
	if (r == -ENOENT) {
		snprintf(err, errlen, "%s is not attached (no pins under %s/%s)", iface,
			 ctx->pin_root, iface);
		return 1;
	}
	if (r) {
		iface_state_strerror(ctx->pin_root, iface, r, err, errlen);
		return 1;
	}
	if (st.netns_ino != current_netns_ino()) {
		snprintf(err, errlen,
			 "%s/%s was attached from another network namespace; run detach there",
			 ctx->pin_root, iface);
		return 1;
	}
	if (if_nametoindex(iface) != st.ifindex) {
		/* The device is gone (or re-created): its qdisc and hook went with it. */
		iface_unpin_all(ctx->pin_root, iface);
		return 0;
	}
	r = iface_teardown(ctx->pin_root, iface, &st, out->warn, sizeof(out->warn));
	if (r < 0) {
		snprintf(err, errlen, "%s (run detach again once that is fixed)", out->warn);
		out->warn[0] = '\0';
		return 1;
	}
	if (r == 0)
		out->warn[0] = '\0';
	out->restored = st.saved_tree_len > 0 && r == 0;
	out->objs = st.saved_tree_objs;
	return 0;
}

static struct json_object *detached_json(const char *iface, const struct detached *d)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "iface", json_object_new_string(iface));
	json_object_object_add(o, "result", json_object_new_string("detached"));
	json_object_object_add(o, "restored_qdisc", json_object_new_boolean(d->restored));
	if (d->warn[0])
		json_object_object_add(o, "warning", json_object_new_string(d->warn));
	return o;
}

static void detached_text(const char *iface, const struct detached *d)
{
	if (d->restored)
		printf("detached %s (previous qdisc tree restored: %u qdiscs, classes and "
		       "filters)\n",
		       iface, d->objs);
	else
		printf("detached %s\n", iface);
}

struct names {
	char (*v)[IF_NAMESIZE * 4];
	size_t n, cap;
};

static int collect(const char *iface, void *arg)
{
	struct names *l = arg;

	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		void *v = realloc(l->v, cap * sizeof(*l->v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	snprintf(l->v[l->n++], sizeof(l->v[0]), "%s", iface);
	return 0;
}

/* Every interface (their names first: detach removes directories readdir would walk), then
 * the fast path and the shared maps once nothing is left. Exit 1 when any interface failed. */
static int detach_all(const struct cli_ctx *ctx)
{
	struct json_object *list = ctx->json ? json_object_new_array() : NULL;
	struct names l = {0};
	char err[512];
	int failed = 0, r;

	r = iface_for_each(ctx->pin_root, collect, &l);
	if (r) {
		cli_error(ctx, "detach --all: reading %s: %s", ctx->pin_root, strerror(-r));
		json_object_put(list);
		free(l.v);
		return 1;
	}
	for (size_t i = 0; i < l.n; i++) {
		struct detached d;

		if (detach_one(ctx, l.v[i], &d, err, sizeof(err))) {
			failed++;
			if (list) {
				struct json_object *o = json_object_new_object();

				json_object_object_add(o, "iface", json_object_new_string(l.v[i]));
				json_object_object_add(o, "result",
						       json_object_new_string("failed"));
				json_object_object_add(o, "error", json_object_new_string(err));
				json_object_array_add(list, o);
			} else {
				log_error("detach %s: %s", l.v[i], err);
			}
			continue;
		}
		if (list) {
			json_object_array_add(list, detached_json(l.v[i], &d));
		} else {
			if (d.warn[0])
				cli_warn(ctx, "detach %s: %s", l.v[i], d.warn);
			detached_text(l.v[i], &d);
		}
	}
	free(l.v);
	/* Nothing attached any more: the tag fast path, the shared maps and the root go. */
	fastpath_release_unused(ctx->pin_root);
	if (list) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "interfaces", list);
		json_object_object_add(o, "pin_root_removed",
				       json_object_new_boolean(access(ctx->pin_root, F_OK) != 0));
		cli_json_print(ctx, o);
	} else if (l.n == 0) {
		printf("nothing attached under %s\n", ctx->pin_root);
	}
	return failed ? 1 : 0;
}

int do_detach(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct detach_args a = {0};
	struct detached d;
	char err[512] = "";
	int lock_fd, ret;

	ret = cli_parse(&detach_command, argc, argv, &a, NULL, err, sizeof(err));
	if (ret == CLI_HELP) {
		cli_usage(stdout, &detach_command, NULL);
		return 0;
	}
	if (ret) {
		cli_error(ctx, "detach: %s", err);
		return 2;
	}
	if (a.all == (a.iface != NULL)) {
		cli_error(ctx, "detach: give exactly one interface, or --all: mercuryd detach "
			       "<iface> | --all");
		return 2;
	}
	if (geteuid() != 0) {
		cli_error(ctx, "detach: must run as root");
		return 1;
	}
	if (access(ctx->pin_root, F_OK)) {
		if (a.all) { /* nothing to do: success, so that a package's removal can run it */
			if (ctx->json) {
				struct json_object *o = json_object_new_object();

				json_object_object_add(o, "interfaces", json_object_new_array());
				json_object_object_add(o, "pin_root_removed",
						       json_object_new_boolean(true));
				cli_json_print(ctx, o);
			} else {
				printf("nothing attached under %s\n", ctx->pin_root);
			}
			return 0;
		}
		cli_error(ctx, "detach: %s is not attached (no pins under %s)", a.iface,
			  ctx->pin_root);
		return 1;
	}
	lock_fd = pins_lock(ctx->pin_root, err, sizeof(err));
	if (lock_fd < 0) {
		cli_error(ctx, "detach%s%s: %s", a.all ? " --all" : " ", a.all ? "" : a.iface, err);
		return 1;
	}
	if (a.all) {
		ret = detach_all(ctx);
		close(lock_fd);
		return ret;
	}
	if (detach_one(ctx, a.iface, &d, err, sizeof(err))) {
		cli_error(ctx, "detach %s: %s", a.iface, err);
		close(lock_fd);
		return 1;
	}
	if (d.warn[0])
		cli_warn(ctx, "detach %s: %s", a.iface, d.warn);
	fastpath_release_unused(ctx->pin_root);
	if (ctx->json)
		cli_json_print(ctx, detached_json(a.iface, &d));
	else
		detached_text(a.iface, &d);
	close(lock_fd);
	return 0;
}
