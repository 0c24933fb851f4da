// SPDX-License-Identifier: BSD-2-Clause
/* Parsing of attach and tag arguments, kept apart from the syscalls so it can be tested. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attach_args.h"
#include "tc/band_plan.h"

static const struct cli_opt attach_opts[] = {
    {"qdisc", 'q', "auto|mqprio|prio|ets|htb|tbf",
     "backend (default auto: mqprio with NIC offload, prio, ets, htb, tbf)"},
    {"bands", 'b', "N", "number of priority bands (default 8; tbf+pfifo_fast has 3)"},
    {"rate", 'r', "R", "bottleneck rate for htb and tbf, e.g. 200mbit, 10gbit"},
    {"default-band", 'd', "B", "band of untagged traffic (default: the last, least urgent)"},
    {"hook", 'k', "auto|tcx|clsact", "tcx (kernel >= 6.6), clsact, or auto (tcx, else clsact)"},
    {"dscp", 'D', "off|default|D0,D1,...",
     "also write each tagged packet's band as DSCP into its IP header,\n"
     "for switches with DSCP-to-queue maps: default is CS5,CS4,CS3,CS2\n"
     "for bands 0..3 and CS0 after; or one value (0..63, cs0..cs7,\n"
     "af11..af43, ef) per band, band 0 first, the last repeated\n"
     "(default: off; untagged packets are never rewritten)"},
    {"job-policy", 'J', "share|priority",
     "what a job's weight buys: share (htb only: each job its own\n"
     "classes, assured rate in proportion to its weight, layer\n"
     "priority inside the job) or priority (a lighter job yields\n"
     "log2(w_max/w) bands); default share with htb up to 8 bands,\n"
     "else priority"},
    {"force", 'f', NULL,
     "replace a root qdisc Mercury did not create (detach restores it),\n"
     "or re-attach with other settings"},
    {"from", 'F', "FILE",
     "attach every interface FILE lists, one '<iface> [options]' a line\n"
     "('#' comments; no FILE: nothing to do), as the service starts;\n"
     "alone, instead of <iface>"},
    {NULL, 0, NULL, NULL},
};

const struct cli_command attach_command = {
    .name = "attach",
    .operands = "<iface>",
    .usage = (const char *const[]){"--from FILE", NULL},
    .about = "Installs a strict-priority root qdisc and the Mercury classifier at TC egress.",
    .opts = attach_opts,
};

static const struct cli_opt tag_opts[] = {
    {"pid", 'p', "P", "the process owning the socket"},
    {"fd", 'F', "F", "the socket's file descriptor in that process"},
    {"next", 'n', "N", "tag the next N bytes the process writes"},
    {"offset", 'o', "S",
     "with --len: bytes [S, S+N) in the classifier's stream offsets\n"
     "(tcpi_bytes_acked based: an actively opened socket's first\n"
     "byte is 1, an accepted socket's is 0)"},
    {"len", 'l', "N", "the length of the --offset range"},
    {"level", 'L', "L", "priority level (0 most urgent)"},
    {"show", 's', NULL,
     "print the socket's tagged ranges, the level each resolves to\n"
     "now, and its position"},
    {"clear", 'c', NULL, "remove all of the socket's tags"},
    {NULL, 0, NULL, NULL},
};

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

int parse_uint(const char *s, uint64_t limit, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end || v >= limit)
		return -EINVAL;
	*out = v;
	return 0;
}

/* getopt's ':' (missing value) and '?' (unknown option), as one-line errors. */
static int option_error(char *err, size_t errlen, int c, char **argv, const char *verb)
{
	if (c == ':')
		snprintf(err, errlen, "option '%s' needs a value", argv[optind - 1]);
	else
		snprintf(err, errlen, "unknown option '%s'; see mercuryd %s --help",
			 argv[optind - 1], verb);
	return -EINVAL;
}

