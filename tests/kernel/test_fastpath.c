// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tag fast path (bpf/tag_fastpath.bpf.c) on this kernel, attached by mercuryd's own code
 * to a cgroup made for the test, with jobs declared through the event service's handler
 * (root): a tag is one setsockopt() and lands where the classifier reads it; each refusal has
 * the service's code and leaves the table untouched; other options pass through; a process
 * outside the cgroup gets ENOPROTOOPT (libmercury's cue to use the service); and, on a real
 * TCP pair with a stalled receiver, bytes of iteration i+1 already queued move from the
 * next-iteration band to the layer's band the moment iteration i ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <netinet/tcp.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cmocka.h>

#include "service/event_service.h"
#include "loader/fastpath.h"
#include "job_level.h"
#include "loader/pins.h"
#include "service/tag_store.h"
#include "classifier.skel.h"
#include "../loopback.h"
#include "../tcp_pair.h"

static char pin_root[64], cgroup[PATH_MAX], home_cgroup[PATH_MAX];
static struct event_state ev;
static int globals[GM_COUNT] = {-1, -1, -1, -1};
static bool ready;
static uint64_t root_mask, user_mask;
static const struct ucred root_cred = {.pid = 1, .uid = 0, .gid = 0};
static const struct ucred user_cred = {.pid = 2, .uid = 4242, .gid = 4242};

static void hdr(struct mw_hdr *h, uint16_t type, size_t len)
{
	static uint32_t seq;

	*h = (struct mw_hdr){
	    .len = (uint32_t)len, .version = MW_VERSION, .type = type, .seq = ++seq};
}

static int declare(const struct ucred *cred, uint64_t *mask, uint32_t job, uint32_t layers)
{
	struct mw_job_declare f = {.job = job, .n_layers = layers, .weight = 1};
	struct mw_reply reply;

	hdr(&f.h, MW_JOB_DECLARE, sizeof(f));
	event_handle(&ev, cred->uid + 1, cred, mask, &f, sizeof(f), false, NULL, 0, &reply);
	return reply.status;
}

static int iteration(uint16_t type, uint32_t job, uint64_t it)
{
	struct mw_iter f = {.job = job, .iteration = it};
	struct mw_reply reply;

	hdr(&f.h, type, sizeof(f));
	event_handle(&ev, 1, &root_cred, &root_mask, &f, sizeof(f), false, NULL, 0, &reply);
	return reply.status;
}

/* One fast-path tag: -errno or 0. */
static int fast(int fd, uint32_t job, uint64_t offset, const struct mercury_fast_tensor *t,
		unsigned n, socklen_t size)
{
	struct mercury_fast_tag ft = {.job = job, .count = n, .offset = offset};

	memcpy(ft.t, t, (n < MERCURY_FAST_BATCH ? n : MERCURY_FAST_BATCH) * sizeof(t[0]));
	return setsockopt(fd, MERCURY_SOL, MERCURY_SO_TAG, &ft, size) ? -errno : 0;
}

static int fast1(int fd, uint32_t job, uint64_t offset, uint32_t layer, uint64_t it, uint64_t len)
{
	struct mercury_fast_tensor t = {.len = len, .layer = layer, .iteration = it};

	return fast(fd, job, offset, &t, 1, MERCURY_FAST_TAG_SIZE(1));
}

static struct mercury_sock_tags tags_of(int fd)
{
	struct mercury_sock_tags t;

	assert_int_equal(tag_store_get(globals[GM_SOCK_TAGS], fd, &t), 0);
	return t;
}

static int write_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC), r = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, text, strlen(text)) < 0)
		r = -errno;
	close(fd);
	return r;
}

static void join_cgroup(const char *dir)
{
	char path[PATH_MAX + 16], pid[32];

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	assert_int_equal(write_file(path, pid), 0);
}

/* The cgroup v2 directory this process is in now ("0::/path" in /proc/self/cgroup). */
static int current_cgroup(const char *mount, char *out, size_t len)
{
	char line[PATH_MAX];
	FILE *f = fopen("/proc/self/cgroup", "r");
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "0::", 3) == 0) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(out, len, "%s%s", mount, line + 3);
			r = 0;
		}
	}
	fclose(f);
	return r;
}

