/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One option table per mercuryd command: getopt_long's table, the command's --help and its
 * line in `mercuryd --help` are all made from it, and tests/system/test_cli_docs.sh checks
 * the man page and the README against the --help it prints.
 */
#ifndef MERCURY_CLI_OPTS_H
#define MERCURY_CLI_OPTS_H

#include <getopt.h>
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

#define CLI_MAX_OPTS 16

/* getopt_long over the command's table plus --help ('h'); `shortopts` as getopt's. */
int cli_getopt(const struct cli_command *c, int argc, char **argv, const char *shortopts);
/* The command's --help text. */
void cli_usage(FILE *f, const struct cli_command *c);
/* One line for `mercuryd --help`: name, operands and every option. */
void cli_synopsis(FILE *f, const struct cli_command *c);

#endif
