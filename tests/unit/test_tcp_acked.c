// SPDX-License-Identifier: BSD-2-Clause
/*
 * tcp_bytes_acked() (common/tcp_stream.c): the kernel's count of bytes the peer acknowledged,
 * which the PS drainer compares with the bytes it wrote. Over loopback: it grows by exactly what
 * was written once the peer has read it, and a socket that is not TCP gets an error, not a count.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tcp_stream.h"
#include "../tcp_pair.h"

static void read_exactly(int fd, size_t n)
{
	char buf[4096];

	while (n > 0) {
		ssize_t r = read(fd, buf, n < sizeof(buf) ? n : sizeof(buf));

		assert_true(r > 0);
		n -= (size_t)r;
	}
}

/* Polls until the count reaches want, for at most 2 s (ACKs over loopback take microseconds). */
static uint64_t acked_after(int fd, uint64_t base, uint64_t want)
{
	const struct timespec pause = {0, 1000000};
	uint64_t v = 0;

	for (int i = 0; i < 2000; i++) {
		assert_int_equal(tcp_bytes_acked(fd, &v, NULL), 0);
		if (v - base >= want)
			break;
		nanosleep(&pause, NULL);
	}
	return v - base;
}

static void test_counts_what_the_peer_acknowledged(void **s)
{
	(void)s;
	static char data[300000];
	int a, b;
	uint64_t base;

	tcp_pair(&a, &b);
	assert_int_equal(tcp_bytes_acked(a, &base, NULL), 0);
	memset(data, 7, sizeof(data));
	for (int round = 1; round <= 3; round++) {
		assert_int_equal(write(a, data, sizeof(data)), (ssize_t)sizeof(data));
		read_exactly(b, sizeof(data));
		assert_int_equal(acked_after(a, base, (uint64_t)round * sizeof(data)),
				 (uint64_t)round * sizeof(data));
	}
	/* The reading side wrote nothing: its count does not move from its own base. */
	uint64_t other;
	assert_int_equal(tcp_bytes_acked(b, &other, NULL), 0);
	assert_true(other <= 1);
	close(a);
	close(b);
}

static void test_not_a_tcp_socket(void **s)
{
	(void)s;
	uint64_t v = 12345;
	int u = socket(AF_INET, SOCK_DGRAM, 0), p[2];

	assert_true(u >= 0);
	assert_true(tcp_bytes_acked(u, &v, NULL) < 0);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(tcp_bytes_acked(p[0], &v, NULL), -ENOTSOCK);
	assert_int_equal(v, 12345); /* untouched on error */
	close(u);
	close(p[0]);
	close(p[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_counts_what_the_peer_acknowledged),
	    cmocka_unit_test(test_not_a_tcp_socket),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
