/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Band plan: which qdisc bands a backend offers and what the classifier must write into
 * skb->priority to put a packet into each band. Pure logic, no syscalls; qdisc.c builds
 * the matching qdisc tree from the same constants.
 *
 * Handle scheme (all backends): the root qdisc is MERCURY_QDISC_HANDLE (0x4d45:, "ME")
 * unless the caller picks another major. Below it:
 *   htb    class M:1 (rate = ceil = R), leaf classes M:(0x10 + prio), htb prio 0..7;
 *          skb->priority = M:(0x10 + prio) selects the leaf directly. HTB has 8 prios, so
 *          above 8 bands one root leaf (the "host", see htb_layout()) holds a second htb,
 *          (M + 1):, with the remaining bands as its own prios: strict priority composes,
 *          the host is served only when no more urgent root leaf has packets. A packet
 *          whose priority names a nested leaf, (M + 1):(0x10 + prio), is unknown to the
 *          root and takes the root's default class, so the host is the leaf that holds
 *          the default band: the nested htb then finds the leaf itself, and untagged
 *          traffic takes its default. 8 + 7 = 15 bands at most.
 *   prio,  band b is class M:(b + 1); both qdiscs take skb->priority = M:(b + 1) as "band b"
 *   ets    when its major equals their handle; every other priority goes through the priomap,
 *          which sends all 16 values to the default band.
 *   tbf    tbf M: with a pfifo_fast child (M + 1): its fixed prio2band gives band 0 for
 *          priority 6, band 1 for 0, band 2 for 2.
 *   mqprio traffic class b takes skb->priority b + 1 (mqprio reads the low 4 bits); its map
 *          sends priority 0 and every value above nbands to the default band, so traffic
 *          Mercury does not steer (priority 0) never lands in band 0. At most 15 bands.
 */
#ifndef MERCURY_BAND_PLAN_H
#define MERCURY_BAND_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mercury_abi.h"

#define MERCURY_QDISC_HANDLE	 0x4d450000u /* 'M' 'E' :0 */
#define MERCURY_HTB_PARENT_MINOR 0x1u
#define MERCURY_HTB_LEAF_MINOR0	 0x10u /* leaf of band b is minor 0x10 + b */
#define MERCURY_HTB_PRIOS	 8u    /* TC_HTB_NUMPRIO */
#define MERCURY_HTB_MAX_BANDS	 15u   /* 7 root leaves + a nested htb of 8 */
/* Job policy "share" (htb, up to 8 bands): under M:1, one class a share slot s,
 * M:(0x2 + s) with rate = the slot's assured rate (htb_share_rates()), ceil R, and under it
 * the slot's own band leaves M:(0x100 (s + 1) + 0x10 + prio), prio = band, each with a
 * pfifo. skb_priority_share[s][b] names them. The root's own leaves M:(0x10 + b) stay for
 * everything else (untagged, fixed-level tags, jobs in slots >= MERCURY_SHARE_SLOTS). */
#define MERCURY_HTB_SHARE_MINOR0      0x2u
#define MERCURY_HTB_SHARE_LEAF_STRIDE 0x100u
#define MERCURY_HTB_SHARE_MAX_BANDS   MERCURY_HTB_PRIOS
#define MERCURY_TBF_BANDS	      3u
#define MERCURY_MQPRIO_MAX_BANDS      15u

/* "mqprio", "prio", "ets", "htb", "tbf"; "auto" for MERCURY_BACKEND_NONE; NULL if out of range. */
const char *backend_name(enum mercury_backend b);

/* Shape of an htb tree of nbands bands (pure arithmetic, shared with qdisc_htb.c). */
struct htb_layout {
	unsigned root_leaves;	 /* leaves of the root htb: min(nbands, 8) */
	unsigned host;		 /* root prio whose leaf holds the nested htb (nested > 0) */
	unsigned nested;	 /* bands in the nested htb: 0 up to 8 bands, else nbands - 7 */
	unsigned root_default;	 /* prio of the root's default leaf (the host when nested) */
	unsigned nested_default; /* prio of the nested htb's default leaf */
};

/* Bands [host, host + nested) are nested; host = min(default_band, 7), so the default band
 * is always one of them. Call with 2 <= nbands <= 15 and default_band < nbands. */
struct htb_layout htb_layout(unsigned nbands, unsigned default_band);

/* Where band b sits: *nested says whether in the nested htb; returns its htb prio there. */
unsigned htb_band_prio(const struct htb_layout *lo, unsigned band, bool *nested);

/* Parses a --qdisc value; "auto" gives MERCURY_BACKEND_NONE. 0, or -EINVAL if unknown. */
int backend_from_name(const char *s, enum mercury_backend *out);

/* Band count used when the user gives none (tbf: 3, the pfifo_fast bands); 0 for NONE. */
unsigned backend_default_bands(enum mercury_backend b);

/* mqprio cannot have more traffic classes than tx queues: min(nbands, num_tx_queues) for
 * mqprio, nbands for every other backend. Call it before band_plan() for mqprio. */
unsigned band_plan_fit_bands(enum mercury_backend b, unsigned nbands, unsigned num_tx_queues);

