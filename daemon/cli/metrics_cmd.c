// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd metrics: the data path's counters in the Prometheus text format. */
#include <getopt.h>
#include <stdio.h>

#include "cli.h"
#include "service/metrics.h"

static const struct cli_opt metrics_opts[] = {
    {"textfile", 't', "DIR",
     "write DIR/mercury.prom for node_exporter's textfile collector\ninstead of printing"},
    {NULL, 0, NULL, NULL},
};

const struct cli_command metrics_command = {
    .name = "metrics",
    .about = "Prints every attached interface's counters (per band, per classifier outcome),\n"
	     "attach state and health in the Prometheus text format. --textfile writes them\n"
	     "atomically (a cron job or timer can run it). `mercuryd serve --metrics-textfile`\n"
	     "also publishes the event service's figures.",
    .opts = metrics_opts,
};

int do_metrics(const struct cli_ctx *ctx, int argc, char **argv)
{
	const char *dir = NULL;
	char err[512];
	int c;

	optind = 0;
	while ((c = cli_getopt(&metrics_command, argc, argv, "h")) != -1) {
		if (c == 't') {
			dir = optarg;
		} else if (c == 'h') {
			cli_usage(stdout, &metrics_command);
			return 0;
		} else {
			cli_error(ctx, "metrics: unknown option; see mercuryd metrics --help");
			return 2;
		}
	}
	if (optind < argc) {
		cli_error(ctx, "metrics: takes no interface (every attached one is shown)");
		return 2;
	}
	if (!dir)
		return metrics_write(stdout, ctx->pin_root, NULL) ? 1 : 0;
	if (metrics_write_textfile(dir, ctx->pin_root, NULL, err, sizeof(err))) {
		cli_error(ctx, "metrics: %s", err);
		return 1;
	}
	return 0;
}
