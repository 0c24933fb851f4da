/* SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause */
/*
 * The layer-priority policy's level of a job tag, shared by the classifier (per packet), the
 * daemon (validation, inspection) and the tests, so that there is one rule:
 *  1. traffic of a job's oldest open iteration goes before traffic of newer iterations;
 *  2. within that iteration, layer 1 (input side) first, for push and pull alike.
 * With nbands bands (level l lands in band min(l, nbands - 1)):
 *   2 bands: current iteration 0, newer 1.
 *   3 bands: current iteration front half of the layers 0, back half 1, newer 2.
 *   N >= 4:  current iteration N - 2 layer groups 0 .. N-3 (mercury_layer_group()); the next
 *            iteration N - 2; iterations further ahead N - 1 (with untagged traffic).
 * Policy "priority": a job of weight w yields shift = floor(log2(w_max / w)) levels to the
 * heaviest job (mercury_job_level()). Policy "share" (htb): each job has its own classes
 * whose assured rate follows its weight, so the level inside the job is taken unshifted
 * (mercury_job_level_in_job()).
 * Without an open iteration every tag counts as the current iteration.
 */
#ifndef MERCURY_JOB_LEVEL_H
#define MERCURY_JOB_LEVEL_H

#include "mercury_abi.h"

#include "mercury_inline.h"
#include "mercury_groups.h"

MERCURY_INLINE __u32 mercury_job_level_in_job(const struct mercury_job_state *js, __u32 layer,
					      __u64 iteration, __u32 nbands)
{
	__u64 oldest = js->oldest_open;
	__u32 lv;

	if (nbands < 2)
		nbands = 2;
	if (nbands > MERCURY_MAX_LEVELS)
		nbands = MERCURY_MAX_LEVELS;
	if (!js->has_open || iteration <= oldest)
		lv = mercury_layer_group(layer - 1, js->n_layers, mercury_current_groups(nbands));
	else if (nbands >= 4 && iteration - oldest == 1)
		lv = nbands - 2;
	else
		lv = nbands - 1;
	return lv < nbands ? lv : nbands - 1;
}

MERCURY_INLINE __u32 mercury_job_level(const struct mercury_job_state *js, __u32 layer,
				       __u64 iteration, __u32 nbands)
{
	__u32 lv = mercury_job_level_in_job(js, layer, iteration, nbands) + js->shift;

	if (nbands > MERCURY_MAX_LEVELS)
		nbands = MERCURY_MAX_LEVELS;
	if (nbands < 2)
		nbands = 2;
	return lv < nbands ? lv : nbands - 1;
}

#endif
