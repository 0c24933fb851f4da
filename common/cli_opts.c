// SPDX-License-Identifier: BSD-2-Clause
/* Typed option tables: parsing into a config struct, --help, checked numbers
 * (common/cli_opts.h). getopt_long does the scanning, so every spelling it accepts is kept. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli_opts.h"
#include "rate.h"

const char *cli_prog = "mercuryd";

#define HELP_COL   26 /* where the help text of an option starts */
#define HELP_WIDTH 90 /* where it wraps */

static bool takes_value(const struct cli_opt *o)
{
	return o->type != CLI_FLAG && o->type != CLI_COUNT && o->type != CLI_SET;
}

/* ---- the field ---- */

static void store_int(void *p, size_t size, long long v)
{
	switch (size) {
	case 1: {
		int8_t x = (int8_t)v;
		memcpy(p, &x, 1);
		break;
	}
	case 2: {
		int16_t x = (int16_t)v;
		memcpy(p, &x, 2);
		break;
	}
	case 4: {
		int32_t x = (int32_t)v;
		memcpy(p, &x, 4);
		break;
	}
	default:
		memcpy(p, &v, 8);
	}
}

static long long load_int(const void *p, size_t size, bool is_signed)
{
	switch (size) {
	case 1: {
		uint8_t x;
		memcpy(&x, p, 1);
		return is_signed ? (int8_t)x : x;
	}
	case 2: {
		uint16_t x;
		memcpy(&x, p, 2);
		return is_signed ? (int16_t)x : x;
	}
	case 4: {
		uint32_t x;
		memcpy(&x, p, 4);
		return is_signed ? (int32_t)x : (long long)x;
	}
	default: {
		long long x;
		memcpy(&x, p, 8);
		return x;
	}
	}
}

/* The bounds of an integer entry: [min, max] as given, within the field's type; both 0:
 * the whole type. */
static void int_bounds(const struct cli_opt *o, long long *min, unsigned long long *max)
{
	unsigned bits = 8 * (unsigned)o->size;
	unsigned long long tmax = o->type == CLI_INT ? (1ULL << (bits - 1)) - 1
				  : bits == 64	     ? ULLONG_MAX
						     : (1ULL << bits) - 1;
	long long tmin = o->type == CLI_INT ? -(long long)(tmax)-1 : 0;

	*min = o->min || o->max ? o->min : tmin;
	*max = o->min || o->max ? o->max : tmax;
	if (*min < tmin)
		*min = tmin;
	if (*max > tmax)
		*max = tmax;
}

/* ---- the table's own consistency: a wrong type or size is the program's bug ---- */

static int check_entry(const struct cli_opt *o, char *err, size_t errlen)
{
	bool ok;

	switch (o->type) {
	case CLI_FLAG:
		ok = o->size == sizeof(bool);
		break;
	case CLI_COUNT:
	case CLI_SET:
	case CLI_INT:
	case CLI_UINT:
	case CLI_ENUM:
		ok = o->size == 1 || o->size == 2 || o->size == 4 || o->size == 8;
		ok = ok && (o->type != CLI_ENUM || o->names);
		ok = ok && (o->type != CLI_UINT || o->min >= 0);
		break;
	case CLI_DOUBLE:
		ok = o->size == sizeof(double);
		break;
	case CLI_RATE:
		ok = o->size == sizeof(uint64_t);
		break;
	case CLI_STRING:
		ok = o->size == sizeof(const char *);
		break;
	case CLI_LIST:
		ok = o->items && o->count && o->size % o->items == 0 && o->size / o->items > 1;
		break;
	case CLI_CUSTOM:
		ok = o->parse != NULL;
		break;
	default:
		ok = false;
	}
	if (o->positional && !takes_value(o))
		ok = false;
	if (!ok)
		snprintf(err, errlen, "option table: entry '%s' has a bad type or field size",
			 o->name);
	return ok ? 0 : -EINVAL;
}

/* ---- values ---- */

