// SPDX-License-Identifier: BSD-2-Clause
/* Band plan: names, band-count limits, per-backend skb->priority tables, level clamping. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tc/band_plan.h"

static const enum mercury_backend all[] = {MERCURY_BACKEND_MQPRIO, MERCURY_BACKEND_PRIO,
					   MERCURY_BACKEND_ETS, MERCURY_BACKEND_HTB,
					   MERCURY_BACKEND_TBF};
#define NALL (sizeof(all) / sizeof(all[0]))

static void test_names_round_trip(void **state)
{
	(void)state;
	for (size_t i = 0; i < NALL; i++) {
		enum mercury_backend b = MERCURY_BACKEND_NONE;
		const char *name = backend_name(all[i]);

		assert_non_null(name);
		assert_int_equal(backend_from_name(name, &b), 0);
		assert_int_equal(b, all[i]);
	}
	assert_string_equal(backend_name(MERCURY_BACKEND_MQPRIO), "mqprio");
	assert_string_equal(backend_name(MERCURY_BACKEND_PRIO), "prio");
	assert_string_equal(backend_name(MERCURY_BACKEND_ETS), "ets");
	assert_string_equal(backend_name(MERCURY_BACKEND_HTB), "htb");
	assert_string_equal(backend_name(MERCURY_BACKEND_TBF), "tbf");
	assert_null(backend_name(MERCURY_BACKEND_MAX));
	assert_null(backend_name((enum mercury_backend) - 1));
}

static void test_name_parsing(void **state)
{
	enum mercury_backend b = MERCURY_BACKEND_HTB;

	(void)state;
	assert_int_equal(backend_from_name("auto", &b), 0);
	assert_int_equal(b, MERCURY_BACKEND_NONE);
	b = MERCURY_BACKEND_TBF;
	assert_int_equal(backend_from_name("fq", &b), -EINVAL);
	assert_int_equal(backend_from_name("", &b), -EINVAL);
	assert_int_equal(backend_from_name("HTB", &b), -EINVAL);
	assert_int_equal(backend_from_name("htb ", &b), -EINVAL);
	assert_int_equal(backend_from_name(NULL, &b), -EINVAL);
	assert_int_equal(b, MERCURY_BACKEND_TBF); /* untouched on failure */
}

/* The band counts band_plan() accepts for b: [*lo, *hi] (0, 0 when none). */
static void accepted_range(enum mercury_backend b, unsigned *lo, unsigned *hi)
{
	struct mercury_iface_cfg cfg;
	char err[256];

	*lo = *hi = 0;
	for (unsigned n = 0; n <= MERCURY_MAX_BANDS + 1; n++)
		if (band_plan(b, n, 0, 0, &cfg, err, sizeof(err)) == 0) {
			if (!*lo)
				*lo = n;
			*hi = n;
		}
}

static void test_band_counts(void **state)
{
	unsigned lo, hi;

	(void)state;
	assert_int_equal(backend_default_bands(MERCURY_BACKEND_TBF), 3);
	accepted_range(MERCURY_BACKEND_TBF, &lo, &hi);
	assert_int_equal(lo, 3);
	assert_int_equal(hi, 3);
	accepted_range(MERCURY_BACKEND_HTB, &lo, &hi);
	assert_int_equal(hi, 15); /* 8 prios + 7 nested */
	accepted_range(MERCURY_BACKEND_PRIO, &lo, &hi);
	assert_int_equal(hi, 16);
	accepted_range(MERCURY_BACKEND_ETS, &lo, &hi);
	assert_int_equal(hi, 16);
	accepted_range(MERCURY_BACKEND_MQPRIO, &lo, &hi);
	assert_int_equal(hi, 15); /* priority 0 stays default */
	assert_int_equal(backend_default_bands(MERCURY_BACKEND_NONE), 0);
	for (size_t i = 0; i < NALL; i++) {
		unsigned d = backend_default_bands(all[i]);

		accepted_range(all[i], &lo, &hi);
		assert_true(lo >= 2 && d >= lo && d <= hi && hi <= MERCURY_MAX_BANDS);
	}
}

