// SPDX-License-Identifier: BSD-2-Clause
/* Argument parsing of attach and tag: accepted forms, and the message for each bad one. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "cli/attach_args.h"

#define ARGV(...)                                                                                  \
	(char *[])                                                                                 \
	{                                                                                          \
		__VA_ARGS__, NULL                                                                  \
	}
#define ARGC(v) ((int)(sizeof(v) / sizeof(char *)) - 1)

static int parse_attach(char **argv, int argc, struct attach_args *a, char *err)
{
	return attach_args_parse(argc, argv, a, err, 256);
}

static void test_rates(void **state)
{
	uint64_t r;

	(void)state;
	assert_int_equal(parse_rate("200mbit", &r), 0);
	assert_int_equal(r, 25000000);
	assert_int_equal(parse_rate("10Gbit", &r), 0);
	assert_int_equal(r, 1250000000);
	assert_int_equal(parse_rate("125mbps", &r), 0); /* bytes */
	assert_int_equal(r, 125000000);
	assert_int_equal(parse_rate("8000", &r), 0); /* bare: bit/s */
	assert_int_equal(r, 1000);
	assert_int_equal(parse_rate("1.5gbit", &r), 0);
	assert_int_equal(r, 187500000);
	assert_int_equal(parse_rate("fast", &r), -EINVAL);
	assert_int_equal(parse_rate("-5mbit", &r), -EINVAL);
	assert_int_equal(parse_rate("0", &r), -EINVAL);
	assert_int_equal(parse_rate("5 mbit", &r), -EINVAL);
	assert_int_equal(parse_rate("", &r), -EINVAL);
}

static void test_attach_full(void **state)
{
	char **v = ARGV("attach", "eth0", "--qdisc", "htb", "--bands", "4", "--rate", "1gbit",
			"--default-band", "2", "--hook", "clsact", "--force");
	struct attach_args a;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_attach(v, 13, &a, err), 0);
	assert_string_equal(a.iface, "eth0");
	assert_int_equal(a.backend, MERCURY_BACKEND_HTB);
	assert_int_equal(a.bands, 4);
	assert_int_equal(a.rate_bps, 125000000);
	assert_int_equal(a.default_band, 2);
	assert_int_equal(a.hook, MERCURY_HOOK_CLSACT);
	assert_true(a.force);
}

static void test_attach_from(void **state)
{
	struct attach_args a;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_attach(ARGV("attach", "--from=/etc/mercury/interfaces"), 2, &a, err),
			 0);
	assert_string_equal(a.from, "/etc/mercury/interfaces");
	assert_null(a.iface);
	assert_int_equal(parse_attach(ARGV("attach", "--from", "x"), 3, &a, err), 0);
	assert_string_equal(a.from, "x");
}

static void test_attach_defaults(void **state)
{
	char **v = ARGV("attach", "veth0");
	struct attach_args a;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_attach(v, 2, &a, err), 0);
	assert_int_equal(a.backend, MERCURY_BACKEND_NONE); /* auto */
	assert_int_equal(a.bands, 0);
	assert_int_equal(a.default_band, -1);
	assert_int_equal(a.hook, MERCURY_HOOK_NONE);
	assert_int_equal(a.job_policy, -1); /* the backend's default */
	assert_false(a.force);
	v = ARGV("attach", "veth0", "--job-policy", "priority");
	assert_int_equal(parse_attach(v, 4, &a, err), 0);
	assert_int_equal(a.job_policy, MERCURY_POLICY_PRIORITY);
	v = ARGV("attach", "veth0", "--job-policy", "share");
	assert_int_equal(parse_attach(v, 4, &a, err), 0);
	assert_int_equal(a.job_policy, MERCURY_POLICY_SHARE);
	assert_int_equal(a.control, -1); /* not given: first */
	v = ARGV("attach", "veth0", "--control", "default");
	assert_int_equal(parse_attach(v, 4, &a, err), 0);
	assert_int_equal(a.control, 0);
	v = ARGV("attach", "veth0", "--control", "first");
	assert_int_equal(parse_attach(v, 4, &a, err), 0);
	assert_int_equal(a.control, 1);
}

