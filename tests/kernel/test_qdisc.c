// SPDX-License-Identifier: BSD-2-Clause
/*
 * Qdisc backends against the running kernel, inside a network namespace of our own with
 * two veth pairs (single queue and 4 queues). Root only; exits 77 otherwise. `ip` and `tc`
 * only set up, tear down and observe (as an independent view); the code under test talks
 * netlink through libnl. The namespace goes away at the end, on failure, on SIGINT/SIGTERM
 * and after the time limit.
 */
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tc/band_plan.h"
#include "tc/qdisc.h"
#include "tc/tc_tree.h"

#define TIME_LIMIT_S 120
#define RATE	     25000000ull /* 200 Mbit/s in bytes/s */

static char ns[32], dev1[IFNAMSIZ], dev4[IFNAMSIZ];
static int if1, if4;
static int orig_ns = -1;
static volatile sig_atomic_t ns_created;

static void remove_ns(void)
{
	char cmd[96];

	if (!ns_created)
		return;
	ns_created = 0;
	if (orig_ns >= 0)
		setns(orig_ns, CLONE_NEWNET);
	snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", ns);
	if (system(cmd) != 0)
		fprintf(stderr, "test_qdisc: could not delete netns %s\n", ns);
}

static void on_signal(int sig)
{
	remove_ns();
	_exit(sig == SIGALRM ? 124 : 128 + sig);
}

static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	return rc == 0 ? 0 : -1;
}

/* What tc says about dev's qdiscs (JSON), as an independent view of the device. */
/* Packets the device's root qdisc has sent since it was created. */
static uint64_t root_packets(const char *dev)
{
	char cmd[128], out[8192];
	const char *p;
	size_t n;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "tc -s -j qdisc show dev %s root", dev);
	f = popen(cmd, "r");
	assert_non_null(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	pclose(f);
	p = strstr(out, "\"packets\":");
	assert_non_null(p);
	return strtoull(p + strlen("\"packets\":"), NULL, 10);
}

static void tc_show(const char *dev, char *buf, size_t len)
{
	char cmd[128];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "tc -j qdisc show dev %s", dev);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (n + 1 < len) {
		size_t got = fread(buf + n, 1, len - 1 - n, p);

		if (!got)
			break;
		n += got;
	}
	buf[n] = '\0';
	pclose(p);
	assert_true(n > 0);
}

static int group_setup(void **state)
{
	char path[96];
	int fd;

	(void)state;
	snprintf(ns, sizeof(ns), "mqt%d-qdisc", getpid());
	snprintf(dev1, sizeof(dev1), "mqt%da", getpid());
	snprintf(dev4, sizeof(dev4), "mqt%dm", getpid());
	orig_ns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (orig_ns < 0 || sh("ip netns add %s", ns) < 0)
		return -1;
	ns_created = 1;
	if (sh("ip -n %s link add %s numtxqueues 1 numrxqueues 1 type veth peer name mqt%db "
	       "numtxqueues 1 numrxqueues 1",
	       ns, dev1, getpid()) < 0 ||
	    sh("ip -n %s link add %s numtxqueues 4 numrxqueues 4 type veth peer name mqt%dn "
	       "numtxqueues 4 numrxqueues 4",
	       ns, dev4, getpid()) < 0 ||
	    sh("ip -n %s link set %s up && ip -n %s link set mqt%db up", ns, dev1, ns, getpid()) <
		0 ||
	    sh("ip -n %s link set %s up && ip -n %s link set mqt%dn up", ns, dev4, ns, getpid()) <
		0)
		return -1;
	/* iproute2 keeps it under /run/netns (or /var/run/netns where that is not a link) */
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		snprintf(path, sizeof(path), "/var/run/netns/%s", ns);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0 || setns(fd, CLONE_NEWNET) < 0)
		return -1;
	close(fd);
	/* No IPv6 autoconfiguration chatter in the band counters. */
	fd = open("/proc/sys/net/ipv6/conf/all/disable_ipv6", O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) != 1)
			fprintf(stderr, "test_qdisc: IPv6 stays on\n");
		close(fd);
	}
	/* Packets to a permanent neighbour leave through the qdisc; the peer drops them. */
	if (sh("ip addr add 10.77.0.1/24 dev %s && ip neigh add 10.77.0.2 lladdr "
	       "02:00:00:00:77:02 dev %s nud permanent",
	       dev1, dev1) < 0 ||
	    sh("ip addr add 10.78.0.1/24 dev %s && ip neigh add 10.78.0.2 lladdr "
	       "02:00:00:00:78:02 dev %s nud permanent",
	       dev4, dev4) < 0)
		return -1;
	if1 = (int)if_nametoindex(dev1);
	if4 = (int)if_nametoindex(dev4);
	return if1 > 0 && if4 > 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
	(void)state;
	remove_ns();
	return 0;
}

