// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd: command table and global options; each verb lives in its own file. */
#include <getopt.h>
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

static void usage(FILE *f)
{
	fprintf(f, "Usage: mercuryd [-j|-p] [-v] [--pin-root DIR] <command> [args]\n\n"
		   "Mercury: packet-granularity layer priority for distributed training.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		cli_synopsis(f, cmds[i].cli);
	fprintf(f, "\nOptions:\n"
		   "  -j, --json         JSON output (also after the command: status -j)\n"
		   "  -p, --pretty       JSON output, indented (implies -j)\n"
		   "  -v, --verbose      debug messages, libbpf's and the verifier log on stderr;\n"
		   "                     -vv adds libbpf's own debug\n"
		   "      --pin-root DIR pin tree (default " MERCURY_PIN_ROOT_DEFAULT ")\n"
		   "  -h, --help         this text; `mercuryd <command> --help` for one command\n"
		   "  -V, --version      print the version\n\n"
		   "Exit status:\n"
		   "  0  success\n"
		   "  1  the command failed (the error says why; with -j as {\"error\": ...})\n"
		   "  2  usage error: unknown command or option, missing or bad argument\n\n"
		   "Environment:\n"
		   "  MERCURY_SOCKET     serve: the event socket (default " MERCURY_DEFAULT_SOCKET
		   ")\n\n"
		   "See mercuryd(8).\n");
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
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},
	    {"pretty", no_argument, NULL, 'p'},
	    {"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {"pin-root", required_argument, NULL, 'P'},
	    {NULL, 0, NULL, 0},
	};
	struct cli_ctx ctx = {.pin_root = MERCURY_PIN_ROOT_DEFAULT};
	int c, verbose = 0;

	/* '+': stop at the first non-option, the verb parses its own options. */
	while ((c = getopt_long(argc, argv, "+jpvhV", opts, NULL)) != -1) {
		switch (c) {
		case 'p': /* implies -j */
			ctx.pretty = ctx.json = true;
			break;
		case 'j':
			ctx.json = true;
			break;
		case 'v':
			verbose++;
			break;
		case 'P':
			ctx.pin_root = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("mercuryd %s (layout %d)\n", MERCURY_VERSION,
			       MERCURY_LAYOUT_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	argc = take_output_opts(&ctx, argc, argv, optind + 1);
	mlog_set_level(MLOG_INFO + verbose);
	libbpf_set_print(libbpf_print);
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		if (strcmp(argv[optind], cmds[i].cli->name) == 0) {
			optind++;
			return cmds[i].fn(&ctx, argc - optind + 1, argv + optind - 1);
		}
	}
	cli_error(&ctx, "unknown command '%s'; see mercuryd --help", argv[optind]);
	return 2;
}
