/* SPDX-License-Identifier: BSD-2-Clause */
/* Mercury's priority policy: the job table and (job, layer, direction, iteration) -> level. Pure.
 */
#ifndef MERCURY_POLICY_H
#define MERCURY_POLICY_H

#include <stdbool.h>
#include <stdint.h>

#include "iter_window.h"
#include "mercury_abi.h"

#define POLICY_MAX_JOBS MERCURY_MAX_JOBS

struct policy_job {
	uint32_t job, n_layers, weight;
	struct iter_window win;
};

struct policy {
	struct policy_job jobs[POLICY_MAX_JOBS];
	unsigned njobs;
	unsigned nbands; /* bands every attached interface has (the smallest count) */
};

void policy_init(struct policy *p, unsigned nbands);
void policy_set_bands(struct policy *p, unsigned nbands);
/* -ENOSPC: too many jobs; -EINVAL: bad counts. Re-declaring updates layers and weight. */
int policy_declare(struct policy *p, uint32_t job, uint32_t n_layers, uint32_t weight);
/* Forgets a job (its last client went away). */
void policy_remove(struct policy *p, uint32_t job);
/* -ESRCH: job not declared. */
int policy_iteration_begin(struct policy *p, uint32_t job, uint64_t iteration);
int policy_iteration_end(struct policy *p, uint32_t job, uint64_t iteration);
/* Whether a tag of this job and layer is valid: -ESRCH job not declared, -ERANGE layer
 * outside 1..n_layers, else 0. */
int policy_check(const struct policy *p, uint32_t job, uint32_t layer);
/* The level now (policy_check's errors). dir does not matter: push
 * and pull of a layer are equally urgent (immediate aggregation overlaps them). */
int policy_level(const struct policy *p, uint32_t job, uint32_t layer, uint32_t dir,
		 uint64_t iteration, uint32_t *level);

/* Levels the job yields to the heaviest job: floor(log2(w_max / w)). */
unsigned policy_shift(const struct policy *p, uint32_t job);
/* The job's state as the classifier reads it (gen, uid and job id left 0); all zero
 * (inactive) for an unknown job. */
void policy_job_state(const struct policy *p, uint32_t job, struct mercury_job_state *js);

#endif
