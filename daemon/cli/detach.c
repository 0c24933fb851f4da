// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd detach: remove exactly what attach added and restore the previous root qdisc. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "fastpath.h"
#include "iface_pins.h"
#include "pins.h"

const struct cli_command detach_command = {
    .name = "detach",
    .operands = "<iface>",
    .about = "Removes Mercury's classifier and root qdisc from <iface>, restores the root\n"
	     "qdisc it replaced, and removes the pins under the pin root.",
};

int do_detach(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct mercury_attach_state st;
	char err[512] = "";
	const char *iface;
	int lock_fd, r, ret = 1;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		cli_usage(stdout, &detach_command);
		return 0;
	}
	if (argc != 2 || argv[1][0] == '-') {
		cli_error(ctx, "detach: give exactly one interface: mercuryd detach <iface>");
		return 2;
	}
	iface = argv[1];
	if (geteuid() != 0) {
		cli_error(ctx, "detach: must run as root");
		return 1;
	}
	if (access(ctx->pin_root, F_OK)) {
		cli_error(ctx, "detach: %s is not attached (no pins under %s)", iface,
			  ctx->pin_root);
		return 1;
	}
	lock_fd = pins_lock(ctx->pin_root, err, sizeof(err));
	if (lock_fd < 0) {
		cli_error(ctx, "detach %s: %s", iface, err);
		return 1;
	}
	r = iface_state_read(ctx->pin_root, iface, &st);
	if (r == -ENOENT) {
		cli_error(ctx, "detach: %s is not attached (no pins under %s/%s)", iface,
			  ctx->pin_root, iface);
		goto out;
	}
	if (r) {
		iface_state_strerror(ctx->pin_root, iface, r, err, sizeof(err));
		cli_error(ctx, "detach %s: %s", iface, err);
		goto out;
	}
	if (st.netns_ino != current_netns_ino()) {
		cli_error(ctx,
			  "detach: %s/%s was attached from another network namespace; run detach "
			  "there",
			  ctx->pin_root, iface);
		goto out;
	}
	if (if_nametoindex(iface) != st.ifindex) {
		/* The device is gone (or re-created): its qdisc and hook went with it. */
		iface_unpin_all(ctx->pin_root, iface);
	} else if ((r = iface_teardown(ctx->pin_root, iface, &st, err, sizeof(err))) < 0) {
		cli_error(ctx, "detach %s: %s (run detach again once that is fixed)", iface, err);
		goto out;
	} else if (r > 0) {
		cli_warn(ctx, "detach %s: %s", iface, err);
	}
	fastpath_release_unused(ctx->pin_root);
	if (ctx->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "iface", json_object_new_string(iface));
		json_object_object_add(o, "result", json_object_new_string("detached"));
		json_object_object_add(o, "restored_qdisc",
				       json_object_new_boolean(st.saved_tree_len > 0 && r == 0));
		cli_json_print(ctx, o);
	} else {
		if (st.saved_tree_len && r == 0)
			printf("detached %s (previous qdisc tree restored: %u qdiscs, classes and "
			       "filters)\n",
			       iface, st.saved_tree_objs);
		else
			printf("detached %s\n", iface);
	}
	ret = 0;
out:
	close(lock_fd);
	return ret;
}