static void test_limits_rejected(void **state)
{
	struct mercury_iface_cfg cfg;
	char err[256];

	(void)state;
	for (size_t i = 0; i < NALL; i++) {
		enum mercury_backend b = all[i];
		unsigned lo, hi;

		accepted_range(b, &lo, &hi);
		err[0] = '\0';
		assert_int_equal(band_plan(b, lo - 1, 0, 0, &cfg, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, backend_name(b)));
		err[0] = '\0';
		assert_int_equal(band_plan(b, hi + 1, 0, 0, &cfg, err, sizeof(err)), -EINVAL);
		assert_true(err[0] != '\0');
		assert_int_equal(band_plan(b, hi, hi - 1, 0, &cfg, err, sizeof(err)), 0);
		err[0] = '\0';
		assert_int_equal(band_plan(b, hi, hi, 0, &cfg, err, sizeof(err)), -EINVAL);
		assert_non_null(strstr(err, "default band"));
	}
	assert_int_equal(band_plan(MERCURY_BACKEND_NONE, 8, 0, 0, &cfg, err, sizeof(err)), -EINVAL);
	assert_int_equal(band_plan(MERCURY_BACKEND_MAX, 8, 0, 0, &cfg, err, sizeof(err)), -EINVAL);
	/* A handle is a major number only. */
	assert_int_equal(band_plan(MERCURY_BACKEND_PRIO, 4, 0, 0x00010002, &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_int_equal(band_plan(MERCURY_BACKEND_PRIO, 4, 0, 0xffff0000, &cfg, err, sizeof(err)),
			 -EINVAL);
}

static void check_common(const struct mercury_iface_cfg *cfg, unsigned nbands, unsigned def)
{
	assert_int_equal(cfg->nbands, nbands);
	assert_int_equal(cfg->default_band, def);
	for (unsigned l = 0; l < MERCURY_MAX_LEVELS; l++) {
		unsigned want = l < nbands ? l : nbands - 1;

		assert_int_equal(cfg->band_of_level[l], want);
		assert_true(cfg->band_of_level[l] < nbands);
	}
	for (unsigned b = nbands; b < MERCURY_MAX_BANDS; b++)
		assert_int_equal(cfg->skb_priority[b], 0);
}

/* prio/ets: skb->priority must carry the root's major and minor = band + 1. */
static void test_prio_ets_tables(void **state)
{
	enum mercury_backend bs[] = {MERCURY_BACKEND_PRIO, MERCURY_BACKEND_ETS};
	struct mercury_iface_cfg cfg;
	char err[256];

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		for (unsigned n = 2; n <= 16; n++) {
			assert_int_equal(band_plan(bs[i], n, n - 1, 0, &cfg, err, sizeof(err)), 0);
			check_common(&cfg, n, n - 1);
			for (unsigned b = 0; b < n; b++) {
				uint32_t p = cfg.skb_priority[b];

				assert_int_equal(p >> 16, 0x4d45);
				assert_int_equal((p & 0xffff) - 1, b); /* the kernel's band */
			}
		}
		assert_int_equal(band_plan(bs[i], 4, 1, 0x00070000, &cfg, err, sizeof(err)), 0);
		assert_int_equal(cfg.skb_priority[0], 0x00070001);
		assert_int_equal(cfg.skb_priority[3], 0x00070004);
	}
}

static void test_htb_table(void **state)
{
	struct mercury_iface_cfg cfg;
	char err[256];

	(void)state;
	assert_int_equal(band_plan(MERCURY_BACKEND_HTB, 8, 7, 0, &cfg, err, sizeof(err)), 0);
	check_common(&cfg, 8, 7);
	for (unsigned b = 0; b < 8; b++)
		assert_int_equal(cfg.skb_priority[b], MERCURY_QDISC_HANDLE | (0x10 + b));
	/* distinct leaves, none equal to the qdisc itself (HTB would send that direct) */
	for (unsigned a = 0; a < 8; a++) {
		assert_int_not_equal(cfg.skb_priority[a], MERCURY_QDISC_HANDLE);
		assert_int_not_equal(cfg.skb_priority[a] & 0xffff, MERCURY_HTB_PARENT_MINOR);
		for (unsigned b = a + 1; b < 8; b++)
			assert_int_not_equal(cfg.skb_priority[a], cfg.skb_priority[b]);
	}
}

/*
 * What the kernel does with skb->priority p in the htb tree of `lo` (root M:, nested htb
 * (M + 1): under the host leaf): the root takes the leaf M:p names, else its default; the
 * host's nested htb likewise. Returns the packet's rank: root prio * 8 + nested prio.
 */
static unsigned kernel_htb_rank(const struct htb_layout *lo, uint32_t p)
{
	const uint32_t root = MERCURY_QDISC_HANDLE, nested = MERCURY_QDISC_HANDLE + 0x10000;
	unsigned rprio = lo->root_default, nprio = lo->nested_default;

	if ((p & 0xffff0000u) == root && (p & 0xffff) >= MERCURY_HTB_LEAF_MINOR0 &&
	    (p & 0xffff) < MERCURY_HTB_LEAF_MINOR0 + lo->root_leaves)
		rprio = (p & 0xffff) - MERCURY_HTB_LEAF_MINOR0;
	if (!lo->nested || rprio != lo->host)
		return rprio * 8;
	if ((p & 0xffff0000u) == nested && (p & 0xffff) >= MERCURY_HTB_LEAF_MINOR0 &&
	    (p & 0xffff) < MERCURY_HTB_LEAF_MINOR0 + lo->nested)
		nprio = (p & 0xffff) - MERCURY_HTB_LEAF_MINOR0;
	return rprio * 8 + nprio;
}

/* Above 8 bands: every band lands where the kernel serves it strictly after the band
 * before it, and untagged traffic (priority 0) in the default band, for every default. */
static void test_htb_nested_table(void **state)
{
	struct mercury_iface_cfg cfg;
	char err[256];

	(void)state;
	for (unsigned n = 2; n <= MERCURY_HTB_MAX_BANDS; n++) {
		for (unsigned d = 0; d < n; d++) {
			struct htb_layout lo = htb_layout(n, d);
			unsigned prev = 0;

			assert_int_equal(
			    band_plan(MERCURY_BACKEND_HTB, n, d, 0, &cfg, err, sizeof(err)), 0);
			check_common(&cfg, n, d);
			assert_int_equal(lo.root_leaves + (lo.nested ? lo.nested - 1 : 0), n);
			assert_true(lo.root_leaves <= MERCURY_HTB_PRIOS && lo.nested <= 8);
			for (unsigned b = 0; b < n; b++) {
				unsigned r = kernel_htb_rank(&lo, cfg.skb_priority[b]);

				if (b > 0)
					assert_true(r > prev);
				prev = r;
				if (b == d)
					assert_int_equal(r, kernel_htb_rank(&lo, 0));
			}
		}
	}
	/* 15 bands, untagged in band 0: bands 0..7 nested under root prio 0 */
	assert_int_equal(band_plan(MERCURY_BACKEND_HTB, 15, 0, 0, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.skb_priority[0], 0x4d460010);
	assert_int_equal(cfg.skb_priority[7], 0x4d460017);
	assert_int_equal(cfg.skb_priority[8], 0x4d450011);
	assert_int_equal(cfg.skb_priority[14], 0x4d450017);
	/* the nested htb needs a major after the root's */
	assert_int_equal(band_plan(MERCURY_BACKEND_HTB, 9, 0, 0xfffe0000, &cfg, err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "nested"));
	assert_int_equal(band_plan(MERCURY_BACKEND_HTB, 8, 0, 0xfffe0000, &cfg, err, sizeof(err)),
			 0);
}

/* tbf: pfifo_fast's kernel prio2band must put skb_priority[b] into band b. */
static void test_tbf_table(void **state)
{
	static const unsigned prio2band[16] = {1, 2, 2, 2, 1, 2, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
	struct mercury_iface_cfg cfg;
	char err[256];

	(void)state;
	assert_int_equal(band_plan(MERCURY_BACKEND_TBF, 3, 1, 0, &cfg, err, sizeof(err)), 0);
	check_common(&cfg, 3, 1);
	assert_int_equal(cfg.skb_priority[0], 6);
	assert_int_equal(cfg.skb_priority[1], 0);
	assert_int_equal(cfg.skb_priority[2], 2);
	for (unsigned b = 0; b < 3; b++)
		assert_int_equal(prio2band[cfg.skb_priority[b] & 15], b);
}

static void test_mqprio_table(void **state)
{
	struct mercury_iface_cfg cfg;
	char err[256];

	(void)state;
	assert_int_equal(band_plan(MERCURY_BACKEND_MQPRIO, 4, 3, 0, &cfg, err, sizeof(err)), 0);
	check_common(&cfg, 4, 3);
	/* band b = priority b + 1; 0 (unsteered traffic) is left to the default band */
	for (unsigned b = 0; b < 4; b++)
		assert_int_equal(cfg.skb_priority[b], b + 1);
	assert_int_equal(band_plan(MERCURY_BACKEND_MQPRIO, 15, 14, 0, &cfg, err, sizeof(err)), 0);
	for (unsigned b = 0; b < 15; b++) {
		assert_int_not_equal(cfg.skb_priority[b] & 15, 0);
		assert_true(cfg.skb_priority[b] < 16);
	}
	assert_int_equal(band_plan_fit_bands(MERCURY_BACKEND_MQPRIO, 8, 4), 4);
	assert_int_equal(band_plan_fit_bands(MERCURY_BACKEND_MQPRIO, 8, 16), 8);
	assert_int_equal(band_plan_fit_bands(MERCURY_BACKEND_PRIO, 8, 1), 8);
}

static void test_level_clamp(void **state)
{
	struct mercury_iface_cfg cfg;
	char err[256];

	(void)state;
	memset(&cfg, 0xa5, sizeof(cfg)); /* everything must be overwritten */
	assert_int_equal(band_plan(MERCURY_BACKEND_PRIO, 2, 0, 0, &cfg, err, sizeof(err)), 0);
	assert_int_equal(cfg.band_of_level[0], 0);
	for (unsigned l = 1; l < MERCURY_MAX_LEVELS; l++)
		assert_int_equal(cfg.band_of_level[l], 1);
	check_common(&cfg, 2, 0);
	assert_int_equal(band_plan(MERCURY_BACKEND_PRIO, 16, 5, 0, &cfg, err, sizeof(err)), 0);
	for (unsigned l = 0; l < MERCURY_MAX_LEVELS; l++)
		assert_int_equal(cfg.band_of_level[l], l);
}

/* Job policy share: htb only, up to 8 bands, each slot's leaves named; rates by weight. */
static void test_share_plan(void **state)
{
	struct mercury_iface_cfg cfg;
	char err[256];

	(void)state;
	assert_int_equal(band_plan(MERCURY_BACKEND_HTB, 8, 7, 0, &cfg, err, sizeof(err)), 0);
	assert_int_equal(band_plan_job_policy(MERCURY_BACKEND_HTB, MERCURY_POLICY_SHARE, 0, &cfg,
					      err, sizeof(err)),
			 0);
	assert_int_equal(cfg.share_slots, MERCURY_SHARE_SLOTS);
	assert_int_equal(cfg.skb_priority_share[0][0], 0x4d450110u);
	assert_int_equal(cfg.skb_priority_share[3][7], 0x4d450417u);
	assert_int_equal(cfg.skb_priority[7], 0x4d450017u); /* the root's leaves stay */
	assert_int_equal(band_plan_job_policy(MERCURY_BACKEND_HTB, MERCURY_POLICY_PRIORITY, 0, &cfg,
					      err, sizeof(err)),
			 0);
	assert_int_equal(cfg.share_slots, 0);
	assert_int_equal(cfg.skb_priority_share[0][0], 0);
	assert_int_equal(band_plan(MERCURY_BACKEND_TBF, 3, 2, 0, &cfg, err, sizeof(err)), 0);
	assert_int_equal(band_plan_job_policy(MERCURY_BACKEND_TBF, MERCURY_POLICY_SHARE, 0, &cfg,
					      err, sizeof(err)),
			 -EINVAL);
	assert_non_null(strstr(err, "needs --qdisc htb"));
	assert_int_equal(band_plan(MERCURY_BACKEND_HTB, 9, 8, 0, &cfg, err, sizeof(err)), 0);
	assert_int_equal(band_plan_job_policy(MERCURY_BACKEND_HTB, MERCURY_POLICY_SHARE, 0, &cfg,
					      err, sizeof(err)),
			 -EINVAL);
}

static void test_share_rates(void **state)
{
	const uint64_t R = 25000000; /* 200 Mbit/s */
	uint32_t w21[MERCURY_SHARE_SLOTS] = {2, 1, 0, 0}, none[MERCURY_SHARE_SLOTS] = {0};
	uint64_t r[MERCURY_SHARE_SLOTS], sum = 0, leaves;
	uint32_t q[MERCURY_SHARE_SLOTS];

	(void)state;
	leaves = 8 * htb_leaf_rate(R, 8, MERCURY_POLICY_SHARE);
	assert_true(leaves <= R / 64);
	assert_int_equal(htb_leaf_rate(R, 8, MERCURY_POLICY_PRIORITY), R / 100); /* 1 % of R */
	htb_share_rates(R, 8, w21, r);
	for (int s = 0; s < MERCURY_SHARE_SLOTS; s++)
		sum += r[s];
	assert_true(sum + leaves <= R);
	assert_true(r[0] >= 2 * r[1] - 1 && r[0] <= 2 * r[1] + 1);
	assert_true(r[0] + r[1] >= R - R / 64 - 2 * 1250);
	assert_int_equal(r[2], 1250);
	htb_share_rates(R, 8, none, r);
	assert_int_equal(r[0], r[3]);
	htb_share_quanta(w21, 60000, q);
	assert_int_equal(q[0], 60000);
	assert_int_equal(q[1], 30000);
	assert_int_equal(q[2], 60000);
	w21[1] = 1000; /* a tiny weight beside a huge one: at least a twentieth */
	w21[0] = 1;
	htb_share_quanta(w21, 60000, q);
	assert_int_equal(q[0], 3000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names_round_trip), cmocka_unit_test(test_name_parsing),
	    cmocka_unit_test(test_band_counts),	     cmocka_unit_test(test_limits_rejected),
	    cmocka_unit_test(test_prio_ets_tables),  cmocka_unit_test(test_htb_table),
	    cmocka_unit_test(test_htb_nested_table), cmocka_unit_test(test_tbf_table),
	    cmocka_unit_test(test_mqprio_table),     cmocka_unit_test(test_level_clamp),
	    cmocka_unit_test(test_share_plan),	     cmocka_unit_test(test_share_rates),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
