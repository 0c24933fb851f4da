// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd fastpath attach|detach: the tag fast path's command. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <json-c/json.h>

#include "cli.h"
#include "loader/fastpath.h"
#include "loader/iface_pins.h"
#include "loader/pins.h"

enum { FP_ATTACH = 1, FP_DETACH };

struct fastpath_args {
	int verb; /* FP_ATTACH, FP_DETACH; 0: not given */
	const char *cgroup;
};

static const struct cli_enum fastpath_verbs[] = {
    {"attach", FP_ATTACH},
    {"detach", FP_DETACH},
    {NULL, 0},
};

/* clang-format off */
static const struct cli_opt fastpath_opts[] = {
    {.name = "command", .positional = true, .required = true, .type = CLI_ENUM,
     CLI_FIELD(struct fastpath_args, verb), .names = fastpath_verbs, .arg = "attach|detach",
     .help = "attach or detach"},
    {.name = "cgroup", .type = CLI_STRING, CLI_FIELD(struct fastpath_args, cgroup), .arg = "PATH",
     .help = "attach: cgroup v2 directory",
     .def = "the hierarchy's root, every process of " "the node"},
    {.type = CLI_END},
};
/* clang-format on */

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
	struct fastpath_args a = {0};
	char err[512] = "";
	const char *verb;
	int lock, r;

	r = cli_parse(&fastpath_command, argc, argv, &a, NULL, err, sizeof(err));
	if (r == CLI_HELP) {
		cli_usage(stdout, &fastpath_command, NULL);
		return 0;
	}
	if (r) {
		cli_error(ctx, "fastpath: %s", err);
		return 2;
	}
	verb = a.verb == FP_ATTACH ? "attach" : "detach";
	if (a.verb == FP_DETACH && a.cgroup) {
		cli_error(ctx, "fastpath detach: --cgroup is an option of attach only");
		return 2;
	}
	if (geteuid() != 0) {
		cli_error(ctx, "fastpath: must run as root");
		return 1;
	}
	if ((lock = pins_prepare_lock(ctx->pin_root, err, sizeof(err))) < 0) {
		cli_error(ctx, "fastpath: %s", err);
		return 1;
	}
	if (a.verb == FP_ATTACH) {
		r = fastpath_attach(ctx->pin_root, a.cgroup, err, sizeof(err));
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
	return print_result(ctx, a.verb == FP_ATTACH ? "attached" : "detached");
}
