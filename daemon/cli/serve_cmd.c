// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd serve: its options; the service itself is daemon/service/serve.c. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "mercury.h" /* MERCURY_DEFAULT_SOCKET: the socket path clients use */
#include "service/serve.h"

static const struct cli_opt serve_opts[] = {
    {"socket", 's', "PATH", "where to listen ($MERCURY_SOCKET also sets it)"},
    {"group", 'g', "NAME", "group allowed to connect besides root (mercury)"},
    {"metrics-textfile", 'm', "DIR",
     "write DIR/mercury.prom (data path and service\nmetrics) for node_exporter's textfile "
     "collector"},
    {"metrics-interval", 'i', "SECONDS", "how often (default 15 s)"},
    {NULL, 0, NULL, NULL},
};

const struct cli_command serve_command = {
    .name = "serve",
    .about = "Serves training-step events from libmercury clients on a Unix socket\n"
	     "(default " MERCURY_DEFAULT_SOCKET ", mode 0660, group mercury).\n"
	     "Frameworks connect with mercury_connect(); see include/mercury.h.",
    .opts = serve_opts,
};

int do_serve(const struct cli_ctx *ctx, int argc, char **argv)
{
	struct serve_config cfg = {.pin_root = ctx->pin_root,
				   .socket_path = getenv("MERCURY_SOCKET"),
				   .group = "mercury",
				   .metrics_interval_s = 15};
	char *end, err[512];
	int c;

	if (!cfg.socket_path)
		cfg.socket_path = MERCURY_DEFAULT_SOCKET;
	optind = 0;
	while ((c = cli_getopt(&serve_command, argc, argv, "h")) != -1) {
		if (c == 's')
			cfg.socket_path = optarg;
		else if (c == 'g')
			cfg.group = optarg;
		else if (c == 'm')
			cfg.metrics_dir = optarg;
		else if (c == 'i') {
			cfg.metrics_interval_s = strtol(optarg, &end, 10);
			if (cfg.metrics_interval_s < 1 || *end || cfg.metrics_interval_s > 86400) {
				cli_error(ctx, "serve: --metrics-interval takes whole seconds, "
					       "1..86400");
				return 2;
			}
		} else if (c == 'h') {
			cli_usage(stdout, &serve_command);
			return 0;
		} else {
			cli_error(ctx, "serve: unknown option; see mercuryd serve --help");
			return 2;
		}
	}
	if (serve_run(&cfg, err, sizeof(err)) == 0)
		return 0;
	if (err[0])
		cli_error(ctx, "serve: %s", err);
	return 1;
}