static int number_error(const struct cli_opt *o, const char *arg, int r, char *err, size_t errlen)
{
	const char *what = r == -ERANGE ? "out of range" : "not a number";
	long long min;
	unsigned long long max;

	if (o->type == CLI_DOUBLE) {
		snprintf(err, errlen, "--%s '%s': %s; give %g to %g", o->name, arg, what, o->dmin,
			 o->dmax);
		return -EINVAL;
	}
	int_bounds(o, &min, &max);
	if (max >= LLONG_MAX) /* no bound above worth a number */
		snprintf(err, errlen, "--%s '%s': %s; give %lld or more", o->name, arg, what, min);
	else
		snprintf(err, errlen, "--%s '%s': %s; give %lld to %llu", o->name, arg, what, min,
			 max);
	return -EINVAL;
}

static int set_int(const struct cli_opt *o, const char *arg, void *field, char *err, size_t errlen)
{
	long long min;
	unsigned long long max;
	int r;

	int_bounds(o, &min, &max);
	if (o->type == CLI_INT) {
		long v;

		r = cli_parse_long(arg, min, max > LONG_MAX ? LONG_MAX : (long)max, &v);
		if (!r)
			store_int(field, o->size, v);
	} else {
		uint64_t v;

		r = cli_parse_u64(arg, (uint64_t)min, max, &v);
		if (!r)
			store_int(field, o->size, (long long)v);
	}
	return r ? number_error(o, arg, r, err, errlen) : 0;
}

static void enum_choices(const struct cli_enum *e, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (const struct cli_enum *x = e; x->name && n < len; x++)
		n += snprintf(buf + n, len - n, "%s%s",
			      x == e	  ? ""
			      : x[1].name ? ", "
					  : " or ",
			      x->name);
}

static int set_enum(const struct cli_opt *o, const char *arg, void *field, char *err, size_t errlen)
{
	char choices[256];

	for (const struct cli_enum *x = o->names; x->name; x++)
		if (strcmp(arg, x->name) == 0) {
			store_int(field, o->size, x->value);
			return 0;
		}
	enum_choices(o->names, choices, sizeof(choices));
	if (o->positional)
		snprintf(err, errlen, "unknown %s '%s': use %s", o->name, arg, choices);
	else
		snprintf(err, errlen, "unknown %s '%s' for --%s: use %s", o->name, arg, o->name,
			 choices);
	return -EINVAL;
}

static int set_list(const struct cli_opt *o, const char *arg, char *field, void *cfg, char *err,
		    size_t errlen)
{
	size_t width = o->size / o->items;
	unsigned n = 0;
	const char *p = arg;

	for (;;) {
		size_t len = strcspn(p, ",");

		if (n == o->items) {
			snprintf(err, errlen, "--%s: at most %u items", o->name, o->items);
			return -EINVAL;
		}
		if (len == 0 || len >= width) {
			snprintf(err, errlen, "--%s '%s': %s", o->name, arg,
				 len ? "an item is too long" : "an item is empty");
			return -EINVAL;
		}
		memcpy(field + n * width, p, len);
		field[n * width + len] = '\0';
		n++;
		if (!p[len])
			break;
		p += len + 1;
	}
	store_int((char *)cfg + o->count - 1, sizeof(int), n);
	return 0;
}

/* Converts arg into o's field of cfg: 0, or -EINVAL with err. */
static int set_value(const struct cli_opt *o, const char *arg, void *cfg, char *err, size_t errlen)
{
	char *field = (char *)cfg + o->off;
	int r = 0;

	switch (o->type) {
	case CLI_FLAG:
		*(bool *)field = true;
		break;
	case CLI_COUNT:
		store_int(field, o->size, load_int(field, o->size, true) + 1);
		break;
	case CLI_SET:
		store_int(field, o->size, o->set);
		break;
	case CLI_INT:
	case CLI_UINT:
		r = set_int(o, arg, field, err, errlen);
		break;
	case CLI_DOUBLE: {
		double v;

		r = cli_parse_double(arg, o->dmin, o->dmax, &v);
		if (r)
			return number_error(o, arg, r, err, errlen);
		memcpy(field, &v, sizeof(v));
		break;
	}
	case CLI_RATE: {
		uint64_t v;

		if (parse_rate(arg, &v)) {
			snprintf(err, errlen,
				 "--%s '%s': not a rate; give e.g. 200mbit, 10gbit or 125mbps",
				 o->name, arg);
			return -EINVAL;
		}
		memcpy(field, &v, sizeof(v));
		break;
	}
	case CLI_ENUM:
		r = set_enum(o, arg, field, err, errlen);
		break;
	case CLI_STRING:
		memcpy(field, &arg, sizeof(arg));
		break;
	case CLI_LIST:
		r = set_list(o, arg, field, cfg, err, errlen);
		break;
	case CLI_CUSTOM:
		r = o->parse(arg, field, err, errlen) ? -EINVAL : 0;
		break;
	default:
		r = -EINVAL;
	}
	if (!r && o->seen)
		*((bool *)cfg + o->seen - 1) = true;
	return r;
}

