/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Root qdisc backends, configured over rtnetlink with libnl-route-3.
 *
 * Every function works on the network namespace of the calling thread, opens its own netlink
 * socket, returns 0 or a negative errno and, on failure, writes a one-line message naming the
 * problem and what to do into err. Handles follow band_plan.h (root MERCURY_QDISC_HANDLE,
 * tbf's pfifo_fast child = root major + 1).
 *
 * How attach/detach use this:
 *   attach: qdisc_get_root(); if the root is not the kernel default and not to be replaced,
 *           stop; with --force, tc_tree_save() + tc_tree_verify() (tc_tree.h) into the
 *           saved_tree pin first.
 *           For auto, qdisc_pick_auto() (and qdisc_link_rate() for htb/tbf without --rate).
 *           band_plan_fit_bands() (mqprio) -> band_plan() -> qdisc_install().
 *   detach: qdisc_remove(ifindex, attach_state.qdisc_handle) -> the kernel re-creates its
 *           default root; then, if a tree was saved, tc_tree_replay().
 *           -ENOENT from qdisc_remove means Mercury's root is no longer there (someone
 *           replaced or deleted it): nothing was touched; warn and carry on.
 */
#ifndef MERCURY_QDISC_H
#define MERCURY_QDISC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mercury_abi.h"
#include "qdisc_ctx.h" /* struct qdisc_root, qdisc_spec */

/* htb: the rate each band's leaf is guaranteed under R with nbands bands (bytes/s). */
uint64_t qdisc_htb_band_rate(uint64_t rate_bps, unsigned nbands);

int qdisc_get_root(int ifindex, struct qdisc_root *out, char *err, size_t errlen);

/*
 * Replaces the root with the backend's tree. On failure it deletes what it created and puts
 * the previous root back (a foreign root is saved and restored internally), so the device is
 * as before. A root that already has spec->handle is taken as Mercury's own (a crash
 * leftover, a re-attach) and deleted first: check the attach record before calling.
 * -EOPNOTSUPP when the kernel lacks the qdisc ("qdisc 'prio' is not available ...").
 * mqprio: *mqprio_hw tells whether the NIC took the offload; without it warn explains that
 * software mqprio separates queues but does not enforce priority. warn is "" otherwise.
 * mqprio_hw and warn may be NULL.
 */
int qdisc_install(const struct qdisc_spec *spec, bool *mqprio_hw, char *warn, size_t warnlen,
		  char *err, size_t errlen);

/*
 * Deletes the root if its handle is `handle` (0 = MERCURY_QDISC_HANDLE); the kernel then
 * re-creates its default root. -ENOENT, touching nothing, when the root is something else.
 */
int qdisc_remove(int ifindex, uint32_t handle, char *err, size_t errlen);

/*
 * Chooses a backend without changing the device: mqprio with hardware offload (multiqueue
 * devices only: the one trial made on the device itself, as only the NIC can say; one
 * without offload refuses it before anything changes), then prio, ets and, when a rate is
 * known (rate_bps, else qdisc_link_rate()), htb, then tbf, each tried on a scratch veth in a
 * scratch network namespace (scratch.h) with as many TX queues. *out is the choice; why says
 * what was chosen and why the others were not. -EOPNOTSUPP if nothing fits.
 * For htb/tbf chosen without rate_bps, install with qdisc_link_rate()'s rate.
 */
int qdisc_pick_auto(int ifindex, uint64_t rate_bps, enum mercury_backend *out, char *why,
		    size_t whylen);

/*
 * Job policy share on an htb root of `handle` (0 = MERCURY_QDISC_HANDLE) that attach made
 * with rate R and nbands bands: sets the share slots' assured rates for these weights
 * (htb_share_rates()), changing the classes in place (queued packets stay).
 */
int qdisc_htb_share_update(int ifindex, uint32_t handle, uint64_t rate, unsigned nbands,
			   const uint32_t weight[MERCURY_SHARE_SLOTS], char *err, size_t errlen);

/* Link speed from /sys/class/net/<dev>/speed in bytes/s; -ENODATA when unknown. */
int qdisc_link_rate(int ifindex, uint64_t *rate_bps);

#endif
