// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd: command table and global options; each verb lives in its own file. */
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "log.h"
#include "mercury.h"
#include "version.h"
#include "mercury_abi.h"

struct cmd {
	const struct cli_command *cli; /* name, options, help */
	int (*fn)(const struct cli_ctx *ctx, int argc, char **argv);
};

static const struct cmd cmds[] = {
    {&attach_command, do_attach},     {&detach_command, do_detach}, {&status_command, do_status},
    {&tag_command, do_tag},	      {&serve_command, do_serve},   {&metrics_command, do_metrics},
    {&fastpath_command, do_fastpath},
};

/* The options before the command. */
struct main_args {
	struct cli_ctx ctx;
	int verbose;
	bool quiet;
	bool version;
};

#define M(member) CLI_FIELD(struct main_args, member)

/* clang-format off */
static const struct cli_opt main_opts[] = {
    {.name = "json", .short_name = 'j', .type = CLI_FLAG, M(ctx.json),
     .help = "JSON output (also after the command: status -j)"},
    {.name = "pretty", .short_name = 'p', .type = CLI_FLAG, M(ctx.pretty),
     .help = "JSON output, indented (implies -j)"},
    {.name = "verbose", .short_name = 'v', .type = CLI_COUNT, M(verbose),
     .help = "debug messages, libbpf's and the verifier log on stderr;\n"
	     "-vv adds libbpf's own debug"},
    {.name = "quiet", .short_name = 'q', .type = CLI_FLAG, M(quiet),
     .help = "errors only: no warnings, no notices (overrides -v)"},
    {.name = "pin-root", .type = CLI_STRING, M(ctx.pin_root), .arg = "DIR", .help = "pin tree"},
    {.name = "version", .short_name = 'V', .type = CLI_FLAG, M(version),
     .help = "print the version"},
    {.type = CLI_END},
};
/* clang-format on */

/* The options and any operands before the command; the rest is the command's. */
static const struct cli_command main_command = {
    .name = "",
    .opts = main_opts,
    .stop_at_operand = true,
    .more_operands = true,
};

static void usage(FILE *f, const struct main_args *defaults)
{
	fprintf(f, "Usage: mercuryd [-j|-p] [-v|-q] [--pin-root DIR] <command> [args]\n\n"
		   "Mercury: packet-granularity layer priority for distributed training.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		cli_synopsis(f, cmds[i].cli);
	fprintf(f, "\nOptions:\n");
	cli_print_options(f, main_opts, defaults);
	fprintf(f,
		"  %-24sthis text; `mercuryd <command> --help` for one command\n\n"
		"Exit status:\n"
		"  0  success\n"
		"  1  the command failed (the error says why; with -j as {\"error\": ...})\n"
		"  2  usage error: unknown command or option, missing or bad argument\n\n"
		"Environment:\n"
		"  MERCURY_SOCKET     serve: the event socket (default " MERCURY_DEFAULT_SOCKET
		")\n\n"
		"See mercuryd(8).\n",
		"-h, --help");
}

/*
 * -j/--json and -p/--pretty after the command too (`mercuryd status -j`), as bpftool takes
 * them: removed from argv[from..] (up to a "--") before the command parses its own options.
 * No command has an option or a value spelt so. Returns the new argc.
 */
static int take_output_opts(struct cli_ctx *ctx, int argc, char **argv, int from)
{
	int out = from, i;

	for (i = from; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--"))
			break;
		if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			ctx->json = true;
			continue;
		}
		if (!strcmp(a, "-p") || !strcmp(a, "--pretty") || !strcmp(a, "-jp") ||
		    !strcmp(a, "-pj")) {
			ctx->json = ctx->pretty = true;
			continue;
		}
		argv[out++] = argv[i];
	}
	while (i < argc)
		argv[out++] = argv[i++];
	argv[out] = NULL;
	return out;
}

/* libbpf's messages a level below mercuryd's: what fails is reported by mercuryd itself, so
 * libbpf's warnings and info (the verifier log of a failed load among them) are its debug
 * (-v), libbpf's own debug one further (-vv). They come with their own "libbpf: " prefix. */
static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int lvl = level == LIBBPF_DEBUG ? MLOG_DEBUG + 1 : MLOG_DEBUG;

	if (!mlog_enabled(lvl))
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	struct main_args m = {.ctx.pin_root = MERCURY_PIN_ROOT_DEFAULT}, defaults = m;
	char err[256];
	int r, cmd;

	r = cli_parse(&main_command, argc, argv, &m, &cmd, err, sizeof(err));
	if (r == CLI_HELP) {
		usage(stdout, &defaults);
		return 0;
	}
	if (r) {
		cli_error(&m.ctx, "%s", err);
		return 2;
	}
	if (m.version) {
		printf("mercuryd %s (layout %d)\n", MERCURY_VERSION, MERCURY_LAYOUT_VERSION);
		return 0;
	}
	if (cmd >= argc) {
		usage(stderr, &defaults);
		return 2;
	}
	m.ctx.json |= m.ctx.pretty; /* -p implies -j */
	argc = take_output_opts(&m.ctx, argc, argv, cmd + 1);
	mlog_set_level(m.quiet ? MLOG_ERROR : MLOG_INFO + m.verbose);
	libbpf_set_print(libbpf_print);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[cmd], cmds[i].cli->name) == 0)
			return cmds[i].fn(&m.ctx, argc - cmd, argv + cmd);
	}
	cli_error(&m.ctx, "unknown command '%s'; see mercuryd --help", argv[cmd]);
	return 2;
}
