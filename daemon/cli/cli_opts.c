// SPDX-License-Identifier: BSD-2-Clause
/* Option tables -> getopt_long tables and help text (daemon/cli_opts.h). */
#include <string.h>

#include "cli_opts.h"

int cli_getopt(const struct cli_command *c, int argc, char **argv, const char *shortopts)
{
	/* One command runs per process: one table, filled on first use. */
	static struct option table[CLI_MAX_OPTS + 2];
	static const struct cli_command *filled;

	if (filled != c) {
		int n = 0;

		for (const struct cli_opt *o = c->opts; o && o->name && n < CLI_MAX_OPTS; o++, n++)
			table[n] = (struct option){
			    o->name, o->arg ? required_argument : no_argument, NULL, o->val};
		table[n++] = (struct option){"help", no_argument, NULL, 'h'};
		table[n] = (struct option){NULL, 0, NULL, 0};
		filled = c;
	}
	return getopt_long(argc, argv, shortopts, table, NULL);
}

static void print_help_lines(FILE *f, const char *help, int indent)
{
	for (const char *p = help; *p;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);

		fprintf(f, "%.*s\n", len, p);
		if (!nl)
			break;
		p = nl + 1;
		fprintf(f, "%*s", indent, "");
	}
}

void cli_usage(FILE *f, const struct cli_command *c)
{
	const int col = 26;

	fprintf(f, "Usage: mercuryd %s%s%s%s\n", c->name, c->operands ? " " : "",
		c->operands ? c->operands : "", c->opts && c->opts->name ? " [options]" : "");
	for (const char *const *u = c->usage; u && *u; u++)
		fprintf(f, "       mercuryd %s %s\n", c->name, *u);
	fprintf(f, "\n%s\n", c->about);
	if (c->opts && c->opts->name) {
		fprintf(f, "\nOptions:\n");
		for (const struct cli_opt *o = c->opts; o->name; o++) {
			char head[64];
			int n = snprintf(head, sizeof(head), "  --%s%s%s", o->name,
					 o->arg ? " " : "", o->arg ? o->arg : "");

			if (n >= col - 1)
				fprintf(f, "%s\n%*s", head, col, "");
			else
				fprintf(f, "%-*s", col, head);
			print_help_lines(f, o->help, col);
		}
	}
	if (c->after)
		fprintf(f, "\n%s\n", c->after);
}

void cli_synopsis(FILE *f, const struct cli_command *c)
{
	int width = 2 +
		    fprintf(f, "  %s%s%s", c->name, c->operands ? " " : "",
			    c->operands ? c->operands : "") -
		    2;

	for (const struct cli_opt *o = c->opts; o && o->name; o++) {
		char item[96];
		int n = snprintf(item, sizeof(item), " [--%s%s%s]", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");

		if (width + n > 90) {
			fprintf(f, "\n%*s", 4 + (int)strlen(c->name), "");
			width = 4 + (int)strlen(c->name);
		}
		fputs(item, f);
		width += n;
	}
	fputc('\n', f);
}