static void expect_attach_error(char **argv, int argc, const char *needle)
{
	struct attach_args a;
	char err[256] = "";

	assert_int_equal(parse_attach(argv, argc, &a, err), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' lacks '%s'", err, needle);
}

static void test_attach_errors(void **state)
{
	(void)state;
	expect_attach_error(ARGV("attach"), 1, "needs an interface");
	expect_attach_error(ARGV("attach", "a", "b"), 3, "extra 'b'");
	expect_attach_error(ARGV("attach", "a", "--qdisc", "fq"), 4, "unknown qdisc 'fq'");
	expect_attach_error(ARGV("attach", "a", "--bands", "1"), 4, "give 2 to 16");
	expect_attach_error(ARGV("attach", "a", "--bands", "17"), 4, "give 2 to 16");
	expect_attach_error(ARGV("attach", "a", "--bands", "4x"), 4, "give 2 to 16");
	expect_attach_error(ARGV("attach", "a", "--rate", "x"), 4, "--rate 'x'");
	expect_attach_error(ARGV("attach", "a", "--bands", "4", "--default-band", "4"), 6,
			    "not below --bands 4");
	expect_attach_error(ARGV("attach", "a", "--hook", "xdp"), 4, "unknown hook 'xdp'");
	expect_attach_error(ARGV("attach", "a", "--rate"), 3, "needs a value");
	expect_attach_error(ARGV("attach", "a", "--nope"), 3, "unknown option '--nope'");
	expect_attach_error(ARGV("attach", "--from", "f", "a"), 4, "--from FILE takes no");
	expect_attach_error(ARGV("attach", "--from", "f", "--force"), 4, "--from FILE takes no");
	expect_attach_error(ARGV("attach", "a", "--job-policy", "fair"), 4, "--job-policy");
	expect_attach_error(ARGV("attach", "a", "--control", "last"), 4, "--control");
}

/* --dscp-guard: on (the default bound), off, a bound in ms or us, 0 for none; errors. */
static void test_attach_dscp_guard(void **state)
{
	static const char *const bad[] = {"", "x", "5", "5s", "-1ms", "ms", "5 ms", "4294968ms"};
	struct dscp_guard_opt g;
	struct attach_args a;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_attach(ARGV("attach", "eth0", "--dscp", "default"), 4, &a, err), 0);
	assert_false(a.dscp_guard.given);
	assert_int_equal(
	    parse_attach(ARGV("attach", "eth0", "--dscp-guard", "off", "--dscp", "default"), 6, &a,
			 err),
	    0);
	assert_true(a.dscp_guard.given && a.dscp_guard.off && a.dscp.on);
	assert_int_equal(dscp_guard_parse("on", &g, err, sizeof(err)), 0);
	assert_true(g.given && !g.off && g.bound_us == MERCURY_DSCP_GUARD_US);
	assert_int_equal(dscp_guard_parse("20ms", &g, err, sizeof(err)), 0);
	assert_true(!g.off && g.bound_us == 20000);
	assert_int_equal(dscp_guard_parse("750us", &g, err, sizeof(err)), 0);
	assert_int_equal(g.bound_us, 750);
	assert_int_equal(dscp_guard_parse("0", &g, err, sizeof(err)), 0);
	assert_true(!g.off && g.bound_us == 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = 0;
		if (dscp_guard_parse(bad[i], &g, err, sizeof(err)) != -EINVAL)
			fail_msg("--dscp-guard '%s' accepted", bad[i]);
		assert_non_null(strstr(err, "--dscp-guard"));
	}
}

static void test_attach_dscp(void **state)
{
	char **v = ARGV("attach", "eth0", "--dscp", "ef,AF41,26,cs0");
	uint8_t map[MERCURY_MAX_BANDS];
	struct attach_args a;
	struct dscp_opt d;
	char err[256] = "";

	(void)state;
	assert_int_equal(parse_attach(v, 4, &a, err), 0);
	assert_true(a.dscp.given && a.dscp.on && !a.dscp.std);
	assert_int_equal(a.dscp.n, 4);
	assert_int_equal(a.dscp.v[0], 46);
	assert_int_equal(a.dscp.v[1], 34);
	assert_int_equal(a.dscp.v[2], 26);
	assert_int_equal(a.dscp.v[3], 0);
	/* 6 bands: the last value repeats; bands past nbands take the last band's */
	assert_int_equal(dscp_opt_fill(&a.dscp, 6, map, err, sizeof(err)), 0);
	assert_int_equal(map[3], 0);
	assert_int_equal(map[5], 0);
	assert_int_equal(map[15], 0);
	assert_int_equal(dscp_opt_fill(&a.dscp, 3, map, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "4 values for 3 bands"));

	/* not given: off; off; default: CS5..CS2 then CS0 */
	v = ARGV("attach", "eth0");
	assert_int_equal(parse_attach(v, 2, &a, err), 0);
	assert_false(a.dscp.given || a.dscp.on);
	assert_int_equal(dscp_opt_parse("off", &d, err, sizeof(err)), 0);
	assert_true(d.given && !d.on);
	assert_int_equal(dscp_opt_fill(&d, 8, map, err, sizeof(err)), 0);
	for (int b = 0; b < MERCURY_MAX_BANDS; b++)
		assert_int_equal(map[b], 0);
	assert_int_equal(dscp_opt_parse("default", &d, err, sizeof(err)), 0);
	assert_int_equal(dscp_opt_fill(&d, 8, map, err, sizeof(err)), 0);
	assert_int_equal(map[0], 40);
	assert_int_equal(map[1], 32);
	assert_int_equal(map[2], 24);
	assert_int_equal(map[3], 16);
	assert_int_equal(map[4], 0);
	assert_int_equal(map[7], 0);
	assert_int_equal(dscp_opt_fill(&d, 3, map, err, sizeof(err)), 0);
	assert_int_equal(map[2], 24);
	assert_int_equal(map[15], 24); /* past nbands: the last band's */
	assert_string_equal(dscp_name(40), "cs5");
	assert_string_equal(dscp_name(0), "cs0");
	assert_null(dscp_name(7));

	/* errors */
	static const char *const bad[] = {
	    "64",  "-1",      "ef,",
	    ",ef", "ef,,cs1", "af44",
	    "",	   "x",	      "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		if (dscp_opt_parse(bad[i], &d, err, sizeof(err)) != -EINVAL)
			fail_msg("--dscp '%s' accepted", bad[i]);
		assert_non_null(strstr(err, "--dscp"));
	}
}

