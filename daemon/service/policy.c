// SPDX-License-Identifier: BSD-2-Clause
/*
 * The layer-priority policy's job table: which jobs exist, their layers, weights and iteration
 * windows. The level rule itself is common/job_level.h, shared with the classifier, which
 * applies it per packet from the job state mercuryd publishes (event_service.c).
 */
#include <errno.h>
#include <string.h>

#include "policy.h"
#include "mercury_abi.h"
#include "job_level.h"

void policy_init(struct policy *p, unsigned nbands)
{
	memset(p, 0, sizeof(*p));
	policy_set_bands(p, nbands);
}

void policy_set_bands(struct policy *p, unsigned nbands)
{
	if (nbands < 2)
		nbands = 2;
	if (nbands > MERCURY_MAX_LEVELS)
		nbands = MERCURY_MAX_LEVELS;
	p->nbands = nbands;
}

static struct policy_job *find(const struct policy *p, uint32_t job)
{
	for (unsigned i = 0; i < p->njobs; i++)
		if (p->jobs[i].job == job)
			return (struct policy_job *)&p->jobs[i];
	return NULL;
}

int policy_declare(struct policy *p, uint32_t job, uint32_t n_layers, uint32_t weight)
{
	struct policy_job *j = find(p, job);

	if (n_layers == 0 || weight == 0)
		return -EINVAL;
	if (!j) {
		if (p->njobs == POLICY_MAX_JOBS)
			return -ENOSPC;
		j = &p->jobs[p->njobs++];
		memset(j, 0, sizeof(*j));
		j->job = job;
	}
	j->n_layers = n_layers;
	j->weight = weight;
	return 0;
}

void policy_remove(struct policy *p, uint32_t job)
{
	struct policy_job *j = find(p, job);

	if (j)
		*j = p->jobs[--p->njobs];
}

int policy_iteration_begin(struct policy *p, uint32_t job, uint64_t iteration)
{
	struct policy_job *j = find(p, job);

	if (!j)
		return -ESRCH;
	iter_window_begin(&j->win, iteration);
	return 0;
}

int policy_iteration_end(struct policy *p, uint32_t job, uint64_t iteration)
{
	struct policy_job *j = find(p, job);

	if (!j)
		return -ESRCH;
	iter_window_end(&j->win, iteration);
	return 0;
}

static unsigned log2_floor(uint32_t v)
{
	unsigned r = 0;

	while (v >>= 1)
		r++;
	return r;
}

unsigned policy_shift(const struct policy *p, uint32_t job)
{
	const struct policy_job *j = find(p, job);
	uint32_t wmax = 1;

	if (!j)
		return 0;
	for (unsigned i = 0; i < p->njobs; i++)
		if (p->jobs[i].weight > wmax)
			wmax = p->jobs[i].weight;
	return log2_floor(wmax / j->weight);
}

void policy_job_state(const struct policy *p, uint32_t job, struct mercury_job_state *js)
{
	const struct policy_job *j = find(p, job);

	memset(js, 0, sizeof(*js));
	if (!j)
		return;
	js->active = 1;
	js->n_layers = j->n_layers;
	js->weight = j->weight;
	js->shift = policy_shift(p, job);
	js->has_open = j->win.has_open;
	js->oldest_open = j->win.oldest_open;
	js->ended_mask = j->win.ended_mask;
}

int policy_check(const struct policy *p, uint32_t job, uint32_t layer)
{
	const struct policy_job *j = find(p, job);

	if (!j)
		return -ESRCH;
	return layer == 0 || layer > j->n_layers ? -ERANGE : 0;
}

int policy_level(const struct policy *p, uint32_t job, uint32_t layer, uint32_t dir,
		 uint64_t iteration, uint32_t *level)
{
	struct mercury_job_state js;
	int r;

	(void)dir;
	if ((r = policy_check(p, job, layer)))
		return r;
	policy_job_state(p, job, &js);
	*level = mercury_job_level(&js, layer, iteration, p->nbands);
	return 0;
}
