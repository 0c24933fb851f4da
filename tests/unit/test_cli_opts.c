// SPDX-License-Identifier: BSD-2-Clause
/* The typed option tables every command line uses (common/cli_opts.h): each type filling its
 * field, bounds, unknown options, missing values, operands, defaults in --help; and the
 * checked number parsers under them: whole strings only, ranges enforced, nothing written on
 * failure. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "cli_opts.h"

static void test_long(void **state)
{
	long v = 42;

	(void)state;
	assert_int_equal(cli_parse_long("16", 1, 16, &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(cli_parse_long("0x10", 0, 100, &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(cli_parse_long("-1", -1, 15, &v), 0);
	assert_int_equal(v, -1);
	v = 42;
	assert_int_equal(cli_parse_long("abc", 0, 100, &v), -EINVAL);
	assert_int_equal(cli_parse_long("", 0, 100, &v), -EINVAL);
	assert_int_equal(cli_parse_long("12x", 0, 100, &v), -EINVAL);
	assert_int_equal(cli_parse_long(" 12", 0, 100, &v), -EINVAL);
	assert_int_equal(cli_parse_long("17", 1, 16, &v), -ERANGE);
	assert_int_equal(cli_parse_long("0", 1, 16, &v), -ERANGE);
	assert_int_equal(cli_parse_long("99999999999999999999999", 0, 100, &v), -ERANGE);
	assert_int_equal(v, 42);
}

static void test_u64(void **state)
{
	uint64_t v = 42;

	(void)state;
	assert_int_equal(cli_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(cli_parse_u64("+5", 0, 10, &v), 0);
	assert_true(v == 5);
	v = 42;
	assert_int_equal(cli_parse_u64("-1", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(cli_parse_u64(" -1", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(cli_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(cli_parse_u64("1e6", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(cli_parse_u64("0", 1, 10, &v), -ERANGE);
	assert_true(v == 42);
}

static void test_double(void **state)
{
	double v = 42;

	(void)state;
	assert_int_equal(cli_parse_double("1.5625", 0, 10, &v), 0);
	assert_true(v == 1.5625);
	assert_int_equal(cli_parse_double("1e3", 0, 1e6, &v), 0);
	assert_true(v == 1000);
	v = 42;
	assert_int_equal(cli_parse_double("nan", 0, 10, &v), -ERANGE);
	assert_int_equal(cli_parse_double("inf", 0, 1e300, &v), -ERANGE);
	assert_int_equal(cli_parse_double("1.5s", 0, 10, &v), -EINVAL);
	assert_int_equal(cli_parse_double("-0.5", 0, 10, &v), -ERANGE);
	assert_int_equal(cli_parse_double("", 0, 10, &v), -EINVAL);
	assert_true(v == 42);
}

/* ---- the table parser ---- */

struct cfg {
	bool flag, seen_n;
	int verbose;
	int role;
	int n;	       /* int, 1..16 */
	int8_t small;  /* int, the whole int8_t */
	uint16_t port; /* uint, 1..65535 */
	uint64_t big;  /* uint, the whole uint64_t */
	double scale;  /* 0.5..2 */
	uint64_t rate; /* bytes per second */
	int mode;      /* enum */
	bool balanced; /* enum into a bool */
	const char *name;
	char hosts[3][8];
	int nhosts;
	int even;	   /* custom: even numbers only */
	const char *iface; /* operand */
	int verb;	   /* operand, enum */
};

static int parse_even(const char *arg, void *field, char *err, size_t errlen)
{
	long v;

	if (cli_parse_long(arg, 0, 100, &v) || v % 2) {
		snprintf(err, errlen, "--even '%s': give an even number, 0 to 100", arg);
		return -1;
	}
	*(int *)field = (int)v;
	return 0;
}

static const struct cli_enum modes[] = {{"fifo", 0}, {"partition", 1}, {"mercury", 2}, {NULL, 0}};
static const struct cli_enum placements[] = {{"hash", 0}, {"balanced", 1}, {NULL, 0}};
static const struct cli_enum verbs[] = {{"attach", 1}, {"detach", 2}, {NULL, 0}};

