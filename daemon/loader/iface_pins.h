/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-interface pins: the attach record, configuration and counters of one attached device. */
#ifndef MERCURY_IFACE_PINS_H
#define MERCURY_IFACE_PINS_H

#include <stddef.h>
#include "mercury_abi.h"
#include "pins.h"
#include "tc/tc_hook.h"

/* Names as status and metrics print them: "tcx", "clsact", "none"; "tagged", "untagged" ... */
const char *iface_hook_name(uint32_t hook);
const char *iface_outcome_name(int outcome);

/* Inode of the caller's network namespace: interface names and indexes are per namespace. */
uint64_t current_netns_ino(void);

/* 0 and *st filled, -ENOENT when the interface is not attached, other -errno on failure. */
int iface_state_read(const char *root, const char *iface, struct mercury_attach_state *st);
/* Why iface_state_read() failed with r, and what to do, as one line. */
void iface_state_strerror(const char *root, const char *iface, int r, char *buf, size_t len);
int iface_cfg_read(const char *root, const char *iface, struct mercury_iface_cfg *cfg);
/* Sums the per-CPU counters. */
int iface_stats_read(const char *root, const char *iface, struct mercury_stats *sum);

/* The hook description stored in the attach record. */
void iface_state_hook(const struct mercury_attach_state *st, struct tc_hook_result *hook);
/* The reverse: records where the classifier was hooked. */
void iface_state_set_hook(struct mercury_attach_state *st, const struct tc_hook_result *hook);

/* "ok", or what is wrong: "classifier missing", "root qdisc replaced", "device gone",
 * "detach incomplete (run detach again)", "in another network namespace". */
const char *iface_health(const char *root, const char *iface,
			 const struct mercury_attach_state *st);

/* Removes every pin of the interface and its directory; missing pins are fine. */
void iface_unpin_all(const char *root, const char *iface);

#endif
