// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd serve: its options; the service itself is daemon/service/serve.c. */
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "mercury.h" /* MERCURY_DEFAULT_SOCKET: the socket path clients use */
#include "service/serve.h"

#define S(member) CLI_FIELD(struct serve_config, member)

/* clang-format off */
static const struct cli_opt serve_opts[] = {
    {.name = "socket", .type = CLI_STRING, S(socket_path), .arg = "PATH",
     .help = "where to listen ($MERCURY_SOCKET also sets it)"},
    {.name = "group", .type = CLI_STRING, S(group), .arg = "NAME",
     .help = "group allowed to connect besides root"},
    {.name = "metrics-textfile", .type = CLI_STRING, S(metrics_dir), .arg = "DIR",
     .help = "write DIR/mercury.prom (data path and service metrics) for node_exporter's "
	     "textfile collector"},
    {.name = "metrics-interval", .type = CLI_INT, S(metrics_interval_s), .min = 1, .max = 86400,
     .arg = "SECONDS", .help = "how often, in whole seconds"},
    {.type = CLI_END},
};
/* clang-format on */

const struct cli_command serve_command = {
    .name = "serve",
    .about = "Serves training-step events from libmercury clients on a Unix socket\n"
	     "(default " MERCURY_DEFAULT_SOCKET ", mode 0660, group mercury).\n"
	     "Frameworks connect with mercury_connect(); see include/mercury.h.",
    .opts = serve_opts,
};

static void serve_defaults(const struct cli_ctx *ctx, struct serve_config *cfg)
{
	*cfg = (struct serve_config){.pin_root = ctx->pin_root,
				     .socket_path = getenv("MERCURY_SOCKET"),
				     .group = "mercury",
				     .metrics_interval_s = 15};
	if (!cfg->socket_path)
		cfg->socket_path = MERCURY_DEFAULT_SOCKET;
}

int do_serve(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct serve_config cfg, defaults;
	char err[512];
	int r;

	serve_defaults(ctx, &cfg);
	defaults = cfg;
	r = cli_parse(&serve_command, argc, argv, &cfg, NULL, err, sizeof(err));
	if (r == CLI_HELP) {
		cli_usage(stdout, &serve_command, &defaults);
		return 0;
	}
	if (r) {
		cli_error(ctx, "serve: %s", err);
		return 2;
	}
	if (serve_run(&cfg, err, sizeof(err)) == 0)
		return 0;
	if (err[0])
		cli_error(ctx, "serve: %s", err);
	return 1;
}