#define F(member) CLI_FIELD(struct cfg, member)

static const struct cli_opt opts[] = {
    {.name = "iface", .positional = true, .type = CLI_STRING, F(iface), .arg = "<iface>"},
    {.name = "flag", .short_name = 'f', .type = CLI_FLAG, F(flag), .help = "a flag"},
    {.name = "verbose", .short_name = 'v', .type = CLI_COUNT, F(verbose), .help = "more"},
    {.name = "worker", .type = CLI_SET, F(role), .set = 7, .help = "role 7"},
    {.name = "n",
     .type = CLI_INT,
     F(n),
     .min = 1,
     .max = 16,
     .seen = CLI_SEEN(struct cfg, seen_n),
     .arg = "N",
     .help = "a count"},
    {.name = "small", .type = CLI_INT, F(small), .arg = "S", .help = "an int8_t"},
    {.name = "port",
     .type = CLI_UINT,
     F(port),
     .min = 1,
     .max = 65535,
     .arg = "P",
     .help = "a port"},
    {.name = "big", .type = CLI_UINT, F(big), .arg = "B", .help = "a u64"},
    {.name = "scale",
     .type = CLI_DOUBLE,
     F(scale),
     .dmin = 0.5,
     .dmax = 2,
     .arg = "S",
     .help = "a factor"},
    {.name = "rate", .type = CLI_RATE, F(rate), .arg = "R", .help = "a rate"},
    {.name = "mode", .type = CLI_ENUM, F(mode), .names = modes, .arg = "M", .help = "a mode"},
    {.name = "placement",
     .type = CLI_ENUM,
     F(balanced),
     .names = placements,
     .arg = "P",
     .help = "a placement"},
    {.name = "name", .type = CLI_STRING, F(name), .arg = "NAME", .help = "a name"},
    {.name = "hosts",
     .type = CLI_LIST,
     F(hosts),
     .items = 3,
     .count = CLI_SEEN(struct cfg, nhosts),
     .arg = "H,H",
     .help = "hosts"},
    {.name = "even",
     .type = CLI_CUSTOM,
     F(even),
     .parse = parse_even,
     .arg = "E",
     .help = "an even number",
     .def = "none"},
    {.type = CLI_END},
};

static const struct cli_command cmd = {
    .name = "test", .operands = "[<iface>]", .about = "t", .opts = opts};

static void defaults(struct cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->n = 4;
	c->port = 9555;
	c->scale = 1;
	c->mode = 2;
	c->name = "dflt";
}

/* Parses the NULL-terminated words (after the command's name) into c: cli_parse's result. */
static int parse_words(const struct cli_command *command, struct cfg *c, int *rest, char *err,
		       const char **words)
{
	static char *argv[32];
	int argc = 0;

	argv[argc++] = (char *)command->name;
	for (; *words; words++)
		argv[argc++] = (char *)*words;
	argv[argc] = NULL;
	defaults(c);
	err[0] = '\0';
	return cli_parse(command, argc, argv, c, rest, err, 256);
}
#define PARSE(c, err, ...) parse_words(&cmd, c, NULL, err, (const char *[]){__VA_ARGS__, NULL})

