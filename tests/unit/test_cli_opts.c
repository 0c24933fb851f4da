// SPDX-License-Identifier: BSD-2-Clause
/* The checked number parsers every command line uses (common/cli_opts.h): whole strings
 * only, ranges enforced, nothing written on failure. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "cli_opts.h"

static void test_long(void **state)
{
	long v = 42;

	(void)state;
	assert_int_equal(cli_parse_long("16", 1, 16, &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(cli_parse_long("0x10", 0, 100, &v), 0);
	assert_int_equal(v, 16);
	assert_int_equal(cli_parse_long("-1", -1, 15, &v), 0);
	assert_int_equal(v, -1);
	v = 42;
	assert_int_equal(cli_parse_long("abc", 0, 100, &v), -EINVAL);
	assert_int_equal(cli_parse_long("", 0, 100, &v), -EINVAL);
	assert_int_equal(cli_parse_long("12x", 0, 100, &v), -EINVAL);
	assert_int_equal(cli_parse_long(" 12", 0, 100, &v), -EINVAL);
	assert_int_equal(cli_parse_long("17", 1, 16, &v), -ERANGE);
	assert_int_equal(cli_parse_long("0", 1, 16, &v), -ERANGE);
	assert_int_equal(cli_parse_long("99999999999999999999999", 0, 100, &v), -ERANGE);
	assert_int_equal(v, 42);
}

static void test_u64(void **state)
{
	uint64_t v = 42;

	(void)state;
	assert_int_equal(cli_parse_u64("18446744073709551615", 0, UINT64_MAX, &v), 0);
	assert_true(v == UINT64_MAX);
	assert_int_equal(cli_parse_u64("+5", 0, 10, &v), 0);
	assert_true(v == 5);
	v = 42;
	assert_int_equal(cli_parse_u64("-1", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(cli_parse_u64(" -1", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(cli_parse_u64("18446744073709551616", 0, UINT64_MAX, &v), -ERANGE);
	assert_int_equal(cli_parse_u64("1e6", 0, UINT64_MAX, &v), -EINVAL);
	assert_int_equal(cli_parse_u64("0", 1, 10, &v), -ERANGE);
	assert_true(v == 42);
}

static void test_double(void **state)
{
	double v = 42;

	(void)state;
	assert_int_equal(cli_parse_double("1.5625", 0, 10, &v), 0);
	assert_true(v == 1.5625);
	assert_int_equal(cli_parse_double("1e3", 0, 1e6, &v), 0);
	assert_true(v == 1000);
	v = 42;
	assert_int_equal(cli_parse_double("nan", 0, 10, &v), -ERANGE);
	assert_int_equal(cli_parse_double("inf", 0, 1e300, &v), -ERANGE);
	assert_int_equal(cli_parse_double("1.5s", 0, 10, &v), -EINVAL);
	assert_int_equal(cli_parse_double("-0.5", 0, 10, &v), -ERANGE);
	assert_int_equal(cli_parse_double("", 0, 10, &v), -EINVAL);
	assert_true(v == 42);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_long),
	    cmocka_unit_test(test_u64),
	    cmocka_unit_test(test_double),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