static void test_tag(void **state)
{
	struct tag_args t;
	char err[256] = "";

	(void)state;
	assert_int_equal(
	    tag_args_parse(8,
			   ARGV("tag", "--pid", "12", "--fd", "3", "--next", "100", "--level", "0"),
			   &t, err, sizeof(err)),
	    -EINVAL); /* argc 8 leaves "0" out: --level needs a value */
	assert_int_equal(
	    tag_args_parse(9,
			   ARGV("tag", "--pid", "12", "--fd", "3", "--next", "100", "--level", "0"),
			   &t, err, sizeof(err)),
	    0);
	assert_int_equal(t.pid, 12);
	assert_int_equal(t.fd, 3);
	assert_true(t.have_next);
	assert_int_equal(t.next, 100);
	assert_int_equal(t.level, 0);
	assert_int_equal(tag_args_parse(11,
					ARGV("tag", "--pid", "1", "--fd", "3", "--offset", "0",
					     "--len", "5", "--level", "15"),
					&t, err, sizeof(err)),
			 0);
	assert_true(t.have_offset && t.have_len);
	assert_int_equal(tag_args_parse(6, ARGV("tag", "--pid", "1", "--fd", "3", "--show"), &t,
					err, sizeof(err)),
			 0);
	assert_true(t.show);
}

static void expect_tag_error(char **argv, int argc, const char *needle)
{
	struct tag_args t;
	char err[256] = "";

	assert_int_equal(tag_args_parse(argc, argv, &t, err, sizeof(err)), -EINVAL);
	if (!strstr(err, needle))
		fail_msg("error '%s' lacks '%s'", err, needle);
}

static void test_tag_errors(void **state)
{
	(void)state;
	expect_tag_error(ARGV("tag", "--next", "5", "--level", "1"), 5, "--pid and --fd");
	expect_tag_error(ARGV("tag", "--pid", "1", "--fd", "3", "--level", "1"), 7,
			 "either --next");
	expect_tag_error(ARGV("tag", "--pid", "1", "--fd", "3", "--next", "5", "--offset", "0",
			      "--len", "3", "--level", "1"),
			 13, "either --next");
	expect_tag_error(ARGV("tag", "--pid", "1", "--fd", "3", "--offset", "0", "--level", "1"), 9,
			 "either --next");
	expect_tag_error(ARGV("tag", "--pid", "1", "--fd", "3", "--next", "0", "--level", "1"), 9,
			 "--next '0'");
	expect_tag_error(ARGV("tag", "--pid", "1", "--fd", "3", "--next", "5"), 7, "--level");
	expect_tag_error(ARGV("tag", "--pid", "1", "--fd", "3", "--next", "5", "--level", "16"), 9,
			 "--level '16'");
	expect_tag_error(ARGV("tag", "--pid", "-1", "--fd", "3"), 5, "--pid '-1'");
	expect_tag_error(ARGV("tag", "--pid", "1", "--fd", "3", "--show", "--clear"), 7,
			 "--show and --clear");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_rates),
	    cmocka_unit_test(test_attach_full),
	    cmocka_unit_test(test_attach_defaults),
	    cmocka_unit_test(test_attach_errors),
	    cmocka_unit_test(test_attach_dscp),
	    cmocka_unit_test(test_attach_dscp_guard),
	    cmocka_unit_test(test_tag),
	    cmocka_unit_test(test_tag_errors),
	    cmocka_unit_test(test_attach_from),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
