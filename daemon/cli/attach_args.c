// SPDX-License-Identifier: BSD-2-Clause
/* Parsing of attach and tag arguments, kept apart from the syscalls so it can be tested. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "attach_args.h"
#include "tc/band_plan.h"

static const struct cli_enum backend_names[] = {
    {"auto", MERCURY_BACKEND_NONE},
    {"mqprio", MERCURY_BACKEND_MQPRIO},
    {"prio", MERCURY_BACKEND_PRIO},
    {"ets", MERCURY_BACKEND_ETS},
    {"htb", MERCURY_BACKEND_HTB},
    {"tbf", MERCURY_BACKEND_TBF},
    {NULL, 0},
};

static const struct cli_enum job_policy_names[] = {
    {"share", MERCURY_POLICY_SHARE},
    {"priority", MERCURY_POLICY_PRIORITY},
    {NULL, 0},
};

static const struct cli_enum control_names[] = {
    {"first", 1},
    {"default", 0},
    {NULL, 0},
};

static const struct cli_enum hook_names[] = {
    {"auto", MERCURY_HOOK_NONE},
    {"tcx", MERCURY_HOOK_TCX},
    {"clsact", MERCURY_HOOK_CLSACT},
    {NULL, 0},
};

static int dscp_field(const char *arg, void *field, char *err, size_t errlen)
{
	return dscp_opt_parse(arg, field, err, errlen);
}

static int dscp_guard_field(const char *arg, void *field, char *err, size_t errlen)
{
	return dscp_guard_parse(arg, field, err, errlen);
}

#define A(member) CLI_FIELD(struct attach_args, member)

/* clang-format off */
static const struct cli_opt attach_opts[] = {
    {.name = "iface", .positional = true, .type = CLI_STRING, A(iface), .arg = "<iface>"},
    {.name = "qdisc", .type = CLI_ENUM, A(backend), .names = backend_names,
     .arg = "auto|mqprio|prio|ets|htb|tbf",
     .help = "backend (default auto: mqprio with NIC offload, prio, ets, htb, tbf)", .def = ""},
    {.name = "bands", .type = CLI_UINT, A(bands), .min = 2, .max = MERCURY_MAX_BANDS, .arg = "N",
     .help = "number of priority bands", .def = "8; tbf+pfifo_fast has 3"},
    {.name = "rate", .type = CLI_RATE, A(rate_bps), .arg = "R",
     .help = "bottleneck rate for htb and tbf, e.g. 200mbit, 10gbit"},
    {.name = "default-band", .type = CLI_INT, A(default_band), .min = 0,
     .max = MERCURY_MAX_BANDS - 1, .arg = "B", .help = "band of untagged traffic",
     .def = "the last, least urgent"},
    {.name = "hook", .type = CLI_ENUM, A(hook), .names = hook_names, .arg = "auto|tcx|clsact",
     .help = "tcx (kernel >= 6.6), clsact, or auto (tcx, else clsact)", .def = ""},
    {.name = "dscp", .type = CLI_CUSTOM, A(dscp), .parse = dscp_field,
     .arg = "off|default|D0,D1,...",
     .help = "also write each tagged packet's band as DSCP into its IP header, for switches "
	     "with DSCP-to-queue maps: default is CS5,CS4,CS3,CS2 for bands 0..3 and CS0 "
	     "after; or one value (0..63, cs0..cs7, af11..af43, ef) per band, band 0 first, "
	     "the last repeated", .def = "off; untagged data is never rewritten (for segments without payload see --control)"},
    {.name = "dscp-guard", .type = CLI_CUSTOM, A(dscp_guard), .parse = dscp_guard_field,
     .arg = "on|off|BOUND",
     .help = "with --dscp: a socket's DSCP moves to a more urgent band's only once every byte "
	     "it sent before is acknowledged, so that none of its packets overtakes its own "
	     "earlier ones in a switch's strict-priority queues; BOUND (e.g. 20ms, 500us) lets "
	     "a rise go ahead after that long", .def = "on, no bound"},
    {.name = "control", .type = CLI_ENUM, A(control), .names = control_names,
     .arg = "first|default",
     .help = "TCP segments without payload (pure ACKs, SYN, FIN, RST): first puts them in "
	     "band 0 and, with --dscp, gives those that carry DSCP 0 band 0's, so that the "
	     "ACKs of traffic coming in never wait behind tagged traffic going out, here or in "
	     "a switch; default treats them as untagged traffic",
     .def = "first"},
    {.name = "job-policy", .type = CLI_ENUM, A(job_policy), .names = job_policy_names,
     .arg = "share|priority",
     .help = "what a job's weight buys: share (htb only: each job its own classes, assured "
	     "rate in proportion to its weight, layer priority inside the job) or priority (a "
	     "lighter job yields log2(w_max/w) bands)",
     .def = "priority; share needs htb and at most 8 bands"},
    {.name = "force", .short_name = 'f', .type = CLI_FLAG, A(force),
     .help = "replace a root qdisc Mercury did not create (detach restores it), or "
	     "re-attach with other settings"},
    {.name = "from", .type = CLI_STRING, A(from), .arg = "FILE",
     .help = "attach every interface FILE lists, one '<iface> [options]' a line ('#' "
	     "comments; no FILE: nothing to do), as the service starts; alone, instead of "
	     "<iface>"},
    {.type = CLI_END},
};
/* clang-format on */

