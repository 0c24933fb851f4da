// SPDX-License-Identifier: BSD-2-Clause
/*
 * The event service's frame handler against the real shared socket maps and real sockets
 * (root): tags land in sock_tags where the classifier reads them, each refusal (non-TCP,
 * unconnected, another user's socket, undeclared job, out-of-order offsets, bad layer) has
 * its own code, a refused batch leaves the map untouched, and jobs are per user.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <cmocka.h>

#include "service/event_service.h"
#include "../tcp_pair.h"
#include "loader/pins.h"
#include "service/tag_store.h"
#include "job_level.h"

static char pin_root[64];
static struct event_state ev;
static int globals[GM_COUNT] = {-1, -1, -1, -1};
static int tcp_fd = -1, peer_fd = -1;
static const struct ucred root_cred = {.pid = 1, .uid = 0, .gid = 0};
static const struct ucred user_cred = {.pid = 2, .uid = 4242, .gid = 4242};

struct tag_frame {
	struct mw_tag tag;
	struct mw_tensor t[MW_MAX_BATCH];
};

static void hdr(struct mw_hdr *h, uint16_t type, size_t len)
{
	static uint32_t seq;

	*h = (struct mw_hdr){
	    .len = (uint32_t)len, .version = MW_VERSION, .type = type, .seq = ++seq};
}

/* One frame through the handler; returns the reply's status. */
static int handle(const struct ucred *cred, uint64_t *mask, const void *frame, size_t n, int fd,
		  struct mw_reply *reply)
{
	struct mw_reply scratch;

	if (!reply)
		reply = &scratch;
	event_handle(&ev, cred->uid + 1, cred, mask, frame, n, false, &fd, fd >= 0 ? 1 : 0, reply);
	assert_int_equal(reply->h.seq, ((const struct mw_hdr *)frame)->seq);
	return reply->status;
}

static int declare(const struct ucred *cred, uint64_t *mask, uint32_t job, uint32_t layers,
		   uint32_t weight)
{
	struct mw_job_declare f = {.job = job, .n_layers = layers, .weight = weight};

	hdr(&f.h, MW_JOB_DECLARE, sizeof(f));
	return handle(cred, mask, &f, sizeof(f), -1, NULL);
}

static int iteration(const struct ucred *cred, uint16_t type, uint32_t job, uint64_t it)
{
	struct mw_iter f = {.job = job, .iteration = it};
	uint64_t mask = 0;

	hdr(&f.h, type, sizeof(f));
	return handle(cred, &mask, &f, sizeof(f), -1, NULL);
}

/* Tags n tensors of `len` bytes with the given layers on fd, from offset. */
static int tag(const struct ucred *cred, int fd, uint32_t job, uint64_t offset,
	       const uint32_t *layers, unsigned n, uint64_t len, struct mw_reply *reply)
{
	struct tag_frame f;
	size_t size = sizeof(struct mw_tag) + n * sizeof(struct mw_tensor);
	uint64_t mask = 0;

	memset(&f, 0, sizeof(f));
	hdr(&f.tag.h, MW_TAG, size);
	f.tag.job = job;
	f.tag.count = n;
	f.tag.offset = offset;
	for (unsigned i = 0; i < n; i++)
		f.t[i] = (struct mw_tensor){.len = len, .layer = layers[i], .dir = 0};
	return handle(cred, &mask, &f, size, fd, reply);
}

/* The level a range resolves to now on an interface of nbands bands, as the classifier
 * computes it: from the job state mercuryd published. -1: its job is gone. */
static int resolved_level(const struct mercury_range *r, unsigned nbands)
{
	struct mercury_job_state js;
	uint32_t slot = r->job - 1u;

	if (!r->job)
		return r->level;
	assert_int_equal(bpf_map_lookup_elem(ev.jobs_fd, &slot, &js), 0);
	if (!js.active || (uint16_t)js.gen != r->job_gen)
		return -1;
	return (int)mercury_job_level(&js, r->layer, r->iteration, nbands);
}

static struct mercury_sock_tags map_tags(int fd)
{
	struct mercury_sock_tags t;

	assert_int_equal(tag_store_get(ev.tags_fd, fd, &t), 0);
	return t;
}

