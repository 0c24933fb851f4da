// SPDX-License-Identifier: BSD-2-Clause
/* Band plan tables per backend; see band_plan.h for the handle scheme. */
#include "band_plan.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

struct backend_info {
	const char *name;
	unsigned default_bands;
	unsigned min_bands;
	unsigned max_bands;
};

/* htb has 8 prios (TC_HTB_NUMPRIO); one nested htb adds 7 more bands. mqprio reads 16
 * priority values and keeps 0 for the default band, leaving 15 for bands. */
static const struct backend_info backends[MERCURY_BACKEND_MAX] = {
    [MERCURY_BACKEND_NONE] = {"auto", 0, 0, 0},
    [MERCURY_BACKEND_MQPRIO] = {"mqprio", 8, 2, MERCURY_MQPRIO_MAX_BANDS},
    [MERCURY_BACKEND_PRIO] = {"prio", 8, 2, 16},
    [MERCURY_BACKEND_ETS] = {"ets", 8, 2, 16},
    [MERCURY_BACKEND_HTB] = {"htb", 8, 2, MERCURY_HTB_MAX_BANDS},
    [MERCURY_BACKEND_TBF] = {"tbf", MERCURY_TBF_BANDS, MERCURY_TBF_BANDS, MERCURY_TBF_BANDS},
};

/* pfifo_fast's fixed prio2band inverted: the priority that lands in band 0, 1, 2. */
static const uint32_t pfifo_fast_priority[MERCURY_TBF_BANDS] = {6, 0, 2};

static const struct backend_info *info(enum mercury_backend b)
{
	if ((unsigned)b >= MERCURY_BACKEND_MAX)
		return NULL;
	return &backends[b];
}

const char *backend_name(enum mercury_backend b)
{
	const struct backend_info *i = info(b);

	return i ? i->name : NULL;
}

int backend_from_name(const char *s, enum mercury_backend *out)
{
	if (!s)
		return -EINVAL;
	for (unsigned b = 0; b < MERCURY_BACKEND_MAX; b++) {
		if (strcmp(s, backends[b].name) == 0) {
			*out = (enum mercury_backend)b;
			return 0;
		}
	}
	return -EINVAL;
}

unsigned backend_default_bands(enum mercury_backend b)
{
	const struct backend_info *i = info(b);

	return i ? i->default_bands : 0;
}

unsigned band_plan_fit_bands(enum mercury_backend b, unsigned nbands, unsigned num_tx_queues)
{
	if (b == MERCURY_BACKEND_MQPRIO && nbands > num_tx_queues)
		return num_tx_queues;
	return nbands;
}

struct htb_layout htb_layout(unsigned nbands, unsigned default_band)
{
	struct htb_layout lo = {.root_leaves = nbands, .host = 0, .nested = 0};

	if (nbands > MERCURY_HTB_PRIOS) {
		lo.root_leaves = MERCURY_HTB_PRIOS;
		lo.nested = nbands - (MERCURY_HTB_PRIOS - 1);
		lo.host =
		    default_band < MERCURY_HTB_PRIOS - 1 ? default_band : MERCURY_HTB_PRIOS - 1;
		lo.root_default = lo.host;
		lo.nested_default = default_band - lo.host;
	} else {
		lo.root_default = default_band;
	}
	return lo;
}

unsigned htb_band_prio(const struct htb_layout *lo, unsigned band, bool *nested)
{
	*nested = lo->nested && band >= lo->host && band < lo->host + lo->nested;
	if (*nested)
		return band - lo->host;
	if (lo->nested && band >= lo->host + lo->nested)
		return band - lo->nested + 1; /* after the host's prio */
	return band;
}

static uint32_t htb_priority(uint32_t major, unsigned nbands, unsigned default_band, unsigned band)
{
	struct htb_layout lo = htb_layout(nbands, default_band);
	bool nested;
	unsigned prio = htb_band_prio(&lo, band, &nested);

	return (nested ? major + (1u << 16) : major) | (MERCURY_HTB_LEAF_MINOR0 + prio);
}

static uint32_t band_priority(enum mercury_backend b, uint32_t major, unsigned nbands,
			      unsigned default_band, unsigned band)
{
	switch (b) {
	case MERCURY_BACKEND_MQPRIO:
		return band + 1;
	case MERCURY_BACKEND_PRIO:
	case MERCURY_BACKEND_ETS:
		return major | (band + 1);
	case MERCURY_BACKEND_HTB:
		return htb_priority(major, nbands, default_band, band);
	case MERCURY_BACKEND_TBF:
		return pfifo_fast_priority[band];
	default:
		return 0;
	}
}

int band_plan(enum mercury_backend b, unsigned nbands, unsigned default_band, uint32_t qdisc_handle,
	      struct mercury_iface_cfg *cfg, char *err, size_t errlen)
{
	const struct backend_info *i = info(b);
	uint32_t major = qdisc_handle ? qdisc_handle : MERCURY_QDISC_HANDLE;

