/*
 * The layer-priority policy. Two rules, in this order of importance:
 *  1. traffic of a job's oldest open iteration goes before traffic of newer iterations: with
 *     layer order alone a worker that runs ahead sends next-iteration front layers that
 *     preempt a lagging worker's current pulls, and the workers lock out of step;
 *  2. within an iteration, layer 1 (input side) first, for push and pull alike: the next
 *     forward pass needs layer 1 first.
 * Levels are bands (level l lands in band min(l, nbands - 1) on every interface), so the
 * policy lays them out for the smallest band count attached:
 *   2 bands: current iteration 0, newer 1.
 *   3 bands: current iteration front half of the layers 0, back half 1, newer 2 (with the
 *            untagged default band): rule 1 kept whole, rule 2 kept coarsely.
 *   N >= 4:  current iteration: N - 2 layer groups 0 .. N-3 (front layers lowest); the next
 *            iteration N - 2; iterations further ahead N - 1 (with untagged traffic).
 * Layers are grouped evenly by index (include/mercury_groups.h, shared with frameworks that
 * map layers to sockets): group = (layer - 1) * groups / n_layers.
 * Several jobs share the bands by layer rank; a job of weight w is shifted down by
 * floor(log2(w_max / w)) levels (w_max: the largest declared weight), so a job of half the
 * weight yields one band to the heavier job's equally ranked layers.
 */
#include <errno.h>
#include <string.h>

#include "policy.h"
#include "mercury_abi.h"
#include "mercury_groups.h"

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

int policy_level(const struct policy *p, uint32_t job, uint32_t layer, uint32_t dir,
		 uint64_t iteration, uint32_t *level)
{
	const struct policy_job *j = find(p, job);
	unsigned nb = p->nbands, groups, lv;
	uint32_t wmax = 1;
	uint64_t stage;

	(void)dir;
	if (!j)
		return -ESRCH;
	if (layer == 0 || layer > j->n_layers)
		return -ERANGE;
	/* Without iteration marks every tag counts as the current iteration. */
	stage =
	    j->win.has_open && iteration > j->win.oldest_open ? iteration - j->win.oldest_open : 0;
	groups = mercury_current_groups(nb);
	if (stage == 0)
		lv = mercury_layer_group(layer - 1, j->n_layers, groups);
	else if (nb >= 4 && stage == 1)
		lv = nb - 2;
	else
		lv = nb - 1;
	for (unsigned i = 0; i < p->njobs; i++)
		if (p->jobs[i].weight > wmax)
			wmax = p->jobs[i].weight;
	lv += log2_floor(wmax / j->weight);
	*level = lv < nb ? lv : nb - 1;
	return 0;
}