/* Every test starts and ends with the kernel's default roots. */
static int reset_roots(void **state)
{
	(void)state;
	sh("tc qdisc del dev %s root 2>/dev/null", dev1);
	sh("tc qdisc del dev %s root 2>/dev/null", dev4);
	return 0;
}

static bool kernel_has(const char *kind)
{
	/* tc as the oracle, on the 4-queue peer so the devices under test stay untouched */
	const char *opts = strcmp(kind, "ets") == 0	 ? "bands 2 strict 2"
			   : strcmp(kind, "mqprio") == 0 ? "num_tc 2 map 0 1 queues 2@0 2@2 hw 0"
							 : "";
	int rc =
	    sh("tc qdisc add dev mqt%dn root handle 9: %s %s 2>/dev/null", getpid(), kind, opts);

	sh("tc qdisc del dev mqt%dn root 2>/dev/null", getpid());
	return rc == 0;
}

static void test_default_roots(void **state)
{
	struct qdisc_root r;
	char err[256];

	(void)state;
	assert_int_equal(qdisc_get_root(if1, &r, err, sizeof(err)), 0);
	assert_true(r.is_default);
	assert_int_equal(r.handle, 0);
	assert_string_equal(r.kind, "noqueue"); /* veth */
	assert_int_equal(r.num_tx_queues, 1);
	assert_int_equal(qdisc_get_root(if4, &r, err, sizeof(err)), 0);
	assert_true(r.is_default);
	assert_int_equal(r.num_tx_queues, 4);
	assert_int_equal(qdisc_get_root(999999, &r, err, sizeof(err)), -ENODEV);
	assert_non_null(strstr(err, "999999"));
}

static void test_htb_install_remove(void **state)
{
	struct qdisc_spec s = {.ifindex = if1,
			       .backend = MERCURY_BACKEND_HTB,
			       .nbands = 4,
			       .default_band = 3,
			       .rate_bps = RATE};
	char before[4096], after[4096], err[256], warn[256];
	struct qdisc_root r;
	bool hw = true;

	(void)state;
	tc_show(dev1, before, sizeof(before));
	assert_int_equal(qdisc_install(&s, &hw, warn, sizeof(warn), err, sizeof(err)), 0);
	assert_false(hw);
	assert_string_equal(warn, "");
	assert_int_equal(qdisc_get_root(if1, &r, err, sizeof(err)), 0);
	assert_string_equal(r.kind, "htb");
	assert_int_equal(r.handle, MERCURY_QDISC_HANDLE);
	assert_false(r.is_default);
	/* the tree as tc sees it: default leaf, parent at R, leaves by prio, pfifo each */
	assert_int_equal(
	    sh("tc qdisc show dev %s | grep -q 'qdisc htb 4d45: root .*default 0x13'", dev1), 0);
	assert_int_equal(sh("tc class show dev %s | grep -q 'class htb 4d45:1 root .*rate 200Mbit "
			    "ceil 200Mbit'",
			    dev1),
			 0);
	for (unsigned b = 0; b < 4; b++)
		assert_int_equal(sh("tc class show dev %s | grep -q 'class htb 4d45:%x parent "
				    "4d45:1 leaf [0-9a-f]*: prio %u .*ceil 200Mbit'",
				    dev1, 0x10 + b, b),
				 0);
	assert_int_equal(sh("test $(tc qdisc show dev %s | grep -c 'qdisc pfifo .* parent "
			    "4d45:1[0-3] limit 1000p') -eq 4",
			    dev1),
			 0);
	/* a leftover Mercury root is replaced, by another kind too */
	s.backend = MERCURY_BACKEND_TBF;
	s.nbands = 3;
	s.default_band = 1;
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(qdisc_get_root(if1, &r, err, sizeof(err)), 0);
	assert_string_equal(r.kind, "tbf");
	assert_int_equal(sh("tc class show dev %s | grep -q htb", dev1), -1);
	s.backend = MERCURY_BACKEND_HTB;
	s.nbands = 4;
	s.default_band = 3;
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(
	    sh("test $(tc class show dev %s | grep -c 'class htb 4d45:1[0-3] ') -eq 4", dev1), 0);

	assert_int_equal(qdisc_remove(if1, MERCURY_QDISC_HANDLE, err, sizeof(err)), 0);
	tc_show(dev1, after, sizeof(after));
	assert_string_equal(before, after);
	assert_int_equal(qdisc_remove(if1, MERCURY_QDISC_HANDLE, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, "left alone"));
}