static int setup(void **state)
{
	char err[256];

	(void)state;
	if (geteuid() != 0) {
		fprintf(stderr, "test_event_service: needs root (BPF maps); skipping\n");
		return 0;
	}
	snprintf(pin_root, sizeof(pin_root), "/sys/fs/bpf/mqev%d", (int)getpid());
	memset(&ev, 0, sizeof(ev));
	ev.tags_fd = ev.stats_fd = ev.jobs_fd = ev.job_ids_fd = -1;
	if (pins_prepare(pin_root, err, sizeof(err)) ||
	    pins_global_maps(pin_root, globals, err, sizeof(err))) {
		fprintf(stderr, "test_event_service: %s; skipping\n", err);
		return 0;
	}
	ev.tags_fd = globals[GM_SOCK_TAGS];
	ev.stats_fd = globals[GM_SOCK_STATS];
	ev.jobs_fd = globals[GM_JOBS];
	ev.job_ids_fd = globals[GM_JOB_IDS];
	policy_init(&ev.policy, 8);
	tcp_pair(&tcp_fd, &peer_fd);
	return 0;
}

static int teardown(void **state)
{
	char path[128];

	(void)state;
	if (tcp_fd >= 0)
		close(tcp_fd);
	if (peer_fd >= 0)
		close(peer_fd);
	if (ev.tags_fd >= 0) {
		pins_close_globals(globals);
		for (int i = 0; i < GM_COUNT; i++) {
			snprintf(path, sizeof(path), "%s/%s", pin_root, global_maps[i].name);
			unlink(path);
		}
		rmdir(pin_root);
	}
	return 0;
}

#define NEED_MAPS()                                                                                \
	do {                                                                                       \
		if (ev.tags_fd < 0)                                                                \
			skip();                                                                    \
	} while (0)

static void test_tags_reach_the_map(void **state)
{
	uint32_t l1 = 1, l8 = 8, both[2] = {2, 7};
	struct mercury_sock_tags t;
	struct mw_reply r;
	uint64_t mask = 0, next, acked;

	(void)state;
	NEED_MAPS();
	assert_int_equal(declare(&root_cred, &mask, 1, 8, 1), 0);
	assert_int_equal(sock_stream_position(tcp_fd, &next, &acked), 0);
	assert_int_equal(tag(&root_cred, tcp_fd, 1, MW_OFFSET_NEXT, &l1, 1, 1000, &r), 0);
	assert_int_equal(r.start, next); /* the socket's next write position */
	assert_int_equal(r.end, next + 1000);
	assert_int_equal(r.count, 1);
	t = map_tags(tcp_fd);
	assert_int_equal(t.count, 1);
	assert_int_equal(t.ranges[0].start, next);
	assert_int_equal(t.ranges[0].end, next + 1000);
	assert_int_equal(t.ranges[0].layer, 1);
	assert_int_equal(resolved_level(&t.ranges[0], 8), 0); /* layer 1: band 0 */
	assert_int_equal(t.owner, root_cred.uid + 1);
	/* Nothing written yet: the next tag continues where the last one ended (tag ahead). */
	assert_int_equal(tag(&root_cred, tcp_fd, 1, MW_OFFSET_NEXT, &l8, 1, 500, &r), 0);
	assert_int_equal(r.start, next + 1000);
	/* A batch: back to back, one map write. */
	assert_int_equal(tag(&root_cred, tcp_fd, 1, MW_OFFSET_NEXT, both, 2, 100, &r), 0);
	assert_int_equal(r.start, next + 1500);
	assert_int_equal(r.end, next + 1700);
	t = map_tags(tcp_fd);
	assert_int_equal(t.count, 4);
	assert_int_equal(resolved_level(&t.ranges[1], 8), 5); /* layer 8 of 8: last of 6 groups */
	assert_int_equal(resolved_level(&t.ranges[2], 8), 0); /* layer 2 of 8 */
	assert_int_equal(resolved_level(&t.ranges[3], 8), 4); /* layer 7 of 8: (7 - 1) * 6 / 8 */
	/* Explicit offsets after the last range: accepted, with a gap. */
	assert_int_equal(tag(&root_cred, tcp_fd, 1, next + 5000, &l1, 1, 10, &r), 0);
	assert_int_equal(r.start, next + 5000);
	assert_int_equal(map_tags(tcp_fd).count, 5);
}

