/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Typed option tables, one per command (mercuryd's verbs, mercury-ps). Each entry names an
 * option (or an operand), its type and bounds, its help, and the field of the command's
 * config struct it fills (offsetof): cli_parse() fills the struct from argv, cli_usage()
 * prints --help from the same table and the defaults struct, and tests/system/test_cli_docs.sh
 * checks the man pages, the completions and the README against that --help. A verb never
 * calls getopt and never converts a number itself. Numbers are range-checked; every error
 * names the option, the value given and what the option takes.
 */
#ifndef MERCURY_CLI_OPTS_H
#define MERCURY_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum cli_type {
	CLI_END = 0, /* ends a table */
	CLI_FLAG,    /* bool: true when given; no value */
	CLI_COUNT,   /* integer: one more each time given (-vv); no value */
	CLI_SET,     /* integer: set to .set when given; no value */
	CLI_INT,     /* signed integer of the field's size, within [min, max] */
	CLI_UINT,    /* unsigned integer of the field's size, within [min, max] (min >= 0) */
	CLI_DOUBLE,  /* double within [dmin, dmax] */
	CLI_RATE,    /* uint64_t bytes per second, tc's syntax (common/rate.h): 200mbit, 1gbps */
	CLI_ENUM,    /* integer (or bool): the value of the name given, from .names */
	CLI_STRING,  /* const char *: the argument as given */
	CLI_LIST,    /* char [.items][W]: comma-separated strings, each below W bytes; the count
		      * goes to .count */
	CLI_CUSTOM,  /* .parse() converts the argument into the field */
};

struct cli_enum {
	const char *name; /* NULL ends the list */
	long value;
};

struct cli_opt {
	const char *name;   /* long name without "--" (an operand's name in messages) */
	int short_name;	    /* 'v' for -v, or 0 */
	enum cli_type type; /* CLI_END: the end of the table */
	bool positional;    /* an operand, in table order, not an option */
	bool required;	    /* an operand that must be there */
	size_t off, size;   /* the field it fills: CLI_FIELD(struct, member) */
	size_t seen;	    /* CLI_SEEN(struct, member): a bool set when given; 0: none */
	size_t count;	    /* CLI_LIST: CLI_SEEN(struct, int member) for the count */
	long long min;	    /* CLI_INT, CLI_UINT bounds */
	unsigned long long max;
	double dmin, dmax;	      /* CLI_DOUBLE bounds */
	long set;		      /* CLI_SET */
	unsigned items;		      /* CLI_LIST: most items */
	const struct cli_enum *names; /* CLI_ENUM */
	int (*parse)(const char *arg, void *field, char *err, size_t errlen); /* CLI_CUSTOM */
	/* the value's placeholder in --help ("N", "auto|tcx"); an operand's: "<iface>" */
	const char *arg;
	const char *help; /* '\n' breaks a line; --help wraps long lines itself */
	const char *def;  /* shown as "default DEF" instead of the defaults struct's value;
			   * "" shows none */
};

/* The field an entry fills, and a bool (or int, for a CLI_LIST count) it sets when given. */
#define CLI_FIELD(type, member) .off = offsetof(type, member), .size = sizeof(((type *)0)->member)
#define CLI_SEEN(type, member)	(offsetof(type, member) + 1)

struct cli_command {
	const char *name;	  /* "" for a program without commands */
	const char *operands;	  /* after the name in the synopsis, e.g. "<iface>"; or NULL */
	const char *const *usage; /* more "Usage:" forms (after the name), NULL-terminated */
	const char *about;	  /* what it does, printed under the usage lines */
	/* options and operands; --help (-h) is added to every command */
	const struct cli_opt *opts;
	const char *after;    /* printed after the options, or NULL */
	bool stop_at_operand; /* options only before the first operand ("+" of getopt) */
	bool more_operands;   /* operands beyond the positional entries are the caller's */
};

#define CLI_MAX_OPTS 48
enum { CLI_HELP = 1 };

/* The program the help text and the messages name ("mercuryd" unless the program sets it). */
extern const char *cli_prog;

/*
 * Parses argv[1..argc) by c's table into cfg (argv[0] is the command's name), leaving the
 * fields of options not given as they are (the caller sets the defaults first). Options
 * as getopt_long takes them: --name VALUE, --name=VALUE, a unique abbreviation, -x, anywhere
 * among the operands (unless c->stop_at_operand). Operands fill the positional entries in
 * order; *rest (may be NULL) gets the index in argv of the first operand beyond them, an
 * error unless c->more_operands. argv may be reordered.
 * Returns 0, CLI_HELP when --help or -h was given (nothing else checked), or -EINVAL with a
 * one-line message in err: the option, the value and what it takes.
 */
int cli_parse(const struct cli_command *c, int argc, char **argv, void *cfg, int *rest, char *err,
	      size_t errlen);

/* The command's --help; `defaults` (may be NULL): the config struct before parsing, whose
 * values --help shows as each option's default. */
void cli_usage(FILE *f, const struct cli_command *c, const void *defaults);
/* One line for `mercuryd --help`: name, operands and every option. */
void cli_synopsis(FILE *f, const struct cli_command *c);
/* The "  --name ARG   help (range; default D)" lines of a table's options. */
void cli_print_options(FILE *f, const struct cli_opt *opts, const void *defaults);

/*
 * Checked numbers: the whole string must be a number (strtol/strtoull/strtod, base 0 for the
 * integers: 0x.. is hexadecimal) within [min, max]. 0, or -EINVAL (not a number, trailing
 * characters, empty) or -ERANGE (outside [min, max]); *out is written only on success.
 */
int cli_parse_long(const char *s, long min, long max, long *out);
int cli_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
int cli_parse_double(const char *s, double min, double max, double *out);

#endif