/* 15 bands, untagged in band 9: root prios 0..6 hold bands 0..6, the leaf of prio 7 a nested
 * htb (4d46:) with bands 7..14, whose default is band 9 (its prio 2). */
static void test_htb_nested_install_remove(void **state)
{
	struct qdisc_spec s = {.ifindex = if1,
			       .backend = MERCURY_BACKEND_HTB,
			       .nbands = 15,
			       .default_band = 9,
			       .rate_bps = RATE};
	char before[4096], after[4096], err[256];

	(void)state;
	tc_show(dev1, before, sizeof(before));
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(
	    sh("tc qdisc show dev %s | grep -q 'qdisc htb 4d45: root .*default 0x17'", dev1), 0);
	assert_int_equal(sh("tc qdisc show dev %s | grep -q 'qdisc htb 4d46: parent 4d45:17 "
			    ".*default 0x12'",
			    dev1),
			 0);
	assert_int_equal(sh("test $(tc class show dev %s | grep -c 'class htb 4d45:1[0-7] parent "
			    "4d45:1 ') -eq 8",
			    dev1),
			 0);
	assert_int_equal(sh("test $(tc class show dev %s | grep -c 'class htb 4d46:1[0-7] parent "
			    "4d46:1 ') -eq 8",
			    dev1),
			 0);
	/* a pfifo under every leaf but the host */
	assert_int_equal(sh("test $(tc qdisc show dev %s | grep -c 'qdisc pfifo .* parent "
			    "4d4[56]:1[0-7] ') -eq 15",
			    dev1),
			 0);
	assert_int_equal(qdisc_remove(if1, MERCURY_QDISC_HANDLE, err, sizeof(err)), 0);
	tc_show(dev1, after, sizeof(after));
	assert_string_equal(before, after);
}

static void test_htb_needs_rate(void **state)
{
	struct qdisc_spec s = {
	    .ifindex = if1, .backend = MERCURY_BACKEND_HTB, .nbands = 8, .default_band = 7};
	char before[4096], after[4096], err[256];

	(void)state;
	tc_show(dev1, before, sizeof(before));
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "htb needs --rate"));
	/* more bands than htb can order, nested tree included */
	s.rate_bps = RATE;
	s.nbands = 16;
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), -EINVAL);
	tc_show(dev1, after, sizeof(after));
	assert_string_equal(before, after);
}

static void test_tbf_install_remove(void **state)
{
	struct qdisc_spec s = {.ifindex = if1,
			       .backend = MERCURY_BACKEND_TBF,
			       .nbands = 3,
			       .default_band = 1,
			       .rate_bps = RATE / 2};
	char before[4096], after[4096], err[256];
	struct qdisc_root r;

	(void)state;
	tc_show(dev1, before, sizeof(before));
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(qdisc_get_root(if1, &r, err, sizeof(err)), 0);
	assert_string_equal(r.kind, "tbf");
	assert_int_equal(r.handle, MERCURY_QDISC_HANDLE);
	assert_int_equal(
	    sh("tc qdisc show dev %s | grep -q 'qdisc tbf 4d45: root .*rate 100Mbit'", dev1), 0);
	assert_int_equal(
	    sh("tc qdisc show dev %s | grep -q 'qdisc pfifo_fast 4d46: parent 4d45:1 bands 3'",
	       dev1),
	    0);
	assert_int_equal(qdisc_remove(if1, 0, err, sizeof(err)), 0);
	tc_show(dev1, after, sizeof(after));
	assert_string_equal(before, after);

	s.rate_bps = 0;
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "tbf needs --rate"));
	tc_show(dev1, after, sizeof(after));
	assert_string_equal(before, after);
}

