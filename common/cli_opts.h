/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One option table per command (mercuryd's verbs, mercury-ps): getopt_long's table, the
 * command's --help and its line in `mercuryd --help` are all made from it, and
 * tests/system/test_cli_docs.sh checks the man pages, the completions and the README against
 * the --help it prints. Numbers are read with the checked parsers below, never atoi().
 */
#ifndef MERCURY_CLI_OPTS_H
#define MERCURY_CLI_OPTS_H

#include <getopt.h>
#include <stdint.h>
#include <stdio.h>

struct cli_opt {
	const char *name; /* long name without "--"; NULL ends a table */
	int val;	  /* what getopt_long returns for it */
	const char *arg;  /* placeholder of its value ("N", "auto|tcx"), NULL for a flag */
	const char *help; /* may span lines ('\n') */
};

struct cli_command {
	const char *name;
	const char *operands;	    /* after the name in the synopsis, e.g. "<iface>"; or NULL */
	const char *const *usage;   /* more "Usage:" forms (after the name), NULL-terminated */
	const char *about;	    /* what it does, printed under the usage lines */
	const struct cli_opt *opts; /* --help is added to every command */
	const char *after;	    /* printed after the options, or NULL */
};

#define CLI_MAX_OPTS 48

/* The program the help text names ("mercuryd" unless the program sets it). */
extern const char *cli_prog;

/* getopt_long over the command's table plus --help ('h'); `shortopts` as getopt's. */
int cli_getopt(const struct cli_command *c, int argc, char **argv, const char *shortopts);
/* The command's --help text. */
void cli_usage(FILE *f, const struct cli_command *c);
/* One line for `mercuryd --help`: name, operands and every option. */
void cli_synopsis(FILE *f, const struct cli_command *c);
/* The "  --name ARG   help" lines of a table, as --help prints them. */
void cli_print_options(FILE *f, const struct cli_opt *opts);

/*
 * Checked numbers: the whole string must be a number (strtol/strtoull/strtod, base 0 for the
 * integers: 0x.. is hexadecimal) within [min, max]. 0, or -EINVAL (not a number, trailing
 * characters, empty) or -ERANGE (outside [min, max]); *out is written only on success.
 */
int cli_parse_long(const char *s, long min, long max, long *out);
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int cli_parse_double(const char *s, double min, double max, double *out);

#endif