static void test_refusals_each_own_code(void **state)
{
	uint32_t l1 = 1, bad[2] = {1, 9};
	struct mercury_sock_tags before;
	int udp = socket(AF_INET, SOCK_DGRAM, 0), unconnected = socket(AF_INET6, SOCK_STREAM, 0);
	int unix_pair[2], pipe_fds[2];
	uint64_t mask = 0;

	(void)state;
	NEED_MAPS();
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, unix_pair), 0);
	assert_int_equal(pipe(pipe_fds), 0);
	assert_int_equal(declare(&root_cred, &mask, 2, 8, 1), 0);
	before = map_tags(tcp_fd);
	/* Out of order: inside or before the last unacknowledged range. */
	assert_int_equal(
	    tag(&root_cred, tcp_fd, 2, before.ranges[before.count - 1].start, &l1, 1, 1, NULL),
	    -EEXIST);
	assert_int_equal(tag(&root_cred, tcp_fd, 2, 0, &l1, 1, 1, NULL), -EEXIST);
	/* All or nothing: the second tensor's layer is outside the job. */
	assert_int_equal(tag(&root_cred, tcp_fd, 2, MW_OFFSET_NEXT, bad, 2, 10, NULL), -ERANGE);
	assert_int_equal(tag(&root_cred, tcp_fd, 77, MW_OFFSET_NEXT, &l1, 1, 10, NULL), -ESRCH);
	assert_int_equal(map_tags(tcp_fd).generation, before.generation);
	assert_int_equal(tag(&root_cred, udp, 2, MW_OFFSET_NEXT, &l1, 1, 10, NULL), -EPROTOTYPE);
	assert_int_equal(tag(&root_cred, unix_pair[0], 2, MW_OFFSET_NEXT, &l1, 1, 10, NULL),
			 -EPROTOTYPE);
	assert_int_equal(tag(&root_cred, pipe_fds[0], 2, MW_OFFSET_NEXT, &l1, 1, 10, NULL),
			 -ENOTSOCK);
	assert_int_equal(tag(&root_cred, unconnected, 2, MW_OFFSET_NEXT, &l1, 1, 10, NULL),
			 -ENOTCONN);
	/* Registration checks the same things. */
	struct mw_register reg;
	hdr(&reg.h, MW_REGISTER, sizeof(reg));
	assert_int_equal(handle(&root_cred, &mask, &reg, sizeof(reg), tcp_fd, NULL), 0);
	hdr(&reg.h, MW_REGISTER, sizeof(reg));
	assert_int_equal(handle(&root_cred, &mask, &reg, sizeof(reg), unconnected, NULL),
			 -ENOTCONN);
	hdr(&reg.h, MW_REGISTER, sizeof(reg));
	assert_int_equal(handle(&root_cred, &mask, &reg, sizeof(reg), udp, NULL), -EPROTOTYPE);
	/* The handler closes nothing: the service closes the passed fds itself. */
	assert_true(fcntl(udp, F_GETFD) >= 0);
	close(udp);
	close(unconnected);
	close(unix_pair[0]);
	close(unix_pair[1]);
	close(pipe_fds[0]);
	close(pipe_fds[1]);
	event_client_gone(&ev, mask);
}

static void test_users_are_separate(void **state)
{
	uint32_t l8 = 8;
	uint64_t root_mask = 0, user_mask = 0;
	struct mw_reply r;

	(void)state;
	NEED_MAPS();
	assert_int_equal(declare(&root_cred, &root_mask, 5, 8, 1), 0);
	/* Another user's socket (the test's sockets are root's). */
	assert_int_equal(declare(&user_cred, &user_mask, 5, 2, 1), 0);
	assert_int_equal(tag(&user_cred, tcp_fd, 5, MW_OFFSET_NEXT, &l8, 1, 10, NULL), -EPERM);
	/* The user's job 5 is its own: root's job 5 still has 8 layers. */
	assert_int_equal(tag(&root_cred, tcp_fd, 5, MW_OFFSET_NEXT, &l8, 1, 10, &r), 0);
	/* Iteration marks of a job the user never declared. */
	assert_int_equal(iteration(&user_cred, MW_ITER_BEGIN, 6, 1), -ESRCH);
	assert_int_equal(iteration(&user_cred, MW_ITER_END, 5, 1), 0);
	assert_int_equal(iteration(&root_cred, MW_ITER_BEGIN, 5, 3), 0);
	/* When its only client goes, the job goes; the other user's job stays. */
	event_client_gone(&ev, user_mask);
	assert_int_equal(iteration(&user_cred, MW_ITER_END, 5, 1), -ESRCH);
	assert_int_equal(iteration(&root_cred, MW_ITER_END, 5, 3), 0);
	event_client_gone(&ev, root_mask);
	assert_int_equal(iteration(&root_cred, MW_ITER_END, 5, 3), -ESRCH);
}

/* A tag names (job, layer, iteration); its level follows the published job state: bytes of
 * iteration 6 move up when 5 ends, drop to the default band when the job goes, and a
 * restarted service adopts the job with its window so nothing moves meanwhile, until the
 * job's client declares it again and replays its own window. */