/* prio, ets, mqprio: 'not available' on a kernel without them, a working root otherwise. */
static void check_strict_backend(enum mercury_backend b, int ifindex, const char *dev,
				 const char *expect)
{
	const char *kind = backend_name(b);
	struct qdisc_spec s = {.ifindex = ifindex, .backend = b, .nbands = 4, .default_band = 3};
	char before[4096], after[4096], err[512], warn[512], want[160];
	struct qdisc_root r;
	bool hw = true;
	int rc;

	tc_show(dev, before, sizeof(before));
	rc = qdisc_install(&s, &hw, warn, sizeof(warn), err, sizeof(err));
	if (!kernel_has(kind)) {
		print_message("   %s: not in this kernel: %s\n", kind, err);
		assert_int_equal(rc, -EOPNOTSUPP);
		snprintf(want, sizeof(want),
			 "qdisc '%s' is not available in this kernel (sch_%s not built or loaded); "
			 "use --qdisc htb --rate R or load sch_%s",
			 kind, kind, kind);
		assert_string_equal(err, want);
		assert_false(hw);
	} else {
		assert_int_equal(rc, 0);
		assert_int_equal(qdisc_get_root(ifindex, &r, err, sizeof(err)), 0);
		assert_string_equal(r.kind, kind);
		assert_int_equal(r.handle, MERCURY_QDISC_HANDLE);
		if (b == MERCURY_BACKEND_MQPRIO) { /* veth cannot offload */
			assert_false(hw);
			assert_non_null(strstr(warn, "does not enforce priority"));
			assert_string_equal(err, "");
		} else {
			assert_string_equal(warn, "");
		}
		/* tc's view: 4 bands, every priority not steered by Mercury -> band 3 */
		assert_int_equal(sh("tc qdisc show dev %s | grep -Eq '%s'", dev, expect), 0);
		assert_int_equal(qdisc_remove(ifindex, 0, err, sizeof(err)), 0);
	}
	tc_show(dev, after, sizeof(after));
	assert_string_equal(before, after);
}

static void test_prio(void **state)
{
	(void)state;
	check_strict_backend(MERCURY_BACKEND_PRIO, if1, dev1,
			     "qdisc prio 4d45: root .*bands 4 priomap( 3){16}");
}

static void test_ets(void **state)
{
	(void)state;
	check_strict_backend(MERCURY_BACKEND_ETS, if1, dev1,
			     "qdisc ets 4d45: root .*bands 4 strict 4 priomap( 3){16}");
}

static void test_mqprio_multiqueue(void **state)
{
	(void)state;
	check_strict_backend(MERCURY_BACKEND_MQPRIO, if4, dev4,
			     "qdisc mqprio 4d45: root .*tc 4 map 3 0 1 2 3( 3){11}");
}

/* Sent packets of class `handle` on dev, from `tc -s class show`; -1 if not listed. */
static long long class_packets(const char *dev, const char *handle)
{
	char cmd[128], line[512], kind[32], h[32];
	long long pkts = -1, bytes;
	bool in_class = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "tc -s class show dev %s", dev);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "class %31s %31s", kind, h) == 2) {
			in_class = strcmp(h, handle) == 0;
			continue;
		}
		if (in_class && sscanf(line, " Sent %lld bytes %lld pkt", &bytes, &pkts) == 2)
			in_class = false;
	}
	pclose(p);
	return pkts;
}

static void send_udp(const char *dst, uint32_t priority, int count)
{
	struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons(9)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	assert_true(fd >= 0);
	assert_int_equal(inet_pton(AF_INET, dst, &to.sin_addr), 1);
	/* sk_priority becomes skb->priority: the same field Mercury's classifier writes */
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_PRIORITY, &priority, sizeof(priority)), 0);
	for (int i = 0; i < count; i++)
		assert_int_equal(sendto(fd, "mercury", 7, 0, (struct sockaddr *)&to, sizeof(to)),
				 7);
	close(fd);
}

