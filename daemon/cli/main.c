// SPDX-License-Identifier: BSD-2-Clause
/* mercuryd: command table and global options; each verb lives in its own file. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <bpf/libbpf.h>

#include "cli.h"
#include "mercury_abi.h"

#define MERCURY_VERSION "0.1.0"

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
	fprintf(f, "Usage: mercuryd [-j] [-v] [--pin-root DIR] <command> [args]\n\n"
		   "Mercury: packet-granularity layer priority for distributed training.\n\n"
		   "Commands:\n");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		cli_synopsis(f, cmds[i].cli);
	fprintf(f, "\nOptions:\n"
		   "  -j, --json         JSON output\n"
		   "  -v, --verbose      libbpf messages and the verifier log on stderr\n"
		   "      --pin-root DIR pin tree (default " MERCURY_PIN_ROOT_DEFAULT ")\n"
		   "  -h, --help         this text; `mercuryd <command> --help` for one command\n"
		   "  -V, --version      print the version\n\n"
		   "See mercuryd(8).\n");
}

static bool verbose_libbpf;

static int libbpf_print(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	if (level == LIBBPF_DEBUG || (!verbose_libbpf && level != LIBBPF_WARN))
		return 0;
	if (!verbose_libbpf)
		return 0;
	return vfprintf(stderr, fmt, ap);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"json", no_argument, NULL, 'j'},		{"verbose", no_argument, NULL, 'v'},
	    {"help", no_argument, NULL, 'h'},		{"version", no_argument, NULL, 'V'},
	    {"pin-root", required_argument, NULL, 'P'}, {NULL, 0, NULL, 0},
	};
	struct cli_ctx ctx = {.pin_root = MERCURY_PIN_ROOT_DEFAULT};
	int c;

	/* '+': stop at the first non-option, the verb parses its own options. */
	while ((c = getopt_long(argc, argv, "+jvhV", opts, NULL)) != -1) {
		switch (c) {
		case 'j':
			ctx.json = true;
			break;
		case 'v':
			ctx.verbose = true;
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
	verbose_libbpf = ctx.verbose;
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
