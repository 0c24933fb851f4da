/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/* DSCP export: the band's DSCP written into a tagged packet's IP header. */
#ifndef MERCURY_DSCP_MARK_H
#define MERCURY_DSCP_MARK_H

#include "parse.h"
#include "ds_field.h"

/* What the fabric order guard did with a packet (mercury_dscp_guard). */
#define MERCURY_DSCP_KEPT     1
#define MERCURY_DSCP_RELEASED 2

/*
 * The fabric order guard: the band whose DSCP a tagged packet of a socket with per-socket
 * state carries. A switch port with strict-priority queues serves a more urgent queue first,
 * so a packet with a more urgent DSCP than its socket's earlier packets overtakes those of
 * them still queued there: the receiver sees a reordered stream, takes it for loss (SACK,
 * RACK), retransmits and cuts the window. So a rise (band more urgent than the last marked
 * packet's, with another DSCP) keeps the previous DSCP while any byte the socket sent before
 * is unacknowledged: acknowledged bytes have left every switch. A move to a less urgent DSCP
 * never waits: the earlier packets sit in a queue served before it. A rise held for
 * cfg.dscp_guard_us (0: no bound) goes ahead, once: a socket that keeps writing may never be
 * fully acknowledged. Retransmissions are judged like any packet (they keep the DSCP while
 * bytes after them are unacknowledged). *how gets MERCURY_DSCP_KEPT or _RELEASED, or stays.
 */
static __always_inline __u64 mercury_dscp_guard(const struct mercury_iface_cfg *conf,
						const struct mercury_sock_view *v,
						struct mercury_sock_stats *ss, __u64 band,
						__u64 last, __u32 *how)
{
	__u64 prev = ss->dscp_band;
	__u32 since = ss->dscp_since_us, now_us;

	if (prev && band + 1 < prev && prev <= last + 1 && (__s32)(v->snd_una - ss->dscp_end) < 0 &&
	    conf->dscp[band & (MERCURY_MAX_BANDS - 1)] !=
		conf->dscp[(prev - 1) & (MERCURY_MAX_BANDS - 1)]) {
		if (!conf->dscp_guard_us) { /* no bound: no clock to read */
			*how = MERCURY_DSCP_KEPT;
		} else if (!since) {
			since = (__u32)(bpf_ktime_get_ns() / 1000) | 1;
			*how = MERCURY_DSCP_KEPT;
		} else if ((now_us = (__u32)(bpf_ktime_get_ns() / 1000) | 1) - since <
			   conf->dscp_guard_us) {
			*how = MERCURY_DSCP_KEPT;
		} else {
			since = 0;
			*how = MERCURY_DSCP_RELEASED;
		}
		if (*how == MERCURY_DSCP_KEPT)
			band = prev - 1;
	} else {
		since = 0;
	}
	ss->dscp_since_us = since;
	ss->dscp_band = (__u32)band + 1;
	return band;
}

#endif