/* ---- parsing ---- */

static const char *cmd_sep(const struct cli_command *c)
{
	return c->name && c->name[0] ? " " : "";
}

/* getopt's '?' (unknown, ambiguous or a flag given a value) and ':' (missing value). */
static int scan_error(const struct cli_command *c, int ch, char **argv, char *err, size_t errlen)
{
	const char *a = argv[optind - 1];

	if (ch == ':' && optopt > 0 && optopt < 256)
		snprintf(err, errlen, "option '-%c' needs a value", optopt);
	else if (ch == ':')
		snprintf(err, errlen, "option '%s' needs a value", a);
	else if (optopt > 0 && optopt < 256)
		snprintf(err, errlen, "unknown option '-%c'; see %s%s%s --help", optopt, cli_prog,
			 cmd_sep(c), c->name);
	else if (strncmp(a, "--", 2) == 0 && strchr(a, '='))
		snprintf(err, errlen,
			 "option '%.*s' takes no value, or is unknown; see %s%s%s --help",
			 (int)(strchr(a, '=') - a), a, cli_prog, cmd_sep(c), c->name);
	else
		snprintf(err, errlen, "unknown option '%s'; see %s%s%s --help", a, cli_prog,
			 cmd_sep(c), c->name);
	return -EINVAL;
}

/* getopt_long's table and short options for c's options. */
static int build_getopt(const struct cli_command *c, struct option *table, char *shortopts,
			char *err, size_t errlen)
{
	int n = 0;
	char *s = shortopts;

	*s++ = c->stop_at_operand ? '+' : '-'; /* '-': operands come back in order as 1 */
	*s++ = ':';
	*s++ = 'h';
	for (int i = 0; c->opts && c->opts[i].type != CLI_END; i++) {
		const struct cli_opt *o = &c->opts[i];

		if (check_entry(o, err, errlen))
			return -EINVAL;
		if (o->positional)
			continue;
		if (n == CLI_MAX_OPTS) {
			snprintf(err, errlen, "option table: more than %d options", CLI_MAX_OPTS);
			return -EINVAL;
		}
		table[n++] = (struct option){
		    o->name, takes_value(o) ? required_argument : no_argument, NULL, 256 + i};
		if (o->short_name) {
			*s++ = (char)o->short_name;
			if (takes_value(o))
				*s++ = ':';
		}
	}
	*s = '\0';
	table[n++] = (struct option){"help", no_argument, NULL, 'h'};
	table[n] = (struct option){NULL, 0, NULL, 0};
	return 0;
}

static const struct cli_opt *by_short(const struct cli_command *c, int ch)
{
	for (const struct cli_opt *o = c->opts; o && o->type != CLI_END; o++)
		if (!o->positional && o->short_name == ch)
			return o;
	return NULL;
}

/* The next positional entry after *pos, or NULL. */
static const struct cli_opt *next_positional(const struct cli_command *c, int *pos)
{
	for (int i = *pos; c->opts && c->opts[i].type != CLI_END; i++)
		if (c->opts[i].positional) {
			*pos = i + 1;
			return &c->opts[i];
		}
	return NULL;
}

