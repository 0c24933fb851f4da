/* SPDX-License-Identifier: BSD-2-Clause */
/* Argument parsing for `mercuryd attach` and `tag`: pure, unit-tested. */
#ifndef MERCURY_ATTACH_ARGS_H
#define MERCURY_ATTACH_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mercury_abi.h"
#include "cli_opts.h"
#include "rate.h"	  /* parse_rate(), shared with mercury-ps */
#include "tc/band_plan.h" /* struct dscp_opt */

struct attach_args {
	const char *iface;
	enum mercury_backend backend; /* MERCURY_BACKEND_NONE: auto */
	enum mercury_hook hook;	      /* MERCURY_HOOK_NONE: auto (TCX, else clsact) */
	unsigned bands;		      /* 0: the backend's default */
	uint64_t rate_bps;	      /* bytes per second; 0: not given */
	int default_band;	      /* -1: last band */
	bool force;
	bool help;
	const char *from;     /* --from FILE: attach what FILE lists instead */
	struct dscp_opt dscp; /* band_plan.h */
	struct dscp_guard_opt dscp_guard;
	int job_policy; /* enum mercury_job_policy; -1: not given (the default) */
	int control;	/* 1: control segments first, 0: as untagged; -1: not given (first) */
};

/* "off", "default", or a comma-separated list of DSCP values (0..63 or names: cs0..cs7,
 * af11..af43, ef, va, le, be), band 0 first. 0, or -EINVAL with a message in err. */
int dscp_opt_parse(const char *s, struct dscp_opt *d, char *err, size_t errlen);

/* The --control name of cfg.control_first: "first" or "default". */
const char *control_name(bool first);

/* The name of a DSCP value ("cs5", "af41", "ef"), or NULL for values without one. */
const char *dscp_name(unsigned v);

extern const struct cli_command attach_command, tag_command;

/* The defaults (auto backend and hook, the last band for untagged traffic), as --help shows. */
void attach_args_defaults(struct attach_args *a);
/* By attach_command's table (common/cli_opts.h): 0 (a->help: --help was asked for), or
 * -EINVAL with a one-line message in err. */
int attach_args_parse(int argc, char **argv, struct attach_args *a, char *err, size_t errlen);

struct tag_args {
	long pid;
	int fd;
	bool have_next, have_offset, have_len, have_level;
	uint64_t next, offset, len;
	uint32_t level;
	bool show, clear, help;
};
void tag_args_defaults(struct tag_args *a);
int tag_args_parse(int argc, char **argv, struct tag_args *a, char *err, size_t errlen);

#endif