	if (!i || b == MERCURY_BACKEND_NONE) {
		snprintf(err, errlen, "band plan needs a concrete qdisc backend, not 'auto'");
		return -EINVAL;
	}
	if (nbands < i->min_bands || nbands > i->max_bands) {
		if (i->min_bands == i->max_bands)
			snprintf(err, errlen, "%s has exactly %u bands, not %u", i->name,
				 i->min_bands, nbands);
		else
			snprintf(err, errlen, "%s takes %u to %u bands, not %u", i->name,
				 i->min_bands, i->max_bands, nbands);
		return -EINVAL;
	}
	if (default_band >= nbands) {
		snprintf(err, errlen, "default band %u does not exist: %s has bands 0..%u",
			 default_band, i->name, nbands - 1);
		return -EINVAL;
	}
	if ((major & 0xffffu) || major == 0xffff0000u) {
		snprintf(err, errlen,
			 "qdisc handle 0x%08x must be a major number (M:0), not ffff:", major);
		return -EINVAL;
	}
	if (major == 0xfffe0000u && b == MERCURY_BACKEND_HTB && nbands > MERCURY_HTB_PRIOS) {
		snprintf(err, errlen,
			 "qdisc handle fffe: leaves no major (fffe + 1) for the "
			 "nested htb of more than 8 bands");
		return -EINVAL;
	}

	memset(cfg, 0, sizeof(*cfg));
	cfg->nbands = nbands;
	cfg->default_band = default_band;
	for (unsigned l = 0; l < MERCURY_MAX_LEVELS; l++)
		cfg->band_of_level[l] = l < nbands ? l : nbands - 1;
	for (unsigned band = 0; band < nbands; band++)
		cfg->skb_priority[band] = band_priority(b, major, nbands, default_band, band);
	return 0;
}

uint8_t dscp_default_of_band(unsigned band)
{
	/* Class selectors every common default trust map ranks in this order; CS1 is left out
	 * (scavenger, below best effort, in several vendors' defaults), CS6/CS7 are network
	 * control's and EF is voice's (docs/switch-dscp.md). */
	return band < 4 ? (uint8_t)((5 - band) << 3) : 0;
}

int dscp_opt_fill(const struct dscp_opt *d, unsigned nbands, uint8_t out[MERCURY_MAX_BANDS],
		  char *err, size_t errlen)
{
	memset(out, 0, MERCURY_MAX_BANDS);
	if (!d->on)
		return 0;
	if (!d->std && d->n > nbands) {
		snprintf(err, errlen, "--dscp lists %u values for %u bands", d->n, nbands);
		return -EINVAL;
	}
	for (unsigned b = 0; b < MERCURY_MAX_BANDS; b++) {
		unsigned src = b < nbands ? b : nbands - 1;

		out[b] = d->std ? dscp_default_of_band(src) : d->v[src < d->n ? src : d->n - 1];
	}
	return 0;
}

int dscp_guard_parse(const char *s, struct dscp_guard_opt *g, char *err, size_t errlen)
{
	char *end;
	unsigned long long v;

	*g = (struct dscp_guard_opt){.given = 1, .bound_us = MERCURY_DSCP_GUARD_US};
	if (strcmp(s, "off") == 0) {
		g->off = true;
		return 0;
	}
	if (strcmp(s, "on") == 0)
		return 0;
	errno = 0;
	v = (*s >= '0' && *s <= '9') ? strtoull(s, &end, 10) : 0;
	if (*s < '0' || *s > '9' || errno) {
		end = NULL;
	} else if (strcmp(end, "ms") == 0) {
		v *= 1000;
	} else if (strcmp(end, "us") == 0 || (*end == '\0' && v == 0)) {
		;
	} else {
		end = NULL;
	}
	if (!end || v > UINT32_MAX) {
		snprintf(err, errlen,
			 "--dscp-guard '%s': give on, off, or a bound like 20ms, 500us or 0 (none)",
			 s);
		return -EINVAL;
	}
	g->bound_us = (uint32_t)v;
	return 0;
}

const char *job_policy_name(enum mercury_job_policy p)
{
	switch (p) {
	case MERCURY_POLICY_PRIORITY:
		return "priority";
	case MERCURY_POLICY_SHARE:
		return "share";
	default:
		return NULL;
	}
}

int job_policy_from_name(const char *s, enum mercury_job_policy *out)
{
	if (s && strcmp(s, "priority") == 0)
		*out = MERCURY_POLICY_PRIORITY;
	else if (s && strcmp(s, "share") == 0)
		*out = MERCURY_POLICY_SHARE;
	else
		return -EINVAL;
	return 0;
}

uint32_t htb_share_class_minor(unsigned slot)
{
	return MERCURY_HTB_SHARE_MINOR0 + slot;
}

