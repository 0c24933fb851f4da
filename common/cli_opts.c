// SPDX-License-Identifier: BSD-2-Clause
/* Option tables -> getopt_long tables and help text; checked numbers (common/cli_opts.h). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"

const char *cli_prog = "mercuryd";

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

void cli_print_options(FILE *f, const struct cli_opt *opts)
{
	const int col = 26;

	for (const struct cli_opt *o = opts; o && o->name; o++) {
		char head[64];
		int n = snprintf(head, sizeof(head), "  --%s%s%s", o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");

		if (n >= col - 1)
			fprintf(f, "%s\n%*s", head, col, "");
		else
			fprintf(f, "%-*s", col, head);
		print_help_lines(f, o->help, col);
	}
}

void cli_usage(FILE *f, const struct cli_command *c)
{
	fprintf(f, "Usage: %s %s%s%s%s\n", cli_prog, c->name, c->operands ? " " : "",
		c->operands ? c->operands : "", c->opts && c->opts->name ? " [options]" : "");
	for (const char *const *u = c->usage; u && *u; u++)
		fprintf(f, "       %s %s %s\n", cli_prog, c->name, *u);
	fprintf(f, "\n%s\n", c->about);
	if (c->opts && c->opts->name) {
		fprintf(f, "\nOptions:\n");
		cli_print_options(f, c->opts);
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

int cli_parse_long(const char *s, long min, long max, long *out)
{
	char *end;
	long v;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtol(s, &end, 0);
	if (*end || end == s)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	if (*s == '-') /* strtoull would take "-1" as ULLONG_MAX */
		return -ERANGE;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (*end || end == s)
		return -EINVAL;
	if (errno == ERANGE || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int cli_parse_double(const char *s, double min, double max, double *out)
{
	char *end;
	double v;

	if (!*s || isspace((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (*end || end == s)
		return -EINVAL;
	if (errno == ERANGE || !isfinite(v) || v < min || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}
