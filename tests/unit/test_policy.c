// SPDX-License-Identifier: BSD-2-Clause
/* The policy's level tables for 2, 3, 4 and 8 bands, iterations and several jobs. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "service/policy.h"
#include "mercury_groups.h"

static uint32_t level_of(struct policy *p, uint32_t job, uint32_t layer, uint64_t iter)
{
	uint32_t l = 99;

	assert_int_equal(policy_level(p, job, layer, 0, iter, &l), 0);
	return l;
}

static void test_eight_bands_layer_order(void **state)
{
	struct policy p;

	(void)state;
	policy_init(&p, 8);
	assert_int_equal(policy_declare(&p, 1, 12, 1), 0);
	/* 6 groups of 2 layers for the current iteration, front layers first. */
	assert_int_equal(level_of(&p, 1, 1, 0), 0);
	assert_int_equal(level_of(&p, 1, 2, 0), 0);
	assert_int_equal(level_of(&p, 1, 3, 0), 1);
	assert_int_equal(level_of(&p, 1, 12, 0), 5);
	for (uint32_t l = 1; l < 12; l++)
		assert_true(level_of(&p, 1, l, 0) <= level_of(&p, 1, l + 1, 0));
	/* push and pull of a layer are equally urgent */
	uint32_t a, b;
	assert_int_equal(policy_level(&p, 1, 5, 0, 0, &a), 0);
	assert_int_equal(policy_level(&p, 1, 5, 1, 0, &b), 0);
	assert_int_equal(a, b);
}

/* Frameworks map layers to sockets with mercury_layer_group(): the daemon must agree, for
 * every band count and layer count, or a socket's bytes straddle two bands. */
static void test_levels_follow_the_shared_group_rule(void **state)
{
	(void)state;
	for (unsigned nb = 2; nb <= 8; nb++) {
		unsigned groups = mercury_current_groups(nb);

		for (uint32_t n = 1; n <= 200; n++) {
			struct policy p;

			policy_init(&p, nb);
			assert_int_equal(policy_declare(&p, 1, n, 1), 0);
			for (uint32_t l = 1; l <= n; l++)
				assert_int_equal(level_of(&p, 1, l, 0),
						 mercury_layer_group(l - 1, n, groups));
		}
	}
}

static void test_older_iteration_first(void **state)
{
	struct policy p;

	(void)state;
	policy_init(&p, 8);
	policy_declare(&p, 1, 50, 1);
	assert_int_equal(policy_iteration_begin(&p, 1, 10), 0);
	assert_int_equal(policy_iteration_begin(&p, 1, 11), 0);
	/* iteration 11's layer 1 must not preempt iteration 10's last layer */
	assert_true(level_of(&p, 1, 1, 11) > level_of(&p, 1, 50, 10));
	assert_int_equal(level_of(&p, 1, 1, 11), 6);
	assert_int_equal(level_of(&p, 1, 1, 12), 7);
	/* iteration 10 ends: 11 becomes current and gets layer order back */
	assert_int_equal(policy_iteration_end(&p, 1, 10), 0);
	assert_int_equal(level_of(&p, 1, 1, 11), 0);
	assert_int_equal(level_of(&p, 1, 1, 12), 6);
	/* ends out of order: 12 ends before 11; 13 is current only after 11 ends */
	policy_iteration_begin(&p, 1, 12);
	policy_iteration_end(&p, 1, 12);
	assert_int_equal(level_of(&p, 1, 1, 13), 7);
	policy_iteration_end(&p, 1, 11);
	assert_int_equal(level_of(&p, 1, 1, 13), 0);
}

static void test_three_bands(void **state)
{
	struct policy p;

	(void)state;
	policy_init(&p, 3);
	policy_declare(&p, 7, 10, 1);
	policy_iteration_begin(&p, 7, 0);
	assert_int_equal(level_of(&p, 7, 1, 0), 0);
	assert_int_equal(level_of(&p, 7, 5, 0), 0);
	assert_int_equal(level_of(&p, 7, 6, 0), 1);
	assert_int_equal(level_of(&p, 7, 10, 0), 1);
	assert_int_equal(level_of(&p, 7, 1, 1), 2); /* newer iteration: last band */
}

static void test_two_and_four_bands(void **state)
{
	struct policy p;

	(void)state;
	policy_init(&p, 2);
	policy_declare(&p, 1, 4, 1);
	policy_iteration_begin(&p, 1, 0);
	assert_int_equal(level_of(&p, 1, 4, 0), 0);
	assert_int_equal(level_of(&p, 1, 1, 1), 1);
	policy_set_bands(&p, 4);
	assert_int_equal(level_of(&p, 1, 1, 0), 0);
	assert_int_equal(level_of(&p, 1, 4, 0), 1);
	assert_int_equal(level_of(&p, 1, 1, 1), 2);
	assert_int_equal(level_of(&p, 1, 1, 2), 3);
}

static void test_jobs_weighted(void **state)
{
	struct policy p;

	(void)state;
	policy_init(&p, 8);
	policy_declare(&p, 1, 6, 4);
	policy_declare(&p, 2, 6, 2);
	policy_declare(&p, 3, 6, 1);
	assert_int_equal(level_of(&p, 1, 1, 0), 0);
	assert_int_equal(level_of(&p, 2, 1, 0), 1); /* half the weight: one band down */
	assert_int_equal(level_of(&p, 3, 1, 0), 2); /* a quarter: two */
	assert_int_equal(level_of(&p, 3, 6, 0), 7); /* clamped to the last band */
}

