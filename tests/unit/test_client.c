// SPDX-License-Identifier: BSD-2-Clause
/*
 * libmercury against a scripted daemon on a private socket: frames as the daemon's decoder
 * reads them, fds passed only where the type takes one, replies matched to their request
 * when many threads share one client, argument errors caught before any round trip, and a
 * vanished daemon reported as such.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "mercury.h"
#include "service/wire_decode.h"

static char sock_path[108];
static int listen_fd = -1;

#define FAKE_LOG 16

struct fake {
	pthread_t th;
	int conn;
	unsigned frames, with_fd;
	int close_after;	  /* hang up after this many frames (0: never) */
	unsigned types[FAKE_LOG]; /* frame types and iterations, in arrival order */
	uint64_t iters[FAKE_LOG];
};

/*
 * The scripted daemon: decodes each frame with the real decoder and answers with a status
 * that is a function of the request, so a reply given to the wrong caller shows:
 *   decode error -> that error; JOB_DECLARE -> -(job % 40); TAG -> -(t[0].layer % 40);
 *   others -> 0. Every passed fd is checked to be a socket and closed.
 */
static void *fake_daemon(void *arg)
{
	struct fake *f = arg;

	f->conn = accept(listen_fd, NULL, NULL);
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(int) * 4)];
			struct cmsghdr align;
		} ctl;
		uint8_t frame[MW_MAX_FRAME + 1];
		struct iovec iov = {.iov_base = frame, .iov_len = sizeof(frame)};
		struct msghdr msg = {.msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf)};
		struct mw_reply reply = {0};
		struct mw_msg m;
		int nfds = 0;
		ssize_t n = recvmsg(f->conn, &msg, 0);

		if (n <= 0)
			break;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
			int fd;

			for (size_t k = 0; k < (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int); k++) {
				memcpy(&fd, CMSG_DATA(cm) + k * sizeof(int), sizeof(int));
				close(fd);
				nfds++;
			}
		}
		reply.status = mw_decode(frame, (size_t)n, nfds > 0, &m);
		if (f->frames < FAKE_LOG) {
			f->types[f->frames] = m.type;
			f->iters[f->frames] =
			    m.type == MW_ITER_BEGIN || m.type == MW_ITER_END ? m.iter.iteration : 0;
		}
		f->frames++;
		f->with_fd += nfds > 0;
		if (reply.status == 0 && m.type == MW_JOB_DECLARE)
			reply.status = -(int32_t)(m.job.job % 40);
		else if (reply.status == 0 && m.type == MW_TAG)
			reply.status = -(int32_t)(m.tag.t[0].layer % 40);
		reply.h = (struct mw_hdr){
		    .len = sizeof(reply), .version = MW_VERSION, .type = MW_REPLY, .seq = m.seq};
		if (f->close_after && f->frames == (unsigned)f->close_after)
			break;
		if (send(f->conn, &reply, sizeof(reply), MSG_NOSIGNAL) < 0)
			break;
	}
	close(f->conn);
	return NULL;
}

static struct mercury_client *start(struct fake *f, int close_after)
{
	struct mercury_client *c = NULL;

	memset(f, 0, sizeof(*f));
	f->close_after = close_after;
	assert_int_equal(pthread_create(&f->th, NULL, fake_daemon, f), 0);
	assert_int_equal(mercury_connect(sock_path, &c), 0);
	return c;
}

static void stop(struct fake *f, struct mercury_client *c)
{
	mercury_disconnect(c);
	pthread_join(f->th, NULL);
}

static int setup(void **state)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};

	(void)state;
	snprintf(sock_path, sizeof(sock_path), "/tmp/mercury-test-client-%d.sock", (int)getpid());
	unlink(sock_path);
	strcpy(a.sun_path, sock_path);
	listen_fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(listen_fd, 8))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (listen_fd >= 0)
		close(listen_fd);
	unlink(sock_path);
	return 0;
}