const struct cli_command attach_command = {
    .name = "attach",
    .operands = "<iface>",
    .usage = (const char *const[]){"--from FILE", NULL},
    .about = "Installs a strict-priority root qdisc and the Mercury classifier at TC egress.",
    .opts = attach_opts,
};

#define T(member) CLI_FIELD(struct tag_args, member)

/* clang-format off */
static const struct cli_opt tag_opts[] = {
    {.name = "pid", .type = CLI_INT, T(pid), .min = 0, .max = (1 << 30) - 1, .arg = "P",
     .help = "the process owning the socket", .def = ""},
    {.name = "fd", .type = CLI_INT, T(fd), .min = 0, .max = (1 << 30) - 1, .arg = "F",
     .help = "the socket's file descriptor in that process", .def = ""},
    {.name = "next", .type = CLI_UINT, T(next), .min = 1, .max = UINT64_MAX,
     .seen = CLI_SEEN(struct tag_args, have_next), .arg = "N",
     .help = "tag the next N bytes the process writes"},
    {.name = "offset", .type = CLI_UINT, T(offset), .seen = CLI_SEEN(struct tag_args, have_offset),
     .arg = "S",
     .help = "with --len: bytes [S, S+N) in the classifier's stream offsets\n"
	     "(tcpi_bytes_acked based: an actively opened socket's first\n"
	     "byte is 1, an accepted socket's is 0)"},
    {.name = "len", .type = CLI_UINT, T(len), .min = 1, .max = UINT64_MAX,
     .seen = CLI_SEEN(struct tag_args, have_len), .arg = "N",
     .help = "the length of the --offset range"},
    {.name = "level", .type = CLI_UINT, T(level), .min = 0, .max = MERCURY_MAX_LEVELS - 1,
     .seen = CLI_SEEN(struct tag_args, have_level), .arg = "L",
     .help = "priority level, 0 the most urgent"},
    {.name = "show", .type = CLI_FLAG, T(show),
     .help = "print the socket's tagged ranges, the level each resolves to now, and its "
	     "position"},
    {.name = "clear", .type = CLI_FLAG, T(clear), .help = "remove all of the socket's tags"},
    {.type = CLI_END},
};
/* clang-format on */

const struct cli_command tag_command = {
    .name = "tag",
    .usage = (const char *const[]){"--pid P --fd F --next N --level L",
				   "--pid P --fd F --offset S --len N --level L",
				   "--pid P --fd F --show | --clear", NULL},
    .about = "Tags bytes of process P's TCP socket F with a priority level (an admin and\n"
	     "test tool; frameworks tag through libmercury).",
    .opts = tag_opts,
    .after = "The socket is borrowed with pidfd_getfd(2) and closed again at once.",
};

/* Non-negative integer below `limit`, whole string. */
static int parse_uint(const char *s, uint64_t limit, uint64_t *out)
{
	return s && cli_parse_u64(s, 0, limit - 1, out) == 0 ? 0 : -EINVAL;
}

void attach_args_defaults(struct attach_args *a)
{
	memset(a, 0, sizeof(*a));
	a->default_band = -1;
	a->job_policy = -1;
	a->control = -1;
}

int attach_args_parse(int argc, char **argv, struct attach_args *a, char *err, size_t errlen)
{
	struct attach_args only_from;
	int r;

	attach_args_defaults(a);
	r = cli_parse(&attach_command, argc, argv, a, NULL, err, errlen);
	if (r == CLI_HELP) {
		a->help = true;
		return 0;
	}
	if (r)
		return r;
	if (a->from) {
		attach_args_defaults(&only_from);
		only_from.from = a->from;
		if (memcmp(&only_from, a, sizeof(*a))) {
			snprintf(err, errlen, "--from FILE takes no interface or other option");
			return -EINVAL;
		}
		return 0;
	}
	if (!a->iface) {
		snprintf(err, errlen, "attach needs an interface name");
		return -EINVAL;
	}
	if (a->bands && a->default_band >= (int)a->bands) {
		snprintf(err, errlen, "--default-band %d is not below --bands %u", a->default_band,
			 a->bands);
		return -EINVAL;
	}
	return 0;
}

