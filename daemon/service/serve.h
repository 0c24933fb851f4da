/* SPDX-License-Identifier: BSD-2-Clause */
/* The event service's loop (serve.c); `mercuryd serve` (daemon/cli/serve_cmd.c) parses its
 * options into a serve_config and runs it. */
#ifndef MERCURY_SERVE_H
#define MERCURY_SERVE_H

#include <stddef.h>

struct serve_config {
	const char *pin_root;	 /* the pin tree whose shared maps it writes */
	const char *socket_path; /* where it listens */
	const char *group;	 /* group allowed to connect besides root */
	const char *metrics_dir; /* --metrics-textfile: DIR/mercury.prom, or NULL */
	long metrics_interval_s; /* how often it is written */
};

/* Serves until SIGTERM or SIGINT. 0 after a clean stop; -1 when it could not start or its
 * loop failed, with err saying why (empty when there is nothing more to say). */
int serve_run(const struct serve_config *cfg, char *err, size_t errlen);

#endif