static void test_frames_the_daemon_accepts(void **state)
{
	struct mercury_tensor t[3] = {{.len = 10, .layer = 2, .dir = MERCURY_PUSH, .iteration = 1},
				      {.len = 20, .layer = 3, .dir = MERCURY_PULL, .iteration = 1},
				      {.len = 30, .layer = 4, .dir = MERCURY_PUSH, .iteration = 2}};
	struct mercury_socket_stats st;
	struct fake f;
	struct mercury_client *c = start(&f, 0);
	int sv[2];

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(mercury_job_declare(c, 40, 8, 1), 0);
	assert_int_equal(mercury_job_declare(c, 41, 8, 1), -1); /* the daemon's answer */
	assert_int_equal(mercury_iteration_begin(c, 40, 7), 0);
	assert_int_equal(mercury_iteration_end(c, 40, 7), 0);
	assert_int_equal(mercury_register_socket(c, sv[0]), 0);
	assert_int_equal(mercury_tag_next(c, sv[0], 40, 1, MERCURY_PUSH, 0, 100), -1);
	assert_int_equal(mercury_tag_range(c, sv[0], 40, 40, MERCURY_PULL, 0, 5, 100), 0);
	assert_int_equal(mercury_tag_batch(c, sv[0], 40, t, 3), -2);
	assert_int_equal(mercury_socket_stats(c, sv[0], &st), 0);
	stop(&f, c);
	/* Every frame decoded (no decode error came back), fds only with the socket types. */
	assert_int_equal(f.frames, 9);
	assert_int_equal(f.with_fd, 5);
	close(sv[0]);
	close(sv[1]);
}

static void test_argument_errors_without_round_trip(void **state)
{
	struct mercury_tensor t[MERCURY_MAX_BATCH + 1] = {{.len = 1, .layer = 1}};
	struct fake f;
	struct mercury_client *c = start(&f, 0), *none = NULL;

	(void)state;
	assert_int_equal(mercury_register_socket(c, -1), -EBADF);
	assert_int_equal(mercury_tag_next(c, -1, 1, 1, MERCURY_PUSH, 0, 1), -EBADF);
	assert_int_equal(mercury_tag_batch(c, 3, 1, t, 0), -EINVAL);
	assert_int_equal(mercury_tag_batch(c, 3, 1, t, MERCURY_MAX_BATCH + 1), -EINVAL);
	assert_int_equal(mercury_tag_batch(c, 3, 1, NULL, 1), -EINVAL);
	assert_int_equal(mercury_tag_range(c, 3, 1, 1, MERCURY_PUSH, 0, UINT64_MAX, 1), -EINVAL);
	assert_int_equal(mercury_send_tensor(c, 3, "", 0, 1, 1, MERCURY_PUSH, 0), 0);
	assert_int_equal(mercury_socket_stats(c, 3, NULL), -EINVAL);
	assert_int_equal(mercury_job_declare(NULL, 1, 1, 1), -EINVAL);
	assert_int_equal(mercury_connect(NULL, NULL), -EINVAL);
	assert_int_equal(mercury_connect("/nonexistent/mercuryd.sock", &none), -ENOENT);
	assert_null(none);
	mercury_disconnect(NULL);
	stop(&f, c);
	assert_int_equal(f.frames, 0);
}

struct hammer {
	pthread_t th;
	struct mercury_client *c;
	uint32_t base;
	int wrong;
};

static void *hammer(void *arg)
{
	struct hammer *h = arg;

	for (uint32_t i = 0; i < 5000; i++) {
		uint32_t job = h->base + i;

		if (mercury_job_declare(h->c, job, 4, 1) != -(int)(job % 40))
			h->wrong++;
	}
	return NULL;
}

/* Four threads on one client: every call gets its own reply. */
static void test_threads_share_one_client(void **state)
{
	struct hammer h[4];
	struct fake f;
	struct mercury_client *c = start(&f, 0);

	(void)state;
	for (int i = 0; i < 4; i++) {
		h[i] = (struct hammer){.c = c, .base = 1 + (uint32_t)i * 7};
		assert_int_equal(pthread_create(&h[i].th, NULL, hammer, &h[i]), 0);
	}
	for (int i = 0; i < 4; i++) {
		pthread_join(h[i].th, NULL);
		assert_int_equal(h[i].wrong, 0);
	}
	stop(&f, c);
	assert_int_equal(f.frames, 4 * 5000);
}

static void test_daemon_gone(void **state)
{
	struct fake f;
	struct mercury_client *c = start(&f, 2);

	(void)state;
	mercury_set_reconnect_timeout(c, 200);
	assert_int_equal(mercury_job_declare(c, 40, 4, 1), 0);
	/* hung up without a reply, and nobody serves the socket after it: a bounded wait, then
	 * an error that names the daemon */
	assert_int_equal(mercury_job_declare(c, 40, 4, 1), -ECONNREFUSED);
	pthread_join(f.th, NULL);
	assert_int_equal(mercury_job_declare(c, 40, 4, 1), -ECONNREFUSED);
	assert_non_null(strstr(mercury_strerror(-ECONNREFUSED), "mercuryd"));
	mercury_disconnect(c);
}

