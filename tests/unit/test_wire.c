// SPDX-License-Identifier: BSD-2-Clause
/* Event frames: round trips, each malformation's own error, and 1M random frames. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "service/event_service.h"
#include "service/wire_decode.h"

static void hdr(struct mw_hdr *h, uint16_t type, size_t len, uint32_t seq)
{
	*h = (struct mw_hdr){.len = (uint32_t)len, .version = MW_VERSION, .type = type, .seq = seq};
}

struct tag_frame {
	struct mw_tag tag;
	struct mw_tensor t[MW_MAX_BATCH];
};

static size_t make_tag(struct tag_frame *f, unsigned n)
{
	size_t len = sizeof(struct mw_tag) + n * sizeof(struct mw_tensor);

	memset(f, 0, sizeof(*f));
	hdr(&f->tag.h, MW_TAG, len, 77);
	f->tag.job = 3;
	f->tag.count = n;
	f->tag.offset = MW_OFFSET_NEXT;
	for (unsigned i = 0; i < n; i++)
		f->t[i] = (struct mw_tensor){
		    .len = 1000 + i, .layer = i + 1, .dir = i & 1, .iteration = 9};
	return len;
}

static void test_round_trips(void **state)
{
	struct mw_job_declare jd = {.job = 5, .n_layers = 161, .weight = 2};
	struct mw_iter it = {.job = 5, .iteration = 1234567890123ull};
	struct tag_frame tf;
	struct mw_msg m;
	size_t len;

	(void)state;
	hdr(&jd.h, MW_JOB_DECLARE, sizeof(jd), 1);
	assert_int_equal(mw_decode(&jd, sizeof(jd), false, &m), 0);
	assert_int_equal(m.type, MW_JOB_DECLARE);
	assert_int_equal(m.seq, 1);
	assert_int_equal(m.job.job, 5);
	assert_int_equal(m.job.n_layers, 161);
	assert_int_equal(m.job.weight, 2);
	hdr(&it.h, MW_ITER_END, sizeof(it), 2);
	assert_int_equal(mw_decode(&it, sizeof(it), false, &m), 0);
	assert_int_equal(m.iter.iteration, 1234567890123ull);
	len = make_tag(&tf, MW_MAX_BATCH);
	assert_int_equal(mw_decode(&tf, len, true, &m), 0);
	assert_int_equal(m.tag.count, MW_MAX_BATCH);
	assert_int_equal(m.tag.offset, MW_OFFSET_NEXT);
	assert_int_equal(m.tag.t[31].len, 1031);
	assert_int_equal(m.tag.t[31].layer, 32);
	assert_int_equal(m.tag.t[31].dir, 1);
}

static void test_malformed_each_own_error(void **state)
{
	struct mw_job_declare jd = {.job = 1, .n_layers = 4, .weight = 1};
	uint8_t big[MW_MAX_FRAME + 8] = {0};
	struct tag_frame tf;
	struct mw_msg m;
	size_t len;

	(void)state;
	hdr(&jd.h, MW_JOB_DECLARE, sizeof(jd), 1);
	assert_int_equal(mw_decode(&jd, 10, false, &m), -EBADMSG); /* truncated header */
	assert_int_equal(mw_decode(&jd, sizeof(jd) - 4, false, &m), -EBADMSG); /* len != received */
	hdr((struct mw_hdr *)big, MW_TAG, sizeof(big), 1);
	assert_int_equal(mw_decode(big, sizeof(big), true, &m), -EMSGSIZE); /* oversized */
	jd.h.version = 2;
	assert_int_equal(mw_decode(&jd, sizeof(jd), false, &m), -EPROTO); /* wrong version */
	jd.h.version = MW_VERSION;
	jd.h.type = 99;
	assert_int_equal(mw_decode(&jd, sizeof(jd), false, &m), -EOPNOTSUPP); /* unknown type */
	assert_int_equal(m.seq, 1); /* the reply can still echo it */
	jd.h.type = MW_JOB_DECLARE;
	assert_int_equal(mw_decode(&jd, sizeof(jd), true, &m), -EINVAL); /* fd where none belongs */
	jd.n_layers = 0;
	assert_int_equal(mw_decode(&jd, sizeof(jd), false, &m), -EINVAL);
	jd.n_layers = 4;
	jd.h.reserved = 1;
	assert_int_equal(mw_decode(&jd, sizeof(jd), false, &m), -EINVAL);

	len = make_tag(&tf, 2);
	assert_int_equal(mw_decode(&tf, len, false, &m), -EBADF); /* missing fd */
	tf.tag.count = 3;					  /* count disagrees with size */
	assert_int_equal(mw_decode(&tf, len, true, &m), -EBADMSG);
	tf.tag.count = 0;
	assert_int_equal(mw_decode(&tf, len, true, &m), -EINVAL);
	tf.tag.count = MW_MAX_BATCH + 1;
	assert_int_equal(mw_decode(&tf, len, true, &m), -EINVAL);
	len = make_tag(&tf, 2);
	tf.t[1].dir = 2;
	assert_int_equal(mw_decode(&tf, len, true, &m), -EINVAL);
	len = make_tag(&tf, 2);
	tf.t[0].len = 0;
	assert_int_equal(mw_decode(&tf, len, true, &m), -EINVAL);
	len = make_tag(&tf, 2);
	tf.t[0].layer = 0;
	assert_int_equal(mw_decode(&tf, len, true, &m), -EINVAL);
	len = make_tag(&tf, 2);
	tf.tag.offset = UINT64_MAX - 10; /* the batch would run past 2^64 */
	assert_int_equal(mw_decode(&tf, len, true, &m), -EINVAL);
}

