/* SPDX-License-Identifier: BSD-2-Clause */
/* Subcommand entry points of mercuryd and the options every subcommand shares. */
#ifndef MERCURY_CLI_H
#define MERCURY_CLI_H

#include <stdbool.h>
#include <stddef.h>

#include "cli_opts.h"

#define MERCURY_PIN_ROOT_DEFAULT "/sys/fs/bpf/mercury"

struct cli_ctx {
	bool json;	      /* -j: JSON on stdout */
	bool pretty;	      /* -p: JSON indented (implies -j) */
	const char *pin_root; /* --pin-root, default MERCURY_PIN_ROOT_DEFAULT */
};

/* Each returns the process exit status (0 ok, 1 failure, 2 usage) and has printed any error. */
int do_attach(const struct cli_ctx *ctx, int argc, char **argv);
int do_detach(const struct cli_ctx *ctx, int argc, char **argv);
int do_status(const struct cli_ctx *ctx, int argc, char **argv);
int do_tag(const struct cli_ctx *ctx, int argc, char **argv);
int do_serve(const struct cli_ctx *ctx, int argc, char **argv);
int do_metrics(const struct cli_ctx *ctx, int argc, char **argv);
int do_fastpath(const struct cli_ctx *ctx, int argc, char **argv);

/* Each command's option table and help (common/cli_opts.h). */
extern const struct cli_command attach_command, detach_command, status_command, tag_command,
    serve_command, metrics_command, fastpath_command;

/* Exit statuses of every command (`mercuryd --help` lists them). */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* One-line error "mercuryd: <what>" on stderr; with -j instead {"error": "<what>"} on stdout,
 * once, as bpftool does, so that a script reading stdout gets one JSON document. */
void cli_error(const struct cli_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void cli_warn(const struct cli_ctx *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The DSCP export of an interface (dscp_on, dscp[band] for nbands bands): a JSON array of
 * {band, dscp, name} objects, or JSON null when off; and as text, "b0=40(cs5) b1=32(cs4)". */
struct json_object;
/* Prints o on stdout (plain, or indented under -p) and drops the reference. */
void cli_json_print(const struct cli_ctx *ctx, struct json_object *o);

struct json_object *dscp_json(unsigned dscp_on, const unsigned char *dscp, unsigned nbands);
void dscp_text(unsigned dscp_on, const unsigned char *dscp, unsigned nbands, char *buf, size_t len);

#endif