/*
 * The band plan against the kernel: a packet with skb->priority = skb_priority[b] must be
 * counted in band b's class, and a packet with priority 0 (not steered) in the default band.
 */
static void steer_check(enum mercury_backend b, int ifindex, const char *dev, const char *dst)
{
	struct qdisc_spec s = {
	    .ifindex = ifindex, .backend = b, .nbands = 4, .default_band = 2, .rate_bps = RATE};
	struct mercury_iface_cfg cfg;
	char err[512], handle[32];
	long long want[4], got[4];

	if (b != MERCURY_BACKEND_HTB && !kernel_has(backend_name(b))) {
		print_message("   %s: not in this kernel, not steered\n", backend_name(b));
		return;
	}
	assert_int_equal(band_plan(b, 4, 2, 0, &cfg, err, sizeof(err)), 0);
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), 0);
	for (unsigned band = 0; band < 4; band++) {
		send_udp(dst, cfg.skb_priority[band], (int)(2 + band));
		want[band] = 2 + band + (band == 2 ? 5 : 0);
	}
	send_udp(dst, 0, 5);
	for (int tries = 0; tries < 50; tries++) { /* bounded: 50 x 20 ms */
		bool all = true;

		for (unsigned band = 0; band < 4; band++) {
			/* htb leaf minor 0x10 + b; prio/ets band and mqprio queue b: minor b + 1 */
			unsigned minor = b == MERCURY_BACKEND_HTB ? 0x10 + band : band + 1;

			snprintf(handle, sizeof(handle), "4d45:%x", minor);
			got[band] = class_packets(dev, handle);
			all = all && got[band] == want[band];
		}
		if (all)
			break;
		usleep(20000);
	}
	print_message("   %s: packets per band %lld %lld %lld %lld\n", backend_name(b), got[0],
		      got[1], got[2], got[3]);
	for (unsigned band = 0; band < 4; band++)
		assert_int_equal(got[band], want[band]);
	assert_int_equal(qdisc_remove(ifindex, 0, err, sizeof(err)), 0);
}

static void test_band_steering(void **state)
{
	(void)state;
	steer_check(MERCURY_BACKEND_HTB, if1, dev1, "10.77.0.2");
	steer_check(MERCURY_BACKEND_PRIO, if1, dev1, "10.77.0.2");
	steer_check(MERCURY_BACKEND_ETS, if1, dev1, "10.77.0.2");
	steer_check(MERCURY_BACKEND_MQPRIO, if4, dev4, "10.78.0.2");
}

static void test_mqprio_queue_count(void **state)
{
	struct qdisc_spec s = {
	    .ifindex = if1, .backend = MERCURY_BACKEND_MQPRIO, .nbands = 2, .default_band = 1};
	char before[4096], after[4096], err[256];

	(void)state;
	tc_show(dev1, before, sizeof(before));
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "has 1 tx queue"));
	assert_non_null(strstr(err, dev1));
	/* more bands than queues on the 4-queue device */
	s.ifindex = if4;
	s.nbands = 8;
	s.default_band = 7;
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), -EINVAL);
	assert_non_null(strstr(err, "--bands 4"));
	tc_show(dev1, after, sizeof(after));
	assert_string_equal(before, after);
}

