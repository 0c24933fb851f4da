// SPDX-License-Identifier: BSD-2-Clause
/* The guaranteed rate of an htb band and the time bound of a level rise it gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tc/qdisc.h"
#include "tc/rise_bound.h"

#define MBIT 125000ull /* bytes/s */

static void test_band_rate(void **state)
{
	(void)state;
	/* 1 % of R, at least 1 Mbit/s */
	assert_int_equal(qdisc_htb_band_rate(200 * MBIT, 8), 2 * MBIT);
	assert_int_equal(qdisc_htb_band_rate(10000 * MBIT, 8), 100 * MBIT);
	assert_int_equal(qdisc_htb_band_rate(50 * MBIT, 8), 1 * MBIT);
	/* all bands together below half of R */
	assert_int_equal(qdisc_htb_band_rate(8 * MBIT, 8), MBIT / 2);
	assert_int_equal(qdisc_htb_band_rate(8 * MBIT, 16), MBIT / 4);
	assert_true(qdisc_htb_band_rate(1250, 1) <= 625);
	assert_int_equal(qdisc_htb_band_rate(100 * MBIT, 0), MBIT); /* no division by zero */
}

static void test_bound(void **state)
{
	(void)state;
	/* 128 KiB + one GSO packet (200704 B) at 2 Mbit/s: 0.80 s, plus the guard's 4 ms */
	assert_int_equal(rise_bound_us(4000, 131072, 2 * MBIT), 4000 + 802816);
	assert_int_equal(rise_bound_us(0, 131072, 3 * MBIT), 535211); /* rounded up */
	/* never less than two packets below TCP */
	assert_int_equal(rise_bound_us(0, 1000, MBIT), rise_bound_us(0, RISE_GSO_PACKET, MBIT));
	/* the default 4 MiB at 1 Mbit/s: over 30 s; at 100 Mbit/s (10 Gbit/s link): under 0.4 s */
	assert_true(rise_bound_us(4000, 4u << 20, MBIT) > 30000000);
	assert_true(rise_bound_us(4000, 4u << 20, 100 * MBIT) < 400000);
	assert_int_equal(rise_bound_us(4000, 131072, 0), UINT64_MAX);
}

static void test_tsq_for(void **state)
{
	uint64_t l;

	(void)state;
	l = rise_tsq_for(4000, 1000000, 2 * MBIT);
	assert_true(l > 0);
	assert_true(rise_bound_us(4000, l, 2 * MBIT) <= 1000000);
	assert_true(rise_bound_us(4000, l + 1000, 2 * MBIT) > 1000000);
	/* 1 Mbit/s cannot drain two 64 KiB packets in 1 s */
	assert_int_equal(rise_tsq_for(4000, 1000000, MBIT), 0);
	assert_int_equal(rise_tsq_for(4000, 3000, 100 * MBIT), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_band_rate),
	    cmocka_unit_test(test_bound),
	    cmocka_unit_test(test_tsq_for),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