static void test_levels_follow_the_job_state(void **state)
{
	struct mercury_sock_tags t, t2;
	struct tag_frame f;
	struct mw_reply r;
	uint64_t mask = 0;
	size_t size = sizeof(struct mw_tag) + sizeof(struct mw_tensor);
	int a, b, a2, b2;

	(void)state;
	NEED_MAPS();
	tcp_pair(&a, &b);
	assert_int_equal(declare(&root_cred, &mask, 9, 8, 1), 0);
	assert_int_equal(iteration(&root_cred, MW_ITER_BEGIN, 9, 5), 0);
	memset(&f, 0, sizeof(f));
	hdr(&f.tag.h, MW_TAG, size);
	f.tag.job = 9;
	f.tag.count = 1;
	f.tag.offset = MW_OFFSET_NEXT;
	f.t[0] = (struct mw_tensor){.len = 100, .layer = 1, .dir = 0, .iteration = 6};
	assert_int_equal(handle(&root_cred, &mask, &f, size, a, &r), 0);
	t = map_tags(a);
	assert_int_equal(t.count, 1);
	assert_int_equal(t.ranges[0].iteration, 6);
	assert_int_equal(resolved_level(&t.ranges[0], 8), 6); /* next iteration: N - 2 */
	assert_int_equal(resolved_level(&t.ranges[0], 2), 1);
	assert_int_equal(iteration(&root_cred, MW_ITER_END, 9, 5), 0);
	assert_int_equal(resolved_level(&t.ranges[0], 8), 0); /* now current, layer 1 */

	/* A new service over the same maps: the job is an orphan with its window. */
	struct event_state saved = ev;

	memset(&ev.slots, 0, sizeof(ev.slots));
	policy_init(&ev.policy, 8);
	assert_true(event_adopt_jobs(&ev) >= 1);
	assert_int_equal(resolved_level(&t.ranges[0], 8), 0);
	uint64_t mask2 = 0;

	assert_int_equal(declare(&root_cred, &mask2, 9, 8, 1), 0); /* adopts the same slot */
	/* ... and its client's replay, not the window the earlier service left, is the job's
	 * state: here the client ended 6 and 7 and began 8 while no service listened, so a
	 * window kept at 6 would hold iteration 8's bytes in a later band for good */
	assert_int_equal(iteration(&root_cred, MW_ITER_BEGIN, 9, 8), 0);
	f.t[0].iteration = 8;
	tcp_pair(&a2, &b2);
	assert_int_equal(handle(&root_cred, &mask2, &f, size, a2, &r), 0);
	t2 = map_tags(a2);
	assert_int_equal(resolved_level(&t2.ranges[0], 8), 0); /* current, layer 1 */
	close(a2);
	close(b2);
	/* Its last client goes: the job's bytes demote to the default band. */
	event_client_gone(&ev, mask2);
	assert_int_equal(resolved_level(&t.ranges[0], 8), -1);
	ev = saved;
	event_client_gone(&ev, mask);
	close(a);
	close(b);
}

/* A socket's per-band counters, as the classifier keeps them, come back in the reply; a
 * socket the classifier never saw reads all zero. */
static void test_stats_reply(void **state)
{
	struct mercury_sock_stats st = {0};
	struct mw_stats_req f;
	struct mw_reply r;
	uint64_t mask = 0;
	int a, b;

	(void)state;
	NEED_MAPS();
	tcp_pair(&a, &b);
	st.bytes[2] = 123456;
	st.packets[2] = 90;
	st.bytes[7] = 1448;
	st.packets[7] = 1;
	assert_int_equal(bpf_map_update_elem(ev.stats_fd, &a, &st, BPF_ANY), 0);
	hdr(&f.h, MW_STATS, sizeof(f));
	assert_int_equal(handle(&root_cred, &mask, &f, sizeof(f), a, &r), 0);
	for (int band = 0; band < 16; band++) {
		assert_int_equal(r.bytes[band], st.bytes[band]);
		assert_int_equal(r.packets[band], st.packets[band]);
	}
	assert_int_equal(handle(&root_cred, &mask, &f, sizeof(f), b, &r), 0);
	for (int band = 0; band < 16; band++)
		assert_int_equal(r.bytes[band] + r.packets[band], 0);
	close(a);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_tags_reach_the_map),
	    cmocka_unit_test(test_refusals_each_own_code),
	    cmocka_unit_test(test_users_are_separate),
	    cmocka_unit_test(test_stats_reply),
	    cmocka_unit_test(test_levels_follow_the_job_state),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