static int operands_done(const struct cli_command *c, int pos, char *err, size_t errlen)
{
	const struct cli_opt *o;

	while ((o = next_positional(c, &pos)))
		if (o->required) {
			snprintf(err, errlen, "missing %s", o->help ? o->help : o->arg);
			return -EINVAL;
		}
	return 0;
}

int cli_parse(const struct cli_command *c, int argc, char **argv, void *cfg, int *rest, char *err,
	      size_t errlen)
{
	struct option table[CLI_MAX_OPTS + 2];
	char shortopts[3 * CLI_MAX_OPTS + 8];
	int ch, pos = 0, first_rest = -1;

	if (build_getopt(c, table, shortopts, err, errlen))
		return -EINVAL;
	optind = 0; /* GNU: start afresh */
	opterr = 0;
	while ((ch = getopt_long(argc, argv, shortopts, table, NULL)) != -1) {
		const struct cli_opt *o = NULL;

		if (ch == 'h')
			return CLI_HELP;
		if (ch == 1) { /* an operand, in order ('-' mode) */
			o = next_positional(c, &pos);
			if (!o) { /* beyond the positional entries: the caller's, or an error */
				first_rest = optind - 1;
				break;
			}
		} else if (ch >= 256) {
			o = &c->opts[ch - 256];
		} else if (ch != '?' && ch != ':') {
			o = by_short(c, ch);
		}
		if (!o)
			return scan_error(c, ch, argv, err, errlen);
		if (set_value(o, optarg, cfg, err, errlen))
			return -EINVAL;
	}
	if (first_rest < 0) { /* after "--", or at the first operand under stop_at_operand */
		const struct cli_opt *o;

		for (first_rest = optind; first_rest < argc; first_rest++) {
			if (!(o = next_positional(c, &pos)))
				break;
			if (set_value(o, argv[first_rest], cfg, err, errlen))
				return -EINVAL;
		}
	}
	if (operands_done(c, pos, err, errlen))
		return -EINVAL;
	if (first_rest < argc && !c->more_operands) {
		snprintf(err, errlen, "extra '%s': takes %s", argv[first_rest],
			 c->operands ? c->operands : "no operand");
		return -EINVAL;
	}
	if (rest)
		*rest = first_rest;
	return 0;
}

/* ---- help ---- */

/* Prints text from column `col` (the cursor is there), wrapping at HELP_WIDTH and at '\n'. */
static void print_wrapped(FILE *f, const char *text, int col)
{
	int x = col;

	for (const char *p = text; *p;) {
		size_t word = strcspn(p, " \n");

		if (x > col && x + 1 + (int)word > HELP_WIDTH) {
			fprintf(f, "\n%*s", col, "");
			x = col;
		} else if (x > col) {
			fputc(' ', f);
			x++;
		}
		fprintf(f, "%.*s", (int)word, p);
		x += (int)word;
		p += word;
		if (*p == '\n' && p[1]) {
			fprintf(f, "\n%*s", col, "");
			x = col;
		}
		while (*p == ' ' || *p == '\n')
			p++;
	}
	fputc('\n', f);
}

/* The default of o in `defaults`, as --help shows it; "" for none worth showing. */
static void default_text(const struct cli_opt *o, const void *defaults, char *buf, size_t len)
{
	const char *field = defaults ? (const char *)defaults + o->off : NULL;

	buf[0] = '\0';
	if (o->def) {
		snprintf(buf, len, "%s", o->def);
		return;
	}
	if (!field)
		return;
	if (o->type == CLI_INT || o->type == CLI_UINT) {
		long long v = load_int(field, o->size, o->type == CLI_INT);

		if (v && o->type == CLI_INT)
			snprintf(buf, len, "%lld", v);
		else if (v)
			snprintf(buf, len, "%llu", (unsigned long long)v);
	} else if (o->type == CLI_DOUBLE) {
		double v;

		memcpy(&v, field, sizeof(v));
		if (v != 0)
			snprintf(buf, len, "%g", v);
	} else if (o->type == CLI_ENUM) {
		long long v = load_int(field, o->size, true);

		for (const struct cli_enum *x = o->names; x->name; x++)
			if (x->value == v) {
				snprintf(buf, len, "%s", x->name);
				break;
			}
	} else if (o->type == CLI_STRING) {
		const char *s;

		memcpy(&s, field, sizeof(s));
		if (s)
			snprintf(buf, len, "%s", s);
	}
}