static int setup(void **state)
{
	char err[512], mount[PATH_MAX];

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "test_fastpath: needs root; skipping\n");
		return 0;
	}
	if (fastpath_cgroup2_root(mount, sizeof(mount)) ||
	    current_cgroup(mount, home_cgroup, sizeof(home_cgroup))) {
		fprintf(stderr, "test_fastpath: no cgroup v2 hierarchy; skipping\n");
		return 0;
	}
	snprintf(pin_root, sizeof(pin_root), "/sys/fs/bpf/mqfp%d", (int)getpid());
	snprintf(cgroup, sizeof(cgroup), "%s/mqfp%d", mount, (int)getpid());
	if (mkdir(cgroup, 0755)) {
		fprintf(stderr, "test_fastpath: mkdir %s: %s; skipping\n", cgroup, strerror(errno));
		return 0;
	}
	if (pins_prepare(pin_root, err, sizeof(err)) ||
	    pins_global_maps(pin_root, globals, err, sizeof(err)) ||
	    fastpath_attach(pin_root, cgroup, err, sizeof(err))) {
		fprintf(stderr, "test_fastpath: %s\n", err);
		return -1;
	}
	memset(&ev, 0, sizeof(ev));
	ev.tags_fd = globals[GM_SOCK_TAGS];
	ev.stats_fd = globals[GM_SOCK_STATS];
	ev.jobs_fd = globals[GM_JOBS];
	ev.job_ids_fd = globals[GM_JOB_IDS];
	policy_init(&ev.policy, 8);
	join_cgroup(cgroup);
	ready = true;
	return 0;
}

static int teardown(void **state)
{
	char err[512], path[PATH_MAX];

	(void)state;
	if (home_cgroup[0] && cgroup[0]) {
		char procs[PATH_MAX + 16], pid[32];

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", home_cgroup);
		snprintf(pid, sizeof(pid), "%d", (int)getpid());
		write_file(procs, pid);
	}
	if (pin_root[0]) {
		fastpath_detach(pin_root, err, sizeof(err));
		pins_close_globals(globals);
		for (int i = 0; i < GM_COUNT; i++) {
			snprintf(path, sizeof(path), "%s/%s", pin_root, global_maps[i].name);
			unlink(path);
		}
		rmdir(pin_root);
	}
	if (cgroup[0])
		rmdir(cgroup);
	return 0;
}

#define NEED_READY()                                                                               \
	do {                                                                                       \
		if (!ready)                                                                        \
			skip();                                                                    \
	} while (0)

static void test_tag_lands_in_the_table(void **state)
{
	struct mercury_fast_tensor two[2] = {{.len = 100, .layer = 2, .iteration = 3},
					     {.len = 50, .layer = 8, .dir = 1, .iteration = 3}};
	struct mercury_sock_tags t;
	uint64_t next, acked;
	int a, b;

	(void)state;
	NEED_READY();
	assert_int_equal(declare(&root_cred, &root_mask, 1, 8), 0);
	tcp_pair(&a, &b);
	assert_int_equal(send(a, "hello", 5, 0), 5);
	usleep(20000);
	assert_int_equal(sock_stream_position(a, &next, &acked), 0);
	assert_int_equal(fast1(a, 1, MERCURY_OFFSET_NEXT, 1, 3, 1000), 0);
	t = tags_of(a);
	assert_int_equal(t.count, 1);
	assert_int_equal(t.ranges[0].start, next); /* the socket's next write, as the service */
	assert_int_equal(t.ranges[0].end, next + 1000);
	assert_int_equal(t.ranges[0].layer, 1);
	assert_int_equal(t.ranges[0].iteration, 3);
	assert_int_equal(t.ranges[0].job, 1 + 0); /* the job's slot + 1 */
	assert_true(t.owner & MERCURY_OWNER_FAST);
	assert_int_equal(t.owner & ~MERCURY_OWNER_FAST, (uint64_t)getpid());
	/* Tagging ahead continues after the last tag; a batch is back to back. */
	assert_int_equal(fast(a, 1, MERCURY_OFFSET_NEXT, two, 2, MERCURY_FAST_TAG_SIZE(2)), 0);
	t = tags_of(a);
	assert_int_equal(t.count, 3);
	assert_int_equal(t.ranges[1].start, next + 1000);
	assert_int_equal(t.ranges[2].start, next + 1100);
	assert_int_equal(t.ranges[2].end, next + 1150);
	assert_int_equal(t.ranges[2].dir, 1);
	/* The same layer and iteration continued: one range. */
	assert_int_equal(fast1(a, 1, MERCURY_OFFSET_NEXT, 8, 3, 10), -0);
	t = tags_of(a);
	assert_int_equal(t.count, 4); /* dir differs from the last range: a new one */
	/* An explicit offset with a gap. */
	assert_int_equal(fast1(a, 1, next + 5000, 1, 3, 10), 0);
	assert_int_equal(tags_of(a).ranges[4].start, next + 5000);
	close(a);
	close(b);
}

