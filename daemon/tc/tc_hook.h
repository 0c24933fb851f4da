/* SPDX-License-Identifier: BSD-2-Clause */
/* Attaching the classifier at TC egress: a TCX link where the kernel has TCX, else clsact. */
#ifndef MERCURY_TC_HOOK_H
#define MERCURY_TC_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include "mercury_abi.h"

#define MERCURY_CLSACT_HANDLE	0x4d45 /* 'ME' */
#define MERCURY_CLSACT_PRIORITY 1      /* first in the chain: verdicts of others can't skip it */

struct tc_hook_result {
	enum mercury_hook hook;
	bool created_clsact;
	unsigned tc_handle, tc_priority;
};

/* want: MERCURY_HOOK_NONE = TCX if the kernel has it, else clsact. For TCX the link is pinned
 * at link_pin (so it outlives the process). */
int tc_hook_attach(int prog_fd, int ifindex, enum mercury_hook want, const char *link_pin,
		   struct tc_hook_result *res, char *err, size_t errlen);

/* Removes exactly what tc_hook_attach added: the TCX link, or Mercury's clsact filter and,
 * if Mercury created clsact and no other filter sits on it, clsact itself. */
int tc_hook_detach(int ifindex, const struct tc_hook_result *res, const char *link_pin, char *err,
		   size_t errlen);

/* True while the hook is in place (the pinned TCX link, or the clsact filter). */
bool tc_hook_present(int ifindex, const struct tc_hook_result *res, const char *link_pin);

#endif
