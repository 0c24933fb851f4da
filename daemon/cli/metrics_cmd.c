// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd metrics: the data path's counters in the Prometheus text format. */
#include <stdio.h>

#include "cli.h"
#include "service/metrics.h"

struct metrics_args {
	const char *dir; /* --textfile */
};

/* clang-format off */
static const struct cli_opt metrics_opts[] = {
    {.name = "textfile", .type = CLI_STRING, CLI_FIELD(struct metrics_args, dir), .arg = "DIR",
     .help = "write DIR/mercury.prom for node_exporter's textfile collector instead of " "printing"},
    {.type = CLI_END},
};
/* clang-format on */

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
	struct metrics_args a = {0};
	char err[512];
	int r;

	r = cli_parse(&metrics_command, argc, argv, &a, NULL, err, sizeof(err));
	if (r == CLI_HELP) {
		cli_usage(stdout, &metrics_command, NULL);
		return 0;
	}
	if (r) {
		cli_error(ctx, "metrics: %s", err);
		return 2;
	}
	if (!a.dir)
		return metrics_write(stdout, ctx->pin_root, NULL) ? 1 : 0;
	if (metrics_write_textfile(a.dir, ctx->pin_root, NULL, err, sizeof(err))) {
		cli_error(ctx, "metrics: %s", err);
		return 1;
	}
	return 0;
}