static const struct {
	const char *name;
	uint8_t v;
} dscp_names[] = {
    {"cs0", 0},	  {"be", 0},	{"le", 1},    {"cs1", 8},   {"af11", 10}, {"af12", 12},
    {"af13", 14}, {"cs2", 16},	{"af21", 18}, {"af22", 20}, {"af23", 22}, {"cs3", 24},
    {"af31", 26}, {"af32", 28}, {"af33", 30}, {"cs4", 32},  {"af41", 34}, {"af42", 36},
    {"af43", 38}, {"cs5", 40},	{"va", 44},   {"ef", 46},   {"cs6", 48},  {"cs7", 56},
};

const char *control_name(bool first)
{
	for (const struct cli_enum *e = control_names; e->name; e++)
		if (e->value == (first ? 1 : 0))
			return e->name;
	return "?";
}

const char *dscp_name(unsigned v)
{
	for (size_t i = 0; i < sizeof(dscp_names) / sizeof(dscp_names[0]); i++)
		if (dscp_names[i].v == v && strcmp(dscp_names[i].name, "be") != 0)
			return dscp_names[i].name;
	return NULL;
}

int dscp_opt_parse(const char *s, struct dscp_opt *d, char *err, size_t errlen)
{
	char buf[256], *rest = buf, *tok;

	memset(d, 0, sizeof(*d));
	d->given = 1;
	if (strcmp(s, "off") == 0)
		return 0;
	d->on = true;
	if (strcmp(s, "default") == 0) {
		d->std = true;
		return 0;
	}
	if (strlen(s) >= sizeof(buf) || !*s) {
		snprintf(err, errlen, "--dscp '%s': give off, default or values like 40,32,24,0",
			 s);
		return -EINVAL;
	}
	strcpy(buf, s);
	while ((tok = strsep(&rest, ","))) {
		uint64_t v;
		bool found = false;

		if (d->n == MERCURY_MAX_BANDS) {
			snprintf(err, errlen, "--dscp: at most %d values (one a band)",
				 MERCURY_MAX_BANDS);
			return -EINVAL;
		}
		for (size_t i = 0; i < sizeof(dscp_names) / sizeof(dscp_names[0]); i++)
			if (strcasecmp(tok, dscp_names[i].name) == 0) {
				v = dscp_names[i].v;
				found = true;
			}
		if (!found && parse_uint(tok, 64, &v)) {
			snprintf(err, errlen,
				 "--dscp: '%s' is not a DSCP value (0..63, cs0..cs7, af11..af43, "
				 "ef, va, le, be)",
				 tok);
			return -EINVAL;
		}
		d->v[d->n++] = (uint8_t)v;
	}
	if (d->n == 0) {
		snprintf(err, errlen, "--dscp '%s': give off, default or values like 40,32,24,0",
			 s);
		return -EINVAL;
	}
	return 0;
}

void tag_args_defaults(struct tag_args *a)
{
	memset(a, 0, sizeof(*a));
	a->pid = -1;
	a->fd = -1;
}

int tag_args_parse(int argc, char **argv, struct tag_args *a, char *err, size_t errlen)
{
	int r;

	tag_args_defaults(a);
	r = cli_parse(&tag_command, argc, argv, a, NULL, err, errlen);
	if (r == CLI_HELP) {
		a->help = true;
		return 0;
	}
	if (r)
		return r;
	if (a->pid < 0 || a->fd < 0) {
		snprintf(err, errlen,
			 "tag needs --pid and --fd of the socket (see ls -l /proc/PID/fd)");
		return -EINVAL;
	}
	if (a->show || a->clear) {
		if (a->have_next || a->have_offset || a->have_level || (a->show && a->clear)) {
			snprintf(err, errlen, "--show and --clear take only --pid and --fd");
			return -EINVAL;
		}
		return 0;
	}
	if (a->have_next == (a->have_offset || a->have_len) || (a->have_offset != a->have_len)) {
		snprintf(err, errlen, "give either --next N or --offset S --len N");
		return -EINVAL;
	}
	if (!a->have_level) {
		snprintf(err, errlen, "tag needs --level L (0 is the most urgent)");
		return -EINVAL;
	}
	return 0;
}