int attach_args_parse(int argc, char **argv, struct attach_args *a, char *err, size_t errlen)
{
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	a->default_band = -1;
	a->job_policy = -1;
	optind = 0;
	opterr = 0;
	while ((c = cli_getopt(&attach_command, argc, argv, ":fh")) != -1) {
		switch (c) {
		case 'q':
			if (backend_from_name(optarg, &a->backend)) {
				snprintf(
				    err, errlen,
				    "unknown qdisc '%s': use auto, mqprio, prio, ets, htb or tbf",
				    optarg);
				return -EINVAL;
			}
			break;
		case 'b':
			if (parse_uint(optarg, MERCURY_MAX_BANDS + 1, &v) || v < 2) {
				snprintf(err, errlen, "--bands '%s': give a number from 2 to %d",
					 optarg, MERCURY_MAX_BANDS);
				return -EINVAL;
			}
			a->bands = (unsigned)v;
			break;
		case 'r':
			if (parse_rate(optarg, &a->rate_bps)) {
				snprintf(err, errlen,
					 "--rate '%s': give a rate like 200mbit, 10gbit or 125mbps",
					 optarg);
				return -EINVAL;
			}
			break;
		case 'd':
			if (parse_uint(optarg, MERCURY_MAX_BANDS, &v)) {
				snprintf(err, errlen,
					 "--default-band '%s': give a band number from 0", optarg);
				return -EINVAL;
			}
			a->default_band = (int)v;
			break;
		case 'k':
			if (strcmp(optarg, "auto") == 0)
				a->hook = MERCURY_HOOK_NONE;
			else if (strcmp(optarg, "tcx") == 0)
				a->hook = MERCURY_HOOK_TCX;
			else if (strcmp(optarg, "clsact") == 0)
				a->hook = MERCURY_HOOK_CLSACT;
			else {
				snprintf(err, errlen, "--hook '%s': use auto, tcx or clsact",
					 optarg);
				return -EINVAL;
			}
			break;
		case 'D':
			if (dscp_opt_parse(optarg, &a->dscp, err, errlen))
				return -EINVAL;
			break;
		case 'J': {
			enum mercury_job_policy jp;

			if (job_policy_from_name(optarg, &jp)) {
				snprintf(err, errlen, "--job-policy '%s': use share or priority",
					 optarg);
				return -EINVAL;
			}
			a->job_policy = (int)jp;
			break;
		}
		case 'f':
			a->force = true;
			break;
		case 'F':
			a->from = optarg;
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			return option_error(err, errlen, c, argv, "attach");
		}
	}
	if (a->from) {
		if (optind != argc || argc != 3) {
			snprintf(err, errlen, "--from FILE takes no interface or other option");
			return -EINVAL;
		}
		return 0;
	}
	if (optind != argc - 1) {
		snprintf(err, errlen,
			 optind >= argc ? "attach needs an interface name"
					: "attach takes one interface, got extra '%s'",
			 argv[optind < argc ? argc - 1 : 0]);
		return -EINVAL;
	}
	a->iface = argv[optind];
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

int tag_args_parse(int argc, char **argv, struct tag_args *a, char *err, size_t errlen)
{
	uint64_t v;
	int c;

	memset(a, 0, sizeof(*a));
	a->pid = -1;
	a->fd = -1;
	optind = 0;
	opterr = 0;
	while ((c = cli_getopt(&tag_command, argc, argv, ":h")) != -1) {
		/* The option's own name: argv[optind - 1] may be its value by now. */
		char name[16] = "";

		for (const struct cli_opt *o = tag_opts; o->name; o++)
			if (o->val == c)
				snprintf(name, sizeof(name), "--%s", o->name);

		switch (c) {
		case 'p':
		case 'F':
			if (parse_uint(optarg, 1u << 30, &v)) {
				snprintf(err, errlen, "%s '%s': give a non-negative number", name,
					 optarg);
				return -EINVAL;
			}
			if (c == 'p')
				a->pid = (long)v;
			else
				a->fd = (int)v;
			break;
		case 'n':
		case 'o':
		case 'l':
			if (parse_uint(optarg, UINT64_MAX, &v) || (c != 'o' && v == 0)) {
				snprintf(err, errlen, "%s '%s': give a byte count%s", name, optarg,
					 c != 'o' ? " above 0" : "");
				return -EINVAL;
			}
			if (c == 'n') {
				a->next = v;
				a->have_next = true;
			} else if (c == 'o') {
				a->offset = v;
				a->have_offset = true;
			} else {
				a->len = v;
				a->have_len = true;
			}
			break;
		case 'L':
			if (parse_uint(optarg, MERCURY_MAX_LEVELS, &v)) {
				snprintf(err, errlen,
					 "--level '%s': give a level from 0 (most urgent) to %d",
					 optarg, MERCURY_MAX_LEVELS - 1);
				return -EINVAL;
			}
			a->level = (uint32_t)v;
			a->have_level = true;
			break;
		case 's':
			a->show = true;
			break;
		case 'c':
			a->clear = true;
			break;
		case 'h':
			a->help = true;
			return 0;
		default:
			return option_error(err, errlen, c, argv, "tag");
		}
	}
	if (optind != argc) {
		snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
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
