/* SPDX-License-Identifier: BSD-2-Clause */
/* Per-interface pins: the attach record, configuration and counters of one attached device. */
#ifndef MERCURY_IFACE_PINS_H
#define MERCURY_IFACE_PINS_H

#include <stddef.h>
#include "mercury_abi.h"
#include "tc_hook.h"

/* Names of the pins in <root>/<iface>/. */
#define PIN_PROG       "prog"
#define PIN_LINK       "link"
#define PIN_CFG	       "cfg"
#define PIN_STATS      "stats"
#define PIN_STATE      "attach_state"
#define PIN_SAVED_TREE "saved_tree"

/* Names as status and metrics print them: "tcx", "clsact", "none"; "tagged", "untagged" ... */
const char *iface_hook_name(uint32_t hook);
const char *iface_outcome_name(int outcome);

/* Inode of the caller's network namespace: interface names and indexes are per namespace. */
uint64_t current_netns_ino(void);

/* 0 and *st filled, -ENOENT when the interface is not attached, other -errno on failure. */
/* Entry 0 of the pinned array <root>[/<iface>]/<name> whose value must be `size` bytes; a map
 * of another size (another layout) is -EPROTO and never copied. */
int pins_read_value(const char *root, const char *iface, const char *name, void *value,
		    size_t size);
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
/* Whether no interface is attached under root any more. */
bool pins_unused(const char *root);
/* Removes the shared maps' pins and the root directory (when nothing else lives there). */
void pins_remove_globals(const char *root);

/* Calls fn for each attached interface (each directory holding an attach record). */
int iface_for_each(const char *root, int (*fn)(const char *iface, void *arg), void *arg);

/* The steps of an attach, in the order it takes them; undo reverses the ones done. */
enum attach_did {
	ATTACH_DID_QDISC = 1, /* Mercury's root qdisc replaced the previous one */
	ATTACH_DID_PINS = 2,  /* the classifier and its maps are pinned */
	ATTACH_DID_HOOK = 4,  /* the classifier is hooked at TC egress */
	ATTACH_DID_ALL = 7,
};
struct tc_tree;

/* The exact inverse of the steps in `done` of an attach described by st: unhook, remove the
 * root qdisc and replay the tree it replaced (from `tree`, or from the pinned copy when tree
 * is NULL), unpin. Return values as iface_teardown's. */
int iface_undo(const char *root, const char *iface, const struct mercury_attach_state *st,
	       unsigned done, const struct tc_tree *tree, char *err, size_t errlen);

/* Undoes an attach described by st: hook, qdisc (replaying the tree it replaced), pins. Used
 * by detach and by attach --force (iface_undo of every step). 0, or 1 when done but the saved tree
 * was not put back because another root has taken its place (err says which), or -errno with err
 * set and the pins kept so that running it again finishes the job. */
int iface_teardown(const char *root, const char *iface, const struct mercury_attach_state *st,
		   char *err, size_t errlen);

#endif