static void test_foreign_root_save_restore(void **state)
{
	struct qdisc_spec s = {.ifindex = if1,
			       .backend = MERCURY_BACKEND_HTB,
			       .nbands = 8,
			       .default_band = 7,
			       .rate_bps = RATE};
	char dflt[4096], foreign[4096], now[4096], err[256];
	struct tc_tree t;
	struct qdisc_root r;

	(void)state;
	tc_show(dev1, dflt, sizeof(dflt));
	/* the kernel default root needs no saving */
	assert_int_equal(tc_tree_save(if1, &t, err, sizeof(err)), 0);
	assert_int_equal(t.count, 0);

	assert_int_equal(sh("tc qdisc add dev %s root handle 1: tbf rate 10mbit burst 32kbit "
			    "latency 400ms",
			    dev1),
			 0);
	tc_show(dev1, foreign, sizeof(foreign));
	assert_int_equal(qdisc_get_root(if1, &r, err, sizeof(err)), 0);
	assert_string_equal(r.kind, "tbf");
	assert_int_equal(r.handle, 0x10000);
	assert_false(r.is_default);

	assert_int_equal(tc_tree_save(if1, &t, err, sizeof(err)), 0);
	assert_int_equal(t.count, 1);
	assert_int_equal(tc_tree_root_handle(t.buf, t.len), 0x10000);
	assert_int_equal(tc_tree_verify(t.buf, t.len, 1, err, sizeof(err)), 0);

	/* remove refuses a root that is not Mercury's */
	assert_int_equal(qdisc_remove(if1, 0, err, sizeof(err)), -ENOENT);
	tc_show(dev1, now, sizeof(now));
	assert_string_equal(now, foreign);

	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), 0);
	assert_int_equal(qdisc_get_root(if1, &r, err, sizeof(err)), 0);
	assert_string_equal(r.kind, "htb");
	/* replay refuses to replace someone's root */
	assert_int_equal(tc_tree_replay(if1, t.buf, t.len, err, sizeof(err)), -EBUSY);
	assert_int_equal(qdisc_remove(if1, 0, err, sizeof(err)), 0);
	tc_show(dev1, now, sizeof(now));
	assert_string_equal(now, dflt);

	assert_int_equal(tc_tree_replay(if1, t.buf, t.len, err, sizeof(err)), 0);
	tc_show(dev1, now, sizeof(now));
	assert_string_equal(now, foreign);

	/* garbage is refused */
	assert_int_equal(tc_tree_replay(if1, t.buf, t.len - 1, err, sizeof(err)), -EINVAL);
	tc_tree_free(&t);
}

/* A failed install over a foreign root leaves that root exactly as it was. */
static void test_failed_install_keeps_foreign_root(void **state)
{
	struct qdisc_spec s = {.ifindex = if1,
			       .backend = MERCURY_BACKEND_TBF,
			       .nbands = 3,
			       .default_band = 1,
			       .rate_bps = 1000};
	char foreign[4096], now[4096], err[512];

	(void)state;
	assert_int_equal(sh("tc qdisc add dev %s root handle 7: tbf rate 20mbit burst 20kb "
			    "latency 50ms",
			    dev1),
			 0);
	tc_show(dev1, foreign, sizeof(foreign));
	assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), -EINVAL);
	tc_show(dev1, now, sizeof(now));
	assert_string_equal(now, foreign);
	if (!kernel_has("prio")) {
		s.backend = MERCURY_BACKEND_PRIO;
		s.nbands = 4;
		s.default_band = 3;
		assert_int_equal(qdisc_install(&s, NULL, NULL, 0, err, sizeof(err)), -EOPNOTSUPP);
		tc_show(dev1, now, sizeof(now));
		assert_string_equal(now, foreign);
	}
}