/* The service's frame handler answers bad frames (and bad sockets) and keeps its state. */
static void test_handler_rejects_and_serves(void **state)
{
	static struct event_state ev;
	struct ucred cred = {.pid = 1, .uid = 0, .gid = 0};
	struct mw_job_declare jd = {.job = 1, .n_layers = 4, .weight = 1};
	struct tag_frame tf;
	struct mw_reply reply;
	uint64_t mask = 0;
	int devnull = 0; /* stdin: not a socket */
	size_t len;

	(void)state;
	memset(&ev, 0, sizeof(ev));
	ev.tags_fd = ev.stats_fd = -1;
	policy_init(&ev.policy, 8);
	hdr(&jd.h, MW_JOB_DECLARE, sizeof(jd), 41);
	event_handle(&ev, 1, &cred, &mask, &jd, sizeof(jd), false, NULL, 0, &reply);
	assert_int_equal(reply.status, 0);
	assert_int_equal(reply.h.seq, 41);
	assert_int_equal(reply.h.type, MW_REPLY);
	assert_true(mask != 0);
	event_handle(&ev, 1, &cred, &mask, &jd, sizeof(jd), true, NULL, 0, &reply);
	assert_int_equal(reply.status, -EMSGSIZE); /* truncated by the kernel */
	len = make_tag(&tf, 1);
	event_handle(&ev, 1, &cred, &mask, &tf, len, false, &devnull, 1, &reply);
	assert_int_equal(reply.status, -ENOTSOCK);
	int two[2] = {0, 0};
	event_handle(&ev, 1, &cred, &mask, &tf, len, false, two, 2, &reply);
	assert_int_equal(reply.status, -E2BIG);
	assert_int_equal(ev.rejected, 3);
	/* still serving: a good frame after the bad ones works */
	jd.job = 2;
	event_handle(&ev, 1, &cred, &mask, &jd, sizeof(jd), false, NULL, 0, &reply);
	assert_int_equal(reply.status, 0);
	assert_int_equal(ev.policy.njobs, 2);
	event_client_gone(&ev, mask);
	assert_int_equal(ev.policy.njobs, 0); /* its jobs go with it */
}

/* 1M random and mutated frames through the decoder: no crash, every result a known code. */
static void test_random_frames(void **state)
{
	uint8_t buf[MW_MAX_FRAME + 16];
	struct tag_frame seed;
	struct mw_msg m;
	unsigned long ok = 0;
	uint64_t x = 0x9e3779b97f4a7c15ull;

	(void)state;
	for (long i = 0; i < 1000000; i++) {
		size_t n;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		if (i & 1) { /* a valid tag frame with a few bytes flipped */
			n = make_tag(&seed, 1 + (unsigned)(x % MW_MAX_BATCH));
			memcpy(buf, &seed, n);
			for (int k = 0; k < 3; k++)
				buf[(x >> (8 * k)) % n] ^= (uint8_t)(x >> (8 * k + 3));
		} else {
			n = (size_t)(x % sizeof(buf));
			for (size_t k = 0; k < n; k++)
				buf[k] = (uint8_t)(x >> (k % 56));
			if (n >= 8) {
				uint32_t len = (uint32_t)n;
				memcpy(buf, &len,
				       4); /* mostly consistent lengths reach the bodies */
				buf[4] = MW_VERSION, buf[5] = 0;
			}
		}
		int r = mw_decode(buf, n, (x >> 60) & 1, &m);
		if (r == 0)
			ok++;
		else if (r != -EBADMSG && r != -EMSGSIZE && r != -EPROTO && r != -EOPNOTSUPP &&
			 r != -EBADF && r != -EINVAL)
			fail_msg("unexpected code %d", r);
	}
	print_message("1000000 random frames, %lu accepted\n", ok);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_round_trips),
	    cmocka_unit_test(test_malformed_each_own_error),
	    cmocka_unit_test(test_handler_rejects_and_serves),
	    cmocka_unit_test(test_random_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