static void expect_error(const char *needle, const char **words)
{
	struct cfg c;
	char err[256];

	assert_int_equal(parse_words(&cmd, &c, NULL, err, words), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' lacks '%s'", err, needle);
}
#define EXPECT_ERROR(needle, ...) expect_error(needle, (const char *[]){__VA_ARGS__, NULL})

static void test_defaults_kept(void **state)
{
	struct cfg c, d;
	char err[256];

	(void)state;
	assert_int_equal(parse_words(&cmd, &c, NULL, err, (const char *[]){NULL}), 0);
	defaults(&d);
	assert_memory_equal(&c, &d, sizeof(c)); /* nothing given: nothing written */
	assert_false(c.seen_n);
}

static void test_every_type(void **state)
{
	struct cfg c;
	char err[256];

	(void)state;
	assert_int_equal(PARSE(&c, err, "eth0", "-f", "-vv", "--verbose", "--worker", "--n", "16",
			       "--small", "-128", "--port=1", "--big", "18446744073709551615",
			       "--scale", "0.5", "--rate", "200mbit", "--mode", "fifo",
			       "--placement", "balanced", "--name", "x", "--hosts", "a:1,b,c",
			       "--even", "42"),
			 0);
	assert_string_equal(c.iface, "eth0");
	assert_true(c.flag);
	assert_int_equal(c.verbose, 3);
	assert_int_equal(c.role, 7);
	assert_int_equal(c.n, 16);
	assert_true(c.seen_n);
	assert_int_equal(c.small, -128);
	assert_int_equal(c.port, 1);
	assert_true(c.big == UINT64_MAX);
	assert_true(c.scale == 0.5);
	assert_int_equal(c.rate, 25000000);
	assert_int_equal(c.mode, 0);
	assert_true(c.balanced);
	assert_string_equal(c.name, "x");
	assert_int_equal(c.nhosts, 3);
	assert_string_equal(c.hosts[0], "a:1");
	assert_string_equal(c.hosts[2], "c");
	assert_int_equal(c.even, 42);
	/* abbreviations, hexadecimal, options after the operand */
	assert_int_equal(PARSE(&c, err, "--po", "0x10", "eth1", "--n=2"), 0);
	assert_int_equal(c.port, 16);
	assert_int_equal(c.n, 2);
	assert_string_equal(c.iface, "eth1");
}

static void test_bounds(void **state)
{
	(void)state;
	EXPECT_ERROR("--n '0': out of range; give 1 to 16", "--n", "0");
	EXPECT_ERROR("--n '17': out of range; give 1 to 16", "--n", "17");
	EXPECT_ERROR("--n '4x': not a number; give 1 to 16", "--n", "4x");
	EXPECT_ERROR("--n '': not a number", "--n", "");
	EXPECT_ERROR("--small '128': out of range; give -128 to 127", "--small", "128");
	EXPECT_ERROR("--port '-1': out of range; give 1 to 65535", "--port", "-1");
	EXPECT_ERROR("--port '65536'", "--port", "65536");
	EXPECT_ERROR("--big '18446744073709551616': out of range; give 0 or more", "--big",
		     "18446744073709551616");
	EXPECT_ERROR("--scale '2.5': out of range; give 0.5 to 2", "--scale", "2.5");
	EXPECT_ERROR("--scale 'nan': out of range", "--scale", "nan");
	EXPECT_ERROR("--rate 'fast': not a rate", "--rate", "fast");
	EXPECT_ERROR("unknown mode 'lifo' for --mode: use fifo, partition or mercury", "--mode",
		     "lifo");
	EXPECT_ERROR("--hosts: at most 3 items", "--hosts", "a,b,c,d");
	EXPECT_ERROR("--hosts 'a,,b': an item is empty", "--hosts", "a,,b");
	EXPECT_ERROR("--hosts 'a,12345678': an item is too long", "--hosts", "a,12345678");
	EXPECT_ERROR("--even '3': give an even number", "--even", "3");
}

static void test_bad_words(void **state)
{
	(void)state;
	EXPECT_ERROR("unknown option '--frob'; see mercuryd test --help", "--frob");
	EXPECT_ERROR("unknown option '-x'", "-x");
	EXPECT_ERROR("option '--n' needs a value", "--n");
	EXPECT_ERROR("option '--name' needs a value", "eth0", "--name");
	EXPECT_ERROR("option '--flag' takes no value", "--flag=1");
	EXPECT_ERROR("extra 'b': takes [<iface>]", "a", "b");
	EXPECT_ERROR("extra 'b': takes [<iface>]", "a", "--", "b");
}

static void test_help(void **state)
{
	struct cfg c, d;
	char err[256], *text = NULL;
	size_t len = 0;
	FILE *f;

	(void)state;
	assert_int_equal(PARSE(&c, err, "--n", "3", "--help", "--frob"), CLI_HELP);
	assert_int_equal(PARSE(&c, err, "-h"), CLI_HELP);
	assert_int_equal(PARSE(&c, err, "--he"), CLI_HELP);
	/* --help: every option, its range and the defaults struct's value */
	defaults(&d);
	f = open_memstream(&text, &len);
	cli_usage(f, &cmd, &d);
	fclose(f);
	assert_non_null(strstr(text, "Usage: mercuryd test [<iface>] [options]"));
	assert_non_null(strstr(text, "  --n N                   a count (1 to 16; default 4)\n"));
	assert_non_null(strstr(text, "  -f, --flag              a flag\n"));
	assert_non_null(strstr(text, "--port P                a port (1 to 65535; default 9555)"));
	assert_non_null(strstr(text, "--scale S               a factor (0.5 to 2; default 1)"));
	assert_non_null(strstr(text, "--mode M                a mode (default mercury)"));
	assert_non_null(strstr(text, "--name NAME             a name (default dflt)"));
	assert_non_null(strstr(text, "--even E                an even number (default none)"));
	assert_non_null(strstr(text, "--big B                 a u64\n"));
	assert_null(strstr(text, "<iface>  ")); /* operands are no options */
	free(text);
}

static void test_operands(void **state)
{
	static const struct cli_opt verb_opts[] = {
	    {.name = "command",
	     .positional = true,
	     .required = true,
	     .type = CLI_ENUM,
	     CLI_FIELD(struct cfg, verb),
	     .names = verbs,
	     .help = "attach or detach"},
	    {.name = "flag", .short_name = 'f', .type = CLI_FLAG, CLI_FIELD(struct cfg, flag)},
	    {.type = CLI_END},
	};
	static const struct cli_command verb_cmd = {.name = "fp", .opts = verb_opts};
	static const struct cli_command global = {
	    .name = "", .opts = verb_opts + 1, .stop_at_operand = true, .more_operands = true};
	struct cfg c;
	char err[256];
	int rest = -1;

	(void)state;
	assert_int_equal(
	    parse_words(&verb_cmd, &c, NULL, err, (const char *[]){"-f", "detach", NULL}), 0);
	assert_int_equal(c.verb, 2);
	assert_int_equal(parse_words(&verb_cmd, &c, NULL, err, (const char *[]){"-f", NULL}),
			 -EINVAL);
	assert_string_equal(err, "missing attach or detach");
	assert_int_equal(parse_words(&verb_cmd, &c, NULL, err, (const char *[]){"frob", NULL}),
			 -EINVAL);
	assert_string_equal(err, "unknown command 'frob': use attach or detach");
	/* options before the first operand only; the rest is the caller's */
	assert_int_equal(
	    parse_words(&global, &c, &rest, err, (const char *[]){"-f", "status", "-f", "x", NULL}),
	    0);
	assert_true(c.flag);
	assert_int_equal(rest, 2);
}

static void test_table_checked(void **state)
{
	static const struct cli_opt bad[] = {
	    {.name = "n", .type = CLI_DOUBLE, CLI_FIELD(struct cfg, n), .arg = "N"}, /* an int */
	    {.type = CLI_END},
	};
	static const struct cli_command bad_cmd = {.name = "bad", .opts = bad};
	struct cfg c;
	char err[256];

	(void)state;
	assert_int_equal(parse_words(&bad_cmd, &c, NULL, err, (const char *[]){NULL}), -EINVAL);
	assert_non_null(strstr(err, "entry 'n' has a bad type or field size"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_long),       cmocka_unit_test(test_u64),
	    cmocka_unit_test(test_double),     cmocka_unit_test(test_defaults_kept),
	    cmocka_unit_test(test_every_type), cmocka_unit_test(test_bounds),
	    cmocka_unit_test(test_bad_words),  cmocka_unit_test(test_help),
	    cmocka_unit_test(test_operands),   cmocka_unit_test(test_table_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