static void test_refusals_have_the_service_codes(void **state)
{
	struct mercury_fast_tensor bad2[2] = {{.len = 10, .layer = 1}, {.len = 10, .layer = 9}};
	struct mercury_sock_tags before;
	int a, b, udp = socket(AF_INET, SOCK_DGRAM, 0),
		  unconnected = socket(AF_INET, SOCK_STREAM, 0);
	struct mercury_fast_tag ft = {.job = 2, .count = 1, .offset = MERCURY_OFFSET_NEXT};

	(void)state;
	NEED_READY();
	assert_int_equal(declare(&root_cred, &root_mask, 2, 8), 0);
	assert_int_equal(declare(&user_cred, &user_mask, 55, 8), 0);
	tcp_pair(&a, &b);
	assert_int_equal(fast1(a, 2, MERCURY_OFFSET_NEXT, 1, 0, 100), 0);
	before = tags_of(a);
	assert_int_equal(fast1(a, 77, MERCURY_OFFSET_NEXT, 1, 0, 10), -ESRCH);
	assert_int_equal(fast1(a, 55, MERCURY_OFFSET_NEXT, 1, 0, 10), -EPERM); /* uid 4242's */
	assert_int_equal(fast1(a, 2, MERCURY_OFFSET_NEXT, 0, 0, 10), -ERANGE);
	assert_int_equal(fast1(a, 2, MERCURY_OFFSET_NEXT, 9, 0, 10), -ERANGE);
	assert_int_equal(fast1(a, 2, before.ranges[0].start, 1, 0, 10), -EEXIST); /* overlap */
	assert_int_equal(fast1(a, 2, 0, 1, 0, 10), -EEXIST);			  /* before */
	assert_int_equal(fast1(a, 2, MERCURY_OFFSET_NEXT, 1, 0, 0), -EINVAL);	  /* empty */
	/* All or nothing: the second tensor's layer is outside the job. */
	assert_int_equal(fast(a, 2, MERCURY_OFFSET_NEXT, bad2, 2, MERCURY_FAST_TAG_SIZE(2)),
			 -ERANGE);
	/* Malformed options. */
	ft.t[0] = (struct mercury_fast_tensor){.len = 10, .layer = 1};
	assert_int_equal(setsockopt(a, MERCURY_SOL, MERCURY_SO_TAG, &ft, 8) ? -errno : 0, -EINVAL);
	assert_int_equal(
	    setsockopt(a, MERCURY_SOL, MERCURY_SO_TAG, &ft, MERCURY_FAST_TAG_SIZE(2)) ? -errno : 0,
	    -EINVAL); /* size says 2 tensors, count 1 */
	ft.count = 0;
	assert_int_equal(setsockopt(a, MERCURY_SOL, MERCURY_SO_TAG, &ft, 16) ? -errno : 0, -EINVAL);
	assert_int_equal(setsockopt(a, MERCURY_SOL, 99, &ft, 16) ? -errno : 0, -EOPNOTSUPP);
	assert_int_equal(tags_of(a).generation, before.generation); /* nothing written */
	assert_int_equal(tags_of(a).count, before.count);
	/* Sockets that cannot be tagged. */
	assert_int_equal(fast1(udp, 2, MERCURY_OFFSET_NEXT, 1, 0, 10), -EPROTOTYPE);
	assert_int_equal(fast1(unconnected, 2, MERCURY_OFFSET_NEXT, 1, 0, 10), -ENOTCONN);
	/* A full table: 32 ranges that do not merge, far ahead of the acknowledged bytes. */
	for (unsigned i = 1; i < MERCURY_RANGES_PER_SOCK; i++)
		assert_int_equal(fast1(a, 2, (1ull << 40) + i * 1000, 1 + i % 2, 0, 10), 0);
	assert_int_equal(tags_of(a).count, MERCURY_RANGES_PER_SOCK);
	assert_int_equal(fast1(a, 2, (1ull << 41), 1, 0, 10), -ENOSPC);
	event_client_gone(&ev, user_mask);
	user_mask = 0;
	close(udp);
	close(unconnected);
	close(a);
	close(b);
}