uint32_t htb_share_leaf_minor(unsigned slot, unsigned prio)
{
	return MERCURY_HTB_SHARE_LEAF_STRIDE * (slot + 1) + MERCURY_HTB_LEAF_MINOR0 + prio;
}

int band_plan_job_policy(enum mercury_backend b, enum mercury_job_policy policy,
			 uint32_t qdisc_handle, struct mercury_iface_cfg *cfg, char *err,
			 size_t errlen)
{
	uint32_t major = qdisc_handle ? qdisc_handle : MERCURY_QDISC_HANDLE;

	cfg->share_slots = 0;
	memset(cfg->skb_priority_share, 0, sizeof(cfg->skb_priority_share));
	if (policy == MERCURY_POLICY_PRIORITY)
		return 0;
	if (policy != MERCURY_POLICY_SHARE) {
		snprintf(err, errlen, "unknown job policy %d", (int)policy);
		return -EINVAL;
	}
	if (b != MERCURY_BACKEND_HTB) {
		snprintf(err, errlen,
			 "--job-policy share needs --qdisc htb (per-job classes with assured "
			 "rates); %s applies the priority rule",
			 backend_name(b) ? backend_name(b) : "this backend");
		return -EINVAL;
	}
	if (cfg->nbands > MERCURY_HTB_SHARE_MAX_BANDS) {
		snprintf(err, errlen, "--job-policy share takes at most %u bands, not %u",
			 MERCURY_HTB_SHARE_MAX_BANDS, cfg->nbands);
		return -EINVAL;
	}
	cfg->share_slots = MERCURY_SHARE_SLOTS;
	for (unsigned s = 0; s < MERCURY_SHARE_SLOTS; s++)
		for (unsigned band = 0; band < cfg->nbands; band++)
			cfg->skb_priority_share[s][band] = major | htb_share_leaf_minor(s, band);
	return 0;
}

/*
 * A band's guaranteed rate r. Priority rule: 1 % of R, at least 1 Mbit/s (a queue of 128 KiB
 * drains in about 1 s at 1 Mbit/s, in 0.1 s at 10 Mbit/s: what bounds a level rise,
 * rise_bound.h), all bands together below half of R; a backlogged band takes r from the more
 * urgent ones. Share: at most R/64 for all of a slot's bands together, so that the jobs'
 * assured rates keep the link less 1/64 between them.
 */
uint64_t htb_leaf_rate(uint64_t rate, unsigned nbands, enum mercury_job_policy policy)
{
	uint64_t n = nbands ? nbands : 1, r = rate / MERCURY_HTB_LEAF_RATE_DIV,
		 cap = rate / (2 * n);

	if (r < MERCURY_HTB_LEAF_RATE_MIN)
		r = MERCURY_HTB_LEAF_RATE_MIN;
	if (policy == MERCURY_POLICY_SHARE && cap > rate / (64 * n))
		cap = rate / (64 * n);
	return r < cap ? r : cap;
}

void htb_share_rates(uint64_t rate, unsigned nbands, const uint32_t weight[MERCURY_SHARE_SLOTS],
		     uint64_t out[MERCURY_SHARE_SLOTS])
{
	uint64_t reserved = htb_leaf_rate(rate, nbands, MERCURY_POLICY_SHARE) * nbands, budget,
		 wsum = 0, idle = 0;

	for (unsigned s = 0; s < MERCURY_SHARE_SLOTS; s++) {
		wsum += weight[s];
		idle += !weight[s];
	}
	budget = rate > reserved ? rate - reserved : rate / 2;
	if (wsum)
		budget =
		    budget > idle * MERCURY_HTB_MIN_RATE ? budget - idle * MERCURY_HTB_MIN_RATE : 0;
	for (unsigned s = 0; s < MERCURY_SHARE_SLOTS; s++) {
		uint64_t r = !wsum	 ? budget / MERCURY_SHARE_SLOTS
			     : weight[s] ? (uint64_t)((unsigned __int128)budget * weight[s] / wsum)
					 : 0;

		out[s] = r < MERCURY_HTB_MIN_RATE ? MERCURY_HTB_MIN_RATE : r;
	}
}

void htb_share_quanta(const uint32_t weight[MERCURY_SHARE_SLOTS], uint32_t full,
		      uint32_t out[MERCURY_SHARE_SLOTS])
{
	uint32_t wmax = 0;

	for (unsigned s = 0; s < MERCURY_SHARE_SLOTS; s++)
		wmax = weight[s] > wmax ? weight[s] : wmax;
	for (unsigned s = 0; s < MERCURY_SHARE_SLOTS; s++) {
		uint64_t q = weight[s] ? (uint64_t)full * weight[s] / wmax : full;

		out[s] = q < full / 20 ? full / 20 : (uint32_t)q;
	}
}
