/* SPDX-License-Identifier: BSD-2-Clause */
/* `mercury-ps serve` (ps/README.md): node c->rank's server alone, for one job after another
 * (a job ends when every worker has said goodbye, or fails), until SIGTERM / SIGINT or `jobs`
 * jobs (0: no limit); one JSON line per job on stdout. exit_with_parent: end as on SIGTERM
 * when the parent process does. Returns the exit status. */
#ifndef MERCURY_PS_SERVE_CMD_H
#define MERCURY_PS_SERVE_CMD_H

#include <stdbool.h>

#include "ps.h"

int ps_serve_command(struct ps_config *c, const struct ps_profile *p, int jobs,
		     bool exit_with_parent);

#endif