static void test_other_options_pass_through(void **state)
{
	int a, b, on = 1, v = 0, sz = 65536;
	socklen_t len = sizeof(v);

	(void)state;
	NEED_READY();
	tcp_pair(&a, &b);
	assert_int_equal(setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on)), 0);
	assert_int_equal(getsockopt(a, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
	assert_int_equal(v, 1);
	assert_int_equal(setsockopt(a, SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz)), 0);
	/* An unknown level still gets the kernel's own answer. */
	assert_int_equal(setsockopt(a, 0x1234, 1, &on, sizeof(on)) ? errno : 0, ENOPROTOOPT);
	close(a);
	close(b);
}

/* A socket made by a process outside the cgroup (the kernel ties a socket to the cgroup of
 * its creator): the program does not run for it. */
static void test_outside_the_cgroup_falls_back(void **state)
{
	int status;
	pid_t pid;

	(void)state;
	NEED_READY();
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		char procs[PATH_MAX + 16], self[32];
		struct mercury_fast_tag ft = {.job = 1,
					      .count = 1,
					      .offset = MERCURY_OFFSET_NEXT,
					      .t = {{.len = 10, .layer = 1}}};

		int a, b;

		snprintf(procs, sizeof(procs), "%s/cgroup.procs", home_cgroup);
		snprintf(self, sizeof(self), "%d", (int)getpid());
		if (write_file(procs, self))
			_exit(2);
		tcp_pair(&a, &b);
		_exit(setsockopt(a, MERCURY_SOL, MERCURY_SO_TAG, &ft, MERCURY_FAST_TAG_SIZE(1)) &&
			      errno == ENOPROTOOPT
			  ? 0
			  : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* Sends until n bytes are queued or sent (non-blocking, bounded). */
static size_t fill(int fd, size_t n)
{
	static char buf[65536];
	size_t sent = 0;
	time_t deadline = time(NULL) + 5;

	while (sent < n && time(NULL) <= deadline) {
		ssize_t w =
		    send(fd, buf, n - sent < sizeof(buf) ? n - sent : sizeof(buf), MSG_DONTWAIT);

		if (w > 0)
			sent += (size_t)w;
		else if (errno == EAGAIN)
			break;
	}
	return sent;
}

static void drain(int fd, size_t n)
{
	static char buf[65536];
	size_t got = 0;
	time_t deadline = time(NULL) + 10;

	while (got < n) {
		ssize_t r = recv(fd, buf, sizeof(buf), 0);

		if (r <= 0 || time(NULL) > deadline)
			fail_msg("only %zu of %zu bytes arrived", got, n);
		got += (size_t)r;
	}
}

/* Last: it moves the process into a network namespace of its own. */
static void test_queued_bytes_move_up_when_the_iteration_ends(void **state)
{
	enum { BYTES = 4 << 20 };
	DECLARE_LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = 1, .attach_point = BPF_TC_EGRESS);
	DECLARE_LIBBPF_OPTS(bpf_tc_opts, tc, .handle = 1, .priority = 1);
	struct mercury_iface_cfg cfg = {.nbands = 16, .default_band = 15};
	struct mercury_sock_stats s1, s2;
	struct classifier_bpf *prod;
	char perr[512];
	uint32_t zero = 0;
	int a, b, small = 32768;
	size_t queued;

	(void)state;
	NEED_READY();
	if (unshare(CLONE_NEWNET)) {
		print_message("unshare(CLONE_NEWNET): %s; skipping\n", strerror(errno));
		skip();
	}
	loopback_up();
	for (unsigned l = 0; l < MERCURY_MAX_LEVELS; l++)
		cfg.band_of_level[l] = l;
	for (unsigned b = 0; b < MERCURY_MAX_BANDS; b++)
		cfg.skb_priority[b] = 0x10000 + b;
	prod = classifier_bpf__open();
	assert_non_null(prod);
	assert_int_equal(pins_use_globals(prod->obj, pin_root, perr, sizeof(perr)), 0);
	assert_int_equal(classifier_bpf__load(prod), 0);
	assert_int_equal(bpf_map_update_elem(bpf_map__fd(prod->maps.cfg), &zero, &cfg, 0), 0);
	assert_int_equal(bpf_tc_hook_create(&hook), 0);
	tc.prog_fd = bpf_program__fd(prod->progs.mercury_egress);
	assert_int_equal(bpf_tc_attach(&hook, &tc), 0);

	assert_int_equal(declare(&root_cred, &root_mask, 3, 8), 0);
	assert_int_equal(iteration(MW_ITER_BEGIN, 3, 5), 0);
	tcp_pair(&a, &b);
	assert_int_equal(setsockopt(b, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
	/* Iteration 6's layer 1, written while 5 is open: the next-iteration band (14). */
	assert_int_equal(fast1(a, 3, MERCURY_OFFSET_NEXT, 1, 6, BYTES), 0);
	queued = fill(a, BYTES); /* the receiver reads nothing: most of it stays queued */
	usleep(100000);
	assert_int_equal(bpf_map_lookup_elem(globals[GM_SOCK_STATS], &a, &s1), 0);
	assert_true(s1.bytes[14] > 0);
	assert_int_equal(s1.bytes[0], 0);
	assert_true(queued > s1.bytes[14]); /* bytes still in the socket */

	assert_int_equal(iteration(MW_ITER_END, 3, 5), 0); /* 6 is now the oldest open */
	drain(b, queued);
	assert_int_equal(bpf_map_lookup_elem(globals[GM_SOCK_STATS], &a, &s2), 0);
	print_message("before the end: band 14 %llu bytes; after: band 0 %llu, band 14 %llu\n",
		      (unsigned long long)s1.bytes[14], (unsigned long long)s2.bytes[0],
		      (unsigned long long)(s2.bytes[14] - s1.bytes[14]));
	assert_true(s2.bytes[0] >= queued - s1.bytes[14] - 65536); /* the rest went first */
	assert_true(s2.bytes[14] - s1.bytes[14] < 65536);	   /* at most a segment in flight */
	close(a);
	close(b);
	bpf_tc_hook_destroy(&hook);
	classifier_bpf__destroy(prod);
}

/* Detach takes the program off the cgroup at once: the option is the kernel's again. */
static void test_detach_removes_the_program(void **state)
{
	char err[512];
	int a, b;

	(void)state;
	NEED_READY();
	tcp_pair(&a, &b);
	assert_int_equal(fast1(a, 1, MERCURY_OFFSET_NEXT, 1, 0, 10), 0);
	assert_int_equal(fastpath_detach(pin_root, err, sizeof(err)), 0);
	assert_int_equal(fast1(a, 1, MERCURY_OFFSET_NEXT, 1, 0, 10), -ENOPROTOOPT);
	close(a);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tag_lands_in_the_table),
	    cmocka_unit_test(test_refusals_have_the_service_codes),
	    cmocka_unit_test(test_other_options_pass_through),
	    cmocka_unit_test(test_outside_the_cgroup_falls_back),
	    cmocka_unit_test(test_queued_bytes_move_up_when_the_iteration_ends),
	    cmocka_unit_test(test_detach_removes_the_program),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