static void test_auto(void **state)
{
	char before[4096], now[4096], why[1024];
	enum mercury_backend b = MERCURY_BACKEND_MAX;
	bool strict = kernel_has("prio") || kernel_has("ets");
	int rc;

	(void)state;
	tc_show(dev1, before, sizeof(before));
	assert_int_equal(qdisc_pick_auto(if1, RATE, &b, why, sizeof(why)), 0);
	print_message("   auto with rate: %s\n", why);
	tc_show(dev1, now, sizeof(now));
	assert_string_equal(now, before);
	if (strict) {
		assert_true(b == MERCURY_BACKEND_PRIO || b == MERCURY_BACKEND_ETS);
	} else {
		assert_int_equal(b, MERCURY_BACKEND_HTB);
		assert_non_null(strstr(why, "htb at 25000000 B/s (given)"));
		assert_non_null(strstr(why, "mqprio: single tx queue"));
		assert_non_null(strstr(why, "prio: not available"));
	}

	/* without a rate only the link speed can make htb possible */
	rc = qdisc_pick_auto(if1, 0, &b, why, sizeof(why));
	print_message("   auto without rate: %s\n", why);
	if (!strict) {
		if (rc == 0) {
			assert_int_equal(b, MERCURY_BACKEND_HTB);
			assert_non_null(strstr(why, "link speed"));
		} else {
			assert_int_equal(rc, -EOPNOTSUPP);
			assert_non_null(strstr(why, "no --rate"));
		}
	}
	tc_show(dev1, now, sizeof(now));
	assert_string_equal(now, before);

	/* multiqueue: mqprio is tried (offload or not available) before the rest */
	tc_show(dev4, before, sizeof(before));
	assert_int_equal(qdisc_pick_auto(if4, RATE, &b, why, sizeof(why)), 0);
	print_message("   auto on 4 queues: %s\n", why);
	assert_non_null(strstr(why, "mqprio: "));
	assert_null(strstr(why, "single tx queue"));
	assert_int_equal(b, strict ? b : MERCURY_BACKEND_HTB);
	assert_true(b != MERCURY_BACKEND_MQPRIO); /* veth has no offload */
	tc_show(dev4, now, sizeof(now));
	assert_string_equal(now, before);

	/* a leftover Mercury root stays as it is: auto only reads the live device */
	{
		struct qdisc_spec s = {.ifindex = if1,
				       .backend = MERCURY_BACKEND_HTB,
				       .nbands = 2,
				       .default_band = 1,
				       .rate_bps = RATE};
		struct qdisc_root r;

		assert_int_equal(qdisc_install(&s, NULL, NULL, 0, why, sizeof(why)), 0);
		tc_show(dev1, before, sizeof(before));
		assert_int_equal(qdisc_pick_auto(if1, RATE, &b, why, sizeof(why)), 0);
		tc_show(dev1, now, sizeof(now));
		assert_string_equal(now, before);
		assert_int_equal(qdisc_get_root(if1, &r, why, sizeof(why)), 0);
		assert_int_equal(r.handle, MERCURY_QDISC_HANDLE);
		assert_int_equal(qdisc_remove(if1, 0, why, sizeof(why)), 0);
	}

	/* A foreign root and what it has counted survive: the backends are probed on a scratch
	 * device. (A trial on this one would replace the root, dropping its queue, and a
	 * restored copy would count from zero.) */
	assert_int_equal(sh("tc qdisc add dev %s root handle 3: tbf rate 5mbit burst 10kb "
			    "latency 20ms",
			    dev1),
			 0);
	send_udp("10.77.0.2", 0, 20);
	uint64_t sent = root_packets(dev1);

	tc_show(dev1, before, sizeof(before));
	assert_int_equal(qdisc_pick_auto(if1, RATE, &b, why, sizeof(why)), 0);
	assert_non_null(strstr(why, "scratch device"));
	tc_show(dev1, now, sizeof(now));
	assert_string_equal(now, before);
	assert_true(sent >= 20);
	assert_true(root_packets(dev1) >= sent);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_default_roots, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_htb_install_remove, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_htb_nested_install_remove, reset_roots,
					    reset_roots),
	    cmocka_unit_test_setup_teardown(test_htb_needs_rate, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_tbf_install_remove, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_prio, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_ets, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_mqprio_multiqueue, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_mqprio_queue_count, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_band_steering, reset_roots, reset_roots),
	    cmocka_unit_test_setup_teardown(test_foreign_root_save_restore, reset_roots,
					    reset_roots),
	    cmocka_unit_test_setup_teardown(test_failed_install_keeps_foreign_root, reset_roots,
					    reset_roots),
	    cmocka_unit_test_setup_teardown(test_auto, reset_roots, reset_roots),
	};
	int rc;

	if (geteuid() != 0) {
		fprintf(stderr, "test_qdisc: needs root (network namespaces); skipped\n");
		return 77;
	}
	if (system("command -v ip >/dev/null && command -v tc >/dev/null") != 0) {
		fprintf(stderr, "test_qdisc: needs ip and tc (iproute2); skipped\n");
		return 77;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGALRM, on_signal);
	alarm(TIME_LIMIT_S);
	atexit(remove_ns);
	rc = cmocka_run_group_tests(tests, group_setup, group_teardown);
	remove_ns();
	return rc;
}
