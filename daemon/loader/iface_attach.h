/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The attach transaction of one interface and its inverse: plan (what is there, what it
 * becomes; nothing changes yet), apply (root qdisc, classifier, pins, hook, attach record;
 * each step recorded) and undo (exactly the steps taken). `mercuryd attach` parses into an
 * attach_request and prints the result; `mercuryd detach` undoes every step.
 */
#ifndef MERCURY_IFACE_ATTACH_H
#define MERCURY_IFACE_ATTACH_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "mercury_abi.h"
#include "tc/band_plan.h"
#include "tc/tc_tree.h"

/* What was asked: unset fields take the defaults (and match any existing attach). */
struct attach_request {
	const char *iface;
	int ifindex;
	enum mercury_backend backend; /* MERCURY_BACKEND_NONE: auto */
	enum mercury_hook hook;	      /* MERCURY_HOOK_NONE: auto (TCX, else clsact) */
	unsigned bands;		      /* 0: the backend's default */
	uint64_t rate_bps;	      /* bytes per second; 0: not given */
	int default_band;	      /* -1: last band */
	bool force; /* replace a foreign root qdisc, or an attach with other settings */
	struct dscp_opt dscp;
	struct dscp_guard_opt dscp_guard;
	int job_policy; /* enum mercury_job_policy; -1: the default (iface_default_job_policy) */
	int control;	/* cfg.control_first; -1: the default (1) */
};

/* Everything attach decides before it changes anything on the interface. */
struct attach_plan {
	struct attach_request a;
	char link_pin[PATH_MAX];
	bool stale_pins;		 /* pins of a device since deleted and re-created */
	bool replace_old;		 /* --force over an attach with other settings */
	struct mercury_attach_state old; /* that attach */
	struct mercury_attach_state st;	 /* the record this attach writes */
	struct mercury_iface_cfg cfg;	 /* the classifier's band configuration */
	struct tc_tree tree;		 /* a foreign root's tree: replaced, restored on detach */
	char why[512];			 /* why auto chose its backend */
	char warn[256];			 /* what the qdisc install warned of */
};

enum attach_outcome {
	ATTACH_FAILED = -1, /* err says why; nothing is left half-attached */
	ATTACH_APPLIED = 0, /* p->st is the new attach record */
	ATTACH_ALREADY = 1, /* attached as asked already: p->old is the record */
};

/* The job policy an attach gets without --job-policy: share for htb with at most
 * MERCURY_HTB_SHARE_MAX_BANDS bands, priority otherwise. */
enum mercury_job_policy iface_default_job_policy(enum mercury_backend b, unsigned nbands);

/* Plans and applies p->a under the pin lock of root, and undoes the steps taken when one
 * fails; undo_err then says what undoing could not do (empty when it did everything).
 * Warnings go to the log. p is large: keep it off the stack; attach_plan_free() after. */
int iface_attach(const char *root, struct attach_plan *p, char *err, size_t errlen, char *undo_err,
		 size_t undo_errlen);
void attach_plan_free(struct attach_plan *p);

/* The steps of an attach, in the order it takes them; undo reverses the ones done. */
enum attach_did {
	ATTACH_DID_QDISC = 1, /* Mercury's root qdisc replaced the previous one */
	ATTACH_DID_PINS = 2,  /* the classifier and its maps are pinned */
	ATTACH_DID_HOOK = 4,  /* the classifier is hooked at TC egress */
	ATTACH_DID_ALL = 7,
};

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