/* A restarted daemon gets the client's job and open iteration before the next call. */
static void test_daemon_restart_replays_state(void **state)
{
	struct fake f1, f2 = {0};
	struct mercury_client *c = start(&f1, 4);

	(void)state;
	assert_int_equal(mercury_job_declare(c, 40, 4, 2), 0);
	assert_int_equal(mercury_iteration_begin(c, 40, 7), 0);
	assert_int_equal(mercury_iteration_begin(c, 40, 8), 0);
	assert_int_equal(pthread_create(&f2.th, NULL, fake_daemon, &f2), 0); /* the restart */
	/* f1 reads this one and hangs up without a reply: the client reconnects to f2 */
	assert_int_equal(mercury_iteration_end(c, 40, 8), 0);
	assert_int_equal(f2.frames, 3);
	assert_int_equal(f2.types[0], MW_JOB_DECLARE);
	assert_int_equal(f2.types[1], MW_ITER_BEGIN); /* the oldest open: 7 */
	assert_int_equal(f2.iters[1], 7);
	assert_int_equal(f2.types[2], MW_ITER_END); /* then the call itself */
	assert_int_equal(f2.iters[2], 8);
	pthread_join(f1.th, NULL);
	stop(&f2, c);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The daemon's socket goes away for good (listener closed, file removed). */
static void daemon_vanishes(void)
{
	close(listen_fd);
	listen_fd = -1;
	unlink(sock_path);
}

/* A daemon that is gone costs the data path no wait, however long the reconnect timeout:
 * after the call that finds it gone, tags and iteration events fail at once. */
static void test_gone_daemon_never_holds_the_data_path(void **state)
{
	struct fake f;
	struct mercury_client *c = start(&f, 2);
	int sv[2];
	double t0, worst = 0;

	(void)state;
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	mercury_set_reconnect_timeout(c, 3000);
	assert_int_equal(mercury_job_declare(c, 40, 4, 1), 0);
	assert_int_equal(mercury_daemon_connected(c), 1);
	daemon_vanishes();
	t0 = now_s();
	/* read and not answered: the daemon hangs up */
	assert_int_equal(mercury_iteration_begin(c, 40, 1), -ENOENT);
	pthread_join(f.th, NULL);
	assert_true(now_s() - t0 < 0.5);
	assert_int_equal(mercury_daemon_connected(c), 0);
	for (int i = 0; i < 200; i++) {
		t0 = now_s();
		assert_int_equal(mercury_iteration_end(c, 40, (uint64_t)i), -ENOENT);
		assert_int_equal(mercury_tag_next(c, sv[0], 40, 1, MERCURY_PUSH, 1, 10), -ENOENT);
		if (now_s() - t0 > worst)
			worst = now_s() - t0;
	}
	assert_true(worst < 0.05); /* no call waited (no 3 s, no 100 ms retry) */
	close(sv[0]);
	close(sv[1]);
	mercury_disconnect(c);
}

/* Iteration events made while the daemon was gone reach the next one: it learns the job and
 * the window as it is now, within the retry interval of its start, without any call. */
static void test_events_while_gone_reach_the_next_daemon(void **state)
{
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	struct fake f1, f2 = {0};
	struct mercury_client *c = start(&f1, 3);
	double t0;

	(void)state;
	assert_int_equal(mercury_job_declare(c, 40, 4, 1), 0);
	assert_int_equal(mercury_iteration_begin(c, 40, 7), 0);
	daemon_vanishes();
	assert_int_equal(mercury_iteration_end(c, 40, 7), -ENOENT); /* read, unanswered */
	pthread_join(f1.th, NULL);
	assert_int_equal(mercury_iteration_begin(c, 40, 8), -ENOENT);
	assert_int_equal(mercury_iteration_begin(c, 40, 9), -ENOENT);
	assert_int_equal(mercury_iteration_end(c, 40, 9), -ENOENT);
	/* the daemon returns */
	strcpy(a.sun_path, sock_path);
	listen_fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	assert_int_equal(bind(listen_fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(listen_fd, 8), 0);
	assert_int_equal(pthread_create(&f2.th, NULL, fake_daemon, &f2), 0);
	t0 = now_s();
	while (!mercury_daemon_connected(c) && now_s() - t0 < 2)
		usleep(1000);
	assert_int_equal(mercury_daemon_connected(c), 1);
	assert_true(now_s() - t0 < 0.5);
	assert_int_equal(mercury_iteration_end(c, 40, 8), 0);
	stop(&f2, c); /* joined: its log is read below */
	assert_int_equal(f2.frames, 4);
	assert_int_equal(f2.types[0], MW_JOB_DECLARE);
	assert_int_equal(f2.types[1], MW_ITER_BEGIN); /* the oldest open: 8 */
	assert_int_equal(f2.iters[1], 8);
	assert_int_equal(f2.types[2], MW_ITER_END); /* 9 ended ahead of it */
	assert_int_equal(f2.iters[2], 9);
	assert_int_equal(f2.types[3], MW_ITER_END); /* then the call */
	assert_int_equal(f2.iters[3], 8);
}

/* The child of a fork(): its part of test_forked_child_gets_its_own_connection, with exit
 * status 0 when its calls went over a connection of its own, the job replayed first. */
static int forked_child(struct mercury_client *c)
{
	struct fake fc = {0};
	double t0 = now_s();
	int down, r;

	if (pthread_create(&fc.th, NULL, fake_daemon, &fc))
		return 2;
	down = mercury_iteration_begin(c, 40, 1); /* at once: the child's connection is not up */
	while (!mercury_daemon_connected(c) && now_s() - t0 < 3)
		usleep(10000);
	r = mercury_iteration_end(c, 40, 1);
	mercury_disconnect(c);
	pthread_join(fc.th, NULL);
	if (down != -ECONNREFUSED || r != 0 || fc.frames != 3)
		return 3;
	return fc.types[0] == MW_JOB_DECLARE && fc.types[1] == MW_ITER_BEGIN && fc.iters[1] == 1 &&
		       fc.types[2] == MW_ITER_END
		   ? 0
		   : 4;
}

/* After fork() the child's calls go over a connection of its own (never the parent's, whose
 * replies would interleave), and the parent's client goes on over its own. */
static void test_forked_child_gets_its_own_connection(void **state)
{
	struct fake f;
	struct mercury_client *c = start(&f, 0);
	int status = -1;
	pid_t pid;

	(void)state;
	assert_int_equal(mercury_job_declare(c, 40, 4, 2), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(forked_child(c));
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	assert_int_equal(mercury_iteration_begin(c, 40, 5), 0);
	stop(&f, c);
	assert_int_equal(f.frames, 2); /* the declare and the parent's own call */
	assert_int_equal(f.types[1], MW_ITER_BEGIN);
	assert_int_equal(f.iters[1], 5);
}

static void test_every_code_has_a_message(void **state)
{
	const int codes[] = {ENOENT, ECONNREFUSED, EACCES,   ESRCH,	 ERANGE,    EEXIST, EINVAL,
			     ENOSPC, EPROTOTYPE,   ENOTSOCK, ENOTCONN,	 EPERM,	    EBADF,  E2BIG,
			     EPROTO, EBADMSG,	   EMSGSIZE, EOPNOTSUPP, ECONNRESET};

	(void)state;
	for (size_t i = 0; i < sizeof(codes) / sizeof(codes[0]); i++)
		for (size_t j = 0; j < i; j++) /* no two codes read alike */
			assert_string_not_equal(mercury_strerror(-codes[i]),
						mercury_strerror(-codes[j]));
	assert_string_equal(mercury_strerror(0), "success");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test_setup_teardown(test_frames_the_daemon_accepts, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_argument_errors_without_round_trip, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_threads_share_one_client, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_daemon_gone, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_daemon_restart_replays_state, setup, teardown),
	    cmocka_unit_test_setup_teardown(test_gone_daemon_never_holds_the_data_path, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_events_while_gone_reach_the_next_daemon, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_forked_child_gets_its_own_connection, setup,
					    teardown),
	    cmocka_unit_test_setup_teardown(test_every_code_has_a_message, setup, teardown),
	};
	/* a listener per test: one whose backlog a test filled would refuse the next */
	return cmocka_run_group_tests(tests, NULL, NULL);
}
