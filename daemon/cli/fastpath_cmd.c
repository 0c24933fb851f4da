// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd fastpath attach|detach: the tag fast path's command. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "loader/fastpath.h"
#include "loader/iface_pins.h"
#include "loader/pins.h"

static const struct cli_opt fastpath_opts[] = {
    {"cgroup", 'c', "PATH",
     "attach: cgroup v2 directory (default: the hierarchy's root,\nevery process of the node)"},
    {NULL, 0, NULL, NULL},
};

const struct cli_command fastpath_command = {
    .name = "fastpath",
    .operands = "attach|detach",
    .usage = (const char *const[]){"attach [--cgroup PATH]", "detach", NULL},
    .about = "The tag fast path lets processes tag their own TCP sockets with one\n"
	     "setsockopt() instead of a round trip to `mercuryd serve` (libmercury uses it\n"
	     "when it is attached, the service otherwise). Processes in PATH and below may\n"
	     "use it; jobs are still declared through the service.",
    .opts = fastpath_opts,
    .after = "Detaching the last interface (mercuryd detach) detaches the fast path too.",
};

static int print_result(const struct cli_ctx *ctx, const char *what)
{
	struct mercury_fastpath_state st;
	unsigned prog_id = 0;
	int r = fastpath_state(ctx->pin_root, &st, &prog_id);

	if (ctx->json) {
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "fastpath", json_object_new_string(what));
		if (r == 0) {
			json_object_object_add(o, "cgroup", json_object_new_string(st.cgroup));
			json_object_object_add(o, "prog_id", json_object_new_int64(prog_id));
		}
		cli_json_print(ctx, o);
	} else if (r == 0) {
		printf("tag fast path %s: cgroup %s (program %u)\n", what, st.cgroup, prog_id);
	} else {
		printf("tag fast path %s\n", what);
	}
	return 0;
}

int do_fastpath(const struct cli_ctx *ctx, int argc, char **argv)
{
	const char *cgroup = NULL, *verb;
	char err[512] = "";
	int c, lock, r;

	optind = 0;
	while ((c = cli_getopt(&fastpath_command, argc, argv, "+h")) != -1) {
		if (c == 'h') {
			cli_usage(stdout, &fastpath_command);
			return 0;
		}
		cli_error(ctx, "fastpath: unknown option; see mercuryd fastpath --help");
		return 2;
	}
	if (optind >= argc) {
		cli_error(ctx, "fastpath: say attach or detach; see mercuryd fastpath --help");
		return 2;
	}
	verb = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 0;
	while ((c = cli_getopt(&fastpath_command, argc, argv, "h")) != -1) {
		if (c == 'c' && !strcmp(verb, "attach")) {
			cgroup = optarg;
		} else if (c == 'h') {
			cli_usage(stdout, &fastpath_command);
			return 0;
		} else {
			cli_error(ctx, "fastpath %s: unknown option; see mercuryd fastpath --help",
				  verb);
			return 2;
		}
	}
	if (optind < argc || (strcmp(verb, "attach") && strcmp(verb, "detach"))) {
		cli_error(ctx, "fastpath: say attach [--cgroup PATH] or detach");
		return 2;
	}
	if (geteuid() != 0) {
		cli_error(ctx, "fastpath: must run as root");
		return 1;
	}
	if (pins_prepare(ctx->pin_root, err, sizeof(err)) ||
	    (lock = pins_lock(ctx->pin_root, err, sizeof(err))) < 0) {
		cli_error(ctx, "fastpath: %s", err);
		return 1;
	}
	if (!strcmp(verb, "attach")) {
		r = fastpath_attach(ctx->pin_root, cgroup, err, sizeof(err));
	} else {
		r = fastpath_detach(ctx->pin_root, err, sizeof(err));
		if (r == 0)
			fastpath_release_unused(ctx->pin_root);
	}
	close(lock);
	if (r) {
		cli_error(ctx, "fastpath %s: %s", verb, err);
		return 1;
	}
	return print_result(ctx, !strcmp(verb, "attach") ? "attached" : "detached");
}