/*
 * Fills cfg completely (unused entries zero): nbands, default_band, band_of_level[l] =
 * min(l, nbands - 1), skb_priority[band] as in the scheme above. qdisc_handle is the root's
 * handle (major << 16); 0 means MERCURY_QDISC_HANDLE. Returns 0, or -EINVAL with a message
 * in err when the backend is NONE, nbands is outside the backend's limits, default_band >=
 * nbands, or the handle has a minor part.
 */
int band_plan(enum mercury_backend b, unsigned nbands, unsigned default_band, uint32_t qdisc_handle,
	      struct mercury_iface_cfg *cfg, char *err, size_t errlen);

/* "priority" or "share"; NULL if out of range. */
const char *job_policy_name(enum mercury_job_policy p);
/* Parses a --job-policy value. 0, or -EINVAL if unknown. */
int job_policy_from_name(const char *s, enum mercury_job_policy *out);

/*
 * Adds the job policy to a cfg band_plan() filled: for share, cfg->share_slots and
 * skb_priority_share (htb only, at most MERCURY_HTB_SHARE_MAX_BANDS bands); nothing for
 * priority. 0, or -EINVAL with err saying why the backend cannot share.
 */
int band_plan_job_policy(enum mercury_backend b, enum mercury_job_policy policy,
			 uint32_t qdisc_handle, struct mercury_iface_cfg *cfg, char *err,
			 size_t errlen);

/* The handle's minor of share slot s's class, and of its leaf of htb prio p. */
uint32_t htb_share_class_minor(unsigned slot);
uint32_t htb_share_leaf_minor(unsigned slot, unsigned prio);

#define MERCURY_HTB_MIN_RATE	  1250u	  /* bytes/s (10 kbit/s): below this r would round to 0 */
#define MERCURY_HTB_LEAF_RATE_MIN 125000u /* bytes/s (1 Mbit/s): a band's guarantee, at least */
#define MERCURY_HTB_LEAF_RATE_DIV 100u	  /* and 1 % of R where that is more (htb_leaf_rate) */

/* Guaranteed rate of each band leaf (bytes/s): 1 % of the rate, at least 1 Mbit/s, at most
 * rate / (2 nbands), so that the guarantees of all bands together stay below half of the
 * rate (a level rise drains at it: rise_bound.h). Under the job policy
 * share, for the root's leaves, at most rate / (64 nbands): their guarantees are set aside
 * from the jobs' assured rates, and what they leave unused is lent by prio, not by weight, so
 * it is kept under 1/64 of the link (a job's own leaves keep the priority rule within half of
 * the job's assured rate: qdisc_htb.c share_classes). */
uint64_t htb_leaf_rate(uint64_t rate, unsigned nbands, enum mercury_job_policy policy);

/*
 * Assured rates of the share slots' classes (bytes/s) on a link of `rate` with nbands bands,
 * from the weights of the jobs in the slots (0: no job): what the root's own leaves are
 * guaranteed is set aside, the rest split in proportion to the weights; a slot without a job
 * gets the 10 kbit/s minimum; without any job, equal parts. The sum never exceeds rate.
 */
void htb_share_rates(uint64_t rate, unsigned nbands, const uint32_t weight[MERCURY_SHARE_SLOTS],
		     uint64_t out[MERCURY_SHARE_SLOTS]);

/* HTB quanta of the share slots' leaves: `full` for the heaviest job, in proportion for the
 * others (at least full / 20, so that a round still sends a full-size packet), `full` for a
 * slot without a job. */
void htb_share_quanta(const uint32_t weight[MERCURY_SHARE_SLOTS], uint32_t full,
		      uint32_t out[MERCURY_SHARE_SLOTS]);

/* The DSCP export asked for (mercuryd attach --dscp): off, the default map, or a list. */
struct dscp_opt {
	int given;  /* 0: --dscp not given (keep / off), 1: given */
	bool on;    /* --dscp off: false */
	bool std;   /* --dscp default */
	unsigned n; /* values listed, band by band */
	uint8_t v[MERCURY_MAX_BANDS];
};

/* The fabric order guard asked for (mercuryd attach --dscp-guard): on (the default with
 * --dscp) with a bound in microseconds (0: none), or off. */
struct dscp_guard_opt {
	int given; /* 0: --dscp-guard not given (on, MERCURY_DSCP_GUARD_US) */
	bool off;
	uint32_t bound_us;
};

/* "on", "off", or a bound like 20ms, 500us, 0 (no bound). 0, or -EINVAL (err). */
int dscp_guard_parse(const char *s, struct dscp_guard_opt *g, char *err, size_t errlen);

/* The DSCP map `--dscp default` gives band b: CS5, CS4, CS3, CS2 for bands 0..3, CS0 after. */
uint8_t dscp_default_of_band(unsigned band);

/* The band -> DSCP map of d for nbands bands (a list shorter than nbands repeats its last
 * value; bands from nbands on get the last band's value). 0, or -EINVAL (err) when the list
 * names more values than there are bands. */
int dscp_opt_fill(const struct dscp_opt *d, unsigned nbands, uint8_t out[MERCURY_MAX_BANDS],
		  char *err, size_t errlen);

#endif
