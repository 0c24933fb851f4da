/* SPDX-License-Identifier: BSD-2-Clause */
/* Attaching the interfaces a file lists, one "<iface> [attach options]" per line. */
#ifndef MERCURY_ATTACH_FROM_H
#define MERCURY_ATTACH_FROM_H

#include "cli.h"

/* Calls attach (do_attach) for every line; a missing file is no interface, not an error.
 * Returns the exit status: 1 if any line failed. */
int attach_from_file(const struct cli_ctx *ctx, const char *path,
		     int (*attach)(const struct cli_ctx *ctx, int argc, char **argv));

#endif