static void test_errors(void **state)
{
	struct policy p;
	uint32_t l;

	(void)state;
	policy_init(&p, 8);
	assert_int_equal(policy_level(&p, 1, 1, 0, 0, &l), -ESRCH);
	assert_int_equal(policy_declare(&p, 1, 0, 1), -EINVAL);
	assert_int_equal(policy_declare(&p, 1, 3, 0), -EINVAL);
	policy_declare(&p, 1, 3, 1);
	assert_int_equal(policy_level(&p, 1, 0, 0, 0, &l), -ERANGE);
	assert_int_equal(policy_level(&p, 1, 4, 0, 0, &l), -ERANGE);
	assert_int_equal(policy_iteration_begin(&p, 9, 0), -ESRCH);
	for (uint32_t j = 2; j <= POLICY_MAX_JOBS; j++)
		assert_int_equal(policy_declare(&p, j, 3, 1), 0);
	assert_int_equal(policy_declare(&p, 999, 3, 1), -ENOSPC);
}

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x << 13, *x ^= *x >> 7, *x ^= *x << 17;
	return *x;
}

/*
 * Random declares, removals, iteration marks and band counts; after each, the policy's
 * promises on random samples: levels fit the bands; within an iteration a front layer never
 * goes after a back layer; an older iteration never after a newer one, and for the heaviest
 * job strictly before it with any band count (the order that must survive 2 or 3 bands);
 * the heaviest job's layer 1 of the oldest open iteration is level 0; push == pull; a job
 * never goes after an equally placed layer of a lighter job.
 */
static void test_random_invariants(void **state)
{
	struct policy p;
	uint64_t x = 0x2545f4914f6cdd1dull, checks = 0;

	(void)state;
	policy_init(&p, 8);
	for (int step = 0; step < 200000; step++) {
		uint32_t job = (uint32_t)(rnd(&x) % 6), a, b, wmax = 0;
		uint64_t it = rnd(&x) % 8;

		switch (rnd(&x) % 8) {
		case 0:
			policy_declare(&p, job, 1 + (uint32_t)(rnd(&x) % 200),
				       1 + (uint32_t)(rnd(&x) % 1000));
			break;
		case 1:
			if (rnd(&x) % 8 == 0)
				policy_remove(&p, job);
			break;
		case 2:
			policy_set_bands(&p, (unsigned)(rnd(&x) % 18));
			break;
		case 3:
		case 4:
			policy_iteration_begin(&p, job, it);
			break;
		default:
			policy_iteration_end(&p, job, it);
		}
		assert_true(p.nbands >= 2 && p.nbands <= 16);
		for (unsigned i = 0; i < p.njobs; i++)
			if (p.jobs[i].weight > wmax)
				wmax = p.jobs[i].weight;
		for (unsigned i = 0; i < p.njobs; i++) {
			const struct policy_job *j = &p.jobs[i];
			uint32_t l1 = 1 + (uint32_t)(rnd(&x) % j->n_layers);
			uint32_t l2 = 1 + (uint32_t)(rnd(&x) % j->n_layers);
			uint64_t i1 = rnd(&x) % 10, i2 = rnd(&x) % 10;

			if (l1 > l2) {
				uint32_t t = l1;
				l1 = l2, l2 = t;
			}
			if (i1 > i2) {
				uint64_t t = i1;
				i1 = i2, i2 = t;
			}
			assert_int_equal(policy_level(&p, j->job, l1, 0, i1, &a), 0);
			assert_int_equal(policy_level(&p, j->job, l2, 1, i1, &b), 0);
			assert_true(a < p.nbands && b < p.nbands);
			assert_true(a <= b); /* layer order */
			assert_int_equal(policy_level(&p, j->job, l1, 1, i1, &b), 0);
			assert_int_equal(a, b); /* push == pull */
			/* Older iteration first: iterations up to the oldest open one count as it.
			 */
			uint64_t base = j->win.has_open ? j->win.oldest_open : UINT64_MAX;
			if (i2 > i1 && i2 > base) {
				assert_int_equal(policy_level(&p, j->job, l2, 0, i1, &a), 0);
				assert_int_equal(policy_level(&p, j->job, l1, 0, i2, &b), 0);
				assert_true(a <= b);
			}
			if (j->weight == wmax) {
				uint64_t cur = j->win.has_open ? j->win.oldest_open : 0;

				assert_int_equal(policy_level(&p, j->job, 1, 0, cur, &a), 0);
				assert_int_equal(a, 0);
				assert_int_equal(policy_level(&p, j->job, j->n_layers, 0, cur, &a),
						 0);
				assert_int_equal(policy_level(&p, j->job, 1, 0, cur + 1, &b), 0);
				if (j->win.has_open)
					assert_true(a < b); /* strictly, with any band count */
			}
			for (unsigned k = 0; k < p.njobs; k++) {
				const struct policy_job *o = &p.jobs[k];

				if (o->weight > j->weight || o->n_layers != j->n_layers ||
				    o->win.has_open != j->win.has_open ||
				    (j->win.has_open && o->win.oldest_open != j->win.oldest_open))
					continue;
				assert_int_equal(policy_level(&p, o->job, l1, 0, i1, &a), 0);
				assert_int_equal(policy_level(&p, j->job, l1, 0, i1, &b), 0);
				assert_true(a >= b); /* the lighter job never goes first */
			}
			checks++;
		}
	}
	print_message("%llu samples checked\n", (unsigned long long)checks);
	assert_true(checks > 100000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_eight_bands_layer_order),
	    cmocka_unit_test(test_levels_follow_the_shared_group_rule),
	    cmocka_unit_test(test_older_iteration_first),
	    cmocka_unit_test(test_three_bands),
	    cmocka_unit_test(test_two_and_four_bands),
	    cmocka_unit_test(test_jobs_weighted),
	    cmocka_unit_test(test_errors),
	    cmocka_unit_test(test_random_invariants),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