/* "(2 to 16; default 8)" after an option's help, from its bounds and default. */
static void help_suffix(const struct cli_opt *o, const void *defaults, char *buf, size_t len)
{
	char range[96] = "", def[128];

	if (o->type == CLI_INT || o->type == CLI_UINT) {
		long long min;
		unsigned long long max;

		int_bounds(o, &min, &max);
		if (max < LLONG_MAX)
			snprintf(range, sizeof(range), "%lld to %llu", min, max);
		else if (min > 0)
			snprintf(range, sizeof(range), "%lld or more", min);
	} else if (o->type == CLI_DOUBLE) {
		snprintf(range, sizeof(range), "%g to %g", o->dmin, o->dmax);
	}
	default_text(o, defaults, def, sizeof(def));
	if (range[0] && def[0])
		snprintf(buf, len, " (%s; default %s)", range, def);
	else if (range[0] || def[0])
		snprintf(buf, len, " (%s%s)", def[0] ? "default " : "", range[0] ? range : def);
	else
		buf[0] = '\0';
}

void cli_print_options(FILE *f, const struct cli_opt *opts, const void *defaults)
{
	for (const struct cli_opt *o = opts; o && o->type != CLI_END; o++) {
		char head[80], text[1024], suffix[256];
		int n;

		if (o->positional)
			continue;
		if (o->short_name)
			n = snprintf(head, sizeof(head), "  -%c, --%s%s%s", o->short_name, o->name,
				     o->arg ? " " : "", o->arg ? o->arg : "");
		else
			n = snprintf(head, sizeof(head), "  --%s%s%s", o->name, o->arg ? " " : "",
				     o->arg ? o->arg : "");
		if (n >= HELP_COL - 1)
			fprintf(f, "%s\n%*s", head, HELP_COL, "");
		else
			fprintf(f, "%-*s", HELP_COL, head);
		help_suffix(o, defaults, suffix, sizeof(suffix));
		snprintf(text, sizeof(text), "%s%s", o->help ? o->help : "", suffix);
		print_wrapped(f, text, HELP_COL);
	}
}

static bool has_options(const struct cli_command *c)
{
	for (const struct cli_opt *o = c->opts; o && o->type != CLI_END; o++)
		if (!o->positional)
			return true;
	return false;
}

void cli_usage(FILE *f, const struct cli_command *c, const void *defaults)
{
	fprintf(f, "Usage: %s%s%s%s%s%s\n", cli_prog, cmd_sep(c), c->name, c->operands ? " " : "",
		c->operands ? c->operands : "", has_options(c) ? " [options]" : "");
	for (const char *const *u = c->usage; u && *u; u++)
		fprintf(f, "       %s%s%s %s\n", cli_prog, cmd_sep(c), c->name, *u);
	fprintf(f, "\n%s\n", c->about);
	if (has_options(c)) {
		fprintf(f, "\nOptions:\n");
		cli_print_options(f, c->opts, defaults);
	}
	if (c->after)
		fprintf(f, "\n%s\n", c->after);
}

void cli_synopsis(FILE *f, const struct cli_command *c)
{
	int width =
	    fprintf(f, "  %s%s%s", c->name, c->operands ? " " : "", c->operands ? c->operands : "");

	for (const struct cli_opt *o = c->opts; o && o->type != CLI_END; o++) {
		char item[96];
		int n;

		if (o->positional)
			continue;
		n = snprintf(item, sizeof(item), " [--%s%s%s]", o->name, o->arg ? " " : "",
			     o->arg ? o->arg : "");
		if (width + n > HELP_WIDTH) {
			fprintf(f, "\n%*s", 4 + (int)strlen(c->name), "");
			width = 4 + (int)strlen(c->name);
		}
		fputs(item, f);
		width += n;
	}
	fputc('\n', f);
}

/* ---- checked numbers ---- */

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
